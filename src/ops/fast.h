// Fused ops (as MLX's mx::fast::): each offers one optional fused kernel (src/ir/fused.h) to the
// backend of its input's device and returns the result when that backend takes it, or an
// undefined Tensor when it does not (not accelerated for these dtypes, layouts or shapes; `ref`
// never fuses). The caller then runs the composite written with tensor ops, which stays the
// semantic reference: a fused result equals it up to rounding. A result returned with grad
// records its own backward rule (named as torch's: SoftmaxBackward, LayerNormBackward,
// ConvolutionBackward, MaxPoolBackward...); that rule uses the fused backward kernels where the
// backend has them and the composite formulas otherwise, and always the composite when the
// incoming gradient or a saved operand carries history (a create_graph backward), so the
// gradient is differentiable again.
//
// Internal: the caller has validated the arguments (ranks, shapes, dtypes, devices, geometry)
// as documented per function; these check nothing and throw only what the backend or the saved
// tensors' version check throws. Implementation: src/ops/fast.cpp (softmax, norms, pooling) and
// src/ops/fast_conv.cpp (convolutions).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "ember/tensor.h"

namespace ember::ops::fast {

/// softmax (log: log_softmax) of x along dim, as torch.softmax / torch.log_softmax: x has rank
/// >= 1 and a compute dtype (f32 or f64: the caller upcasts f16/bf16), dim is wrapped
/// (0 <= dim < rank). Returns a contiguous tensor of x's shape and dtype, or undefined.
/// Backward (SoftmaxBackward / LogSoftmaxBackward, from the saved output y):
/// softmax: dx = y (g - sum(g y)); log_softmax: dx = g - exp(y) sum(g).
Tensor softmax(const Tensor& x, int64_t dim, bool log);

/// layer_norm of x over its trailing dims `normalized_shape` (x's trailing sizes), as
/// torch.nn.functional.layer_norm: x in a compute dtype (f32 / f64); weight and bias undefined
/// or of shape normalized_shape. Undefined (not offered) unless weight and bias, where given,
/// have x's dtype. Returns a contiguous tensor of x's shape and dtype, or undefined. Backward
/// (LayerNormBackward) from the saved x and weight.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const Shape& normalized_shape, double eps);

/// rms_norm of x over its trailing dims `normalized_shape`, as torch.nn.functional.rms_norm:
/// y = x / sqrt(mean(x^2) + eps) * weight. As layer_norm for dtypes, shapes and the result;
/// backward RmsNormBackward.
Tensor rms_norm(const Tensor& x, const Tensor& weight, const Shape& normalized_shape, double eps);

/// Convolution of x [N, C_in, *S] (1 to 3 spatial dims) with weight [C_out, C_in / groups, *K]
/// and bias (undefined or [C_out]), as torch.nn.functional.conv{1,2,3}d with padding pad_begin
/// before and pad_end after each spatial dim (zeros): the result is [N, C_out, *O] with O_d =
/// (S_d + pad_begin_d + pad_end_d - dilation_d (K_d - 1) - 1) / stride_d + 1 >= 1, laid out in
/// `format`. x, weight and bias share one floating dtype and device; stride, pad_begin,
/// pad_end and dilation have one value per spatial dim. Returns the result or undefined.
/// Backward (ConvolutionBackward): the backend's fused data / weight gradients where it takes
/// them, else the adjoints of the composite (im2col + matmul): col2im of weight^T g, and
/// g @ im2col(x)^T summed over the batch.
Tensor conv(const Tensor& x, const Tensor& weight, const Tensor& bias,
            const std::vector<int64_t>& stride, const std::vector<int64_t>& pad_begin,
            const std::vector<int64_t>& pad_end, const std::vector<int64_t>& dilation,
            int64_t groups, MemoryFormat format);

/// Transposed convolution of x [N, C_in, *S] with weight [C_in, C_out / groups, *K] and bias
/// (undefined or [C_out]), as torch.nn.functional.conv_transpose{1,2,3}d: the result is
/// [N, C_out, *O], O_d = (S_d - 1) stride_d - 2 padding_d + dilation_d (K_d - 1) +
/// output_padding_d + 1 >= 1, contiguous; one floating dtype and device. Computed as the input
/// gradient of the convolution it transposes, whose end padding is padding - output_padding:
/// undefined when that is negative in some dim, when x, weight or bias needs grad (no backward
/// rule is recorded), or when the backend does not take it.
Tensor conv_transpose(const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                      const std::vector<int64_t>& output_padding,
                      const std::vector<int64_t>& dilation, int64_t groups);

/// The composite gradient of a pooling that pool() falls back to in backward:
/// (x: the forward's input, undefined for avg; g: [N, C, *out]) -> dx of x's shape.
using PoolGrad = std::function<Tensor(const Tensor& x, const Tensor& g)>;

/// Max or average pooling of x [N, C, *S] (1 to 3 spatial dims, non-empty) into [N, C, *out]
/// laid out in `format`, with torch's window rules (torch.nn.functional.{max,avg}_pool{1,2,3}d
/// without divisor_override): tap k of output o reads o * stride - padding + k * dilation (pad
/// taps: -inf for max; for avg counted in the divisor when count_include_pad, avg's dilation is
/// 1). `out` is the caller's output size per dim (ceil_mode included); kernel, stride, padding,
/// dilation and out have one value per spatial dim. Undefined (not offered) where the fused
/// op's semantics differ from torch's: an avg window with count_include_pad reaching past the
/// padded input (torch clips its divisor) or a max window without an in-bounds tap (torch gives
/// -inf). Returns the result or undefined. Backward (MaxPoolBackward / AvgPoolBackward): the
/// backend's fused gradient where it takes it, else `composite_grad`.
Tensor pool(const Tensor& x, bool is_max, const std::vector<int64_t>& kernel,
            const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
            const std::vector<int64_t>& dilation, const std::vector<int64_t>& out,
            bool count_include_pad, MemoryFormat format, PoolGrad composite_grad);

}  // namespace ember::ops::fast
