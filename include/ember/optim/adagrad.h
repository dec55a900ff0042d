// Adagrad, as torch.optim.Adagrad (PyTorch 1.13). Source: Duchi, Hazan & Singer, "Adaptive
// Subgradient Methods for Online Learning and Stochastic Optimization" (JMLR 2011).
#pragma once
#include "ember/optim/optimizer.h"

namespace ember::optim {

/// Adagrad hyper-parameters (torch defaults: lr 1e-2, lr_decay 0, weight_decay 0,
/// initial_accumulator_value 0, eps 1e-10, maximize false).
class AdagradOptions : public OptimizerOptions {
 public:
  AdagradOptions() = default;
  explicit AdagradOptions(double lr) { this->lr(lr); }
  EMBER_OPTIM_ARG(AdagradOptions, double, lr, 1e-2)
  EMBER_OPTIM_ARG(AdagradOptions, double, lr_decay, 0.0)
  EMBER_OPTIM_ARG(AdagradOptions, double, weight_decay, 0.0)
  EMBER_OPTIM_ARG(AdagradOptions, double, initial_accumulator_value, 0.0)
  EMBER_OPTIM_ARG(AdagradOptions, double, eps, 1e-10)
  EMBER_OPTIM_ARG(AdagradOptions, bool, maximize, 0.0)

 public:
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<AdagradOptions>(*this);
  }
  const char* optimizer_name() const override { return "Adagrad"; }
  /// Throws for lr, lr_decay, weight_decay, initial_accumulator_value or eps < 0.
  void validate() const override;

 protected:
  std::vector<Field> fields() override;
};

/// Per parameter at step t (g negated when maximize): g += weight_decay * p;
///   clr = lr / (1 + (t - 1) lr_decay);  sum += g^2 (sum starts at initial_accumulator_value);
///   p -= clr * g / (sqrt(sum) + eps).   State: "sum" and the step count.
class Adagrad : public Optimizer {
 public:
  Adagrad(std::vector<ParamGroup> groups, const AdagradOptions& defaults = AdagradOptions());
  Adagrad(std::vector<Tensor> params, const AdagradOptions& defaults = AdagradOptions())
      : Adagrad(std::vector<ParamGroup>{ParamGroup(std::move(params))}, defaults) {}

 protected:
  void update(const std::vector<Tensor>& params, const OptimizerOptions& o) override;
  std::vector<std::string> state_names() const override { return {"sum"}; }
};

}  // namespace ember::optim
