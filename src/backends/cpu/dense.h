// Dense temporaries of the cpu kernels: copies made inside Backend::execute without re-entering
// the frontend (no dispatch, no autograd, no checks): allocated through the tensor layer on the
// operand's device and filled by the cpu copy kernel (the reference one when it declines).
// Internal.
#pragma once
#include "ember/tensor.h"

namespace ember::cpu {

/// A new tensor of t's shape in memory format f (contiguous or the channels-last format of t's
/// rank) holding t's values as `dtype`. t: a defined host tensor, any strides.
Tensor dense_copy(const Tensor& t, DType dtype, MemoryFormat f = MemoryFormat::contiguous);
inline Tensor dense_copy(const Tensor& t, MemoryFormat f = MemoryFormat::contiguous) {
  return dense_copy(t, t.dtype(), f);
}
/// t itself when it is dense in f, else dense_copy(t, f). Undefined stays undefined.
Tensor dense(const Tensor& t, MemoryFormat f = MemoryFormat::contiguous);
/// A view of a batch-stride-0 operand [B, ...] (every matrix the same) as a dense copy of one
/// matrix, broadcast again over B; other tensors: dense_copy(t, dtype). t: rank >= 1.
Tensor dense_batch_copy(const Tensor& t, DType dtype);

}  // namespace ember::cpu
