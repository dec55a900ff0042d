// The cpu backend's matmul for the float dtypes, through the GEMM libraries of gemm.h:
//  - f32: gemm::sgemm (OpenBLAS or oneDNN, autotuned per shape class), f64: gemm::dgemm (OpenBLAS;
//    reference kernel when OpenBLAS is absent);
//  - f16/bf16, two ways, both with f32 accumulation and one rounding to the dtype (as the
//    reference kernel: results differ from it only in summation order):
//     native: a oneDNN matmul primitive with bf16 (f16) operands and destination, run by its
//       AVX512_BF16 / AMX kernels where the CPU has them. Made once per shape and layout (cached,
//       a refusal too); oneDNN 2.6 declines bf16 below AVX-512 and f16 on every x86 CPU, and a
//       reference (scalar) implementation counts as declined: then only the f32 way exists.
//     f32: the operands converted to f32 (exact), multiplied by sgemm, the f32 result rounded
//       once. The whole operands are converted: converting panels made OpenBLAS sum some
//       elements in another order, so a blocked product was not the same f32 product.
//    When both exist the autotuner picks per shape class, native first (the default, what
//    EMBER_AUTOTUNE=off runs) when the CPU has bf16 in hardware (dnnl_util::hardware_bf16),
//    else the f32 way first (on AVX-512 without BF16 oneDNN emulates bf16, sometimes slower).
// Integer and bool matmuls fall back to the reference kernel.
#include <dnnl.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cpu/autotune_util.h"
#include "backends/cpu/dense.h"
#include "backends/cpu/dnnl_util.h"
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

// The f16/bf16 product through f32: converted operands, sgemm, one rounding into d.
void f32_way(const Tensor& a, const Tensor& b, const Tensor& d) {
  const Tensor out = detail::make_tensor({d.size(0), d.size(1), d.size(2)}, DType::f32, d.device());
  blas_matmul<float>(to_f32(a), to_f32(b), out);
  const ir::Copy c{out, d};
  if (!copy(c)) ref::copy(c);
}

std::atomic<int64_t> g_native_runs{0};

// A oneDNN matmul primitive in the operands' own dtype for one shape and layout (null prim: oneDNN
// declined it, or offered only a reference implementation).
struct Native {
  dnnl::matmul prim;
  dnnl::memory::desc a, b, d;
  bool made = false;
  std::string impl;
};
std::mutex g_native_mutex;
std::map<std::vector<int64_t>, std::shared_ptr<const Native>> g_native;

// A [B, rows, cols] operand with a GEMM layout as oneDNN reads it; a batch stride of 0 (or one
// matrix) as a broadcast batch of 1.
dnnl::memory::desc native_desc(const Tensor& t, char trans, int64_t ld, int64_t batch) {
  const int64_t rows = t.size(1), cols = t.size(2);
  const bool one = batch == 1 || t.stride(0) == 0;
  const int64_t span = std::max<int64_t>(trans == 'N' ? rows : cols, 1) * ld;
  const dnnl::memory::dims dims{one ? 1 : batch, rows, cols};
  const dnnl::memory::dims strides{one ? span : t.stride(0), trans == 'N' ? ld : 1,
                                   trans == 'N' ? 1 : ld};
  return dnnl::memory::desc(dims, dnnl_util::dnnl_type(t.dtype()), strides);
}

// The cached primitive for (a, b, d); d must have row-major matrices.
std::shared_ptr<const Native> native_for(const Tensor& a, char ta, int64_t lda, const Tensor& b,
                                         char tb, int64_t ldb, const Tensor& d) {
  const int64_t B = d.size(0);
  std::vector<int64_t> key{
      int64_t(d.dtype()), B,  d.size(1), d.size(2),   a.size(2),   ta,         lda,
      a.stride(0),        tb, ldb,       b.stride(0), d.stride(0), d.stride(1)};
  std::lock_guard<std::mutex> lock(g_native_mutex);
  auto& slot = g_native[key];
  if (slot) return slot;
  auto n = std::make_shared<Native>();
  try {
    n->a = native_desc(a, ta, lda, B);
    n->b = native_desc(b, tb, ldb, B);
    n->d = native_desc(d, 'N', d.stride(1), B);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(n->a, n->b, n->d),
                                          dnnl_util::engine());
    n->impl = pd.impl_info_str();
    if (dnnl_util::fast_impl(pd.impl_info_str())) {
      n->prim = dnnl::matmul(pd);
      n->made = true;
    }
  } catch (const dnnl::error&) {
    // unimplemented for this dtype, ISA or layout: made stays false
  }
  slot = n;
  return slot;
}

// d = a @ b in a's dtype (f16/bf16): native when oneDNN has a fast kernel for it, else (or when
// the autotuner finds it faster) the f32 way.
// The operands and destination the native primitive reads and writes (packed where the GEMM
// needs it; a destination without row-major matrices gets a temporary), and its primitive.
struct NativeCall {
  Tensor ac, bc, out;
  std::shared_ptr<const Native> n;
  explicit NativeCall(const ir::Matmul& op) {
    char ta, tb;
    int64_t lda, ldb;
    ac = gemm_operand(op.a, ta, lda);
    bc = gemm_operand(op.b, tb, ldb);
    const Tensor& d = op.dst;
    const bool rows = d.stride(2) == 1 && d.stride(1) >= std::max<int64_t>(d.size(2), 1);
    out = rows ? d : detail::make_tensor(d.shape(), d.dtype(), d.device());
    n = native_for(ac, ta, lda, bc, tb, ldb, out);
  }
};

void half_matmul(const Tensor& a, const Tensor& b, const Tensor& d) {
  const NativeCall call(ir::Matmul{a, b, d});
  const Tensor &ac = call.ac, &bc = call.bc, &out = call.out;
  const auto& n = call.n;
  if (!n->made) return f32_way(a, b, d);
  auto native = [&] {
    auto& eng = dnnl_util::engine();
    dnnl::stream s(eng);
    n->prim.execute(s, {{DNNL_ARG_SRC, dnnl::memory(n->a, eng, dnnl_util::data_of(ac))},
                        {DNNL_ARG_WEIGHTS, dnnl::memory(n->b, eng, dnnl_util::data_of(bc))},
                        {DNNL_ARG_DST, dnnl::memory(n->d, eng, dnnl_util::data_of(out))}});
    s.wait();
    g_native_runs.fetch_add(1, std::memory_order_relaxed);
    if (!out.is_alias_of(d)) {
      const ir::Copy c{out, d};
      if (!copy(c)) ref::copy(c);
    }
  };
  const int64_t B = d.size(0), M = d.size(1), N = d.size(2), K = a.size(2);
  const bool first = a.dtype() == DType::bf16 && dnnl_util::hardware_bf16();
  const std::vector<autotune::Candidate> cs{{first ? "onednn-native" : "f32-sgemm"},
                                            {first ? "f32-sgemm" : "onednn-native"}};
  const std::string shape =
      "b" + std::to_string(autotune::anchor(B)) + ".m" + std::to_string(autotune::anchor(M)) +
      ".n" + std::to_string(autotune::anchor(N)) + ".k" + std::to_string(autotune::anchor(K));
  auto run = [&](size_t i) {
    if ((i == 0) == first)
      native();
    else
      f32_way(a, b, d);
  };
  autotune::Bench bench;
  bench.run = run;
  bench.result = [&] { return host_values(d); };
  bench.warmup = 1;
  // Two units in the last place of the dtype (the f32 sums differ in order, then each rounds).
  bench.rtol = a.dtype() == DType::bf16 ? 1.0 / 64 : 1.0 / 512;
  bench.max_rtol = 1e-5 * (1.0 + std::sqrt(double(K)));
  bench.detail = [&] { return describe(a) + " @ " + describe(b); };
  run(tuner().pick("cpu.matmul", dtype_name(a.dtype()), shape, cs, bench));
}

}  // namespace

int64_t native_half_matmul_runs() { return g_native_runs.load(std::memory_order_relaxed); }

std::string native_half_matmul_impl(const ir::Matmul& op) {
  const NativeCall call(op);
  return call.n->made ? call.n->impl : "";
}

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
    half_matmul(a, b, d);
  }
  return true;
}

}  // namespace ember::cpu
