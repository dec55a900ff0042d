#include "ember/nn/modules/activation.h"

#include <cmath>

#include "ember/nn/functional/activation.h"
#include "ember/nn/modules/options.h"
#include "tensor/internal.h"

namespace ember::nn {

namespace fn = ember::nn::functional;

Tensor ReLU::forward(const Tensor& x) { return fn::relu(x); }
Tensor ReLU6::forward(const Tensor& x) { return fn::relu6(x); }
Tensor SELU::forward(const Tensor& x) { return fn::selu(x); }
Tensor SiLU::forward(const Tensor& x) { return fn::silu(x); }
Tensor Mish::forward(const Tensor& x) { return fn::mish(x); }
Tensor Hardsigmoid::forward(const Tensor& x) { return fn::hardsigmoid(x); }
Tensor Hardswish::forward(const Tensor& x) { return fn::hardswish(x); }
Tensor Sigmoid::forward(const Tensor& x) { return fn::sigmoid(x); }
Tensor Tanh::forward(const Tensor& x) { return fn::tanh(x); }
Tensor LogSigmoid::forward(const Tensor& x) { return fn::log_sigmoid(x); }
Tensor Softsign::forward(const Tensor& x) { return fn::softsign(x); }
Tensor Tanhshrink::forward(const Tensor& x) { return fn::tanhshrink(x); }

namespace {
// Softplus's defaults are Python ints in torch (beta=1, threshold=20): print integral values so.
std::string num_str(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15)
    return std::to_string(int64_t(v));
  return detail::float_str(v);
}
}  // namespace

Tensor LeakyReLU::forward(const Tensor& x) { return fn::leaky_relu(x, negative_slope); }
std::string LeakyReLU::extra_repr() const {
  return "negative_slope=" + detail::float_str(negative_slope);
}

Tensor ELU::forward(const Tensor& x) { return fn::elu(x, alpha); }
std::string ELU::extra_repr() const { return "alpha=" + detail::float_str(alpha); }

Tensor CELU::forward(const Tensor& x) { return fn::celu(x, alpha); }
std::string CELU::extra_repr() const { return "alpha=" + detail::float_str(alpha); }

GELU::GELU(std::string a) : UnaryModule("GELU"), approximate(std::move(a)) {
  if (approximate != "none" && approximate != "tanh")
    EMBER_FAIL("GELU", "approximate must be 'none' or 'tanh', got '", approximate, "'");
}
Tensor GELU::forward(const Tensor& x) { return fn::gelu(x, approximate); }
std::string GELU::extra_repr() const { return "approximate='" + approximate + "'"; }

Tensor Softplus::forward(const Tensor& x) { return fn::softplus(x, beta, threshold); }
std::string Softplus::extra_repr() const {
  return "beta=" + num_str(beta) + ", threshold=" + num_str(threshold);
}

Hardtanh::Hardtanh(double lo, double hi) : UnaryModule("Hardtanh"), min_val(lo), max_val(hi) {
  if (lo > hi) EMBER_FAIL("Hardtanh", "min_val ", lo, " must not exceed max_val ", hi);
}
Tensor Hardtanh::forward(const Tensor& x) { return fn::hardtanh(x, min_val, max_val); }
std::string Hardtanh::extra_repr() const {
  return "min_val=" + detail::float_str(min_val) + ", max_val=" + detail::float_str(max_val);
}

Tensor Hardshrink::forward(const Tensor& x) { return fn::hardshrink(x, lambd); }
std::string Hardshrink::extra_repr() const { return detail::float_str(lambd); }
Tensor Softshrink::forward(const Tensor& x) { return fn::softshrink(x, lambd); }
std::string Softshrink::extra_repr() const { return detail::float_str(lambd); }

Tensor Threshold::forward(const Tensor& x) { return fn::threshold(x, threshold, value); }
std::string Threshold::extra_repr() const {
  return "threshold=" + num_str(threshold) + ", value=" + num_str(value);
}

Tensor GLU::forward(const Tensor& x) { return fn::glu(x, dim); }
std::string GLU::extra_repr() const { return "dim=" + std::to_string(dim); }

Tensor Softmax::forward(const Tensor& x) { return fn::softmax(x, dim); }
std::string Softmax::extra_repr() const { return "dim=" + std::to_string(dim); }
Tensor LogSoftmax::forward(const Tensor& x) { return fn::log_softmax(x, dim); }
std::string LogSoftmax::extra_repr() const { return "dim=" + std::to_string(dim); }
Tensor Softmin::forward(const Tensor& x) { return fn::softmin(x, dim); }
std::string Softmin::extra_repr() const { return "dim=" + std::to_string(dim); }

PReLU::PReLU(int64_t n, double init) : UnaryModule("PReLU"), num_parameters(n) {
  if (n < 1) EMBER_FAIL("PReLU", "num_parameters must be >= 1, got ", n);
  weight = register_parameter("weight", full({n}, init));
}
Tensor PReLU::forward(const Tensor& x) { return fn::prelu(x, weight); }
std::string PReLU::extra_repr() const { return "num_parameters=" + std::to_string(num_parameters); }

}  // namespace ember::nn
