// Embedding lookup: index_select on the flattened indices, with torch's max_norm renorm.
#include "ember/autograd.h"
#include "ember/nn/functional/attention.h"
#include "ember/ops/indexing.h"
#include "nn/functional/common.h"

namespace ember::nn::functional {

using ember::detail::describe;

Tensor embedding(const Tensor& input, const Tensor& weight, std::optional<int64_t> padding_idx,
                 std::optional<double> max_norm, double norm_type) {
  const char* op = "embedding";
  ember::detail::check_defined(input, op);
  ember::detail::check_defined(weight, op);
  ember::detail::check_same_device(input, weight, op);
  if (weight.dim() != 2)
    EMBER_FAIL(op, "weight must be 2-d [num_embeddings, embedding_dim], got ",
               shape_str(weight.shape()));
  if (!is_integral(input.dtype()))
    EMBER_FAIL(op, "expected integer indices, got ", describe(input));
  const int64_t num = weight.size(0), dim = weight.size(1);
  if (padding_idx) {
    const int64_t p = *padding_idx;
    if (p >= num || p < -num)
      EMBER_FAIL(op, "padding_idx ", p, " must be within num_embeddings (", num, ")");
  }
  Tensor idx = ember::detail::cast(input, DType::i64).reshape({-1});
  if (idx.numel()) {
    const Tensor bad = logical_or(lt(idx, 0), ge(idx, num)), any_bad = any(bad);
    const Shape w_shape = weight.shape();
    ember::detail::check_device_data(idx.device(), [=] {
      if (!any_bad.item<bool>()) return;
      const int64_t v = masked_select(idx, bad).to_vector<int64_t>()[0];
      EMBER_FAIL("embedding", "index ", v, " is out of range for dim 0 of size ", num, " (weight ",
                 shape_str(w_shape), ")");
    });
    // On GPU devices the error comes at the next sync: stay in bounds until then.
    if (!idx.device().is_host()) idx = clamp(idx, Scalar(0), Scalar(std::max<int64_t>(num - 1, 0)));
  }
  if (max_norm && idx.numel()) {
    if (!is_floating(weight.dtype()))
      EMBER_FAIL(op, "max_norm needs a floating-point weight, got ", describe(weight));
    // Renormalize the referenced rows in place (as torch.embedding_renorm_, under no_grad).
    NoGradGuard no_grad;
    Tensor rows = index_select(weight, 0, idx);
    Tensor n = norm(rows, norm_type, {1}, true);
    Tensor f = where(gt(n, *max_norm), *max_norm / (n + 1e-7), ones_like(n));
    Tensor w = weight;  // shares storage: the caller's weight is updated
    w.copy_(index_put(weight, {idx}, rows * f));
  }
  Shape out = input.shape();
  out.push_back(dim);
  Tensor rows = index_select(weight, 0, idx);
  if (padding_idx && rows.requires_grad()) {
    // The padding row is read as is but gets no gradient (as torch): detach it where looked up.
    const int64_t p = *padding_idx < 0 ? *padding_idx + num : *padding_idx;
    rows = where(eq(idx, p).unsqueeze(1), rows.detach(), rows);
  }
  return rows.reshape(out);
}

}  // namespace ember::nn::functional
