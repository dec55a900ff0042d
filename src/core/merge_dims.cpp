#include "core/merge_dims.h"

namespace ember {

size_t merge_dims(const Shape& shape, const Strides* const* strides, size_t n, int64_t* sizes,
                  int64_t* merged_strides, const size_t* order, size_t order_len) {
  for (int64_t s : shape)
    if (s == 0) return 0;
  auto st = [&](size_t k, size_t j) -> int64_t& { return merged_strides[k * kMaxMergedDims + j]; };
  const size_t len = order ? order_len : shape.size();
  size_t r = 0;
  for (size_t i = 0; i < len; ++i) {
    const size_t d = order ? order[i] : i;
    if (shape[d] == 1) continue;
    bool merge = r > 0;
    for (size_t k = 0; k < n && merge; ++k) merge = st(k, r - 1) == (*strides[k])[d] * shape[d];
    if (merge) {
      sizes[r - 1] *= shape[d];
      for (size_t k = 0; k < n; ++k) st(k, r - 1) = (*strides[k])[d];
    } else {
      sizes[r] = shape[d];
      for (size_t k = 0; k < n; ++k) st(k, r) = (*strides[k])[d];
      ++r;
    }
  }
  return r;
}

}  // namespace ember
