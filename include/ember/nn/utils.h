// Gradient clipping, as torch.nn.utils.clip_grad_norm_ / clip_grad_value_ (PyTorch 1.13).
#pragma once
#include <vector>

#include "ember/tensor.h"

namespace ember::nn {

/// Scales the gradients of `params` in place so that their total p-norm (the norm of all
/// gradients concatenated) is at most max_norm: g *= min(1, max_norm / (total_norm + 1e-6)).
/// Parameters with an undefined grad are skipped. norm_type may be any p (0 counts nonzeros)
/// or +infinity (the largest |g|). Returns total_norm (0-d, the first grad's dtype and device;
/// a 0-d f32 zero when no parameter has a grad). Throws ember::Error when error_if_nonfinite
/// and the total norm is NaN or infinite (gradients are then left unchanged), for a non-floating
/// gradient, or for a NaN norm_type.
Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

/// Clamps every defined gradient of `params` to [-clip_value, clip_value] in place.
void clip_grad_value_(const std::vector<Tensor>& params, double clip_value);

}  // namespace ember::nn
