// The primitive operations a frontend call lowers to: what a backend must execute.
// Every output is allocated by the frontend before the op is issued; inputs are already broadcast
// (stride-0 views) to the output shape and converted to the compute dtype unless an op says
// otherwise. Composite ops (softmax, norms, losses, conv via im2col + matmul) are written with
// tensor ops above the backends, so a backend only needs these.
#pragma once
#include <cstdint>
#include <variant>
#include <vector>

#include "ember/tensor.h"

namespace ember::ir {

enum class UnaryOp : uint8_t {  // each op: one row in ir/op_traits.cpp
  neg,
  abs,
  sign,
  exp,
  exp2,
  expm1,
  log,
  log2,
  log10,
  log1p,
  sqrt,
  rsqrt,
  square,
  reciprocal,
  sin,
  cos,
  tan,
  asin,
  acos,
  atan,
  sinh,
  cosh,
  tanh,
  asinh,
  acosh,
  atanh,
  erf,
  erfinv,
  floor,
  ceil,
  round,
  trunc,
  frac,
  bitwise_not,
  logical_not,  // logical_not: out is bool
  isnan,
  isinf,
  isfinite,    // out is bool
  nan_to_num,  // p0 = nan, p1 = +inf, p2 = -inf
  relu,
  sigmoid,
  log_sigmoid,
  silu,
  mish,
  gelu,
  gelu_tanh,
  selu,
  hardsigmoid,
  hardswish,
  elu,         // p0 = alpha
  leaky_relu,  // p0 = negative_slope
  softplus,    // p0 = beta, p1 = threshold
};

enum class BinaryOp : uint8_t {  // each op: one row in ir/op_traits.cpp
  add,
  sub,
  mul,
  div,
  div_floor,
  div_trunc,
  remainder,
  fmod,
  pow,
  atan2,
  hypot,
  minimum,
  maximum,
  copysign,
  bitwise_and,
  bitwise_or,
  bitwise_xor,
  shift_left,
  shift_right,
  eq,
  ne,
  lt,
  le,
  gt,
  ge,
  logical_and,
  logical_or,
  logical_xor,  // out is bool
};

enum class ReduceOp : uint8_t { sum, prod, max, min, any, all };
enum class ScanOp : uint8_t { cumsum, cumprod, cummax, cummin };
enum class ScatterReduce : uint8_t { none, sum, prod, mean, amax, amin };
enum class RandomDist : uint8_t { uniform, normal, bernoulli, randint };
enum class InterpMode : uint8_t { nearest, linear, cubic, nearest_exact };  // linear: 1d/2d/3d

/// dst = cast(src); src is broadcast to dst's shape, dtypes may differ. dst may be on another
/// device only for Copy (the frontend routes through host memory).
struct Copy {
  Tensor src, dst;
};
struct Fill {
  Tensor dst;
  Scalar value;
};
struct Unary {
  UnaryOp op;
  Tensor src, dst;
  double p0 = 0, p1 = 0, p2 = 0;
};
/// a, b and dst have dst's shape; a and b share a dtype; dst is that dtype or bool.
struct Binary {
  BinaryOp op;
  Tensor a, b, dst;
};
/// dst = cond ? a : b; cond bool; a, b, dst share a dtype; all have dst's shape.
struct Where {
  Tensor cond, a, b, dst;
};
/// Reduces `dims` (sorted, unique) of src into dst, which has src's shape with those dims = 1.
/// For max/min, `indices` (i64, dst's shape) may be defined: first index of the extreme along
/// the single reduced dim. Accumulation: f64 for floats, i64/u64 for integers; NaN propagates.
struct Reduce {
  ReduceOp op;
  Tensor src;
  std::vector<int64_t> dims;
  Tensor dst, indices;
};
/// Inclusive scan along dim; indices (i64) for cummax/cummin.
struct Scan {
  ScanOp op;
  Tensor src;
  int64_t dim;
  Tensor dst, indices;
};
/// Stable sort along dim into values and indices (i64). NaN sorts as the largest value.
struct Sort {
  Tensor src;
  int64_t dim;
  bool descending;
  Tensor values, indices;
};
/// dst[i][j][k] = src[index[i][j][k]][j][k] (dim 0); index i64 with dst's shape, in range.
struct Gather {
  Tensor src;
  int64_t dim;
  Tensor index, dst;
};
/// In place on dst: dst[index[i][j]][j] (op)= src[i][j] over index's shape; index in range.
/// With `include_self` false the reduction starts from the scattered values only.
struct Scatter {
  Tensor dst;
  int64_t dim;
  Tensor index, src;
  ScatterReduce reduce;
  bool include_self = true;
};
/// dst = src.index_select(dim, index); index 1-d i64 in range.
struct IndexSelect {
  Tensor src;
  int64_t dim;
  Tensor index, dst;
};
/// In place: dst.select(dim, index[i]) += alpha * src.select(dim, i).
struct IndexAdd {
  Tensor dst;
  int64_t dim;
  Tensor index, src;
  Scalar alpha;
};
/// dst [count, rank] i64: coordinates of non-zero elements of src in row-major order.
struct Nonzero {
  Tensor src, dst;
};
/// dst[b] = a[b] @ b_[b]; a [B, M, K], b [B, K, N], dst [B, M, N]; any strides; one dtype.
struct Matmul {
  Tensor a, b, dst;
};
/// src [N, C, *S] (S = 1..3 spatial dims) -> dst [N, C * prod(kernel), L]: each column is one
/// window (channel-major, then kernel offsets row-major); out-of-range taps read pad_value.
struct Im2col {
  Tensor src, dst;
  std::vector<int64_t> kernel, stride, pad_begin, dilation;
  Scalar pad_value = 0;
  /// Windows per spatial dim (prod = L); empty: floor((S + 2 pad - dil (k - 1) - 1) / stride) + 1.
  std::vector<int64_t> out_size = {};
};
/// The adjoint of Im2col: dst [N, C, *S] (zeroed by the caller) += each column's taps.
struct Col2im {
  Tensor src, dst;
  std::vector<int64_t> kernel, stride, pad_begin, dilation;
  std::vector<int64_t> out_size = {};  // windows per spatial dim, as Im2col
};
/// Adaptive pooling over the spatial dims of src [N, C, *S] into dst [N, C, *O] as
/// torch.nn.functional.adaptive_{avg,max}_pool: window [floor(i*S/O), ceil((i+1)*S/O)).
/// indices (i64, flat index into S) for max.
struct AdaptivePool {
  bool max;
  Tensor src, dst, indices;
};
/// Resize the spatial dims of src [N, C, *S] into dst [N, C, *O]. `scales` (per spatial dim, 0 =
/// use sizes) as torch's scale_factor with recompute_scale_factor=False. nearest is torch's
/// legacy 'nearest', nearest_exact 'nearest-exact'; linear/cubic honour align_corners; cubic uses A
/// = -0.75 with edge clamping.
struct Interpolate {
  InterpMode mode;
  bool align_corners;
  std::vector<double> scales;
  Tensor src, dst;
};
/// Fills dst (contiguous) with draws from Philox-4x32-10 keyed by (seed, offset + element index):
/// uniform [p0, p1), normal (mean p0, std p1; Box-Muller), bernoulli (prob p0, or `prob`
/// element-wise when defined), randint [p0, p1).
struct Random {
  RandomDist dist;
  Tensor dst;
  double p0 = 0, p1 = 1;
  uint64_t seed = 0, offset = 0;
  Tensor prob;
};

using Op =
    std::variant<Copy, Fill, Unary, Binary, Where, Reduce, Scan, Sort, Gather, Scatter, IndexSelect,
                 IndexAdd, Nonzero, Matmul, Im2col, Col2im, AdaptivePool, Interpolate, Random>;

const char* name(UnaryOp op);
const char* name(BinaryOp op);
const char* name(const Op& op);
/// The public op a user calls for `op`, the tag of its errors (name() is the IR's, also used in
/// kernel keys): "div" for div_floor and div_trunc, "gelu" for gelu_tanh, else name(op).
const char* user_name(UnaryOp op);
const char* user_name(BinaryOp op);
/// What tells `op` apart among the ops of its user_name, for error messages:
/// "rounding_mode='floor'" (div_floor), "rounding_mode='trunc'" (div_trunc), else "".
const char* user_variant(BinaryOp op);

/// Thrown by host kernels on an integer division or remainder by zero, so that the frontend can
/// rethrow it as an ember::Error naming the call the user made and its operands.
struct IntegerDivisionByZero : Error {
  using Error::Error;
};

}  // namespace ember::ir
