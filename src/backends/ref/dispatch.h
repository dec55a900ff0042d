// Host-kernel helpers of the reference backend (also used by the cpu backend, which runs on the
// same memory): typed pointers into host tensors and the strided N-d loop. The dtype dispatch
// and element conversions are core's (core/dispatch.h), the dim merging too
// (core/merge_dims.h). Internal.
#pragma once
#include <array>
#include <cstdint>

#include "core/dispatch.h"
#include "core/merge_dims.h"
#include "ember/tensor.h"

namespace ember::ref {

/// Typed pointer to element 0 of a host tensor view.
template <typename T>
inline T* ptr(const Tensor& t) {
  return static_cast<T*>(t.impl()->storage->data()) + t.impl()->offset;
}

/// Iterates every index of `shape` and calls f(offs) with offs[k] the element offset of operand k
/// (strides[k] in elements), in row-major order over the dims merge_dims leaves; the innermost
/// loop is a plain strided loop.
template <size_t N, typename F>
void strided_loop(const Shape& shape, const std::array<const Strides*, N>& strides, F&& f) {
  if (numel_of(shape) == 0) return;
  const MergedDims<N> m = merge_dims<N>(shape, strides);
  const int64_t r = int64_t(m.rank);
  std::array<int64_t, N> off{};
  if (r == 0) {
    f(off);
    return;
  }
  int64_t idx[kMaxMergedDims] = {0};
  const int64_t inner = m.size[r - 1];
  std::array<int64_t, N> inner_st;
  for (size_t k = 0; k < N; ++k) inner_st[k] = m.stride[k][r - 1];
  while (true) {
    std::array<int64_t, N> o = off;
    for (int64_t i = 0; i < inner; ++i) {
      f(o);
      for (size_t k = 0; k < N; ++k) o[k] += inner_st[k];
    }
    int64_t d = r - 2;
    for (; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < N; ++k) off[k] += m.stride[k][d];
      if (idx[d] < m.size[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= m.stride[k][d] * m.size[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace ember::ref
