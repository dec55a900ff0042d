#include "ember/nn/modules/loss.h"

#include "ember/nn/functional/loss.h"
#include "tensor/internal.h"

namespace ember::nn {

namespace fn = ember::nn::functional;

LossModule::LossModule(const char* name, std::string r, bool allow_batchmean)
    : Module(name), reduction(std::move(r)) {
  if (reduction != "mean" && reduction != "sum" && reduction != "none" &&
      !(allow_batchmean && reduction == "batchmean"))
    EMBER_FAIL(name, "'", reduction, "' is not a valid value for reduction");
}

CrossEntropyLoss::CrossEntropyLoss(const CrossEntropyLossOptions& o)
    : LossModule("CrossEntropyLoss", o.reduction()), options(o) {
  if (!(o.label_smoothing() >= 0.0 && o.label_smoothing() <= 1.0))
    EMBER_FAIL("CrossEntropyLoss", "label_smoothing must be between 0.0 and 1.0, got ",
               o.label_smoothing());
  weight = register_buffer("weight", o.weight());
}
Tensor CrossEntropyLoss::forward(const Tensor& input, const Tensor& target) {
  return fn::cross_entropy(input, target, weight, options.ignore_index(), reduction,
                           options.label_smoothing());
}

NLLLoss::NLLLoss(const NLLLossOptions& o) : LossModule("NLLLoss", o.reduction()), options(o) {
  weight = register_buffer("weight", o.weight());
}
Tensor NLLLoss::forward(const Tensor& input, const Tensor& target) {
  return fn::nll_loss(input, target, weight, options.ignore_index(), reduction);
}

Tensor MSELoss::forward(const Tensor& input, const Tensor& target) {
  return fn::mse_loss(input, target, reduction);
}
Tensor L1Loss::forward(const Tensor& input, const Tensor& target) {
  return fn::l1_loss(input, target, reduction);
}

HuberLoss::HuberLoss(std::string r, double d) : LossModule("HuberLoss", std::move(r)), delta(d) {
  if (!(delta > 0)) EMBER_FAIL("HuberLoss", "delta must be > 0, got ", delta);
}
Tensor HuberLoss::forward(const Tensor& input, const Tensor& target) {
  return fn::huber_loss(input, target, reduction, delta);
}

SmoothL1Loss::SmoothL1Loss(std::string r, double b)
    : LossModule("SmoothL1Loss", std::move(r)), beta(b) {
  if (!(beta >= 0)) EMBER_FAIL("SmoothL1Loss", "beta must be >= 0, got ", beta);
}
Tensor SmoothL1Loss::forward(const Tensor& input, const Tensor& target) {
  return fn::smooth_l1_loss(input, target, reduction, beta);
}

BCELoss::BCELoss(const Tensor& w, std::string r) : LossModule("BCELoss", std::move(r)) {
  weight = register_buffer("weight", w);
}
Tensor BCELoss::forward(const Tensor& input, const Tensor& target) {
  return fn::binary_cross_entropy(input, target, weight, reduction);
}

BCEWithLogitsLoss::BCEWithLogitsLoss(const Tensor& w, std::string r, const Tensor& pw)
    : LossModule("BCEWithLogitsLoss", std::move(r)) {
  weight = register_buffer("weight", w);
  pos_weight = register_buffer("pos_weight", pw);
}
Tensor BCEWithLogitsLoss::forward(const Tensor& input, const Tensor& target) {
  return fn::binary_cross_entropy_with_logits(input, target, weight, reduction, pos_weight);
}

Tensor KLDivLoss::forward(const Tensor& input, const Tensor& target) {
  return fn::kl_div(input, target, reduction, log_target);
}

}  // namespace ember::nn
