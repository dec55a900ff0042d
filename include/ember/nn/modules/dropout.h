// Dropout layers (as torch.nn.Dropout, Dropout1d, Dropout2d, Dropout3d): active in training
// mode only (identity after eval()). Masks come from the device's Philox generator
// (deterministic under ember::manual_seed). The constructor throws "[Dropout] dropout
// probability has to be between 0 and 1, but got 1.5". Repr "p=0.5, inplace=False".
#pragma once
#include "ember/nn/module.h"

namespace ember::nn {

class DropoutBase : public UnaryModule {
 public:
  DropoutBase(const char* name, double p);
  std::string extra_repr() const override;
  double p;
};

/// Element-wise dropout (nn::functional::dropout).
class Dropout : public DropoutBase {
 public:
  explicit Dropout(double p = 0.5) : DropoutBase("Dropout", p) {}
  Tensor forward(const Tensor& x) override;
};
/// Channel dropout on [N, C, L] or [C, L] (nn::functional::dropout1d).
class Dropout1d : public DropoutBase {
 public:
  explicit Dropout1d(double p = 0.5) : DropoutBase("Dropout1d", p) {}
  Tensor forward(const Tensor& x) override;
};
/// Channel dropout on [N, C, H, W] (nn::functional::dropout2d).
class Dropout2d : public DropoutBase {
 public:
  explicit Dropout2d(double p = 0.5) : DropoutBase("Dropout2d", p) {}
  Tensor forward(const Tensor& x) override;
};
/// Channel dropout on [N, C, D, H, W] or [C, D, H, W] (nn::functional::dropout3d).
class Dropout3d : public DropoutBase {
 public:
  explicit Dropout3d(double p = 0.5) : DropoutBase("Dropout3d", p) {}
  Tensor forward(const Tensor& x) override;
};

}  // namespace ember::nn
