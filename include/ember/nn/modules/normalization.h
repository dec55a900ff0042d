// Normalization layers (as torch.nn, torch 1.13; RMSNorm as torch 2.4): BatchNorm1d/2d,
// InstanceNorm2d, LayerNorm, GroupNorm, RMSNorm. Each forward calls the nn::functional form
// (nn/functional/norm.h: formulas, dtypes, errors). Affine parameters start at weight = 1,
// bias = 0, running_mean = 0, running_var = 1, num_batches_tracked = 0 (i64, 0-d), as torch.
#pragma once
#include <optional>

#include "ember/nn/module.h"
#include "ember/nn/modules/options.h"

namespace ember::nn {

struct BatchNormOptions {
  BatchNormOptions(int64_t num_features) : num_features_(num_features) {}  // NOLINT
  EMBER_ARG(int64_t, num_features);
  EMBER_ARG(double, eps) = 1e-5;
  /// nullopt = cumulative moving average (factor 1 / num_batches_tracked), as torch's None.
  EMBER_ARG(std::optional<double>, momentum) = 0.1;
  EMBER_ARG(bool, affine) = true;
  EMBER_ARG(bool, track_running_stats) = true;
};
using BatchNorm1dOptions = BatchNormOptions;
using BatchNorm2dOptions = BatchNormOptions;

/// Batch normalization (as torch.nn.modules.batchnorm._BatchNorm). Parameters weight/bias [C]
/// when affine; buffers running_mean/running_var [C] and num_batches_tracked when
/// track_running_stats. Training: normalizes with the batch statistics and updates the running
/// ones in place (running = (1 - m) running + m batch, the unbiased batch variance for
/// running_var; m = momentum, or 1 / num_batches_tracked when momentum is nullopt) and counts
/// num_batches_tracked. eval(): uses the running stats (the batch ones when
/// track_running_stats is false).
class BatchNormBase : public UnaryModule {
 public:
  BatchNormBase(const std::string& name, const BatchNormOptions& options);
  void reset_running_stats();
  void reset_parameters();
  Tensor forward(const Tensor& x) override;
  /// "64, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True"
  std::string extra_repr() const override;

  BatchNormOptions options;
  Tensor weight, bias;                                    // undefined unless affine
  Tensor running_mean, running_var, num_batches_tracked;  // undefined unless tracked

 protected:
  virtual void check_input(const Tensor& x) const = 0;
};

/// input [N, C] or [N, C, L]; throws "[BatchNorm1d] expected 2D or 3D input (got 4D input)".
class BatchNorm1d : public BatchNormBase {
 public:
  BatchNorm1d(const BatchNormOptions& o) : BatchNormBase("BatchNorm1d", o) {}  // NOLINT
 protected:
  void check_input(const Tensor& x) const override;
};
/// input [N, C, H, W]; throws "[BatchNorm2d] expected 4D input (got 3D input)".
class BatchNorm2d : public BatchNormBase {
 public:
  BatchNorm2d(const BatchNormOptions& o) : BatchNormBase("BatchNorm2d", o) {}  // NOLINT
 protected:
  void check_input(const Tensor& x) const override;
};

struct InstanceNormOptions {
  InstanceNormOptions(int64_t num_features) : num_features_(num_features) {}  // NOLINT
  EMBER_ARG(int64_t, num_features);
  EMBER_ARG(double, eps) = 1e-5;
  EMBER_ARG(double, momentum) = 0.1;
  EMBER_ARG(bool, affine) = false;
  EMBER_ARG(bool, track_running_stats) = false;
};
using InstanceNorm2dOptions = InstanceNormOptions;

/// Instance normalization over [N, C, H, W] or unbatched [C, H, W] (as torch.nn.InstanceNorm2d).
/// With track_running_stats, training updates running_mean/running_var and eval uses them.
/// Throws "[InstanceNorm2d] expected 3D or 4D input (got 2D input)".
class InstanceNorm2d : public UnaryModule {
 public:
  InstanceNorm2d(const InstanceNormOptions& options);  // NOLINT
  Tensor forward(const Tensor& x) override;
  /// "3, eps=1e-05, momentum=0.1, affine=False, track_running_stats=False"
  std::string extra_repr() const override;
  InstanceNormOptions options;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;
};

struct LayerNormOptions {
  LayerNormOptions(Shape normalized_shape)
      : normalized_shape_(std::move(normalized_shape)) {}  // NOLINT
  EMBER_ARG(Shape, normalized_shape);
  EMBER_ARG(double, eps) = 1e-5;
  EMBER_ARG(bool, elementwise_affine) = true;
};

/// Normalizes the trailing normalized_shape dims (as torch.nn.LayerNorm); weight/bias of
/// normalized_shape when elementwise_affine. Repr "(10,), eps=1e-05, elementwise_affine=True".
class LayerNorm : public UnaryModule {
 public:
  LayerNorm(const LayerNormOptions& options);  // NOLINT
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  LayerNormOptions options;
  Tensor weight, bias;
};

struct GroupNormOptions {
  GroupNormOptions(int64_t num_groups, int64_t num_channels)
      : num_groups_(num_groups), num_channels_(num_channels) {}
  EMBER_ARG(int64_t, num_groups);
  EMBER_ARG(int64_t, num_channels);
  EMBER_ARG(double, eps) = 1e-5;
  EMBER_ARG(bool, affine) = true;
};

/// Group normalization (as torch.nn.GroupNorm); weight/bias [num_channels]. Throws
/// "[GroupNorm] num_channels must be divisible by num_groups". Repr "2, 6, eps=1e-05, affine=True".
class GroupNorm : public UnaryModule {
 public:
  GroupNorm(const GroupNormOptions& options);  // NOLINT
  GroupNorm(int64_t num_groups, int64_t num_channels)
      : GroupNorm(GroupNormOptions(num_groups, num_channels)) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  GroupNormOptions options;
  Tensor weight, bias;
};

struct RMSNormOptions {
  RMSNormOptions(Shape normalized_shape)
      : normalized_shape_(std::move(normalized_shape)) {}  // NOLINT
  EMBER_ARG(Shape, normalized_shape);
  /// nullopt: the machine epsilon of the computation dtype (see functional::rms_norm).
  EMBER_ARG(std::optional<double>, eps) = std::nullopt;
  EMBER_ARG(bool, elementwise_affine) = true;
};

/// Root-mean-square normalization (as torch.nn.RMSNorm, torch 2.4); weight (ones) of
/// normalized_shape. Repr "(10,), eps=None, elementwise_affine=True".
class RMSNorm : public UnaryModule {
 public:
  RMSNorm(const RMSNormOptions& options);  // NOLINT
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  RMSNormOptions options;
  Tensor weight;
};

}  // namespace ember::nn
