// Normalization layers in functional form (as torch.nn.functional). Inputs are floating
// (f32 f64 f16 bf16); f16/bf16 statistics are computed in f32 and the result is rounded back to
// the input dtype. Optional tensors (weight, bias, running stats) are passed as an undefined
// Tensor() to omit them. All are composites of public tensor ops (mean, var, rsqrt...).
// Errors: ember::Error tagged with the op name for an undefined input, a non-floating input,
// shape mismatches (naming both shapes), a wrong parameter shape, or mixed devices.
#pragma once
#include <optional>

#include "ember/tensor.h"

namespace ember::nn::functional {

/// Normalizes over the trailing dims given by normalized_shape (input [*, normalized_shape]):
/// (x - mean) / sqrt(var + eps) * weight + bias, with the biased variance (as
/// torch.nn.functional.layer_norm). weight and bias (optional) have shape normalized_shape.
/// Throws "[layer_norm] ..." when input's trailing dims differ from normalized_shape.
Tensor layer_norm(const Tensor& input, const Shape& normalized_shape,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                  double eps = 1e-5);

/// input [N, C, *]: the C channels are split into num_groups groups and each (sample, group)
/// is normalized over its channels and spatial dims with the biased variance; then the
/// per-channel affine weight [C] and bias [C] (optional) are applied (Wu & He 2018; as
/// torch.nn.functional.group_norm). Throws unless C is divisible by num_groups and input has at
/// least 2 dims.
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);

/// input [N, C, *] (or [N, C]); running_mean, running_var, weight, bias are [C] (each optional).
/// training: normalize with the batch statistics over every dim but 1 (biased variance), and
/// when the running stats are given UPDATE them in place:
///   running_mean = (1 - momentum) * running_mean + momentum * batch_mean
///   running_var  = (1 - momentum) * running_var  + momentum * batch_var_unbiased
/// (n / (n - 1) correction, n = numel / C), as torch. Not training: normalize with the running
/// stats, which must then be given. (Ioffe & Szegedy 2015; as torch.nn.functional.batch_norm.)
/// Throws when a parameter is not [C], when training and a channel holds a single value
/// ("Expected more than 1 value per channel when training"), or when !training and a running
/// stat is missing.
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                  bool training = false, double momentum = 0.1, double eps = 1e-5);

/// input [N, C, *]: each (sample, channel) is normalized over its spatial dims (biased variance);
/// weight/bias [C] optional. When use_input_stats and running stats are given they are updated
/// in place with the mean over the batch of the per-instance statistics (unbiased variance), as
/// torch; when !use_input_stats the running stats are used (and required). (Ulyanov et al. 2016;
/// as torch.nn.functional.instance_norm.) Throws when input has fewer than 2 dims, when
/// use_input_stats and an instance holds a single value, or for a parameter shape other than [C].
Tensor instance_norm(const Tensor& input, const Tensor& running_mean = Tensor(),
                     const Tensor& running_var = Tensor(), const Tensor& weight = Tensor(),
                     const Tensor& bias = Tensor(), bool use_input_stats = true,
                     double momentum = 0.1, double eps = 1e-5);

/// x / sqrt(mean(x^2 over the trailing normalized_shape dims) + eps) * weight (Zhang & Sennrich
/// 2019; as torch.nn.functional.rms_norm, torch 2.4). eps defaults to the machine epsilon of the
/// dtype torch computes in (std::numeric_limits<opmath_type>::epsilon() in torch's kernel):
/// 2.22e-16 for f64 and 1.1920929e-7 (float's) for f32, f16 and bf16.
/// weight [normalized_shape] optional. Throws as layer_norm for a shape mismatch.
Tensor rms_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                std::optional<double> eps = std::nullopt);

/// x / max(||x||_p along dim, eps) (as torch.nn.functional.normalize).
Tensor normalize(const Tensor& input, double p = 2.0, int64_t dim = 1, double eps = 1e-12);

}  // namespace ember::nn::functional
