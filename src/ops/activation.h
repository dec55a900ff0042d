// Frontends of the activation primitives (ir::Unary kinds that nn::functional's activations
// are): each validates the dtype, issues the primitive and records its backward rule, as the
// public element-wise ops do (detail::unary, src/ops/elementwise.cpp). nn calls these so that it
// never names the IR. Internal; the public API is ember/nn/functional/activation.h.
//
// Shapes: the result has x's shape and memory format. Dtypes: relu keeps integer dtypes and
// throws "[relu] is not supported for bool tensors"; leaky_relu takes floating dtypes only and
// throws "[leaky_relu] expects a floating-point tensor" otherwise; every other op promotes
// integer and bool input to f32 and keeps floating dtypes. All throw "[<op>] ..." for
// an undefined x ("tensor is undefined"). Implementation: src/ops/activation.cpp.
#pragma once
#include "ember/tensor.h"

namespace ember::ops {

/// max(x, 0).
Tensor relu(const Tensor& x);
/// x if x > 0 else negative_slope * x.
Tensor leaky_relu(const Tensor& x, double negative_slope);
/// x if x > 0 else alpha * (exp(x) - 1).
Tensor elu(const Tensor& x, double alpha);
/// 1.0507009873554805 * elu(x, 1.6732632423543772).
Tensor selu(const Tensor& x);
/// x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)); errors name "gelu".
Tensor gelu(const Tensor& x);
/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); errors name "gelu".
Tensor gelu_tanh(const Tensor& x);
/// x * sigmoid(x).
Tensor silu(const Tensor& x);
/// x * tanh(softplus(x)).
Tensor mish(const Tensor& x);
/// log(1 + exp(beta x)) / beta, and x where beta * x > threshold.
Tensor softplus(const Tensor& x, double beta, double threshold);
/// clamp(x / 6 + 1 / 2, 0, 1).
Tensor hardsigmoid(const Tensor& x);
/// x * hardsigmoid(x).
Tensor hardswish(const Tensor& x);
/// 1 / (1 + exp(-x)).
Tensor sigmoid(const Tensor& x);
/// log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)).
Tensor log_sigmoid(const Tensor& x);

}  // namespace ember::ops
