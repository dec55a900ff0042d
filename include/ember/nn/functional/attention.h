// Attention and embedding lookups (as torch.nn.functional): the transformer building blocks that
// are not plain layers. Composites of public tensor ops (matmul, softmax, index_select...).
// Errors: ember::Error tagged with the op name, naming the shapes, for mismatched shapes, an
// index out of range, a wrong dtype, an undefined tensor, or mixed devices.
#pragma once
#include <optional>

#include "ember/tensor.h"

namespace ember::nn::functional {

/// softmax(query key^T * scale + bias) value (Vaswani et al. 2017; as
/// torch.nn.functional.scaled_dot_product_attention).
///  query [..., L, E], key [..., S, E], value [..., S, Ev] -> [..., L, Ev]; floating dtypes
///  (promoted together); the batch dims broadcast (as matmul).
///  attn_mask (optional) broadcasts to [..., L, S]: bool means true = attend (false positions get
///  -inf), a floating mask is added to the scores.
///  is_causal: position i attends to j <= i (the top-left aligned lower triangle, torch's
///  tril(ones(L, S))); cannot be combined with attn_mask.
///  dropout_p: dropout (ember::bernoulli, inverted scaling) on the attention weights, applied
///  whenever dropout_p > 0 as torch does (pass 0 at evaluation).
///  scale: defaults to 1 / sqrt(E).
/// A query row whose every key is masked gets zeros (not NaN), as torch >= 2.5's math kernel.
/// Throws "[scaled_dot_product_attention] ..." for ranks < 2, mismatched E or S, a mask that does
/// not broadcast, attn_mask with is_causal, or dropout_p outside [0, 1].
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask = Tensor(), double dropout_p = 0.0,
                                    bool is_causal = false,
                                    std::optional<double> scale = std::nullopt);

/// Looks up rows of weight [num_embeddings, embedding_dim] (any dtype) at integer indices of any
/// shape -> [*input.shape, embedding_dim] (as torch.nn.functional.embedding).
/// padding_idx (negative counts from num_embeddings) only marks the row that receives no
/// gradient; the forward value is the row itself, as torch. max_norm (optional): the looked-up
/// rows of weight whose norm_type-norm exceeds max_norm are rescaled IN PLACE to norm max_norm
/// (scale max_norm / (norm + 1e-7)) before the lookup, as torch. Throws
/// "[embedding] index 7 is out of range for dim 0 of size 5" for an index outside
/// [0, num_embeddings) (negative indices are errors, as torch; on GPU devices at the next sync or
/// read), when weight is not 2-d, input is
/// not an integer tensor, or padding_idx is out of range.
Tensor embedding(const Tensor& input, const Tensor& weight,
                 std::optional<int64_t> padding_idx = std::nullopt,
                 std::optional<double> max_norm = std::nullopt, double norm_type = 2.0);

}  // namespace ember::nn::functional
