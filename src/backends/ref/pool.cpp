// Reference adaptive pooling over 1..3 spatial dims (src/ir/ops.h), as torch's CPU kernels.
#include <limits>
#include <vector>

#include "backends/ref/dispatch.h"
#include "backends/ref/kernels.h"

namespace ember::ref {

void adaptive_pool(const ir::AdaptivePool& op) {
  const Tensor& s = op.src;
  const Tensor& d = op.dst;
  const int64_t nd = s.dim() - 2;
  const int64_t N = s.size(0), C = s.size(1);
  std::vector<int64_t> in(static_cast<size_t>(nd)), out(static_cast<size_t>(nd));
  int64_t cells = 1;
  for (int64_t k = 0; k < nd; ++k) {
    in[size_t(k)] = s.size(2 + k);
    out[size_t(k)] = d.size(2 + k);
    cells *= out[size_t(k)];
  }
  // Window bounds per dim and output index: [floor(i * S / O), ceil((i + 1) * S / O)).
  std::vector<std::vector<int64_t>> lo(static_cast<size_t>(nd)), hi(static_cast<size_t>(nd));
  for (int64_t k = 0; k < nd; ++k)
    for (int64_t i = 0; i < out[size_t(k)]; ++i) {
      const int64_t S = in[size_t(k)], O = out[size_t(k)];
      lo[size_t(k)].push_back((i * S) / O);
      hi[size_t(k)].push_back(((i + 1) * S + O - 1) / O);
    }
  const bool with_idx = op.max && op.indices.defined();
  dispatch_dtype(s.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using V = compute_t<T>;
    const T* sp = ptr<T>(s);
    T* dp = ptr<T>(d);
    int64_t* ip = with_idx ? ptr<int64_t>(op.indices) : nullptr;
    std::vector<int64_t> o(static_cast<size_t>(nd)), p(static_cast<size_t>(nd));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t cell = 0; cell < cells; ++cell) {
          for (int64_t r = cell, k = nd - 1; k >= 0; --k) {
            o[size_t(k)] = r % out[size_t(k)];
            r /= out[size_t(k)];
          }
          int64_t count = 1, best_idx = 0;
          for (int64_t k = 0; k < nd; ++k) {
            p[size_t(k)] = lo[size_t(k)][size_t(o[size_t(k)])];
            count *= hi[size_t(k)][size_t(o[size_t(k)])] - p[size_t(k)];
            best_idx = best_idx * in[size_t(k)] + p[size_t(k)];
          }
          V best = std::numeric_limits<V>::has_infinity ? -std::numeric_limits<V>::infinity()
                                                        : std::numeric_limits<V>::lowest();
          acc_t<T> sum = 0;
          const T* base = sp + n * s.stride(0) + c * s.stride(1);
          for (int64_t t = 0; t < count; ++t) {
            // Odometer over the window, innermost dim fastest (row-major, as torch).
            int64_t off = 0, flat = 0;
            for (int64_t k = 0; k < nd; ++k) {
              off += p[size_t(k)] * s.stride(2 + k);
              flat = flat * in[size_t(k)] + p[size_t(k)];
            }
            const V v = V(base[off]);
            if (op.max) {
              bool take = v > best;
              if constexpr (std::is_floating_point_v<V>) take = take || std::isnan(v);
              if (take) {
                best = v;
                best_idx = flat;
              }
            } else {
              sum += acc_t<T>(v);
            }
            for (int64_t k = nd - 1; k >= 0; --k) {
              if (++p[size_t(k)] < hi[size_t(k)][size_t(o[size_t(k)])]) break;
              p[size_t(k)] = lo[size_t(k)][size_t(o[size_t(k)])];
            }
          }
          int64_t doff = n * d.stride(0) + c * d.stride(1);
          for (int64_t k = 0; k < nd; ++k) doff += o[size_t(k)] * d.stride(2 + k);
          if (op.max) {
            dp[doff] = scalar_cast<T>(best);
            if (ip) {
              int64_t ioff = n * op.indices.stride(0) + c * op.indices.stride(1);
              for (int64_t k = 0; k < nd; ++k) ioff += o[size_t(k)] * op.indices.stride(2 + k);
              ip[ioff] = best_idx;
            }
          } else {
            dp[doff] = scalar_cast<T>(sum / acc_t<T>(count));
          }
        }
  });
}

}  // namespace ember::ref
