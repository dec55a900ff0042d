// Optional fused operations: composites (softmax, norms, convolution) that a backend MAY run as
// one kernel. Unlike the primitives in ops.h, no backend has to implement them: the frontend
// offers one through Backend::execute_fused() and, when that returns false (not accelerated for
// these dtypes/layouts/shapes), runs the composite written with tensor ops, which stays the
// semantic reference (on `ref` it always does). Kept apart from ir::Op so that backends visiting
// ir::Op with std::visit are not affected by additions here.
//
// As in ops.h, dst is allocated by the frontend before the op is offered, inputs are already in
// the compute dtype (f16/bf16 upcast to f32), and a backend that returns true must have written
// every element of dst. A backend returning false must not have written anything.
#pragma once
#include <cstdint>
#include <variant>
#include <vector>

#include "ember/tensor.h"

namespace ember::ir {

/// dst = softmax(src) along `dim` (log: log_softmax), as torch.softmax / torch.log_softmax:
///   m = max_j src[..j..]; e_j = exp(src_j - m); softmax_j = e_j / sum_j e_j;
///   log_softmax_j = (src_j - m) - log(sum_j e_j).
/// A NaN anywhere in the slice makes the slice NaN; a slice of all -inf gives NaN (as torch).
/// src and dst have the same shape (rank >= 1) and floating dtype; either may be strided.
struct Softmax {
  Tensor src, dst;
  int64_t dim = -1;  // wrapped: 0 <= dim < rank
  bool log = false;
};

enum class NormKind : uint8_t { layer, rms };

/// Normalization over the trailing `inner` elements of each row, src viewed as [outer, inner]
/// (the frontend checked normalized_shape; inner = its numel):
///   layer: y = (x - mean) / sqrt(var + eps), var the biased (1/inner) variance;
///   rms:   y = x / sqrt(mean(x^2) + eps);
/// then dst = y * weight + bias (weight / bias: undefined or [inner] elements broadcast over
/// rows, already in src's dtype; bias only for layer). src, dst same shape and floating dtype.
struct Norm {
  NormKind kind = NormKind::layer;
  Tensor src, weight, bias, dst;
  int64_t inner = 1;
  double eps = 1e-5;
};

/// Forward convolution, as torch.nn.functional.conv{1,2,3}d without the batching sugar:
/// src [N, C_in, *S], weight [C_out, C_in / groups, *K], bias undefined or [C_out],
/// dst [N, C_out, *O] with O_d = (S_d + pad_begin_d + pad_end_d - dilation_d (K_d - 1) - 1)
/// / stride_d + 1 (the frontend computed and checked O; padding reads zeros):
///   dst[n, co, o] = bias[co] + sum_{ci in group(co), k} src[n, ci, o * stride - pad_begin +
///   k * dilation] * weight[co, ci - group_start, k].
/// 1 <= number of spatial dims <= 3; all tensors share one floating dtype.
struct Conv {
  Tensor src, weight, bias, dst;
  std::vector<int64_t> stride, pad_begin, pad_end, dilation;
  int64_t groups = 1;
  /// weight's Storage::writes when the op was made (kUnknownWrites: not taken): equal values
  /// mean equal weights, so a backend may reuse what it derived from them (a reordered copy).
  uint64_t weight_writes = kUnknownWrites;
  static constexpr uint64_t kUnknownWrites = ~uint64_t(0);
};

/// Gradient of Conv with respect to its input, for the geometry of `Conv` (same fields):
///   grad_src[n, ci, s] = sum over (co in group(ci), k, o) with o * stride - pad_begin +
///   k * dilation == s of grad_dst[n, co, o] * weight[co, ci - group_start, k]
/// (the adjoint of the forward: a transposed convolution). grad_dst [N, C_out, *O], weight
/// [C_out, C_in / groups, *K], grad_src [N, C_in, *S]; one floating dtype.
struct ConvBackwardData {
  Tensor grad_dst, weight, grad_src;
  std::vector<int64_t> stride, pad_begin, pad_end, dilation;
  int64_t groups = 1;
};

/// Gradients of Conv with respect to its weight and bias, for the geometry of `Conv`:
///   grad_weight[co, ci - group_start, k] = sum_{n, o} grad_dst[n, co, o] *
///   src[n, ci, o * stride - pad_begin + k * dilation] (padding reads zeros);
///   grad_bias[co] = sum_{n, o} grad_dst[n, co, o] (grad_bias undefined: not wanted).
struct ConvBackwardWeights {
  Tensor src, grad_dst, grad_weight, grad_bias;
  std::vector<int64_t> stride, pad_begin, pad_end, dilation;
  int64_t groups = 1;
};

/// Max or average pooling, as torch.nn.functional.{max,avg}_pool{1,2,3}d without the batching
/// sugar, for windows the frontend checked against torch's rules: src [N, C, *S], dst [N, C, *O]
/// with O_d = (S_d + pad_begin_d + pad_end_d - dilation_d (K_d - 1) - 1) / stride_d + 1.
/// Tap k of output o reads s = o * stride - pad_begin + k * dilation; taps with s outside
/// [0, S) are padding:
///   max: dst[n, c, o] = the maximum over the in-bounds taps (padding never wins: torch pads
///        with -inf). A NaN tap makes it NaN. The frontend offers max only when every window
///        has an in-bounds tap;
///   avg: dst[n, c, o] = sum of the in-bounds taps / divisor, divisor = prod K when
///        count_include_pad, else the number of in-bounds taps (dilation is 1). The frontend
///        offers count_include_pad only when no window reaches past S + pad_begin (torch clips
///        its divisor there), so prod K is torch's divisor.
/// One dtype for src and dst; a backend may take only f32. 1 <= number of spatial dims <= 3.
struct Pool {
  bool is_max = true;
  Tensor src, dst;
  std::vector<int64_t> kernel, stride, pad_begin, pad_end, dilation;
  bool count_include_pad = true;
};

/// Gradient of Pool with respect to src, for the geometry of `Pool` (same fields):
///   max: grad_src[n, c, s] = sum of grad_dst[n, c, o] over the outputs o whose first maximal
///        in-bounds tap (in window order: the last spatial dim fastest) reads s; src is the
///        forward's input;
///   avg: grad_src[n, c, s] = sum over (o, k) reading s of grad_dst[n, c, o] / divisor(o)
///        (src is unused and may be undefined).
/// grad_dst [N, C, *O], grad_src [N, C, *S]; one floating dtype.
struct PoolBackward {
  bool is_max = true;
  Tensor src, grad_dst, grad_src;
  std::vector<int64_t> kernel, stride, pad_begin, pad_end, dilation;
  bool count_include_pad = true;
};

using Fused =
    std::variant<Softmax, Norm, Conv, ConvBackwardData, ConvBackwardWeights, Pool, PoolBackward>;

}  // namespace ember::ir
