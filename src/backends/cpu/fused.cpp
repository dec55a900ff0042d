// The cpu backend's fused softmax/log_softmax and layer/rms norm (ir/fused.h): one threaded pass
// structure per row, vectorised (AVX2 clones chosen at run time), f32 and f64. Other dtypes are
// declined (the frontend upcasts f16/bf16 to f32 before offering, so these are the float dtypes).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "backends/cpu/dense.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/simd_math.h"
#include "backends/ref/dispatch.h"
#include "backends/ref/kernels.h"
#include "tensor/internal.h"

namespace ember::cpu {

namespace {

std::atomic<int64_t> g_fused_runs{0};

constexpr int kLanes = 16;  // partial accumulators: lets the compiler vectorise reductions

template <typename T>
__attribute__((always_inline)) inline T exp_t(T x) {
  if constexpr (sizeof(T) == 4)
    return exp_f32(x);
  else
    return std::exp(x);
}

// ---- softmax over one contiguous row of n elements (src may alias dst) ----
template <typename T>
__attribute__((always_inline)) inline void softmax_row_impl(const T* x, T* y, int64_t n, bool log) {
  T mx[kLanes];
  for (int j = 0; j < kLanes; ++j) mx[j] = -INFINITY;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) mx[j] = x[i + j] > mx[j] ? x[i + j] : mx[j];
  T m = -INFINITY;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  for (int j = 0; j < kLanes; ++j) m = mx[j] > m ? mx[j] : m;
  // A NaN (skipped by the max) makes its exp, hence the sum and every output, NaN; so does a row
  // of all -inf (x - m is NaN), as torch.
  T acc[kLanes] = {};
  i = 0;
  if (log) {
    for (; i + kLanes <= n; i += kLanes)
      for (int j = 0; j < kLanes; ++j) acc[j] += exp_t<T>(x[i + j] - m);
  } else {
    for (; i + kLanes <= n; i += kLanes)
      for (int j = 0; j < kLanes; ++j) {
        const T e = exp_t<T>(x[i + j] - m);
        y[i + j] = e;
        acc[j] += e;
      }
  }
  double s = 0;
  for (; i < n; ++i) {
    const T e = exp_t<T>(x[i] - m);
    if (!log) y[i] = e;
    s += double(e);
  }
  for (int j = 0; j < kLanes; ++j) s += double(acc[j]);
  if (log) {
    const T ls = T(std::log(s));
    for (int64_t k = 0; k < n; ++k) y[k] = (x[k] - m) - ls;
  } else {
    const T r = T(1.0 / s);
    for (int64_t k = 0; k < n; ++k) y[k] *= r;
  }
}

template <typename T>
void softmax_row(const T* x, T* y, int64_t n, bool log) {
  softmax_row_impl(x, y, n, log);
}
template <typename T>
EMBER_CPU_AVX2 void softmax_row_avx2(const T* x, T* y, int64_t n, bool log) {
  softmax_row_impl(x, y, n, log);
}

template <typename T>
bool softmax_t(const ir::Softmax& op) {
  const Tensor& s = op.src;
  const Tensor& d = op.dst;
  const int64_t dim = op.dim, len = s.size(dim);
  const int64_t ss = s.stride(dim), ds = d.stride(dim);
  Shape rows = s.shape();
  rows[size_t(dim)] = 1;
  const T* ps = ref::ptr<T>(s);
  T* pd = ref::ptr<T>(d);
  const bool avx2 = has_avx2(), log = op.log;
  const std::array<const Strides*, 2> st{&s.strides(), &d.strides()};
  const int64_t grain = std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(len, 1));
  parallel_rows<2>(
      rows, st, grain,
      [&](const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& inner) {
        std::vector<T> buf;
        for (int64_t r = 0; r < n; ++r) {
          const T* x = ps + off[0] + r * inner[0];
          T* y = pd + off[1] + r * inner[1];
          if (ss == 1 && ds == 1) {
            avx2 ? softmax_row_avx2(x, y, len, log) : softmax_row(x, y, len, log);
            continue;
          }
          // Strided along dim: gather the row, compute in place, scatter it.
          buf.resize(size_t(len));
          for (int64_t k = 0; k < len; ++k) buf[size_t(k)] = x[k * ss];
          avx2 ? softmax_row_avx2(buf.data(), buf.data(), len, log)
               : softmax_row(buf.data(), buf.data(), len, log);
          for (int64_t k = 0; k < len; ++k) y[k * ds] = buf[size_t(k)];
        }
      });
  return true;
}

// ---- layer / rms norm over contiguous rows of n elements ----
template <typename T>
__attribute__((always_inline)) inline void norm_row_impl(const T* x, T* y, const T* w, const T* b,
                                                         int64_t n, bool rms, double eps) {
  T acc[kLanes] = {};
  double mean = 0;
  int64_t i = 0;
  if (!rms) {
    for (; i + kLanes <= n; i += kLanes)
      for (int j = 0; j < kLanes; ++j) acc[j] += x[i + j];
    double s = 0;
    for (; i < n; ++i) s += double(x[i]);
    for (int j = 0; j < kLanes; ++j) s += double(acc[j]);
    mean = s / double(n);
  }
  const T m = T(mean);
  for (int j = 0; j < kLanes; ++j) acc[j] = 0;
  i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const T c = x[i + j] - m;
      acc[j] += c * c;
    }
  double q = 0;
  for (; i < n; ++i) {
    const T c = x[i] - m;
    q += double(c * c);
  }
  for (int j = 0; j < kLanes; ++j) q += double(acc[j]);
  const T r = T(1.0 / std::sqrt(q / double(n) + eps));
  if (w && b)
    for (int64_t k = 0; k < n; ++k) y[k] = (x[k] - m) * r * w[k] + b[k];
  else if (w)
    for (int64_t k = 0; k < n; ++k) y[k] = (x[k] - m) * r * w[k];
  else if (b)
    for (int64_t k = 0; k < n; ++k) y[k] = (x[k] - m) * r + b[k];
  else
    for (int64_t k = 0; k < n; ++k) y[k] = (x[k] - m) * r;
}

template <typename T>
void norm_row(const T* x, T* y, const T* w, const T* b, int64_t n, bool rms, double eps) {
  norm_row_impl(x, y, w, b, n, rms, eps);
}
template <typename T>
EMBER_CPU_AVX2 void norm_row_avx2(const T* x, T* y, const T* w, const T* b, int64_t n, bool rms,
                                  double eps) {
  norm_row_impl(x, y, w, b, n, rms, eps);
}

template <typename T>
bool norm_t(const ir::Norm& op) {
  const int64_t n = op.inner;
  if (n <= 0 || op.src.numel() % n != 0) return false;
  const int64_t rows = op.src.numel() / n;
  // Rows of contiguous tensors are contiguous; other layouts are packed once.
  const Tensor x = dense(op.src), w = dense(op.weight), b = dense(op.bias);
  Tensor y = op.dst.is_contiguous() ? op.dst
                                    : ember::detail::make_tensor(x.shape(), x.dtype(), x.device());
  const T* px = ref::ptr<T>(x);
  T* py = ref::ptr<T>(y);
  const T* pw = w.defined() ? ref::ptr<T>(w) : nullptr;
  const T* pb = b.defined() ? ref::ptr<T>(b) : nullptr;
  const bool avx2 = has_avx2(), rms = op.kind == ir::NormKind::rms;
  const double eps = op.eps;
  parallel_for(0, rows, std::max<int64_t>(1, kGrainElementwise / n), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r)
      avx2 ? norm_row_avx2(px + r * n, py + r * n, pw, pb, n, rms, eps)
           : norm_row(px + r * n, py + r * n, pw, pb, n, rms, eps);
  });
  if (!y.is_alias_of(op.dst)) ref::copy(ir::Copy{y, op.dst});
  return true;
}

struct FusedCpu {
  bool operator()(const ir::Softmax& o) const {
    if (o.src.numel() == 0 || o.src.dim() == 0) return false;
    if (o.src.dtype() == DType::f32) return softmax_t<float>(o);
    if (o.src.dtype() == DType::f64) return softmax_t<double>(o);
    return false;
  }
  bool operator()(const ir::Norm& o) const {
    if (o.src.numel() == 0) return false;
    if (o.src.dtype() == DType::f32) return norm_t<float>(o);
    if (o.src.dtype() == DType::f64) return norm_t<double>(o);
    return false;
  }
  bool operator()(const ir::Conv& o) const { return conv_dnnl(o); }
  bool operator()(const ir::ConvBackwardData& o) const { return conv_dnnl_backward_data(o); }
  bool operator()(const ir::ConvBackwardWeights& o) const { return conv_dnnl_backward_weights(o); }
  bool operator()(const ir::Pool& o) const { return pool_dnnl(o); }
  bool operator()(const ir::PoolBackward& o) const { return pool_dnnl_backward(o); }
};

}  // namespace

bool fused(const ir::Fused& op) {
  const bool taken = std::visit(FusedCpu{}, op);
  if (taken) g_fused_runs.fetch_add(1, std::memory_order_relaxed);
  return taken;
}

int64_t fused_runs() { return g_fused_runs.load(std::memory_order_relaxed); }

void count_fused_run() { g_fused_runs.fetch_add(1, std::memory_order_relaxed); }

}  // namespace ember::cpu
