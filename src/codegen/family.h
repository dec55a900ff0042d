// Helpers the indexing and spatial kernel families add on top of codegen/common.h (internal to
// src/codegen): bool computed as u32 0/1 (so sums, products and max/min of bools are integer
// arithmetic), integer limits, a params builder with per-dim int lists and typed scalars, and
// strided offsets of several operands over one shape, as kir expressions.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/common.h"
#include "codegen/kir.h"

namespace ember::codegen {

/// Indices are i64: throws ember::Error naming `op` when the device has no 64-bit integers.
void require_index(const char* op, const Caps& caps);

/// Throws ember::Error naming `op` when an element offset of a view in `ts` needs more than
/// 31 bits (kernels index with int).
void check_fits(const char* op, const std::vector<Tensor>& ts);

bool is_float_dtype(DType t);
bool is_unsigned_dtype(DType t);  // u8..u64 (not bool)

// ---- kir helpers ----

/// kir::compute_of(t), but u32 (0/1) for bool.
kir::Type ctype_of(DType t);
/// e as ctype_of(t) (a no-op when it has that type already).
kir::Expr ccast(DType t, kir::Expr e);
/// load/store through ctype_of: a bool element loads as u32 0/1 and stores as (v != 0).
kir::Expr ld(kir::Kernel& k, kir::Buf b, kir::Expr index);
void st(kir::Kernel& k, kir::Buf b, kir::Expr index, kir::Expr v);
/// Smallest / largest value of integer dtype `t` (bool: 0, 1) as a ctype_of(t) literal.
kir::Expr lowest_value(DType t);
kir::Expr highest_value(DType t);

/// Params word k (a ParamBuilder index) as u32 / i32 / f32, and words k, k+1 as f64.
kir::Expr param_u(size_t k);
kir::Expr param_i(size_t k);
kir::Expr param_f(size_t k);
kir::Expr param_d(size_t k);

/// Params with the checks and shapes these families need; indices returned are word indices.
class ParamBuilder : public Params {
 public:
  explicit ParamBuilder(const char* op) : op_(op) {}
  size_t u(int64_t v);  // throws when v is not a uint32
  size_t i(int64_t v);  // throws when v is not an int32
  size_t f(float v) { return f32(v); }
  size_t d(double v) { return f64(v); }
  size_t ints(const std::vector<int64_t>& v);  // one int32 word each; returns the first
  /// `s` cast to ctype_of(t) as the ref's cast (1 or 2 words), read back by scalar_param(t, k).
  size_t scalar(DType t, const Scalar& s);

 private:
  const char* op_;
};

/// The ctype_of(t) value ParamBuilder::scalar wrote at word k.
kir::Expr scalar_param(DType t, size_t k);

/// An operand of a strided walk: i32 offset `name` starts at param word off_at (i32) and adds
/// coordinate k times param word strides_at + k (i32).
struct Operand {
  std::string name;
  size_t off_at;
  size_t strides_at;
};

/// Splits u32 `lin` into row-major coordinates (u32 locals c0..c{rank-1}) over the sizes at
/// param words sizes_at + k (u32) and declares each operand's i32 offset; returns the offsets,
/// in the order of `ops`.
std::vector<kir::Expr> decompose(kir::Kernel& k, kir::Expr lin, int rank, size_t sizes_at,
                                 const std::vector<Operand>& ops);

}  // namespace ember::codegen
