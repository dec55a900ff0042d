// Activations, softmax and dropout (as torch.nn.functional). Every function takes a tensor of any
// shape (0-d and empty included) and returns a new tensor of the same shape; none modifies its
// input. Floating-point ops accept f32 f64 f16 bf16; integer or bool input is promoted to f32 by
// the math activations (as torch's float-only kernels would require a cast first) unless stated
// otherwise. f16/bf16 are computed in float and rounded once, as torch's CPU kernels do.
// Errors: ember::Error tagged with the op name ("[softmax] ...") for an undefined tensor, a dim
// out of range, an invalid argument (p outside [0, 1], a negative threshold...), or a dtype the op
// does not accept.
#pragma once
#include <optional>
#include <string>

#include "ember/tensor.h"

namespace ember::nn::functional {

// ---- softmax family (numerically stable: the max along dim is subtracted first) ----
/// exp(x - max) / sum(exp(x - max)) along dim (as torch.nn.functional.softmax). When `dtype` is
/// given the input is cast to it first (as torch's dtype argument). Floating input only (integer
/// input throws unless a floating `dtype` is given). Empty dims give empty results.
Tensor softmax(const Tensor& input, int64_t dim, std::optional<DType> dtype = std::nullopt);
/// x - max - log(sum(exp(x - max))) along dim (as torch.nn.functional.log_softmax).
Tensor log_softmax(const Tensor& input, int64_t dim, std::optional<DType> dtype = std::nullopt);
/// softmax(-x) along dim (as torch.nn.functional.softmin).
Tensor softmin(const Tensor& input, int64_t dim, std::optional<DType> dtype = std::nullopt);

// ---- element-wise activations ----
/// max(x, 0). Keeps integer dtypes (as torch.relu); bool throws.
Tensor relu(const Tensor& input);
/// min(max(x, 0), 6) (as torch.nn.functional.relu6). Keeps integer dtypes.
Tensor relu6(const Tensor& input);
/// min(max(x, min_val), max_val) (as torch.nn.functional.hardtanh). Throws if min_val > max_val.
Tensor hardtanh(const Tensor& input, double min_val = -1.0, double max_val = 1.0);
/// x if x > 0 else negative_slope * x (as torch.nn.functional.leaky_relu). Floating only.
Tensor leaky_relu(const Tensor& input, double negative_slope = 0.01);
/// x if x > 0 else alpha * (exp(x) - 1) (as torch.nn.functional.elu).
Tensor elu(const Tensor& input, double alpha = 1.0);
/// scale * elu(x, alpha) with alpha = 1.6732632423543772, scale = 1.0507009873554805
/// (Klambauer et al. 2017; as torch.nn.functional.selu).
Tensor selu(const Tensor& input);
/// max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) (as torch.nn.functional.celu). alpha != 0.
Tensor celu(const Tensor& input, double alpha = 1.0);
/// approximate "none": x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)); "tanh":
/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (Hendrycks & Gimpel; as
/// torch.nn.functional.gelu). Any other string throws.
Tensor gelu(const Tensor& input, const std::string& approximate = "none");
/// x * sigmoid(x) (as torch.nn.functional.silu).
Tensor silu(const Tensor& input);
/// x * tanh(softplus(x)) (Misra 2019; as torch.nn.functional.mish).
Tensor mish(const Tensor& input);
/// log(1 + exp(beta x)) / beta, and x where beta * x > threshold (as
/// torch.nn.functional.softplus).
Tensor softplus(const Tensor& input, double beta = 1.0, double threshold = 20.0);
/// clamp(x / 6 + 1 / 2, 0, 1) (as torch.nn.functional.hardsigmoid).
Tensor hardsigmoid(const Tensor& input);
/// x * hardsigmoid(x) (as torch.nn.functional.hardswish).
Tensor hardswish(const Tensor& input);
/// 1 / (1 + exp(-x)) (as torch.sigmoid).
Tensor sigmoid(const Tensor& input);
/// log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)) (as torch.nn.functional.logsigmoid).
Tensor log_sigmoid(const Tensor& input);
Tensor logsigmoid(const Tensor& input);  // torch's spelling of log_sigmoid
/// tanh(x) (as torch.tanh).
Tensor tanh(const Tensor& input);
/// x / (1 + |x|) (as torch.nn.functional.softsign).
Tensor softsign(const Tensor& input);
/// x - tanh(x) (as torch.nn.functional.tanhshrink).
Tensor tanhshrink(const Tensor& input);
/// x where |x| > lambd, else 0 (as torch.nn.functional.hardshrink).
Tensor hardshrink(const Tensor& input, double lambd = 0.5);
/// x - lambd where x > lambd, x + lambd where x < -lambd, else 0 (as
/// torch.nn.functional.softshrink). Throws if lambd < 0.
Tensor softshrink(const Tensor& input, double lambd = 0.5);
/// x where x > threshold, else value (as torch.nn.functional.threshold). Keeps the dtype.
Tensor threshold(const Tensor& input, double threshold, double value);
/// a * sigmoid(b) where a, b are the two halves of input along dim (as torch.nn.functional.glu).
/// Throws when that dim's size is odd, or input is 0-d.
Tensor glu(const Tensor& input, int64_t dim = -1);
/// x if x >= 0 else weight * x (as torch.nn.functional.prelu). weight has 1 element or
/// input.size(1) elements (one per channel, dim 1 of input); throws otherwise.
Tensor prelu(const Tensor& input, const Tensor& weight);

// ---- dropout ----
/// Zeroes each element with probability p and scales the rest by 1 / (1 - p) (inverted dropout,
/// as torch.nn.functional.dropout). Identity (the input itself, no copy) when !training or
/// p == 0; all zeros when p == 1. The mask comes from ember::bernoulli on input's device, so
/// the result is deterministic for a given manual_seed. Floating input only. Throws when p is
/// outside [0, 1].
Tensor dropout(const Tensor& input, double p = 0.5, bool training = true);
/// Channel-wise dropout (as torch.nn.functional.dropout1d/2d/3d): zeroes whole channels of
/// input [N, C, *] with probability p, scaling the rest by 1 / (1 - p). dropout1d takes [N, C, L]
/// or unbatched [C, L]; dropout2d [N, C, H, W] (3-d input is read as [N, C, L], torch's
/// historical behaviour); dropout3d [N, C, D, H, W] or unbatched [C, D, H, W]. Throws for other
/// ranks and for p outside [0, 1].
Tensor dropout1d(const Tensor& input, double p = 0.5, bool training = true);
Tensor dropout2d(const Tensor& input, double p = 0.5, bool training = true);
Tensor dropout3d(const Tensor& input, double p = 0.5, bool training = true);

}  // namespace ember::nn::functional
