// nn::Functional: a function as a module, to put free functions and lambdas in a Sequential (as
// LibTorch's torch::nn::Functional; torch.nn has no counterpart, Python uses a Lambda module):
//   Sequential seq(std::make_shared<Linear>(4, 8),
//                  std::make_shared<Functional>([](const Tensor& x) { return x.relu(); }),
//                  std::make_shared<Functional>(nn::functional::leaky_relu, 0.2));
#pragma once
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

#include "ember/nn/module.h"

namespace ember::nn {

/// forward(x) = f(x, args...). No parameters; prints as "Functional()". Throws what f throws.
class Functional : public UnaryModule {
 public:
  explicit Functional(std::function<Tensor(const Tensor&)> f);
  /// Binds trailing arguments, as LibTorch's Functional(torch::elu, 1.0): forward(x) = f(x, a...).
  template <typename F, typename A0, typename... A,
            typename = std::enable_if_t<std::is_invocable_v<F&, const Tensor&, A0&, A&...>>>
  Functional(F f, A0 a0, A... a)
      : Functional(std::function<Tensor(const Tensor&)>(
            [f = std::move(f), a0 = std::move(a0), a...](const Tensor& x) mutable {
              return Tensor(f(x, a0, a...));
            })) {}
  Tensor forward(const Tensor& x) override;

 private:
  std::function<Tensor(const Tensor&)> f_;
};

}  // namespace ember::nn
