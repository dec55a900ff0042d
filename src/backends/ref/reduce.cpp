// Reference reductions (ir::Reduce): sum prod max min any all over sorted unique dims into a
// keepdim-shaped dst. Sums/products accumulate in acc_t (f64 for floats, i64/u64 for integers)
// and are converted to dst's dtype at the end; max/min keep the element type, propagate NaN and
// report the first index of the extreme (the first NaN when there is one).
#include <cmath>
#include <vector>

#include "backends/ref/dispatch.h"
#include "backends/ref/kernels.h"

namespace ember::ref {

namespace {

using ir::ReduceOp;

// dst's element at `off` = v, converted to dst's dtype.
template <typename V>
void store(const Tensor& dst, int64_t off, V v) {
  dispatch_dtype(dst.dtype(), [&](auto dt) {
    using D = decltype(dt);
    ptr<D>(dst)[off] = scalar_cast<D>(v);
  });
}

template <typename T>
bool is_nan(T v) {
  if constexpr (is_float_v<T>)
    return std::isnan(float(compute_t<T>(v)));
  else
    return false;
}

template <typename T>
void reduce_typed(const ir::Reduce& op) {
  using C = compute_t<T>;
  using A = acc_t<T>;
  const Tensor& src = op.src;
  const Tensor& dst = op.dst;
  // The reduced sub-space of src: its sizes and strides.
  Shape ishape;
  Strides istrides;
  for (int64_t d : op.dims) {
    ishape.push_back(src.shape()[size_t(d)]);
    istrides.push_back(src.strides()[size_t(d)]);
  }
  const bool single = op.dims.size() == 1;
  const int64_t n1 = single ? ishape[0] : 0, st1 = single ? istrides[0] : 0;
  // Calls f(value, k) for each element of the reduced sub-space at `base`; k is the row-major
  // position inside it (the index along the dim for a single dim).
  auto each = [&](const T* base, auto&& f) {
    if (single) {
      for (int64_t k = 0; k < n1; ++k) f(base[k * st1], k);
    } else {
      int64_t k = 0;
      strided_loop<1>(ishape, {&istrides},
                      [&](const std::array<int64_t, 1>& o) { f(base[o[0]], k++); });
    }
  };
  const T* sp = ptr<T>(src);
  const bool with_idx = op.indices.defined();
  int64_t* ip = with_idx ? ptr<int64_t>(op.indices) : nullptr;
  const Strides& ist = with_idx ? op.indices.strides() : dst.strides();
  strided_loop<3>(dst.shape(), {&src.strides(), &dst.strides(), &ist},
                  [&](const std::array<int64_t, 3>& o) {
                    const T* base = sp + o[0];
                    switch (op.op) {
                      case ReduceOp::sum: {
                        A acc = 0;
                        each(base, [&](T v, int64_t) { acc += A(C(v)); });
                        store(dst, o[1], acc);
                        break;
                      }
                      case ReduceOp::prod: {
                        A acc = 1;
                        each(base, [&](T v, int64_t) { acc *= A(C(v)); });
                        store(dst, o[1], acc);
                        break;
                      }
                      case ReduceOp::any: {
                        bool r = false;
                        each(base, [&](T v, int64_t) { r = r || scalar_cast<bool>(v); });
                        store(dst, o[1], r);
                        break;
                      }
                      case ReduceOp::all: {
                        bool r = true;
                        each(base, [&](T v, int64_t) { r = r && scalar_cast<bool>(v); });
                        store(dst, o[1], r);
                        break;
                      }
                      case ReduceOp::max:
                      case ReduceOp::min: {
                        const bool is_max = op.op == ReduceOp::max;
                        T best{};
                        int64_t best_k = 0;
                        bool first = true, nan = false;
                        each(base, [&](T v, int64_t k) {
                          if (nan) return;
                          if (is_nan(v)) {
                            nan = true;
                            best = v;
                            best_k = k;
                            return;
                          }
                          const C c = C(v), b = C(best);
                          if (first || (is_max ? c > b : c < b)) {
                            best = v;
                            best_k = k;
                          }
                          first = false;
                        });
                        store(dst, o[1], best);
                        if (ip) ip[o[2]] = best_k;
                        break;
                      }
                    }
                  });
}

}  // namespace

void reduce(const ir::Reduce& op) {
  dispatch_dtype(op.src.dtype(), [&](auto t) { reduce_typed<decltype(t)>(op); });
}

}  // namespace ember::ref
