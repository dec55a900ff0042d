// Activation layers (as torch.nn, torch 1.13): each forward calls the nn::functional form of the
// same name (see nn/functional/activation.h for the formulas, dtypes and errors). Torch's
// `inplace` flags are not offered: every forward returns a new tensor.
#pragma once
#include <string>

#include "ember/nn/module.h"

namespace ember::nn {

// Declares a parameterless activation module whose forward is `expr` (x is the input).
#define EMBER_SIMPLE_ACTIVATION(Name, expr)   \
  class Name : public UnaryModule {           \
   public:                                    \
    Name() : UnaryModule(#Name) {}            \
    Tensor forward(const Tensor& x) override; \
  }

/// max(x, 0) (as torch.nn.ReLU).
EMBER_SIMPLE_ACTIVATION(ReLU, relu);
/// min(max(x, 0), 6) (as torch.nn.ReLU6).
EMBER_SIMPLE_ACTIVATION(ReLU6, relu6);
/// scale * elu(x, alpha) (as torch.nn.SELU).
EMBER_SIMPLE_ACTIVATION(SELU, selu);
/// x * sigmoid(x) (as torch.nn.SiLU).
EMBER_SIMPLE_ACTIVATION(SiLU, silu);
/// x * tanh(softplus(x)) (as torch.nn.Mish).
EMBER_SIMPLE_ACTIVATION(Mish, mish);
/// clamp(x / 6 + 1 / 2, 0, 1) (as torch.nn.Hardsigmoid).
EMBER_SIMPLE_ACTIVATION(Hardsigmoid, hardsigmoid);
/// x * hardsigmoid(x) (as torch.nn.Hardswish).
EMBER_SIMPLE_ACTIVATION(Hardswish, hardswish);
/// 1 / (1 + exp(-x)) (as torch.nn.Sigmoid).
EMBER_SIMPLE_ACTIVATION(Sigmoid, sigmoid);
/// tanh(x) (as torch.nn.Tanh).
EMBER_SIMPLE_ACTIVATION(Tanh, tanh);
/// log(sigmoid(x)) (as torch.nn.LogSigmoid).
EMBER_SIMPLE_ACTIVATION(LogSigmoid, log_sigmoid);
/// x / (1 + |x|) (as torch.nn.Softsign).
EMBER_SIMPLE_ACTIVATION(Softsign, softsign);
/// x - tanh(x) (as torch.nn.Tanhshrink).
EMBER_SIMPLE_ACTIVATION(Tanhshrink, tanhshrink);
#undef EMBER_SIMPLE_ACTIVATION

/// x if x > 0 else negative_slope * x (as torch.nn.LeakyReLU). Repr "negative_slope=0.01".
class LeakyReLU : public UnaryModule {
 public:
  explicit LeakyReLU(double negative_slope = 0.01)
      : UnaryModule("LeakyReLU"), negative_slope(negative_slope) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double negative_slope;
};

/// x if x > 0 else alpha * (exp(x) - 1) (as torch.nn.ELU). Repr "alpha=1.0".
class ELU : public UnaryModule {
 public:
  explicit ELU(double alpha = 1.0) : UnaryModule("ELU"), alpha(alpha) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double alpha;
};

/// As torch.nn.CELU. Repr "alpha=1.0".
class CELU : public UnaryModule {
 public:
  explicit CELU(double alpha = 1.0) : UnaryModule("CELU"), alpha(alpha) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double alpha;
};

/// As torch.nn.GELU; approximate "none" or "tanh" (others throw at construction).
/// Repr "approximate='none'".
class GELU : public UnaryModule {
 public:
  explicit GELU(std::string approximate = "none");
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string approximate;
};

/// log(1 + exp(beta x)) / beta (as torch.nn.Softplus). Repr "beta=1, threshold=20".
class Softplus : public UnaryModule {
 public:
  explicit Softplus(double beta = 1.0, double threshold = 20.0)
      : UnaryModule("Softplus"), beta(beta), threshold(threshold) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double beta, threshold;
};

/// clamp(x, min_val, max_val) (as torch.nn.Hardtanh). Throws if min_val > max_val.
/// Repr "min_val=-1.0, max_val=1.0".
class Hardtanh : public UnaryModule {
 public:
  explicit Hardtanh(double min_val = -1.0, double max_val = 1.0);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double min_val, max_val;
};

/// As torch.nn.Hardshrink / Softshrink. Repr "0.5".
class Hardshrink : public UnaryModule {
 public:
  explicit Hardshrink(double lambd = 0.5) : UnaryModule("Hardshrink"), lambd(lambd) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double lambd;
};
class Softshrink : public UnaryModule {
 public:
  explicit Softshrink(double lambd = 0.5) : UnaryModule("Softshrink"), lambd(lambd) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double lambd;
};

/// x where x > threshold, else value (as torch.nn.Threshold). Repr "threshold=0.1, value=20.0".
class Threshold : public UnaryModule {
 public:
  Threshold(double threshold, double value)
      : UnaryModule("Threshold"), threshold(threshold), value(value) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double threshold, value;
};

/// a * sigmoid(b) of the halves along dim (as torch.nn.GLU). Repr "dim=-1".
class GLU : public UnaryModule {
 public:
  explicit GLU(int64_t dim = -1) : UnaryModule("GLU"), dim(dim) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t dim;
};

/// softmax / log_softmax / softmin along dim (as torch.nn.Softmax, LogSoftmax, Softmin).
/// Repr "dim=1".
class Softmax : public UnaryModule {
 public:
  explicit Softmax(int64_t dim) : UnaryModule("Softmax"), dim(dim) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t dim;
};
class LogSoftmax : public UnaryModule {
 public:
  explicit LogSoftmax(int64_t dim) : UnaryModule("LogSoftmax"), dim(dim) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t dim;
};
class Softmin : public UnaryModule {
 public:
  explicit Softmin(int64_t dim) : UnaryModule("Softmin"), dim(dim) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t dim;
};

/// x if x >= 0 else a * x with a learnable `weight` [num_parameters] initialised to `init`
/// (as torch.nn.PReLU; num_parameters is 1 or the channel count, dim 1 of the input).
/// Throws for num_parameters < 1. Repr "num_parameters=1".
class PReLU : public UnaryModule {
 public:
  explicit PReLU(int64_t num_parameters = 1, double init = 0.25);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t num_parameters;
  Tensor weight;
};

}  // namespace ember::nn
