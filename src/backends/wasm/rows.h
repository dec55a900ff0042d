// Parallel row iteration for the wasm element-wise kernels: the index space of a shape, its dims
// taken in operand 0's memory order and merged (core/merge_dims.h), split into chunks over the
// thread pool and handed to a row function one run of the innermost dim at a time. Internal.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>

#include "backends/wasm/thread_pool.h"
#include "core/merge_dims.h"
#include "ember/tensor.h"

namespace ember::wasm {

/// The dims of `shape` outermost first in operand 0's memory order (size-1 dims left out),
/// merged for the N operands.
template <size_t N>
MergedDims<N> merge_rows(const Shape& shape, const std::array<const Strides*, N>& strides) {
  MergedDims<N> m;
  if (numel_of(shape) == 0) {  // nothing to visit
    m.rank = 1;
    m.size[0] = 0;
    for (size_t k = 0; k < N; ++k) m.stride[k][0] = 0;
    return m;
  }
  size_t order[kMaxMergedDims];
  size_t len = 0;
  bool by_memory = true;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    order[len++] = d;
    by_memory = by_memory && (*strides[0])[d] > 0;
  }
  if (by_memory)  // insertion sort by descending stride of operand 0, stable
    for (size_t i = 1; i < len; ++i) {
      const size_t d = order[i];
      size_t j = i;
      for (; j > 0 && (*strides[0])[order[j - 1]] < (*strides[0])[d]; --j) order[j] = order[j - 1];
      order[j] = d;
    }
  m = merge_dims<N>(shape, strides, order, len);
  if (m.rank == 0) {  // one element
    m.rank = 1;
    m.size[0] = 1;
    for (size_t k = 0; k < N; ++k) m.stride[k][0] = 0;
  }
  return m;
}

/// Calls row(off, n, inner) for runs of the innermost merged dim of m: off[k] is operand k's
/// element offset of the run's first element, n its length, inner[k] operand k's stride along
/// it. Rows are independent: the split changes no result.
template <size_t N, typename Row>
void parallel_rows(const MergedDims<N>& m, int64_t grain, Row&& row) {
  const int64_t r = int64_t(m.rank);
  int64_t total = 1;
  for (int64_t d = 0; d < r; ++d) total *= m.size[d];
  if (total == 0) return;
  std::array<int64_t, N> inner;
  for (size_t k = 0; k < N; ++k) inner[k] = m.stride[k][r - 1];
  parallel_for(total, grain, [&](int64_t b, int64_t e) {
    int64_t idx[kMaxMergedDims];
    std::array<int64_t, N> off{};
    for (int64_t d = r - 1, rem = b; d >= 0; --d) {
      idx[d] = rem % m.size[d];
      rem /= m.size[d];
      for (size_t k = 0; k < N; ++k) off[k] += idx[d] * m.stride[k][d];
    }
    for (int64_t left = e - b; left > 0;) {
      const int64_t n = std::min(m.size[r - 1] - idx[r - 1], left);
      row(off, n, inner);
      left -= n;
      if (left == 0) break;
      // The run reached the end of the inner dim: rewind it and carry into the outer dims.
      for (size_t k = 0; k < N; ++k) off[k] -= idx[r - 1] * inner[k];
      idx[r - 1] = 0;
      for (int64_t d = r - 2; d >= 0; --d) {
        ++idx[d];
        for (size_t k = 0; k < N; ++k) off[k] += m.stride[k][d];
        if (idx[d] < m.size[d]) break;
        for (size_t k = 0; k < N; ++k) off[k] -= m.stride[k][d] * m.size[d];
        idx[d] = 0;
      }
    }
  });
}

}  // namespace ember::wasm
