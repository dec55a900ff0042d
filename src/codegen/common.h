// Helpers every kernel family uses to write kernels in Ember's kernel language (kernel.h):
// type names and conversions per dtype, the params block, strided indexing and 1-d launches.
// Internal to src/codegen.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "codegen/kir.h"

namespace ember::codegen {

// ---- dtypes ----

/// Short dtype tag for kernel names and keys: "f32", "bf16", "b8"...
const char* dtype_tag(DType t);
/// Storage type name of `t` in the kernel language, as a buffer of t holds it: "f32", "f16",
/// "bf16s" (raw 16 bits), "i8".. "u64", "b8" (one byte 0/1).
const char* storage_type(DType t);
/// The type values of `t` are computed in: "float" for f32/f16/bf16 (as the ref backend's
/// compute_t), "f64", "int" for i8/i16/i32, "uint" for u8/u16/u32, "i64", "u64", "bool" for b8.
const char* compute_type(DType t);
/// Expression: the element `elem` (e.g. "src[o]") of a buffer of dtype t, as compute_type(t).
/// bf16 widens its raw bits (<< 16); bool is `byte != 0`.
std::string load(DType t, const std::string& elem);
/// Expression: the compute_type(t) value `v` as storage_type(t), ready to assign to a buffer
/// element: f16 rounds to nearest even, bf16 rounds as BFloat16::from_float (RNE, NaN kept quiet),
/// narrow integers wrap (as C++), bool becomes 1/0.
std::string store(DType t, const std::string& v);
/// Expression: value `v` of compute_type(from) as compute_type(to) with the ref backend's cast
/// semantics: float -> integer truncates toward zero, saturates out of range and maps NaN to 0;
/// integer -> narrower integer wraps; anything -> bool is `!= 0` (NaN -> true); bool -> 0/1;
/// f64 -> f16/bf16 goes through float (the rounding to 16 bits happens in store()).
/// `v` may be evaluated more than once: pass a variable or a cheap expression.
std::string convert(DType from, DType to, const std::string& v);
/// Throws ember::Error naming `op` and t when the device lacks the features t needs
/// (f16: Caps::f16; f64: f64; i64/u64: i64; i8/u8/bool: i8; i16/u16/bf16: i16).
void check_dtype(const char* op, DType t, const Caps& caps);
/// Whether the device can store and compute dtype t.
bool supports(DType t, const Caps& caps);

// ---- the params block ----

/// Builds the 32-bit words a kernel reads with P_U/P_I/P_F/P_D. Each append returns the index of
/// its first word, to be baked into the kernel source (the layout depends on ranks only, never on
/// shapes, so kernels are reused across shapes).
class Params {
 public:
  uint32_t u32(uint32_t v);
  /// Throws ember::Error naming `op` if v does not fit in int32.
  uint32_t i32(int64_t v, const char* op);
  uint32_t f32(float v);
  /// Two words (low, high) of the IEEE double: read with P_D(k).
  uint32_t f64(double v);
  /// Two words (low, high): read as P_U(k) | u64(P_U(k + 1)) << 32.
  uint32_t u64(uint64_t v);
  /// A tensor's view: offset, sizes[rank], strides[rank] (elements, int32). Throws ember::Error
  /// naming `op` when an element offset of the view (or its numel) needs more than 31 bits.
  uint32_t tensor(const Tensor& t, const char* op);
  /// The same layout from raw numbers.
  uint32_t strided(int64_t offset, const std::vector<int64_t>& sizes,
                   const std::vector<int64_t>& strides, const char* op);
  const std::vector<uint32_t>& words() const { return words_; }
  /// The words, at least one (a params block may not be empty).
  std::vector<uint32_t> take();

 private:
  std::vector<uint32_t> words_;
};

// ---- strided indexing ----

/// Statements declaring `int <var>` = the element offset (offset + sum coord * stride) of the
/// element at row-major linear index `lin` (a uint expression) of a rank-`rank` view whose params
/// start at word `base` (laid out by Params::tensor).
std::string offset_code(const std::string& var, const std::string& lin, int rank, uint32_t base);

/// Several same-shape operands iterated together, with dims merged where every operand is
/// contiguous across them and size-1 dims dropped (so most kernels see rank 0 or 1).
struct Iter {
  std::vector<int64_t> sizes;                 // merged shape (rank = sizes.size())
  std::vector<int64_t> offsets;               // per operand
  std::vector<std::vector<int64_t>> strides;  // per operand, per merged dim
  int64_t numel = 1;
  int rank() const { return int(sizes.size()); }
  /// For rank 1, one letter per operand: 'c' (stride 1), 'b' (stride 0, broadcast) or 's'
  /// (other strides); empty for other ranks. Kernels specialise on it (a runtime stride keeps
  /// CPU OpenCL drivers from vectorising loads) and put it in their key.
  std::string access() const;
};
/// The iteration over `ts` (all of ts[0]'s shape; strides may be 0, negative or permuted).
Iter make_iter(const std::vector<Tensor>& ts);
/// The iteration over `shape` for operands at `offsets` with strides strides[k], dims merged by
/// core/merge_dims.h (an empty shape: no dims, numel 0).
Iter merged_iter(const Shape& shape, std::vector<int64_t> offsets,
                 const std::vector<Strides>& strides);
/// Appends an Iter: numel, sizes[rank], then per operand offset, strides[rank]. Returns the base.
/// Throws ember::Error naming `op` when an offset needs more than 31 bits.
uint32_t add_iter(Params& p, const Iter& it, const char* op);
/// Statements declaring `int <vars[k]>` = operand k's element offset at linear index `lin`, for
/// an Iter of rank `rank` with `vars.size()` operands added at params word `base`. The element
/// count is P_U(base).
std::string iter_code(const std::vector<std::string>& vars, const std::string& lin, int rank,
                      uint32_t base);

// ---- launches and kernel caching ----

/// `for (uint <var> = GLOBAL_ID; <var> < <n>; <var> += GLOBAL_SIZE)` (no braces).
std::string grid_loop(const std::string& var, const std::string& n);
/// Groups for a grid-stride launch over n items: ceil(n / local_size) capped at
/// caps.max_groups_x, at least 1.
uint32_t groups_1d(int64_t n, uint32_t local_size, const Caps& caps);
/// A 1-d grid-stride launch of `k` over n items.
Launch launch_1d(std::shared_ptr<const Kernel> k, std::vector<Binding> bindings,
                 std::vector<uint32_t> params, int64_t n, const Caps& caps);
/// The kernel cached under `key` (plus dialect and caps); `make` builds its definition on the
/// first use only, so a lowering skips string building for kernels it has seen.
std::shared_ptr<const Kernel> cached_kernel(const std::string& key, Dialect d, const Caps& caps,
                                            const std::function<KernelDef()>& make);
/// The same for a kir kernel.
std::shared_ptr<const Kernel> cached_kernel(const std::string& key, Dialect d, const Caps& caps,
                                            const std::function<kir::Kernel()>& make);
/// The number of distinct kernels cached_kernel has built (for reports and tests).
size_t cached_kernel_count();

// ---- kir helpers ----

/// v (kir::compute_of(from)) as kir::compute_of(to) with the ref backend's cast semantics (as
/// convert above): float -> integer truncates, saturates and maps NaN to 0 (a helper function
/// ember_sat_<to>_<from> in k); integers wrap; anything -> bool is != 0; bool -> 0/1.
kir::Expr convert(kir::Kernel& k, DType from, DType to, kir::Expr v);
/// Declares i32 local `var` = the element offset of row-major index `lin` (u32) in a
/// rank-`rank` view whose params start at word `base` (Params::tensor's layout); returns it.
kir::Expr offset_of(kir::Kernel& k, const std::string& var, kir::Expr lin, int rank, uint32_t base);
/// Declares i32 locals vars[k] = operand k's element offset at linear index `lin` (u32) of an
/// Iter of rank `rank` added at params word `base` (add_iter's layout); returns them.
std::vector<kir::Expr> iter_offsets(kir::Kernel& k, const std::vector<std::string>& vars,
                                    kir::Expr lin, int rank, uint32_t base);

// ---- the kernel library (used by render) ----

/// Definitions (in `d`) of the library functions that `code` calls, with their dependencies, in
/// dependency order: bf16 conversions (ember_bf16_from_float/ember_bf16_to_float), saturating
/// float -> integer conversions (ember_sat_<to>_<from>), and the double-precision math that GLSL
/// lacks (ember_exp_f64, ember_log_f64, ...; see math_f64.cpp). Names start with `ember_`.
std::string library_code(const std::string& code, Dialect d);

}  // namespace ember::codegen
