// Adam and AdamW, as torch.optim.Adam / torch.optim.AdamW (PyTorch 1.13).
// Sources: Kingma & Ba, "Adam: A Method for Stochastic Optimization" (2014); Loshchilov &
// Hutter, "Decoupled Weight Decay Regularization" (2017); AMSGrad: Reddi et al. (2018).
#pragma once
#include "ember/optim/optimizer.h"

namespace ember::optim {

/// Adam hyper-parameters (torch defaults: lr 1e-3, betas (0.9, 0.999), eps 1e-8,
/// weight_decay 0, amsgrad false, maximize false).
class AdamOptions : public OptimizerOptions {
 public:
  AdamOptions() = default;
  explicit AdamOptions(double lr) { this->lr(lr); }
  EMBER_OPTIM_ARG(AdamOptions, double, lr, 1e-3)
  EMBER_OPTIM_ARG(AdamOptions, double, beta1, 0.9)
  EMBER_OPTIM_ARG(AdamOptions, double, beta2, 0.999)
  EMBER_OPTIM_ARG(AdamOptions, double, eps, 1e-8)
  EMBER_OPTIM_ARG(AdamOptions, double, weight_decay, 0.0)
  EMBER_OPTIM_ARG(AdamOptions, bool, amsgrad, 0.0)
  EMBER_OPTIM_ARG(AdamOptions, bool, maximize, 0.0)

 public:
  AdamOptions& betas(double b1, double b2) { return beta1(b1).beta2(b2); }
  std::pair<double, double> betas() const { return {beta1(), beta2()}; }
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<AdamOptions>(*this);
  }
  const char* optimizer_name() const override { return "Adam"; }
  const char* momentum_field() const override { return "beta1"; }
  /// Throws for lr < 0, eps < 0, a beta outside [0, 1), weight_decay < 0.
  void validate() const override;

 protected:
  std::vector<Field> fields() override;
};

/// AdamW hyper-parameters: Adam's, with weight_decay defaulting to 1e-2 (torch).
class AdamWOptions : public OptimizerOptions {
 public:
  AdamWOptions() = default;
  explicit AdamWOptions(double lr) { this->lr(lr); }
  EMBER_OPTIM_ARG(AdamWOptions, double, lr, 1e-3)
  EMBER_OPTIM_ARG(AdamWOptions, double, beta1, 0.9)
  EMBER_OPTIM_ARG(AdamWOptions, double, beta2, 0.999)
  EMBER_OPTIM_ARG(AdamWOptions, double, eps, 1e-8)
  EMBER_OPTIM_ARG(AdamWOptions, double, weight_decay, 1e-2)
  EMBER_OPTIM_ARG(AdamWOptions, bool, amsgrad, 0.0)
  EMBER_OPTIM_ARG(AdamWOptions, bool, maximize, 0.0)

 public:
  AdamWOptions& betas(double b1, double b2) { return beta1(b1).beta2(b2); }
  std::pair<double, double> betas() const { return {beta1(), beta2()}; }
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<AdamWOptions>(*this);
  }
  const char* optimizer_name() const override { return "AdamW"; }
  const char* momentum_field() const override { return "beta1"; }
  void validate() const override;

 protected:
  std::vector<Field> fields() override;
};

/// Per parameter at step t (g negated when maximize):
///   Adam: g += weight_decay * p;  AdamW: p *= 1 - lr * weight_decay;
///   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  (amsgrad: vmax = max(vmax, v), used for v)
///   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
/// State: "exp_avg", "exp_avg_sq", "max_exp_avg_sq" (amsgrad), and the step count.
class Adam : public Optimizer {
 public:
  Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults = AdamOptions());
  Adam(std::vector<Tensor> params, const AdamOptions& defaults = AdamOptions())
      : Adam(std::vector<ParamGroup>{ParamGroup(std::move(params))}, defaults) {}

 protected:
  void update(const std::vector<Tensor>& params, const OptimizerOptions& o) override;
  std::vector<std::string> state_names() const override {
    return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  }
};

class AdamW : public Optimizer {
 public:
  AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults = AdamWOptions());
  AdamW(std::vector<Tensor> params, const AdamWOptions& defaults = AdamWOptions())
      : AdamW(std::vector<ParamGroup>{ParamGroup(std::move(params))}, defaults) {}

 protected:
  void update(const std::vector<Tensor>& params, const OptimizerOptions& o) override;
  std::vector<std::string> state_names() const override {
    return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  }
};

}  // namespace ember::optim
