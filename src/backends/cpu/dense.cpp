#include "backends/cpu/dense.h"

#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "backends/ref/kernels.h"
#include "tensor/internal.h"

namespace ember::cpu {

Tensor dense_copy(const Tensor& t, DType dtype, MemoryFormat f) {
  Tensor out = detail::make_tensor(t.shape(), dtype, t.device(), f);
  const ir::Copy c{t, out};
  if (!copy(c)) ref::copy(c);
  return out;
}

Tensor dense(const Tensor& t, MemoryFormat f) {
  if (!t.defined() || t.is_contiguous(f)) return t;
  return dense_copy(t, f);
}

Tensor dense_batch_copy(const Tensor& t, DType dtype) {
  if (t.size(0) <= 1 || t.stride(0) != 0) return dense_copy(t, dtype);
  const Tensor one = dense_copy(slice_view(t, 0, 0, 1), dtype);
  Strides st = one.strides();
  st[0] = 0;
  return detail::make_view(one, t.shape(), std::move(st), one.offset());
}

}  // namespace ember::cpu
