// The one dim merging of Ember's strided loops: an iteration over several operands of one shape
// (each with its own strides) rewritten over fewer dims, by dropping size-1 dims and merging
// adjacent dims that are contiguous for every operand. The ref and cpu host loops and the GPU
// kernels' index math (codegen's Iter) all iterate the result; each keeps its own loop code.
// Internal; depends on ember/shape.h only.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

#include "ember/shape.h"

namespace ember {

/// Capacity of a merged iteration: merged dims have sizes >= 2 and a non-empty tensor holds at
/// most 2^62 elements, so at most 62 of them remain.
inline constexpr size_t kMaxMergedDims = 64;

/// Merges the dims of an iteration over `shape` for n operands, operand k with strides
/// *strides[k] (in elements; any sign, 0 for broadcast). Dims are taken outer to inner in
/// `order` (order_len entries; nullptr: 0, 1, ..., rank - 1); dims of size 1 may be left out
/// of it. Two consecutive dims merge when every operand's outer stride equals its inner stride
/// times the inner size, so the row-major walk of the merged dims visits the same offsets in
/// the same order. Writes the merged sizes to sizes[0..r) and operand k's stride along merged
/// dim j to merged_strides[k * kMaxMergedDims + j]; returns r (0: a single element). A shape
/// with a size-0 dim returns 0 and writes nothing: callers test the element count first.
size_t merge_dims(const Shape& shape, const Strides* const* strides, size_t n, int64_t* sizes,
                  int64_t* merged_strides, const size_t* order = nullptr, size_t order_len = 0);

/// merge_dims for a fixed number of operands, into arrays: stride[k][j] is operand k's stride
/// along merged dim j < rank.
template <size_t N>
struct MergedDims {
  size_t rank = 0;
  int64_t size[kMaxMergedDims];
  int64_t stride[N][kMaxMergedDims];
};
template <size_t N>
MergedDims<N> merge_dims(const Shape& shape, const std::array<const Strides*, N>& strides,
                         const size_t* order = nullptr, size_t order_len = 0) {
  MergedDims<N> m;
  m.rank = merge_dims(shape, strides.data(), N, m.size, &m.stride[0][0], order, order_len);
  return m;
}

}  // namespace ember
