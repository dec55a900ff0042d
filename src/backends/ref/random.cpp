#include <vector>

#include "backends/ref/dispatch.h"
#include "backends/ref/kernels.h"
#include "core/philox.h"

namespace ember::ref {

void random(const ir::Random& op) {
  const int64_t n = op.dst.numel();
  const bool wide = op.dst.dtype() == DType::f64;
  std::vector<double> probs;
  if (op.prob.defined()) {  // read in row-major order here: a backend issues no frontend ops
    probs.reserve(size_t(n));
    dispatch_dtype(op.prob.dtype(), [&](auto tag) {
      using S = decltype(tag);
      const S* sp = ptr<S>(op.prob);
      strided_loop<1>(op.prob.shape(), {&op.prob.strides()}, [&](const std::array<int64_t, 1>& o) {
        probs.push_back(scalar_cast<double>(sp[o[0]]));
      });
    });
  }
  dispatch_dtype(op.dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* p = ptr<T>(op.dst);
    for (int64_t i = 0; i < n; ++i) {
      const auto r = philox::philox4x32(op.offset + uint64_t(i), op.seed);
      double v = 0;
      switch (op.dist) {
        case ir::RandomDist::uniform: {
          const double u = wide ? philox::uniform01_53(r[0], r[1]) : philox::uniform01(r[0]);
          v = op.p0 + (op.p1 - op.p0) * u;
          if (v >= op.p1 && op.p1 > op.p0) v = op.p0;  // keep [lo, hi) after rounding
          break;
        }
        case ir::RandomDist::normal:
          v = op.p0 + op.p1 * philox::normal(r[0], r[1]);
          break;
        case ir::RandomDist::bernoulli: {
          const double prob = probs.empty() ? op.p0 : probs[size_t(i)];
          v = philox::uniform01(r[0]) < prob ? 1.0 : 0.0;
          break;
        }
        case ir::RandomDist::randint: {
          const uint64_t range = uint64_t(int64_t(op.p1) - int64_t(op.p0));
          const uint64_t bits = (uint64_t(r[0]) << 32) | r[1];
          const int64_t k = int64_t(op.p0) + int64_t(range ? bits % range : 0);
          p[i] = scalar_cast<T>(k);
          continue;
        }
      }
      p[i] = scalar_cast<T>(v);
    }
  });
}

}  // namespace ember::ref
