#include "ember/nn/modules/functional.h"

#include "tensor/internal.h"

namespace ember::nn {

Functional::Functional(std::function<Tensor(const Tensor&)> f)
    : UnaryModule("Functional"), f_(std::move(f)) {
  if (!f_) EMBER_FAIL("Functional", "the function is empty");
}

Tensor Functional::forward(const Tensor& x) { return f_(x); }

}  // namespace ember::nn
