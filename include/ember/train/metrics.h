// Classification metrics accumulated over an epoch: loss, accuracy, top-k accuracy and macro
// precision / recall / F1 (as torchmetrics' multiclass metrics with average="macro").
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ember/tensor.h"

namespace ember::train {

/// Accumulates per-batch results. Classification metrics are computed when outputs are
/// [B, C] scores and targets [B] integers in [0, C); other shapes (regression) only count loss.
class MetricAccumulator {
 public:
  /// top_k: the k of "top_k_accuracy" (clamped to C).
  explicit MetricAccumulator(int64_t top_k = 5) : top_k_(top_k) {}
  /// Adds one batch: `loss` is its mean loss, `batch_size` its sample count. output and target
  /// are read on the host. Throws ember::Error("[metrics] ...") for a target out of [0, C) or a
  /// class count that changes between batches.
  void add(double loss, int64_t batch_size, const Tensor& output, const Tensor& target);
  void reset();
  int64_t samples() const { return samples_; }
  /// "loss" (sample-weighted mean) and, when classification batches were seen, "accuracy",
  /// "top_k_accuracy", "precision", "recall", "f1" (macro averages over the classes that occur
  /// in targets or predictions; a class with no predicted samples has precision 0, as
  /// sklearn's zero_division=0). Values are fractions in [0, 1].
  std::map<std::string, double> compute() const;
  /// Sums this accumulator's counts with those of every rank of the default process group
  /// (dist::all_reduce; a collective: every rank calls it), so compute() then gives the metrics
  /// over all ranks' samples, as one process would. Throws ember::Error("[metrics] ...") when
  /// the ranks saw different class counts, and the collectives' errors.
  void all_reduce();

 private:
  int64_t top_k_;
  int64_t samples_ = 0;
  double loss_sum_ = 0;
  int64_t classes_ = 0;
  int64_t correct_ = 0, topk_correct_ = 0, cls_samples_ = 0;
  std::vector<int64_t> confusion_;  // classes_ x classes_, [target][pred]
};

}  // namespace ember::train
