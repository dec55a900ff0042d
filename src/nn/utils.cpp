// Gradient clipping (torch.nn.utils.clip_grad, PyTorch 1.13).
#include "ember/nn/utils.h"

#include <cmath>
#include <limits>

#include "ember/autograd.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/layout.h"
#include "ember/ops/reduce.h"

namespace ember::nn {

Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  NoGradGuard no_grad;
  if (std::isnan(norm_type)) EMBER_FAIL("clip_grad_norm_", "norm_type must not be NaN");
  std::vector<Tensor> grads;
  for (const auto& p : params) {
    if (!p.defined()) EMBER_FAIL("clip_grad_norm_", "got an undefined parameter tensor");
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (!is_floating(g.dtype()))
      EMBER_FAIL("clip_grad_norm_", "gradients must be floating point, got ",
                 dtype_name(g.dtype()));
    grads.push_back(g);
  }
  if (grads.empty()) return scalar_tensor(0.0, DType::f32);
  const Device device = grads[0].device();
  std::vector<Tensor> norms;
  const bool inf_norm = std::isinf(norm_type) && norm_type > 0;
  for (const auto& g : grads) {
    // An empty gradient contributes 0 (abs().max() of nothing would throw).
    if (g.numel() == 0) {
      norms.push_back(scalar_tensor(0.0, TensorOptions(g.dtype(), device)));
      continue;
    }
    norms.push_back((inf_norm ? amax(abs(g.detach())) : norm(g.detach(), norm_type)).to(device));
  }
  Tensor total;
  if (inf_norm) {
    total = norms.size() == 1 ? norms[0] : amax(stack(norms));
  } else {
    total = norm(stack(norms), norm_type);
  }
  if (error_if_nonfinite && !std::isfinite(total.item<double>()))
    EMBER_FAIL(
        "clip_grad_norm_", "The total norm of order ", norm_type,
        " for gradients from `parameters` is non-finite, so it cannot be clipped. To disable "
        "this error and scale the gradients by the non-finite norm anyway, pass "
        "error_if_nonfinite = false to nn::clip_grad_norm_");
  const Tensor coef = clamp_max(max_norm / (total + 1e-6), 1.0);
  for (auto& g : grads) g.mul_(coef.to(g.device()).to(g.dtype()));
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
  NoGradGuard no_grad;
  for (const auto& p : params) {
    if (!p.defined()) EMBER_FAIL("clip_grad_value_", "got an undefined parameter tensor");
    Tensor g = p.grad();
    if (g.defined()) g.clamp_(-clip_value, clip_value);
  }
}

}  // namespace ember::nn
