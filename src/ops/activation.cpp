// Activation primitives (activation.h): one ir::Unary kind each, through detail::unary.
#include "ops/activation.h"

#include "tensor/internal.h"

namespace ember::ops {

using detail::unary;
using ir::UnaryOp;

Tensor relu(const Tensor& x) { return unary(UnaryOp::relu, x); }
Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return unary(UnaryOp::leaky_relu, x, negative_slope);
}
Tensor elu(const Tensor& x, double alpha) { return unary(UnaryOp::elu, x, alpha); }
Tensor selu(const Tensor& x) { return unary(UnaryOp::selu, x); }
Tensor gelu(const Tensor& x) { return unary(UnaryOp::gelu, x); }
Tensor gelu_tanh(const Tensor& x) { return unary(UnaryOp::gelu_tanh, x); }
Tensor silu(const Tensor& x) { return unary(UnaryOp::silu, x); }
Tensor mish(const Tensor& x) { return unary(UnaryOp::mish, x); }
Tensor softplus(const Tensor& x, double beta, double threshold) {
  return unary(UnaryOp::softplus, x, beta, threshold);
}
Tensor hardsigmoid(const Tensor& x) { return unary(UnaryOp::hardsigmoid, x); }
Tensor hardswish(const Tensor& x) { return unary(UnaryOp::hardswish, x); }
Tensor sigmoid(const Tensor& x) { return unary(UnaryOp::sigmoid, x); }
Tensor log_sigmoid(const Tensor& x) { return unary(UnaryOp::log_sigmoid, x); }

}  // namespace ember::ops
