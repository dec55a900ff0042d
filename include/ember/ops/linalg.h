// Linear algebra (as torch). Floating or integer dtypes; both operands promote.
#pragma once
#include "ember/tensor.h"

namespace ember {

/// torch.matmul: 1-d x 1-d -> dot (0-d); 2-d x 2-d -> [M, N]; 1-d operands get a dim
/// prepended/appended then removed; >2-d batch dims broadcast. Throws
/// "[matmul] shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)".
Tensor matmul(const Tensor& a, const Tensor& b);
/// Batched [B, M, K] x [B, K, N] -> [B, M, N] with no broadcasting (torch.bmm).
Tensor bmm(const Tensor& a, const Tensor& b);
/// 2-d x 2-d only (torch.mm).
Tensor mm(const Tensor& a, const Tensor& b);
/// 1-d x 1-d -> 0-d.
Tensor dot(const Tensor& a, const Tensor& b);
/// 1-d [n] x 1-d [m] -> [n, m].
Tensor outer(const Tensor& a, const Tensor& b);
/// y = x W^T + b: x [*, in], weight [out, in], bias [out] (optional).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace ember
