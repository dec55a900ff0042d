#include "ember/nn/modules/dropout.h"

#include "ember/nn/functional/activation.h"
#include "ember/nn/modules/options.h"
#include "tensor/internal.h"

namespace ember::nn {

namespace fn = ember::nn::functional;

DropoutBase::DropoutBase(const char* name, double p_) : UnaryModule(name), p(p_) {
  if (!(p >= 0.0 && p <= 1.0))
    EMBER_FAIL(name, "dropout probability has to be between 0 and 1, but got ", p);
}

std::string DropoutBase::extra_repr() const {
  return "p=" + detail::float_str(p) + ", inplace=False";
}

Tensor Dropout::forward(const Tensor& x) { return fn::dropout(x, p, is_training()); }
Tensor Dropout1d::forward(const Tensor& x) { return fn::dropout1d(x, p, is_training()); }
Tensor Dropout2d::forward(const Tensor& x) { return fn::dropout2d(x, p, is_training()); }
Tensor Dropout3d::forward(const Tensor& x) { return fn::dropout3d(x, p, is_training()); }

}  // namespace ember::nn
