// Pooling layers (as torch.nn, torch 1.13): MaxPool1d/2d/3d, AvgPool1d/2d/3d,
// AdaptiveAvgPool1d/2d, AdaptiveMaxPool2d. They hold no parameters; forward calls the
// nn::functional form and throws as it does (shapes named). stride defaults to kernel_size.
#pragma once
#include <optional>
#include <tuple>

#include "ember/nn/module.h"
#include "ember/nn/modules/options.h"

namespace ember::nn {

template <size_t D>
struct MaxPoolOptions {
  MaxPoolOptions(ExpandingArray<D> kernel_size)  // NOLINT
      : kernel_size_(kernel_size), stride_(kernel_size) {}
  EMBER_ARG(ExpandingArray<D>, kernel_size);
  EMBER_ARG(ExpandingArray<D>, stride);
  EMBER_ARG(ExpandingArray<D>, padding) = 0;
  EMBER_ARG(ExpandingArray<D>, dilation) = 1;
  EMBER_ARG(bool, ceil_mode) = false;
};
using MaxPool1dOptions = MaxPoolOptions<1>;
using MaxPool2dOptions = MaxPoolOptions<2>;
using MaxPool3dOptions = MaxPoolOptions<3>;

/// Max pooling over D spatial dims (as torch.nn.MaxPool{1,2,3}d).
template <size_t D>
class MaxPoolNd : public UnaryModule {
 public:
  MaxPoolNd(const MaxPoolOptions<D>& options);                                             // NOLINT
  MaxPoolNd(ExpandingArray<D> kernel_size) : MaxPoolNd(MaxPoolOptions<D>(kernel_size)) {}  // NOLINT
  /// input [N, C, *S] or [C, *S].
  Tensor forward(const Tensor& x) override;
  /// (values, i64 indices into each spatial plane), as return_indices=True.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
  /// "kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False" (numbers given as one
  /// value print as one value, lists as tuples, as torch stores them).
  std::string extra_repr() const override;
  MaxPoolOptions<D> options;
};
class MaxPool1d : public MaxPoolNd<1> {
 public:
  using MaxPoolNd<1>::MaxPoolNd;
};
class MaxPool2d : public MaxPoolNd<2> {
 public:
  using MaxPoolNd<2>::MaxPoolNd;
};
class MaxPool3d : public MaxPoolNd<3> {
 public:
  using MaxPoolNd<3>::MaxPoolNd;
};

template <size_t D>
struct AvgPoolOptions {
  AvgPoolOptions(ExpandingArray<D> kernel_size)  // NOLINT
      : kernel_size_(kernel_size), stride_(kernel_size) {}
  EMBER_ARG(ExpandingArray<D>, kernel_size);
  EMBER_ARG(ExpandingArray<D>, stride);
  EMBER_ARG(ExpandingArray<D>, padding) = 0;
  EMBER_ARG(bool, ceil_mode) = false;
  EMBER_ARG(bool, count_include_pad) = true;
  /// 2-d and 3-d only (torch's AvgPool1d has none); throws in AvgPool1d when set.
  EMBER_ARG(std::optional<int64_t>, divisor_override) = std::nullopt;
};
using AvgPool1dOptions = AvgPoolOptions<1>;
using AvgPool2dOptions = AvgPoolOptions<2>;
using AvgPool3dOptions = AvgPoolOptions<3>;

/// Average pooling over D spatial dims (as torch.nn.AvgPool{1,2,3}d). Floating input.
template <size_t D>
class AvgPoolNd : public UnaryModule {
 public:
  AvgPoolNd(const AvgPoolOptions<D>& options);                                             // NOLINT
  AvgPoolNd(ExpandingArray<D> kernel_size) : AvgPoolNd(AvgPoolOptions<D>(kernel_size)) {}  // NOLINT
  Tensor forward(const Tensor& x) override;
  /// "kernel_size=2, stride=2, padding=0" (AvgPool1d prints tuples: "kernel_size=(2,)...").
  std::string extra_repr() const override;
  AvgPoolOptions<D> options;
};
class AvgPool1d : public AvgPoolNd<1> {
 public:
  using AvgPoolNd<1>::AvgPoolNd;
};
class AvgPool2d : public AvgPoolNd<2> {
 public:
  using AvgPoolNd<2>::AvgPoolNd;
};
class AvgPool3d : public AvgPoolNd<3> {
 public:
  using AvgPoolNd<3>::AvgPoolNd;
};

/// Adaptive average pooling to a fixed output size (as torch.nn.AdaptiveAvgPool{1,2}d).
template <size_t D>
class AdaptiveAvgPoolNd : public UnaryModule {
 public:
  AdaptiveAvgPoolNd(ExpandingArray<D> output_size);  // NOLINT
  Tensor forward(const Tensor& x) override;
  /// "output_size=1" or "output_size=(5, 7)".
  std::string extra_repr() const override;
  ExpandingArray<D> output_size;
};
class AdaptiveAvgPool1d : public AdaptiveAvgPoolNd<1> {
 public:
  using AdaptiveAvgPoolNd<1>::AdaptiveAvgPoolNd;
};
class AdaptiveAvgPool2d : public AdaptiveAvgPoolNd<2> {
 public:
  using AdaptiveAvgPoolNd<2>::AdaptiveAvgPoolNd;
};

/// Adaptive max pooling (as torch.nn.AdaptiveMaxPool2d).
class AdaptiveMaxPool2d : public UnaryModule {
 public:
  AdaptiveMaxPool2d(ExpandingArray<2> output_size)  // NOLINT
      : UnaryModule("AdaptiveMaxPool2d"), output_size(std::move(output_size)) {}
  Tensor forward(const Tensor& x) override;
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
  std::string extra_repr() const override;
  ExpandingArray<2> output_size;
};

}  // namespace ember::nn
