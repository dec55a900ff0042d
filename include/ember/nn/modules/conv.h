// Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d (as torch.nn, torch 1.13).
//   auto conv = std::make_shared<Conv2d>(Conv2dOptions(3, 64, 3).stride(2).padding(1));
//   auto conv = std::make_shared<Conv2d>(3, 64, 3);  // the common case
// weight: conv [out, in / groups, *k], transposed [in, out / groups, *k]; bias [out].
// Initialization as torch: weight ~ kaiming_uniform_(a = sqrt(5)) (= U(-1/sqrt(fan_in),
// 1/sqrt(fan_in)) with fan_in = weight.size(1) * prod(k)), bias ~ U(-1/sqrt(fan_in), ...).
// Constructors throw "[Conv2d] ..." when in/out channels are not divisible by groups, groups < 1,
// a size is negative, padding_mode is unknown, or padding="same" is used with a stride > 1.
// forward throws as nn::functional::conv{1,2,3}d (shapes named).
#pragma once
#include <string>

#include "ember/nn/functional/conv.h"
#include "ember/nn/module.h"
#include "ember/nn/modules/options.h"

namespace ember::nn {

template <size_t D>
struct ConvOptions {
  ConvOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels),
        out_channels_(out_channels),
        kernel_size_(std::move(kernel_size)) {}
  EMBER_ARG(int64_t, in_channels);
  EMBER_ARG(int64_t, out_channels);
  EMBER_ARG(ExpandingArray<D>, kernel_size);
  EMBER_ARG(ExpandingArray<D>, stride) = 1;
  EMBER_ARG(ExpandingArray<D>, dilation) = 1;
  EMBER_ARG(int64_t, groups) = 1;
  EMBER_ARG(bool, bias) = true;
  /// "zeros" (default), "reflect", "replicate" or "circular" (as torch's padding_mode).
  EMBER_ARG(std::string, padding_mode) = "zeros";

 public:
  /// Numeric padding: one value or one per spatial dim.
  ConvOptions& padding(const ExpandingArray<D>& p) & {
    padding_ = p;
    padding_str_.clear();
    return *this;
  }
  ConvOptions padding(const ExpandingArray<D>& p) && { return std::move(padding(p)); }
  /// "same" or "valid".
  ConvOptions& padding(const functional::PaddingMode& p) & {
    padding_str_ = p.value;
    padding_ = ExpandingArray<D>(0);
    return *this;
  }
  ConvOptions padding(const functional::PaddingMode& p) && { return std::move(padding(p)); }
  const ExpandingArray<D>& padding() const& { return padding_; }
  ExpandingArray<D> padding() && { return std::move(padding_); }
  /// "same"/"valid" when a string padding was given, else empty.
  const std::string& padding_str() const& { return padding_str_; }
  std::string padding_str() && { return std::move(padding_str_); }

 private:
  ExpandingArray<D> padding_ = 0;
  std::string padding_str_;
};
using Conv1dOptions = ConvOptions<1>;
using Conv2dOptions = ConvOptions<2>;
using Conv3dOptions = ConvOptions<3>;

/// Shared implementation of Conv1d/2d/3d (as torch.nn.modules.conv._ConvNd).
template <size_t D>
class ConvNd : public UnaryModule {
 public:
  explicit ConvNd(const ConvOptions<D>& options);
  ConvNd(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : ConvNd(ConvOptions<D>(in_channels, out_channels, std::move(kernel_size))) {}
  void reset_parameters();
  /// input [N, C_in, *S] or unbatched [C_in, *S].
  Tensor forward(const Tensor& x) override;
  /// "3, 64, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1)" (padding, dilation, groups,
  /// bias=False, padding_mode printed only when not the default; stride always), as torch.
  std::string extra_repr() const override;

  ConvOptions<D> options;
  Tensor weight;
  Tensor bias;
};

/// As torch.nn.Conv1d: input [N, C_in, L].
class Conv1d : public ConvNd<1> {
 public:
  using ConvNd<1>::ConvNd;
};
/// As torch.nn.Conv2d: input [N, C_in, H, W].
class Conv2d : public ConvNd<2> {
 public:
  using ConvNd<2>::ConvNd;
};
/// As torch.nn.Conv3d: input [N, C_in, D, H, W].
class Conv3d : public ConvNd<3> {
 public:
  using ConvNd<3>::ConvNd;
};

template <size_t D>
struct ConvTransposeOptions {
  ConvTransposeOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels),
        out_channels_(out_channels),
        kernel_size_(std::move(kernel_size)) {}
  EMBER_ARG(int64_t, in_channels);
  EMBER_ARG(int64_t, out_channels);
  EMBER_ARG(ExpandingArray<D>, kernel_size);
  EMBER_ARG(ExpandingArray<D>, stride) = 1;
  EMBER_ARG(ExpandingArray<D>, padding) = 0;
  EMBER_ARG(ExpandingArray<D>, output_padding) = 0;
  EMBER_ARG(int64_t, groups) = 1;
  EMBER_ARG(bool, bias) = true;
  EMBER_ARG(ExpandingArray<D>, dilation) = 1;
  /// Only "zeros" is supported, as torch.
  EMBER_ARG(std::string, padding_mode) = "zeros";
};
using ConvTranspose1dOptions = ConvTransposeOptions<1>;
using ConvTranspose2dOptions = ConvTransposeOptions<2>;
using ConvTranspose3dOptions = ConvTransposeOptions<3>;

/// Shared implementation of ConvTranspose1d/2d/3d (as torch.nn.modules.conv._ConvTransposeNd).
template <size_t D>
class ConvTransposeNd : public UnaryModule {
 public:
  explicit ConvTransposeNd(const ConvTransposeOptions<D>& options);
  ConvTransposeNd(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : ConvTransposeNd(
            ConvTransposeOptions<D>(in_channels, out_channels, std::move(kernel_size))) {}
  void reset_parameters();
  Tensor forward(const Tensor& x) override;
  /// As torch's forward(input, output_size): output_padding is chosen so that the spatial
  /// output equals output_size (the last D entries are used). Throws when it is not reachable.
  Tensor forward(const Tensor& x, const std::vector<int64_t>& output_size);
  std::string extra_repr() const override;

  ConvTransposeOptions<D> options;
  Tensor weight;
  Tensor bias;
};

class ConvTranspose1d : public ConvTransposeNd<1> {
 public:
  using ConvTransposeNd<1>::ConvTransposeNd;
};
class ConvTranspose2d : public ConvTransposeNd<2> {
 public:
  using ConvTransposeNd<2>::ConvTransposeNd;
};
class ConvTranspose3d : public ConvTransposeNd<3> {
 public:
  using ConvTransposeNd<3>::ConvTransposeNd;
};

}  // namespace ember::nn
