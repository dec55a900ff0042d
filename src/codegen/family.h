// Helpers the indexing and spatial kernel families add on top of codegen/common.h (internal to
// src/codegen): bool computed as uint 0/1 (so sums, products and max/min of bools are integer
// arithmetic), integer limits, a params builder with per-dim int lists and typed scalars, and
// strided offsets of several operands over one shape.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/common.h"

namespace ember::codegen {

/// Indices are i64: throws ember::Error naming `op` when the device has no 64-bit integers.
void require_index(const char* op, const Caps& caps);

/// Throws ember::Error naming `op` when an element offset of a view in `ts` needs more than
/// 31 bits (kernels index with int).
void check_fits(const char* op, const std::vector<Tensor>& ts);

bool is_float_dtype(DType t);
bool is_unsigned_dtype(DType t);  // u8..u64 (not bool)

/// compute_type(t), but uint (0/1) for bool.
std::string ctype(DType t);
std::string ccast(DType t, const std::string& e);  // ctype(t) + "(" + e + ")"
/// load/store through ctype: a bool element loads as uint 0/1 and stores as (v != 0).
std::string ld(DType t, const std::string& e);
std::string st(DType t, const std::string& v);
/// Smallest / largest value of integer dtype `t` (bool: 0, 1) as a ctype expression.
std::string lowest_literal(DType t);
std::string highest_literal(DType t);

/// Params with the checks and shapes these families need; indices returned are word indices.
class ParamBuilder : public Params {
 public:
  explicit ParamBuilder(const char* op) : op_(op) {}
  size_t u(int64_t v);  // throws when v is not a uint32
  size_t i(int64_t v);  // throws when v is not an int32
  size_t f(float v) { return f32(v); }
  size_t d(double v) { return f64(v); }
  size_t ints(const std::vector<int64_t>& v);  // one int32 word each; returns the first
  /// `s` cast to ctype(t) as the ref's cast (1 or 2 words), read back by scalar_param(t, k).
  size_t scalar(DType t, const Scalar& s);

 private:
  const char* op_;
};

std::string pu(size_t k);  // "P_U(k)"
std::string pi(size_t k);
std::string pf(size_t k);
std::string pd(size_t k);
/// The ctype(t) value ParamBuilder::scalar wrote at word k.
std::string scalar_param(DType t, size_t k);

/// An operand of a strided walk: int offset `name` starts at P_I(off_at) and adds
/// coordinate k times P_I(strides_at + k).
struct Operand {
  std::string name;
  size_t off_at;
  size_t strides_at;
};

/// Statements splitting uint `lin` into row-major coordinates `uint c0..c{rank-1}` over the
/// sizes P_U(sizes_at + k) and declaring each operand's int offset.
std::string decompose(const std::string& lin, int rank, size_t sizes_at,
                      const std::vector<Operand>& ops);

}  // namespace ember::codegen
