// Scaled dot-product attention as a composite: matmul, mask, safe softmax, dropout, matmul.
#include "ember/nn/functional/attention.h"

#include <cmath>
#include <limits>

#include "ember/nn/functional/activation.h"
#include "ember/ops/layout.h"
#include "ember/ops/linalg.h"
#include "nn/functional/common.h"
#include "tensor/autocast.h"

namespace ember::nn::functional {

using ember::detail::cast;
using ember::detail::describe;

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale) {
  if (ember::detail::amp::Scope s{ember::detail::amp::Policy::lower,
                                  {&query, &key, &value, &attn_mask}})
    return scaled_dot_product_attention(s(query), s(key), s(value), s(attn_mask), dropout_p,
                                        is_causal, scale);
  const char* op = "scaled_dot_product_attention";
  for (const Tensor* t : {&query, &key, &value}) {
    detail::check_float_input(*t, op);
    if (t->dim() < 2)
      EMBER_FAIL(op, "query, key and value need at least 2 dims ([..., L, E]), got shapes ",
                 shape_str(query.shape()), ", ", shape_str(key.shape()), ", ",
                 shape_str(value.shape()));
  }
  ember::detail::check_same_device(query, key, op);
  ember::detail::check_same_device(query, value, op);
  const int64_t e = query.size(-1), l = query.size(-2), s = key.size(-2);
  if (key.size(-1) != e || value.size(-2) != s)
    EMBER_FAIL(op, "expected query [..., L, E], key [..., S, E], value [..., S, Ev], got ",
               shape_str(query.shape()), ", ", shape_str(key.shape()), ", ",
               shape_str(value.shape()));
  if (!(dropout_p >= 0 && dropout_p <= 1))
    EMBER_FAIL(op, "dropout_p must be in [0, 1], got ", dropout_p);
  if (is_causal && attn_mask.defined())
    EMBER_FAIL(op, "attn_mask cannot be given together with is_causal=true");
  const DType dt = promote_types(promote_types(query.dtype(), key.dtype()), value.dtype());
  // The matmuls run in dt (f16/bf16 ones accumulate in f32 and round once, as torch's); the
  // scaling, mask and softmax in c (f32 for f16/bf16).
  const DType c = detail::compute_dtype(dt);
  Tensor q = cast(query, dt), k = cast(key, dt), v = cast(value, dt);
  const double sc = scale ? *scale : 1.0 / std::sqrt(double(e));
  Tensor scores = cast(matmul(q, k.mT()), c) * sc;  // [..., L, S]
  const double inf = std::numeric_limits<double>::infinity();
  Tensor neg_inf = ember::detail::scalar_to_tensor(-inf, c, q.device());
  Tensor mask = attn_mask;
  if (is_causal) mask = tril(ones({l, s}, {DType::b8, q.device()}));
  if (mask.defined()) {
    ember::detail::check_same_device(query, mask, op);
    Shape ms = mask.shape();
    if (ms.size() < 2) ms.insert(ms.begin(), 2 - ms.size(), 1);
    if ((ms[ms.size() - 2] != 1 && ms[ms.size() - 2] != l) ||
        (ms[ms.size() - 1] != 1 && ms[ms.size() - 1] != s))
      EMBER_FAIL(op, "attn_mask of shape ", shape_str(mask.shape()),
                 " does not broadcast to the attention scores [..., ", l, ", ", s, "]");
    broadcast_shapes(mask.shape(), scores.shape(), op);
    if (is_bool(mask.dtype()))
      scores = where(mask, scores, neg_inf);
    else if (is_floating(mask.dtype()))
      scores = scores + cast(mask, c);
    else
      EMBER_FAIL(op, "attn_mask must be bool or floating, got ", describe(mask));
  }
  // Safe softmax: a row that is all -inf (every key masked) gives zeros instead of NaN.
  Tensor weights;
  if (scores.numel() == 0) {
    weights = scores;
  } else {
    Tensor m = amax(scores, {-1}, true);
    Tensor all_masked = eq(m, -inf);
    m = where(all_masked, ember::detail::scalar_to_tensor(0, c, q.device()), m);
    Tensor ex = exp(scores - m);
    weights = where(all_masked, ember::detail::scalar_to_tensor(0, c, q.device()),
                    ex / sum(ex, {-1}, true));
  }
  if (dropout_p > 0) weights = dropout(weights, dropout_p, true);
  return matmul(cast(weights, dt), v);
}

}  // namespace ember::nn::functional
