// Loss modules (as torch.nn, torch 1.13): each holds its options and calls the nn::functional
// loss of the same name (nn/functional/loss.h: shapes, formulas, dtypes, errors). forward takes
// (input, target) and returns the loss (0-d unless reduction "none"). Constructors throw
// "[CrossEntropyLoss] 'avg' is not a valid value for reduction" for an unknown reduction.
// Class weights (and BCEWithLogitsLoss's pos_weight) are registered as buffers, as torch, so they
// appear in state_dict and move with to().
#pragma once
#include <string>

#include "ember/nn/module.h"
#include "ember/nn/modules/options.h"

namespace ember::nn {

/// A module with forward(input, target).
class LossModule : public Module {
 public:
  LossModule(const char* name, std::string reduction, bool allow_batchmean = false);
  virtual Tensor forward(const Tensor& input, const Tensor& target) = 0;
  /// forward(input, target) with the forward pre-hooks and hooks.
  Tensor operator()(const Tensor& input, const Tensor& target) {
    if (!has_forward_hooks()) return forward(input, target);
    return call_with_hooks<Tensor>(
        {input, target}, [&](const std::vector<Tensor>& in) { return forward(in[0], in[1]); });
  }
  std::string reduction;
};

struct CrossEntropyLossOptions {
  EMBER_ARG(Tensor, weight);  // [C] or undefined
  EMBER_ARG(int64_t, ignore_index) = -100;
  EMBER_ARG(std::string, reduction) = "mean";
  EMBER_ARG(double, label_smoothing) = 0.0;
};
/// As torch.nn.CrossEntropyLoss: logits [N, C] (or [N, C, d...] or [C]) and class indices or
/// probabilities. Throws for label_smoothing outside [0, 1].
class CrossEntropyLoss : public LossModule {
 public:
  explicit CrossEntropyLoss(const CrossEntropyLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) override;
  CrossEntropyLossOptions options;
  Tensor weight;
};

struct NLLLossOptions {
  EMBER_ARG(Tensor, weight);
  EMBER_ARG(int64_t, ignore_index) = -100;
  EMBER_ARG(std::string, reduction) = "mean";
};
/// As torch.nn.NLLLoss: log-probabilities and class indices.
class NLLLoss : public LossModule {
 public:
  explicit NLLLoss(const NLLLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) override;
  NLLLossOptions options;
  Tensor weight;
};

/// As torch.nn.MSELoss.
class MSELoss : public LossModule {
 public:
  explicit MSELoss(std::string reduction = "mean") : LossModule("MSELoss", std::move(reduction)) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
};

/// As torch.nn.L1Loss.
class L1Loss : public LossModule {
 public:
  explicit L1Loss(std::string reduction = "mean") : LossModule("L1Loss", std::move(reduction)) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
};

/// As torch.nn.HuberLoss. Throws unless delta > 0.
class HuberLoss : public LossModule {
 public:
  explicit HuberLoss(std::string reduction = "mean", double delta = 1.0);
  Tensor forward(const Tensor& input, const Tensor& target) override;
  double delta;
};

/// As torch.nn.SmoothL1Loss. Throws if beta < 0.
class SmoothL1Loss : public LossModule {
 public:
  explicit SmoothL1Loss(std::string reduction = "mean", double beta = 1.0);
  Tensor forward(const Tensor& input, const Tensor& target) override;
  double beta;
};

/// As torch.nn.BCELoss: probabilities in [0, 1]; weight broadcasts to the input.
class BCELoss : public LossModule {
 public:
  explicit BCELoss(const Tensor& weight = Tensor(), std::string reduction = "mean");
  Tensor forward(const Tensor& input, const Tensor& target) override;
  Tensor weight;
};

/// As torch.nn.BCEWithLogitsLoss: logits; weight broadcasts to the input, pos_weight to the
/// last dim.
class BCEWithLogitsLoss : public LossModule {
 public:
  explicit BCEWithLogitsLoss(const Tensor& weight = Tensor(), std::string reduction = "mean",
                             const Tensor& pos_weight = Tensor());
  Tensor forward(const Tensor& input, const Tensor& target) override;
  Tensor weight, pos_weight;
};

/// As torch.nn.KLDivLoss: input log-probabilities; reduction also "batchmean".
class KLDivLoss : public LossModule {
 public:
  explicit KLDivLoss(std::string reduction = "mean", bool log_target = false)
      : LossModule("KLDivLoss", std::move(reduction), true), log_target(log_target) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
  bool log_target;
};

}  // namespace ember::nn
