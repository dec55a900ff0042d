// Backward rule of the one matmul primitive (ir::Matmul, [B, M, K] x [B, K, N]), written with
// tensor ops (run with grad mode off). Batch broadcasting happens in the frontend through
// expand/reshape views, whose own rules sum the gradient back (reduce_to), so this rule only sees
// equal batches.
#include "ember/ops/linalg.h"
#include "autodiff/rules.h"

namespace ember::autograd::rules {

void matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  if (!needs_grad({&a, &b}) || !is_floating(out.dtype())) return;
  const bool ga = a.requires_grad(), gb = b.requires_grad();
  // dA reads only b and dB only a: save just what is needed.
  SavedTensor sa(gb ? a : Tensor()), sb(ga ? b : Tensor());
  const Shape as = a.shape(), bs = b.shape();
  const DType at = a.dtype(), bt = b.dtype();
  record1("MatmulBackward", {a, b}, out, [=](const Tensor& g) {
    Tensor da, db;
    if (ga) da = reduce_to(ember::matmul(g, sb.get("matmul").mT()), as, at);  // g @ B^T
    if (gb) db = reduce_to(ember::matmul(sa.get("matmul").mT(), g), bs, bt);  // A^T @ g
    return std::vector<Tensor>{da, db};
  });
}

}  // namespace ember::autograd::rules
