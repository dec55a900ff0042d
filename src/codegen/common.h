// Helpers every kernel family uses to build kir kernels (kir.h): dtype tags and checks, the
// params block, strided indexing, ref cast semantics, 1-d launches and the kernel cache.
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
/// Throws ember::Error naming `op` and t when the device lacks the features t needs
/// (f16: Caps::f16; f64: f64; i64/u64: i64; i8/u8/bool: i8; i16/u16/bf16: i16).
void check_dtype(const char* op, DType t, const Caps& caps);
/// Whether the device can store and compute dtype t.
bool supports(DType t, const Caps& caps);

// ---- the params block ----

/// Builds the 32-bit words a kernel reads with kir::param_u32/i32/f32/f64/u64. Each append returns
/// the index of its first word, to be baked into the kernel source (the layout depends on ranks
/// only, never on shapes, so kernels are reused across shapes).
class Params {
 public:
  uint32_t u32(uint32_t v);
  /// Throws ember::Error naming `op` if v does not fit in int32.
  uint32_t i32(int64_t v, const char* op);
  uint32_t f32(float v);
  /// Two words (low, high) of the IEEE double: read with kir::param_f64(k).
  uint32_t f64(double v);
  /// Two words (low, high): read with kir::param_u64(k).
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
/// Appends an Iter: numel, sizes[rank], a FastDiv (m, s) for each of sizes[1..rank), then per
/// operand offset, strides[rank]. Returns the base. Throws ember::Error naming `op` when an
/// offset needs more than 31 bits.
uint32_t add_iter(Params& p, const Iter& it, const char* op);
/// n / d for every u32 n < 2^31 as (mul_hi(n, m) + n) >> s, so kernels divide an index by a
/// runtime size without an integer division (lane by lane on CPU devices, tens of cycles on
/// GPUs). Granlund & Montgomery, "Division by invariant integers using multiplication" (PLDI
/// 1994), the round-up method: s = ceil(log2 d), m = floor(2^32 (2^s - d) / d) + 1. d = 0: {0, 0}.
struct FastDiv {
  uint32_t m = 0, s = 0;
};
FastDiv fast_div(uint32_t d);
// ---- launches and kernel caching ----

/// Groups for a grid-stride launch over n items: ceil(n / local_size) capped at
/// caps.max_groups_x, at least 1.
uint32_t groups_1d(int64_t n, uint32_t local_size, const Caps& caps);
/// A 1-d grid-stride launch of `k` over n items.
Launch launch_1d(std::shared_ptr<const Kernel> k, std::vector<Binding> bindings,
                 std::vector<uint32_t> params, int64_t n, const Caps& caps);
/// The kernel cached under `key` (plus dialect and caps), rendered by kir::render; `make` builds
/// it on the first use only, so a lowering skips kernel building for kernels it has seen.
std::shared_ptr<const Kernel> cached_kernel(const std::string& key, Dialect d, const Caps& caps,
                                            const std::function<kir::Kernel()>& make);
/// The number of distinct kernels cached_kernel has built (for reports and tests).
size_t cached_kernel_count();

// ---- kir helpers ----

/// v (kir::compute_of(from)) as kir::compute_of(to) with the ref backend's cast semantics:
/// float -> integer truncates toward zero, saturates out of range and maps NaN to 0 (a helper
/// function ember_sat_<to>_<from> in k); integer -> narrower integer wraps (as C++); anything ->
/// bool is != 0 (NaN -> true); bool -> 0/1; f64 -> f16/bf16 goes through f32 (the rounding to 16
/// bits happens in the store).
kir::Expr convert(kir::Kernel& k, DType from, DType to, kir::Expr v);
/// Declares i32 local `var` = the element offset of row-major index `lin` (u32) in a
/// rank-`rank` view whose params start at word `base` (Params::tensor's layout); returns it.
kir::Expr offset_of(kir::Kernel& k, const std::string& var, kir::Expr lin, int rank, uint32_t base);
/// Declares i32 locals vars[k] = operand k's element offset at linear index `lin` (u32) of an
/// Iter of rank `rank` added at params word `base` (add_iter's layout; `vars` names all of its
/// operands); returns them. Sizes divide through their FastDiv.
std::vector<kir::Expr> iter_offsets(kir::Kernel& k, const std::vector<std::string>& vars,
                                    kir::Expr lin, int rank, uint32_t base);

}  // namespace ember::codegen
