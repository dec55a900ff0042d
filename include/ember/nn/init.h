// Parameter initializers, as torch.nn.init (torch 1.13). Every function fills `tensor` IN PLACE
// under a NoGradGuard (so it works on parameters that require grad), draws its random numbers
// from Ember's Philox generator of the tensor's device (reproducible with ember::manual_seed),
// and returns the tensor. Random initializers accept floating tensors (f32 f64 f16 bf16) only;
// constant_/zeros_/ones_/eye_ accept any dtype.
// Throws ember::Error tagged with the function name for an undefined tensor, a non-floating
// tensor where a floating one is required, or an invalid argument (named in the message).
#pragma once
#include <string>
#include <utility>

#include "ember/tensor.h"

namespace ember::nn::init {

/// "fan_in" or "fan_out".
enum class FanMode { FanIn, FanOut };

/// The recommended gain for a nonlinearity (as torch.nn.init.calculate_gain): "linear", the
/// conv*/conv_transpose* names and "sigmoid" -> 1; "tanh" -> 5/3; "relu" -> sqrt(2);
/// "leaky_relu" -> sqrt(2 / (1 + param^2)) (param = negative slope, default 0.01); "selu" -> 3/4.
/// Throws "[calculate_gain] unsupported nonlinearity ..." for any other name.
double calculate_gain(const std::string& nonlinearity, double param = 0.01);

/// (fan_in, fan_out) of a weight [out, in, *k] as torch's _calculate_fan_in_and_fan_out:
/// fan_in = in * prod(k), fan_out = out * prod(k). Throws for fewer than 2 dims.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);

/// U(a, b) (as torch.nn.init.uniform_). Throws if a > b.
Tensor uniform_(Tensor tensor, double a = 0.0, double b = 1.0);
/// N(mean, std^2) (as torch.nn.init.normal_). Throws if std < 0.
Tensor normal_(Tensor tensor, double mean = 0.0, double std = 1.0);
/// N(mean, std^2) truncated to [a, b] by inverse-CDF sampling, as torch.nn.init.trunc_normal_
/// (values are clamped to [a, b] at the end). Throws if a >= b or std <= 0.
Tensor trunc_normal_(Tensor tensor, double mean = 0.0, double std = 1.0, double a = -2.0,
                     double b = 2.0);
/// Fills with `val` (as torch.nn.init.constant_).
Tensor constant_(Tensor tensor, double val);
Tensor zeros_(Tensor tensor);
Tensor ones_(Tensor tensor);
/// The identity matrix for a 2-d tensor (as torch.nn.init.eye_). Throws for other ranks.
Tensor eye_(Tensor tensor);
/// U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio 2010; as
/// torch.nn.init.xavier_uniform_). Needs >= 2 dims.
Tensor xavier_uniform_(Tensor tensor, double gain = 1.0);
/// N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out)) (as torch.nn.init.xavier_normal_).
Tensor xavier_normal_(Tensor tensor, double gain = 1.0);
/// U(-bound, bound), bound = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity, a),
/// fan = fan_in or fan_out by mode (He et al. 2015; as torch.nn.init.kaiming_uniform_).
/// A tensor with a zero dim is left unchanged (torch warns). Needs >= 2 dims.
Tensor kaiming_uniform_(Tensor tensor, double a = 0.0, FanMode mode = FanMode::FanIn,
                        const std::string& nonlinearity = "leaky_relu");
/// N(0, std^2), std = gain / sqrt(fan) (as torch.nn.init.kaiming_normal_).
Tensor kaiming_normal_(Tensor tensor, double a = 0.0, FanMode mode = FanMode::FanIn,
                       const std::string& nonlinearity = "leaky_relu");
/// A (semi-)orthogonal matrix scaled by gain (Saxe et al. 2013; as torch.nn.init.orthogonal_):
/// the tensor is viewed as [rows = size(0), cols = numel / rows]; a N(0, 1) matrix (transposed
/// when rows < cols) is QR-factorized (modified Gram-Schmidt in f64 on the host), Q's columns
/// are multiplied by sign(diag(R)), so rows are orthonormal when rows <= cols (W W^T = I) and
/// columns otherwise. Throws for fewer than 2 dims.
Tensor orthogonal_(Tensor tensor, double gain = 1.0);

}  // namespace ember::nn::init
