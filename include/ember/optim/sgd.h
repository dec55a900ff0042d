// Stochastic gradient descent with momentum, as torch.optim.SGD (PyTorch 1.13).
#pragma once
#include "ember/optim/optimizer.h"

namespace ember::optim {

/// SGD hyper-parameters (torch defaults; lr has none in torch, so a group without lr and an
/// optimizer built without one throw).
class SGDOptions : public OptimizerOptions {
 public:
  SGDOptions() = default;
  explicit SGDOptions(double lr) { this->lr(lr); }
  EMBER_OPTIM_ARG(SGDOptions, double, lr, -1.0)
  EMBER_OPTIM_ARG(SGDOptions, double, momentum, 0.0)
  EMBER_OPTIM_ARG(SGDOptions, double, dampening, 0.0)
  EMBER_OPTIM_ARG(SGDOptions, double, weight_decay, 0.0)
  EMBER_OPTIM_ARG(SGDOptions, bool, nesterov, 0.0)
  EMBER_OPTIM_ARG(SGDOptions, bool, maximize, 0.0)

 public:
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<SGDOptions>(*this);
  }
  const char* optimizer_name() const override { return "SGD"; }
  const char* momentum_field() const override { return "momentum"; }
  /// Throws for lr unset or < 0, momentum < 0, weight_decay < 0, and nesterov without a
  /// positive momentum and zero dampening.
  void validate() const override;

 protected:
  std::vector<Field> fields() override;
};

/// Per parameter, with g the gradient (negated when maximize):
///   g += weight_decay * p;  buf = g on the first step, else momentum * buf + (1 - dampening) g;
///   g = nesterov ? g + momentum * buf : buf (when momentum != 0);  p -= lr * g.
/// State: "momentum_buffer" (when momentum != 0).
class SGD : public Optimizer {
 public:
  SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults);
  SGD(std::vector<Tensor> params, const SGDOptions& defaults)
      : SGD(std::vector<ParamGroup>{ParamGroup(std::move(params))}, defaults) {}

 protected:
  void update(const std::vector<Tensor>& params, const OptimizerOptions& o) override;
  std::vector<std::string> state_names() const override { return {"momentum_buffer"}; }
};

}  // namespace ember::optim
