// RMSprop, as torch.optim.RMSprop (PyTorch 1.13). Source: Hinton, Neural Networks for Machine
// Learning, lecture 6e; centered variant: Graves, "Generating Sequences With RNNs" (2013).
#pragma once
#include "ember/optim/optimizer.h"

namespace ember::optim {

/// RMSprop hyper-parameters (torch defaults: lr 1e-2, alpha 0.99, eps 1e-8, weight_decay 0,
/// momentum 0, centered false, maximize false).
class RMSpropOptions : public OptimizerOptions {
 public:
  RMSpropOptions() = default;
  explicit RMSpropOptions(double lr) { this->lr(lr); }
  EMBER_OPTIM_ARG(RMSpropOptions, double, lr, 1e-2)
  EMBER_OPTIM_ARG(RMSpropOptions, double, alpha, 0.99)
  EMBER_OPTIM_ARG(RMSpropOptions, double, eps, 1e-8)
  EMBER_OPTIM_ARG(RMSpropOptions, double, weight_decay, 0.0)
  EMBER_OPTIM_ARG(RMSpropOptions, double, momentum, 0.0)
  EMBER_OPTIM_ARG(RMSpropOptions, bool, centered, 0.0)
  EMBER_OPTIM_ARG(RMSpropOptions, bool, maximize, 0.0)

 public:
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<RMSpropOptions>(*this);
  }
  const char* optimizer_name() const override { return "RMSprop"; }
  const char* momentum_field() const override { return "momentum"; }
  /// Throws for lr, eps, momentum, weight_decay or alpha < 0.
  void validate() const override;

 protected:
  std::vector<Field> fields() override;
};

/// Per parameter (g negated when maximize): g += weight_decay * p;
///   v = alpha v + (1 - alpha) g^2;  centered: a = alpha a + (1 - alpha) g, avg = sqrt(v - a^2),
///   else avg = sqrt(v);  avg += eps;
///   momentum > 0: buf = momentum buf + g / avg, p -= lr buf;  else p -= lr g / avg.
/// State: "square_avg", "momentum_buffer" (momentum > 0), "grad_avg" (centered), step count.
class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<ParamGroup> groups, const RMSpropOptions& defaults = RMSpropOptions());
  RMSprop(std::vector<Tensor> params, const RMSpropOptions& defaults = RMSpropOptions())
      : RMSprop(std::vector<ParamGroup>{ParamGroup(std::move(params))}, defaults) {}

 protected:
  void update(const std::vector<Tensor>& params, const OptimizerOptions& o) override;
  std::vector<std::string> state_names() const override {
    return {"square_avg", "momentum_buffer", "grad_avg"};
  }
};

}  // namespace ember::optim
