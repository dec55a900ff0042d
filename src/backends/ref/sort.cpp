// Reference stable sort (ir::Sort) along one dim. NaN orders as the largest value (last when
// ascending, first when descending); equal elements keep their original order either way.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "backends/ref/dispatch.h"
#include "backends/ref/kernels.h"

namespace ember::ref {

namespace {

template <typename T>
void sort_typed(const ir::Sort& op) {
  using C = compute_t<T>;
  const Tensor& src = op.src;
  const int64_t dim = op.dim;
  const int64_t n = src.shape()[size_t(dim)];
  if (n == 0) return;
  const int64_t ss = src.strides()[size_t(dim)];
  const int64_t vs = op.values.strides()[size_t(dim)];
  const int64_t is = op.indices.strides()[size_t(dim)];
  Shape outer = src.shape();
  outer[size_t(dim)] = 1;
  const T* sp = ptr<T>(src);
  T* vp = ptr<T>(op.values);
  int64_t* ip = ptr<int64_t>(op.indices);
  std::vector<C> line(static_cast<size_t>(n), C{});
  std::vector<int64_t> order(static_cast<size_t>(n));
  // a strictly before b, NaN as the largest value.
  auto less = [](C a, C b) {
    if constexpr (is_float_v<T>) {
      if (std::isnan(b)) return !std::isnan(a);
      if (std::isnan(a)) return false;
    }
    return a < b;
  };
  strided_loop<3>(outer, {&src.strides(), &op.values.strides(), &op.indices.strides()},
                  [&](const std::array<int64_t, 3>& o) {
                    for (int64_t k = 0; k < n; ++k) line[size_t(k)] = C(sp[o[0] + k * ss]);
                    std::iota(order.begin(), order.end(), int64_t(0));
                    if (op.descending) {
                      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
                        return less(line[size_t(b)], line[size_t(a)]);
                      });
                    } else {
                      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
                        return less(line[size_t(a)], line[size_t(b)]);
                      });
                    }
                    for (int64_t k = 0; k < n; ++k) {
                      const int64_t j = order[size_t(k)];
                      vp[o[1] + k * vs] = sp[o[0] + j * ss];
                      ip[o[2] + k * is] = j;
                    }
                  });
}

}  // namespace

void sort(const ir::Sort& op) {
  dispatch_dtype(op.src.dtype(), [&](auto t) { sort_typed<decltype(t)>(op); });
}

}  // namespace ember::ref
