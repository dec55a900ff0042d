// The cpu backend's matmul for the float dtypes, through the GEMM libraries of gemm.h:
//  - f32: gemm::sgemm (OpenBLAS or oneDNN, autotuned per shape class), f64: gemm::dgemm (OpenBLAS;
//  reference kernel
//    when OpenBLAS is absent);
//  - f16/bf16: the operands are converted to f32 (exact), multiplied by sgemm, and the f32 result
//    is rounded once to the dtype - the same accumulation type (f32) and single rounding as the
//    reference kernel, so only the summation order differs. The whole operands are converted:
//    converting panels of M (or M and N) and multiplying them separately changed 71 (146) of the
//    1024^2 f16 results of a 1024^3 product on OpenBLAS 0.3.21 (one thread): OpenBLAS summed some
//    elements in another order, so their f32 sums, and then their roundings, differed. Blocking
//    would not keep the results identical (CpuGemm.HalfIsTheWholeF32ProductRoundedOnce).
// Integer and bool matmuls fall back to the reference kernel.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/autotune_util.h"
#include "backends/cpu/dense.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/thread_pool.h"
#include "backends/ref/dispatch.h"
#include "backends/ref/kernels.h"
#include "tensor/internal.h"

namespace ember::cpu {

namespace {

// How one [rows, cols] operand with strides (rs, cs) is passed to a row-major GEMM: as is ('N'),
// as the transpose of a row-major matrix ('T'), or not at all (needs packing).
bool gemm_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, char& trans, int64_t& ld) {
  if (cs == 1 && rs >= std::max<int64_t>(cols, 1)) {
    trans = 'N';
    ld = rs;
    return true;
  }
  if (rs == 1 && cs >= std::max<int64_t>(rows, 1)) {
    trans = 'T';
    ld = cs;
    return true;
  }
  if (rows <= 1 && cs == 1) {  // a single row: any row stride works
    trans = 'N';
    ld = std::max<int64_t>(cols, 1);
    return true;
  }
  if (cols <= 1 && rs == 1) {  // a single column: any column stride works
    trans = 'T';
    ld = std::max<int64_t>(rows, 1);
    return true;
  }
  return false;
}

// An operand as a GEMM reads it: `t` itself when its matrices have a GEMM layout, else a
// contiguous copy (a batch stride of 0 stays 0: only one matrix is packed).
Tensor gemm_operand(const Tensor& t, char& trans, int64_t& ld) {
  const int64_t rows = t.size(1), cols = t.size(2);
  if (gemm_layout(rows, cols, t.stride(1), t.stride(2), trans, ld)) return t;
  const Tensor c = dense_batch_copy(t, t.dtype());
  gemm_layout(rows, cols, c.stride(1), c.stride(2), trans, ld);
  return c;
}

// One way to run a batch of f32 GEMMs: the library, and whether the batch items run one per
// thread (each GEMM single-threaded) or one after another (each threaded by the library).
struct Variant {
  gemm::Library lib;
  bool per_thread;
};

std::string variant_name(const Variant& v, bool batched) {
  std::string s = v.lib == gemm::Library::openblas ? "openblas" : "onednn";
  if (batched) s += v.per_thread ? "/item-per-thread" : "/threaded-gemm";
  return s;
}

// One batch of GEMMs dst[i] = a[i] @ b[i] (T = float or double) in a GEMM's terms: the operands
// as the library reads them (packed when needed) and the row-major result (dst itself, or a
// temporary when dst's matrices are not row-major).
template <typename T>
struct Batch {
  Tensor ac, bc, out;
  char ta = 'N', tb = 'N';
  int64_t lda = 0, ldb = 0, B, M, N, K;
  Batch(const Tensor& a, const Tensor& b, const Tensor& d, bool own_out)
      : B(d.size(0)), M(d.size(1)), N(d.size(2)), K(a.size(2)) {
    ac = gemm_operand(a, ta, lda);
    bc = gemm_operand(b, tb, ldb);
    out = d;
    if (own_out || !(d.stride(2) == 1 && d.stride(1) >= std::max<int64_t>(N, 1)))
      out = detail::make_tensor({B, M, N}, d.dtype(), d.device());
  }
  void run(const Variant& v) const {
    const T* pa = ref::ptr<T>(ac);
    const T* pb = ref::ptr<T>(bc);
    T* pd = ref::ptr<T>(out);
    const int64_t sa = ac.stride(0), sb = bc.stride(0), sd = out.stride(0), ldc = out.stride(1);
    auto one = [&](int64_t i) {
      if constexpr (std::is_same_v<T, float>) {
        gemm::sgemm(v.lib, ta, tb, M, N, K, pa + i * sa, lda, pb + i * sb, ldb, pd + i * sd, ldc);
      } else {
        gemm::dgemm(ta, tb, M, N, K, pa + i * sa, lda, pb + i * sb, ldb, pd + i * sd, ldc);
      }
    };
    if (v.per_thread) {
      parallel_for(0, B, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) one(i);
      });
    } else {
      for (int64_t i = 0; i < B; ++i) one(i);
    }
  }
  Variant default_variant() const {
    const bool threads = B > 1 && openmp_runtime_active();
    return {gemm::sgemm_library(M, N, K), threads && M * N * K <= 128 * 128 * 128};
  }
  // The f32 variant: autotuned (runtime/autotune.h) over the library and, for batches, the
  // threading, starting from default_variant() (sgemm_library()'s size threshold, with items per
  // thread for many small GEMMs: one fork/join per 64x64 GEMM costs more than the GEMM, and a
  // scheduler quantum on a loaded machine). Tuning runs the candidates into `out`.
  Variant pick() const {
    const Variant dflt = default_variant();
    if (gemm::sgemm_choice_forced()) return dflt;
    // Candidates: the default, the other library (when OpenBLAS is there and takes the sizes),
    // and for batches the other threading with each library.
    const bool threads = B > 1 && openmp_runtime_active();
    const gemm::Library other =
        dflt.lib == gemm::Library::onednn ? gemm::Library::openblas : gemm::Library::onednn;
    const bool two_libs = gemm::openblas_takes({M, N, K, lda, ldb, out.stride(1)});
    std::vector<Variant> vs{dflt};
    std::vector<autotune::Candidate> cs{{variant_name(dflt, B > 1)}};
    auto add = [&](Variant v, autotune::Effort e) {
      vs.push_back(v);
      cs.push_back({variant_name(v, B > 1), e});
    };
    if (two_libs) add({other, dflt.per_thread}, autotune::Effort::minimal);
    if (threads) add({dflt.lib, !dflt.per_thread}, autotune::Effort::balanced);
    if (threads && two_libs) add({other, !dflt.per_thread}, autotune::Effort::full);
    if (vs.size() == 1) return dflt;
    // The shape class: each size rounded up to a power of two (not the thread count, nor the
    // operands' layouts: one choice per class keeps equal products equal).
    const std::string shape =
        "b" + std::to_string(autotune::anchor(B)) + ".m" + std::to_string(autotune::anchor(M)) +
        ".n" + std::to_string(autotune::anchor(N)) + ".k" + std::to_string(autotune::anchor(K));
    autotune::Bench bench;
    bench.run = [&](size_t i) { run(vs[i]); };
    bench.result = [&] { return host_values(out); };
    bench.warmup = 1;  // oneDNN JIT-compiles its kernels on a shape's first call
    bench.rtol = 1e-4;
    bench.max_rtol = 1e-5 * (1.0 + std::sqrt(double(K)));
    bench.detail = [&] { return describe(ac) + " @ " + describe(bc); };
    return vs[tuner().pick("cpu.matmul", dtype_name(DType::f32), shape, cs, bench)];
  }
};

// dst = a @ b for T = float or double; dst row-major per batch or computed into a temporary.
// Both libraries run serially inside an OpenMP region.
template <typename T>
void blas_matmul(const Tensor& a, const Tensor& b, const Tensor& d) {
  const Batch<T> g(a, b, d, false);
  if constexpr (std::is_same_v<T, float>)
    g.run(g.pick());
  else
    g.run(g.default_variant());
  if (!g.out.is_alias_of(d)) {
    const ir::Copy c{g.out, d};
    if (!copy(c)) ref::copy(c);
  }
}

// An f16/bf16 operand converted to f32 (exact); a batch stride of 0 converts one matrix.
Tensor to_f32(const Tensor& t) { return dense_batch_copy(t, DType::f32); }

}  // namespace

bool sgemm_runs_onednn(const ir::Matmul& op) {
  if (op.dst.dtype() != DType::f32 || op.dst.numel() == 0 || op.a.size(2) == 0) return false;
  return Batch<float>(op.a, op.b, op.dst, true).pick().lib == gemm::Library::onednn;
}

bool sgemm_matmul(const ir::Matmul& op) {
  const DType dt = op.dst.dtype();
  if (dt != DType::f32 && dt != DType::f64 && dt != DType::f16 && dt != DType::bf16) return false;
  const Tensor& a = op.a;
  const Tensor& b = op.b;
  const Tensor& d = op.dst;
  const int64_t M = d.size(1), N = d.size(2), K = a.size(2);
  if (dt == DType::f64) {
    // Without the library, or past its 32-bit sizes and leading dimensions, the reference kernel.
    // Every stride that can become a leading dimension is checked here, before any work (packed
    // operands and temporaries get leading dimensions K or N, checked too).
    if (!gemm::dgemm_supported(
            {M, N, K, a.stride(1), a.stride(2), b.stride(1), b.stride(2), d.stride(1)}))
      return false;
  }
  if (d.numel() == 0) return true;
  if (K == 0) {
    const ir::Fill f{d, 0};
    if (!fill(f)) ref::fill(f);
    return true;
  }
  if (dt == DType::f32) {
    blas_matmul<float>(a, b, d);
  } else if (dt == DType::f64) {
    blas_matmul<double>(a, b, d);
  } else {
    // f16/bf16: f32 operands, an f32 product, one rounding into dst (as the reference kernel).
    const Tensor out = detail::make_tensor({d.size(0), M, N}, DType::f32, d.device());
    blas_matmul<float>(to_f32(a), to_f32(b), out);
    const ir::Copy c{out, d};
    if (!copy(c)) ref::copy(c);
  }
  return true;
}

}  // namespace ember::cpu
