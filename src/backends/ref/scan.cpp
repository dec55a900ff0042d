// Reference inclusive scans (ir::Scan) along one dim. cumsum/cumprod accumulate in acc_t (f64
// for floats, i64/u64 for integers) and convert each prefix to dst's dtype. cummax/cummin keep
// the element type and, as torch, move the index to the latest element that is >= (<=) the
// running extreme, or NaN (a NaN sticks once seen).
#include <cmath>

#include "backends/ref/dispatch.h"
#include "backends/ref/kernels.h"

namespace ember::ref {

namespace {

using ir::ScanOp;

template <typename T>
void scan_typed(const ir::Scan& op) {
  using C = compute_t<T>;
  using A = acc_t<T>;
  const Tensor& src = op.src;
  const Tensor& dst = op.dst;
  const int64_t n = src.shape()[size_t(op.dim)];
  const int64_t ss = src.strides()[size_t(op.dim)];
  const int64_t ds = dst.strides()[size_t(op.dim)];
  // Loop over every line along dim: the shape with dim collapsed to 1.
  Shape outer = src.shape();
  outer[size_t(op.dim)] = 1;
  const bool with_idx = op.indices.defined();
  const Strides& ist = with_idx ? op.indices.strides() : dst.strides();
  const int64_t is = ist[size_t(op.dim)];
  int64_t* ip = with_idx ? ptr<int64_t>(op.indices) : nullptr;
  const T* sp = ptr<T>(src);
  if (n == 0) return;
  dispatch_dtype(dst.dtype(), [&](auto dt) {
    using D = decltype(dt);
    D* dp = ptr<D>(dst);
    strided_loop<3>(
        outer, {&src.strides(), &dst.strides(), &ist}, [&](const std::array<int64_t, 3>& o) {
          const T* s = sp + o[0];
          D* d = dp + o[1];
          switch (op.op) {
            case ScanOp::cumsum:
            case ScanOp::cumprod: {
              const bool sum = op.op == ScanOp::cumsum;
              A acc = sum ? A(0) : A(1);
              for (int64_t k = 0; k < n; ++k) {
                const A v = A(C(s[k * ss]));
                acc = sum ? A(acc + v) : A(acc * v);
                d[k * ds] = scalar_cast<D>(acc);
              }
              break;
            }
            case ScanOp::cummax:
            case ScanOp::cummin: {
              const bool is_max = op.op == ScanOp::cummax;
              C best = C(s[0]);
              int64_t best_k = 0;
              for (int64_t k = 0; k < n; ++k) {
                const C c = C(s[k * ss]);
                bool take;
                if constexpr (is_float_v<T>) {
                  take = std::isnan(c) || (!std::isnan(best) && (is_max ? c >= best : c <= best));
                } else {
                  take = is_max ? c >= best : c <= best;
                }
                if (take) {
                  best = c;
                  best_k = k;
                }
                d[k * ds] = scalar_cast<D>(s[best_k * ss]);
                if (ip) ip[o[2] + k * is] = best_k;
              }
              break;
            }
          }
        });
  });
}

}  // namespace

void scan(const ir::Scan& op) {
  dispatch_dtype(op.src.dtype(), [&](auto t) { scan_typed<decltype(t)>(op); });
}

}  // namespace ember::ref
