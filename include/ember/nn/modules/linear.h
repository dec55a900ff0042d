// Linear layers and shape helpers: Identity, Linear, Bilinear, Flatten, Unflatten
// (as torch.nn, torch 1.13). Parameters are f32 on the default device at construction; use
// Module::to() to move or cast them.
#pragma once
#include <cstdint>

#include "ember/nn/module.h"
#include "ember/nn/modules/options.h"

namespace ember::nn {

/// Returns its input unchanged (as torch.nn.Identity).
class Identity : public UnaryModule {
 public:
  Identity() : UnaryModule("Identity") {}
  Tensor forward(const Tensor& x) override { return x; }
};

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  EMBER_ARG(int64_t, in_features);
  EMBER_ARG(int64_t, out_features);
  EMBER_ARG(bool, bias) = true;
};

/// y = x W^T + b (as torch.nn.Linear). x [*, in_features] -> [*, out_features].
/// weight [out_features, in_features] ~ kaiming_uniform_(a = sqrt(5)), i.e.
/// U(-1/sqrt(in), 1/sqrt(in)); bias [out_features] ~ U(-1/sqrt(in), 1/sqrt(in)) (0 when in == 0).
/// Throws for negative sizes; forward throws "[linear] ..." for a mismatched last dim.
class Linear : public UnaryModule {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true)
      : Linear(LinearOptions(in_features, out_features).bias(bias)) {}
  explicit Linear(const LinearOptions& options);
  void reset_parameters();
  Tensor forward(const Tensor& x) override;
  /// "in_features=4, out_features=2, bias=True"
  std::string extra_repr() const override;

  LinearOptions options;
  Tensor weight;
  Tensor bias;  // undefined when options.bias() is false
};

struct BilinearOptions {
  BilinearOptions(int64_t in1_features, int64_t in2_features, int64_t out_features)
      : in1_features_(in1_features), in2_features_(in2_features), out_features_(out_features) {}
  EMBER_ARG(int64_t, in1_features);
  EMBER_ARG(int64_t, in2_features);
  EMBER_ARG(int64_t, out_features);
  EMBER_ARG(bool, bias) = true;
};

/// y_k = x1^T A_k x2 + b_k (as torch.nn.Bilinear). x1 [*, in1], x2 [*, in2] (same leading dims)
/// -> [*, out]. weight [out, in1, in2] and bias [out] ~ U(-1/sqrt(in1), 1/sqrt(in1)).
/// forward throws "[bilinear] ..." for mismatched shapes.
class Bilinear : public Module {
 public:
  Bilinear(int64_t in1_features, int64_t in2_features, int64_t out_features, bool bias = true)
      : Bilinear(BilinearOptions(in1_features, in2_features, out_features).bias(bias)) {}
  explicit Bilinear(const BilinearOptions& options);
  void reset_parameters();
  Tensor forward(const Tensor& x1, const Tensor& x2);
  Tensor operator()(const Tensor& x1, const Tensor& x2) {
    if (!has_forward_hooks()) return forward(x1, x2);
    return call_with_hooks<Tensor>(
        {x1, x2}, [&](const std::vector<Tensor>& in) { return forward(in[0], in[1]); });
  }
  /// "in1_features=2, in2_features=3, out_features=4, bias=True"
  std::string extra_repr() const override;

  BilinearOptions options;
  Tensor weight;
  Tensor bias;
};

/// x.flatten(start_dim, end_dim) (as torch.nn.Flatten; defaults keep the batch dim).
class Flatten : public UnaryModule {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1)
      : UnaryModule("Flatten"), start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& x) override { return x.flatten(start_dim, end_dim); }
  /// "start_dim=1, end_dim=-1"
  std::string extra_repr() const override;
  int64_t start_dim, end_dim;
};

/// Splits dim into unflattened_size (one entry may be -1), as torch.nn.Unflatten.
/// forward throws when the product does not match the dim's size.
class Unflatten : public UnaryModule {
 public:
  Unflatten(int64_t dim, std::vector<int64_t> unflattened_size)
      : UnaryModule("Unflatten"), dim(dim), unflattened_size(std::move(unflattened_size)) {}
  Tensor forward(const Tensor& x) override;
  /// "dim=1, unflattened_size=(2, 5)"
  std::string extra_repr() const override;
  int64_t dim;
  std::vector<int64_t> unflattened_size;
};

}  // namespace ember::nn
