// The cpu backend's reductions: sum / max / min of f32 and f64 over one run of adjacent dims of a
// contiguous tensor (the last dim, all dims, a middle dim as pooling's window axis), threaded
// over rows, over the inner dim, or within one long row (partial results combined in order).
// Sums accumulate in double and max/min propagate NaN and return the first index of the extreme,
// as the reference kernel does.
#include <algorithm>
#include <vector>

#include "backends/cpu/dense.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "backends/ref/dispatch.h"
#include "backends/ref/kernels.h"

namespace ember::cpu {

namespace {

using ir::ReduceOp;
using ref::ptr;

constexpr int64_t kChunk = 65536;  // elements per partial result of a long row

template <typename T>
struct Partial {
  double sum = 0;
  T best{};
  int64_t index = 0;
  bool nan = false;
};

// Sum of x[0, n) in double with 8 independent lanes (vectorisable, unlike one serial sum).
#define EMBER_SUM_BODY                                      \
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};                 \
  int64_t i = 0;                                            \
  for (; i + 8 <= n; i += 8)                                \
    for (int j = 0; j < 8; ++j) acc[j] += double(x[i + j]); \
  double s = 0;                                             \
  for (; i < n; ++i) s += double(x[i]);                     \
  for (int j = 0; j < 8; ++j) s += acc[j];                  \
  return s;

template <typename T>
double sum_base(const T* x, int64_t n) {
  EMBER_SUM_BODY
}
template <typename T>
EMBER_CPU_AVX2 double sum_avx2(const T* x, int64_t n) {
  EMBER_SUM_BODY
}

// Max (or min) of x[0, n) ignoring NaN, plus a count of NaN, in 8 lanes.
#define EMBER_EXTREME_BODY                                     \
  T m[8];                                                      \
  int32_t nn[8] = {0, 0, 0, 0, 0, 0, 0, 0};                    \
  for (int j = 0; j < 8; ++j) m[j] = x[0];                     \
  int64_t i = 0;                                               \
  for (; i + 8 <= n; i += 8)                                   \
    for (int j = 0; j < 8; ++j) {                              \
      const T v = x[i + j];                                    \
      m[j] = (is_max ? v > m[j] : v < m[j]) ? v : m[j];        \
      nn[j] += v != v ? 1 : 0;                                 \
    }                                                          \
  T best = m[0];                                               \
  int32_t nans = 0;                                            \
  for (; i < n; ++i) {                                         \
    const T v = x[i];                                          \
    best = (is_max ? v > best : v < best) ? v : best;          \
    nans += v != v ? 1 : 0;                                    \
  }                                                            \
  for (int j = 0; j < 8; ++j) {                                \
    best = (is_max ? m[j] > best : m[j] < best) ? m[j] : best; \
    nans += nn[j];                                             \
  }                                                            \
  nan = nans > 0;                                              \
  return best;

template <typename T>
T extreme_base(const T* x, int64_t n, bool is_max, bool& nan) {
  EMBER_EXTREME_BODY
}
template <typename T>
EMBER_CPU_AVX2 T extreme_avx2(const T* x, int64_t n, bool is_max, bool& nan) {
  EMBER_EXTREME_BODY
}

template <typename T>
Partial<T> reduce_range(ReduceOp op, const T* x, int64_t n, int64_t base, bool want_index) {
  Partial<T> p;
  const bool avx2 = has_avx2();
  if (op == ReduceOp::sum) {
    p.sum = avx2 ? sum_avx2(x, n) : sum_base(x, n);
    return p;
  }
  // x[0] seeds the lanes; a NaN seed is caught by the count (v != v) below.
  const bool is_max = op == ReduceOp::max;
  p.best = avx2 ? extreme_avx2(x, n, is_max, p.nan) : extreme_base(x, n, is_max, p.nan);
  if (p.nan) {
    int64_t i = 0;
    while (x[i] == x[i]) ++i;
    p.best = x[i];
    p.index = base + i;
  } else if (want_index) {
    int64_t i = 0;
    while (!(x[i] == p.best)) ++i;
    p.index = base + i;
  }
  // A NaN seed with no NaN elsewhere cannot happen: the seed is x[0] and is counted.
  return p;
}

// Folds b (a later range) into a.
template <typename T>
void combine(ReduceOp op, Partial<T>& a, const Partial<T>& b) {
  if (op == ReduceOp::sum) {
    a.sum += b.sum;
    return;
  }
  if (a.nan) return;
  if (b.nan || (op == ReduceOp::max ? b.best > a.best : b.best < a.best)) a = b;
}

// Reduces [outer, R, inner] with inner > 1: lanes across the inner dim, blocks of it per task.
template <typename T>
void reduce_inner(ReduceOp op, const T* x, T* dst, int64_t* idx, int64_t outer, int64_t R,
                  int64_t inner) {
  constexpr int64_t kBlk = 256;
  const int64_t nblk = (inner + kBlk - 1) / kBlk;
  const int64_t grain = std::max<int64_t>(1, kGrainElementwise / (R * std::min(inner, kBlk)));
  parallel_for(0, outer * nblk, grain, [&](int64_t b, int64_t e) {
    double acc[kBlk];
    T best[kBlk];
    int64_t bi[kBlk];
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / nblk, j0 = (t % nblk) * kBlk, len = std::min(kBlk, inner - j0);
      const T* base = x + o * R * inner + j0;
      if (op == ReduceOp::sum) {
        for (int64_t j = 0; j < len; ++j) acc[j] = 0;
        for (int64_t r = 0; r < R; ++r) {
          const T* row = base + r * inner;
          for (int64_t j = 0; j < len; ++j) acc[j] += double(row[j]);
        }
        for (int64_t j = 0; j < len; ++j) dst[o * inner + j0 + j] = T(acc[j]);
        continue;
      }
      const bool is_max = op == ReduceOp::max;
      for (int64_t j = 0; j < len; ++j) {
        best[j] = base[j];
        bi[j] = 0;
      }
      for (int64_t r = 1; r < R; ++r) {
        const T* row = base + r * inner;
        for (int64_t j = 0; j < len; ++j) {
          const T v = row[j], c = best[j];
          // Strictly better, or the first NaN (which then sticks).
          const bool take = (is_max ? v > c : v < c) || (v != v && c == c);
          best[j] = take ? v : c;
          bi[j] = take ? r : bi[j];
        }
      }
      for (int64_t j = 0; j < len; ++j) dst[o * inner + j0 + j] = best[j];
      if (idx)
        for (int64_t j = 0; j < len; ++j) idx[o * inner + j0 + j] = bi[j];
    }
  });
}

template <typename T>
void reduce_typed(const ir::Reduce& op, const Tensor& src, int64_t outer, int64_t R,
                  int64_t inner) {
  const T* x = ptr<T>(src);
  T* dst = ptr<T>(op.dst);
  int64_t* idx = op.indices.defined() ? ptr<int64_t>(op.indices) : nullptr;
  if (inner > 1) {
    reduce_inner<T>(op.op, x, dst, idx, outer, R, inner);
    return;
  }
  auto store = [&](int64_t o, const Partial<T>& p) {
    dst[o] = op.op == ReduceOp::sum ? T(p.sum) : p.best;
    if (idx) idx[o] = p.index;
  };
  // Rows are summed in fixed chunks combined in order, so results do not depend on the thread
  // count or on which of the two paths below runs.
  const int64_t chunks = (R + kChunk - 1) / kChunk;
  auto part = [&](const T* row, int64_t c) {
    const int64_t lo = c * kChunk, hi = std::min(R, lo + kChunk);
    return reduce_range<T>(op.op, row + lo, hi - lo, lo, idx);
  };
  if (outer >= num_threads() || chunks == 1) {
    const int64_t grain = std::max<int64_t>(1, kGrainElementwise / R);
    parallel_for(0, outer, grain, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        Partial<T> p = part(x + o * R, 0);
        for (int64_t c = 1; c < chunks; ++c) combine(op.op, p, part(x + o * R, c));
        store(o, p);
      }
    });
    return;
  }
  // Few long rows: their chunks in parallel.
  std::vector<Partial<T>> parts(static_cast<size_t>(chunks));
  for (int64_t o = 0; o < outer; ++o) {
    parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) parts[size_t(c)] = part(x + o * R, c);
    });
    Partial<T> p = parts[0];
    for (int64_t c = 1; c < chunks; ++c) combine(op.op, p, parts[size_t(c)]);
    store(o, p);
  }
}

}  // namespace

double sum_lanes(const float* x, int64_t n) { return has_avx2() ? sum_avx2(x, n) : sum_base(x, n); }
double sum_lanes(const double* x, int64_t n) {
  return has_avx2() ? sum_avx2(x, n) : sum_base(x, n);
}

bool reduce(const ir::Reduce& op) {
  const DType t = op.src.dtype();
  if (op.op != ReduceOp::sum && op.op != ReduceOp::max && op.op != ReduceOp::min) return false;
  if ((t != DType::f32 && t != DType::f64) || op.dst.dtype() != t) return false;
  if (op.dims.empty() || op.src.numel() <= kGrainElementwise) return false;
  if (!op.dst.is_contiguous() || (op.indices.defined() && !op.indices.is_contiguous()))
    return false;
  // The reduced dims must be one run of adjacent dims (size-1 dims may sit in between).
  const Shape& s = op.src.shape();
  const int64_t d0 = op.dims.front(), d1 = op.dims.back();
  for (int64_t d = d0; d <= d1; ++d)
    if (s[size_t(d)] != 1 && !std::binary_search(op.dims.begin(), op.dims.end(), d)) return false;
  int64_t outer = 1, R = 1, inner = 1;
  for (int64_t d = 0; d < int64_t(s.size()); ++d)
    (d < d0 ? outer : d <= d1 ? R : inner) *= s[size_t(d)];
  if (R == 0) return false;
  // A strided source is packed first (a threaded copy), then reduced contiguously.
  const Tensor src = dense(op.src);
  if (t == DType::f32)
    reduce_typed<float>(op, src, outer, R, inner);
  else
    reduce_typed<double>(op, src, outer, R, inner);
  return true;
}

namespace {

// cumsum of a contiguous [outer, n, inner] tensor along n, accumulating in f64 as ref does (same
// order per line, so the same bits): inner > 1 runs a block of lines side by side (vectorized
// over the inner dim), lines split over threads.
template <typename T>
void cumsum_typed(const T* s, T* d, int64_t outer, int64_t n, int64_t inner) {
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  parallel_for(
      0, outer * blocks,
      std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(n * std::min(inner, kBlock), 1)),
      [&](int64_t b, int64_t e) {
        double acc[kBlock];
        for (int64_t t = b; t < e; ++t) {
          const int64_t o = t / blocks, j0 = (t % blocks) * kBlock;
          const int64_t w = std::min(kBlock, inner - j0);
          for (int64_t j = 0; j < w; ++j) acc[j] = 0;
          const T* sp = s + o * n * inner + j0;
          T* dp = d + o * n * inner + j0;
          if (inner == 1) {  // one line: a running sum in a register
            double a = 0;
            for (int64_t k = 0; k < n; ++k) {
              a += double(sp[k]);
              dp[k] = T(a);
            }
            continue;
          }
          for (int64_t k = 0; k < n; ++k, sp += inner, dp += inner)
            for (int64_t j = 0; j < w; ++j) {
              acc[j] += double(sp[j]);
              dp[j] = T(acc[j]);
            }
        }
      });
}

}  // namespace

bool scan(const ir::Scan& op) {
  const DType t = op.src.dtype();
  if (op.op != ir::ScanOp::cumsum || (t != DType::f32 && t != DType::f64) || op.dst.dtype() != t ||
      op.src.numel() <= kGrainElementwise || !op.src.is_contiguous() || !op.dst.is_contiguous())
    return false;
  const Shape& sh = op.src.shape();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < int64_t(sh.size()); ++d)
    if (d < op.dim)
      outer *= sh[size_t(d)];
    else if (d > op.dim)
      inner *= sh[size_t(d)];
  const int64_t n = sh[size_t(op.dim)];
  if (t == DType::f32)
    cumsum_typed(ptr<float>(op.src), ptr<float>(op.dst), outer, n, inner);
  else
    cumsum_typed(ptr<double>(op.src), ptr<double>(op.dst), outer, n, inner);
  return true;
}

}  // namespace ember::cpu
