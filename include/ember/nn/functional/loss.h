// Loss functions (as torch.nn.functional, formulas of torch 1.13 and later).
//
// reduction is a string, as torch's: "mean" (default; the mean of the per-element losses, or
// the weighted mean where noted), "sum", or "none" (the per-element losses, shaped as noted).
// kl_div also takes "batchmean". Any other string throws "[op] ... is not a valid value for
// reduction". A "mean" over zero elements is NaN, as torch.
//
// Dtypes: input (and float targets) are floating (f32 f64 f16 bf16) and promote together; the
// result has the promoted dtype. f16/bf16 are computed in f32 and rounded once at the end.
// Class-index targets are i64 or u8, as torch (any other dtype throws, naming the conversion).
// Optional tensors (weight, pos_weight) are passed as an undefined Tensor() to omit them.
// Errors: ember::Error tagged with the op name naming the shapes for a shape mismatch, a class
// index out of range (other than ignore_index), a non-floating input, or mixed devices.
#pragma once
#include <string>

#include "ember/tensor.h"

namespace ember::nn::functional {

/// input: logits [N, C], [N, C, d1, ..., dk] or unbatched [C]; the class dim is 1 (0 when
/// unbatched). target either
///  * class indices (i64 or u8) of shape [N] / [N, d1, ..., dk] / [] with values in [0, C)
///    or == ignore_index; or
///  * class probabilities (floating dtype) of input's shape.
/// weight [C] (optional) rescales each class. label_smoothing in [0, 1]. With logp =
/// log_softmax(input, class dim) and e = eps = label_smoothing:
///  * indices: loss_i = (1 - e) * (-w[t_i] logp[i, t_i]) + (e / C) * (-sum_c w[c] logp[i, c]),
///    and 0 where t_i == ignore_index. "mean" divides the first term's sum by
///    sum_{i not ignored} w[t_i] and the second's by the same sum when weight is given, else by
///    the number of non-ignored targets (torch's exact formula). "none" returns [N, d1...].
///  * probabilities: t' = t (1 - e) + e / C; loss_i = -sum_c w[c] t'[i, c] logp[i, c];
///    "mean" divides the sum by N * d1 * ... * dk (weights do not enter the divisor);
///    ignore_index does not apply.
/// (as torch.nn.functional.cross_entropy). Throws "[cross_entropy] ..." when the target shape
/// does not match, a class index is out of range, weight is not [C], label_smoothing is outside
/// [0, 1], or input has no class dim (0-d). On GPU devices the class-range error is raised at the
/// device's next sync or read (the check runs on the device; no host round trip).
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                     int64_t ignore_index = -100, const std::string& reduction = "mean",
                     double label_smoothing = 0.0);

/// input: log-probabilities [N, C], [N, C, d1, ..., dk] or [C]; target class indices
/// [N] / [N, d1, ..., dk] / [] in [0, C) or == ignore_index; weight [C] optional.
/// loss_i = -w[t_i] * input[i, t_i] (0 where t_i == ignore_index); "mean" is
/// sum_i loss_i / sum_{i not ignored} w[t_i] (NaN when every target is ignored), as
/// torch.nn.functional.nll_loss. "none" returns target's shape. Throws as cross_entropy.
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                int64_t ignore_index = -100, const std::string& reduction = "mean");

/// (input - target)^2; input and target broadcast (as torch.nn.functional.mse_loss).
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");

/// |input - target|; input and target broadcast (as torch.nn.functional.l1_loss).
Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");

/// d = input - target: 0.5 d^2 where |d| < delta, else delta * (|d| - 0.5 delta) (as
/// torch.nn.functional.huber_loss). Throws unless delta > 0.
Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
                  double delta = 1.0);

/// d = input - target: 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta; beta == 0 is the
/// l1 loss (as torch.nn.functional.smooth_l1_loss). Throws if beta < 0.
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      const std::string& reduction = "mean", double beta = 1.0);

/// input: probabilities in [0, 1]; target of input's shape (a different shape throws, as
/// torch); weight (optional) broadcasts to input.
/// loss = -w * (t * max(log x, -100) + (1 - t) * max(log(1 - x), -100)) (logs clamped at -100
/// as torch.nn.functional.binary_cross_entropy). Throws when an input value is outside [0, 1]
/// (on GPU devices at the next sync or read).
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const Tensor& weight = Tensor(), const std::string& reduction = "mean");

/// input: logits; target of input's shape; weight broadcasts to input; pos_weight broadcasts
/// against the last dim (the classes), as torch. Stable form:
/// loss = w * ((1 - t) x - (1 + (pw - 1) t) log_sigmoid(x))
/// (as torch.nn.functional.binary_cross_entropy_with_logits). Throws when target's shape differs.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight = Tensor(),
                                        const std::string& reduction = "mean",
                                        const Tensor& pos_weight = Tensor());

/// Kullback-Leibler divergence; input holds log-probabilities. Pointwise:
/// log_target false: xlogy(t, t) - t * input (0 where t == 0); true: exp(t) * (t - input).
/// reduction "mean" averages over every element; "batchmean" divides the sum by input.size(0)
/// (by 1 for 0-d input), the mathematically correct KL (as torch.nn.functional.kl_div).
/// input and target broadcast.
Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
              bool log_target = false);

}  // namespace ember::nn::functional
