// Parallel strided iteration for the cpu kernels: the N-d index space of a shape is flattened
// (dims taken in operand 0's memory order, then merged by core/merge_dims.h), split into
// chunks of at least `grain` elements over the thread pool, and handed to a row function one
// contiguous run of the innermost dim at a time. Internal.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>

#include "backends/cpu/thread_pool.h"
#include "core/merge_dims.h"
#include "ember/tensor.h"

namespace ember::cpu {

/// Sorts order[0, len) by descending stride, stably (an insertion sort: len <= kMaxMergedDims,
/// usually already sorted, and std::stable_sort allocates a buffer on every call).
inline void sort_dims_by_stride(size_t* order, size_t len, const Strides& strides) {
  for (size_t i = 1; i < len; ++i) {
    const size_t d = order[i];
    size_t j = i;
    for (; j > 0 && strides[order[j - 1]] < strides[d]; --j) order[j] = order[j - 1];
    order[j] = d;
  }
}

/// The dims of `shape` in operand 0's memory order (outermost first), so a channels-last or
/// other permuted-dense operand 0 is walked in runs of its innermost dim, then merged. Size-1
/// dims are left out of the order (merge_dims drops them), which keeps it within kMaxMergedDims
/// entries. parallel_rows walks this; fused graphs ask whether its inner run is unit-stride.
template <size_t N>
MergedDims<N> merge_in_memory_order(const Shape& shape,
                                    const std::array<const Strides*, N>& strides) {
  size_t order[kMaxMergedDims];
  size_t len = 0;
  bool by_memory = true;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    order[len++] = d;
    by_memory = by_memory && (*strides[0])[d] > 0;
  }
  if (by_memory) sort_dims_by_stride(order, len, *strides[0]);
  return merge_dims<N>(shape, strides, order, len);
}

/// Calls row(off, n, inner) for runs of the innermost merged dim: off[k] is operand k's element
/// offset of the run's first element, n its length, inner[k] operand k's stride along it. Rows
/// are independent, so the order of the walk (merge_in_memory_order's) changes no result.
template <size_t N, typename Row>
void parallel_rows(const Shape& shape, const std::array<const Strides*, N>& strides, int64_t grain,
                   Row&& row) {
  const int64_t total = numel_of(shape);
  if (total == 0) return;
  MergedDims<N> m = merge_in_memory_order<N>(shape, strides);
  int64_t r = int64_t(m.rank);
  int64_t* sz = m.size;
  auto& st = m.stride;
  if (r == 0) {
    sz[0] = 1;
    for (size_t k = 0; k < N; ++k) st[k][0] = 0;
    r = 1;
  }
  std::array<int64_t, N> inner;
  for (size_t k = 0; k < N; ++k) inner[k] = st[k][r - 1];
  parallel_for(0, total, grain, [&](int64_t b, int64_t e) {
    int64_t idx[kMaxMergedDims];
    std::array<int64_t, N> off{};
    for (int64_t d = r - 1, rem = b; d >= 0; --d) {
      idx[d] = rem % sz[d];
      rem /= sz[d];
      for (size_t k = 0; k < N; ++k) off[k] += idx[d] * st[k][d];
    }
    int64_t left = e - b;
    while (left > 0) {
      const int64_t n = std::min(sz[r - 1] - idx[r - 1], left);
      row(off, n, inner);
      left -= n;
      if (left == 0) break;
      // The run reached the end of the inner dim: rewind it and carry into the outer dims.
      for (size_t k = 0; k < N; ++k) off[k] -= idx[r - 1] * inner[k];
      idx[r - 1] = 0;
      for (int64_t d = r - 2; d >= 0; --d) {
        ++idx[d];
        for (size_t k = 0; k < N; ++k) off[k] += st[k][d];
        if (idx[d] < sz[d]) break;
        for (size_t k = 0; k < N; ++k) off[k] -= st[k][d] * sz[d];
        idx[d] = 0;
      }
    }
  });
}

/// The view t[..., b:e, ...] along `dim` (same storage; no autograd, no checks). Undefined stays
/// undefined.
inline Tensor slice_view(const Tensor& t, int64_t dim, int64_t b, int64_t e) {
  if (!t.defined()) return t;
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = t.impl()->storage;
  impl->shape = t.shape();
  impl->shape[size_t(dim)] = e - b;
  impl->strides = t.strides();
  impl->offset = t.offset() + b * t.stride(dim);
  impl->dtype = t.dtype();
  return Tensor(std::move(impl));
}

/// Splits an elementwise op over the thread pool: every operand has `shape` (broadcast inputs
/// are stride-0 views), so slicing all of them along one dim gives independent sub-ops.
/// run(views) is called with the sliced operands. Returns false (nothing run) when the op is too
/// small or has no dim to split.
template <size_t N, typename Run>
bool parallel_slices(const std::array<Tensor, N>& ops, int64_t grain, Run&& run) {
  const Shape& s = ops[0].shape();
  const int64_t total = ops[0].numel();
  const int nt = num_threads();
  if (total <= grain || nt == 1) return false;
  // The outermost dim long enough to feed every thread, else the longest one.
  int64_t dim = -1;
  for (size_t i = 0; i < s.size() && dim < 0; ++i)
    if (s[i] >= nt) dim = int64_t(i);
  if (dim < 0)
    for (size_t i = 0; i < s.size(); ++i)
      if (dim < 0 || s[i] > s[size_t(dim)]) dim = int64_t(i);
  if (dim < 0 || s[size_t(dim)] < 2) return false;
  const int64_t len = s[size_t(dim)];
  const int64_t g = std::max<int64_t>(1, grain / std::max<int64_t>(1, total / len));
  parallel_for(0, len, g, [&](int64_t b, int64_t e) {
    std::array<Tensor, N> v;
    for (size_t k = 0; k < N; ++k) v[k] = slice_view(ops[k], dim, b, e);
    run(v);
  });
  return true;
}

}  // namespace ember::cpu
