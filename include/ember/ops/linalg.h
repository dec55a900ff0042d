// Linear algebra (as torch). Every numeric dtype; bool is rejected (as torch). Mixed operand
// dtypes promote (promote_types; torch requires equal dtypes). Floats accumulate in float (f32,
// f16, bf16) or double (f64); integers accumulate in their own type and wrap, as torch.
// Throws ember::Error naming the op and both shapes on mismatched sizes, wrong ranks, undefined
// tensors or mixed devices. Under autocast (ember/autocast.h) every op here but dot and outer
// runs in the low-precision dtype.
#pragma once
#include "ember/tensor.h"

namespace ember {

/// torch.matmul: 1-d x 1-d -> dot (0-d); 2-d x 2-d -> [M, N]; a 1-d operand gets a dim
/// prepended (left) or appended (right) that is removed from the result; >2-d operands broadcast
/// their batch dims ([2, 1, 3, 4] x [5, 4, 2] -> [2, 5, 3, 2]). K = 0 gives zeros. Throws
/// "[matmul] shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)", and for 0-d operands.
Tensor matmul(const Tensor& a, const Tensor& b);
/// torch.bmm: [B, M, K] x [B, K, N] -> [B, M, N], no broadcasting.
Tensor bmm(const Tensor& a, const Tensor& b);
/// torch.mm: [M, K] x [K, N] -> [M, N], 2-d only.
Tensor mm(const Tensor& a, const Tensor& b);
/// torch.dot: [n] x [n] -> 0-d.
Tensor dot(const Tensor& a, const Tensor& b);
/// torch.outer: [n] x [m] -> [n, m] (a product with promotion; bool allowed, as torch).
Tensor outer(const Tensor& a, const Tensor& b);
/// torch.addmm: beta * input + alpha * (mat1 @ mat2). mat1 [M, K], mat2 [K, N], input
/// broadcastable to [M, N]. beta = 0 ignores input's values (NaN included), as torch. Throws
/// "[addmm] ..." for other ranks or an input that does not broadcast.
Tensor addmm(const Tensor& input, const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1,
             const Scalar& alpha = 1);
/// torch.baddbmm: beta * input + alpha * bmm(batch1, batch2). batch1 [B, M, K], batch2
/// [B, K, N], input broadcastable to [B, M, N]. Throws as bmm, and "[baddbmm] ..." for an input
/// that does not broadcast.
Tensor baddbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2,
               const Scalar& beta = 1, const Scalar& alpha = 1);
/// torch.nn.functional.linear: y = x W^T + b. x [*, in], weight [out, in] (or [in], giving
/// [*]), bias [out] (optional; undefined = none) -> [*, out].
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace ember
