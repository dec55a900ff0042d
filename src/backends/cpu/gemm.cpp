// The cpu backend's matmul: oneDNN's sgemm (threaded, AVX-512/AVX2 chosen at run time) for f32;
// other dtypes fall back to the reference kernel.
#include <dnnl.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/thread_pool.h"
#include "backends/ref/dispatch.h"
#include "backends/ref/kernels.h"

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
  return false;
}

void check(dnnl_status_t st, int64_t m, int64_t n, int64_t k) {
  if (st != dnnl_success)
    EMBER_FAIL("matmul", "oneDNN sgemm failed with status ", int(st), " for M=", m, " N=", n,
               " K=", k);
}

}  // namespace

bool sgemm_matmul(const ir::Matmul& op) {
  if (op.a.dtype() != DType::f32) return false;
  const Tensor& a = op.a;
  const Tensor& b = op.b;
  const Tensor& d = op.dst;
  const int64_t B = d.size(0), M = d.size(1), N = d.size(2), K = a.size(2);
  if (d.numel() == 0) return true;
  if (K == 0) {
    ref::fill(ir::Fill{d, 0});
    return true;
  }
  // dst must be row-major per batch; compute into a temporary otherwise.
  Tensor out = d;
  if (!(d.stride(2) == 1 && d.stride(1) >= N)) out = Tensor(d).contiguous().clone();
  char ta = 'N', tb = 'N';
  int64_t lda = 0, ldb = 0;
  Tensor ac = a, bc = b;
  if (!gemm_layout(M, K, a.stride(1), a.stride(2), ta, lda)) {
    ac = a.contiguous();
    gemm_layout(M, K, ac.stride(1), ac.stride(2), ta, lda);
  }
  if (!gemm_layout(K, N, b.stride(1), b.stride(2), tb, ldb)) {
    bc = b.contiguous();
    gemm_layout(K, N, bc.stride(1), bc.stride(2), tb, ldb);
  }
  const float* pa = ref::ptr<float>(ac);
  const float* pb = ref::ptr<float>(bc);
  float* pd = ref::ptr<float>(out);
  auto gemm = [&](int64_t i) {
    check(dnnl_sgemm(ta, tb, M, N, K, 1.0f, pa + i * ac.stride(0), lda, pb + i * bc.stride(0), ldb,
                     0.0f, pd + i * out.stride(0), out.stride(1)),
          M, N, K);
  };
  // Many small GEMMs: one per thread over the batch (each single-threaded: oneDNN inside an
  // OpenMP region runs serially) instead of a threaded sgemm per item, whose fork/join per
  // 64x64 GEMM cost more than the GEMM (and a scheduler quantum each on a loaded machine).
  if (B > 1 && M * N * K <= 128 * 128 * 128 && openmp_runtime_active()) {
    parallel_for(0, B, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) gemm(i);
    });
  } else {
    for (int64_t i = 0; i < B; ++i) gemm(i);
  }
  if (!out.is_alias_of(d)) ref::copy(ir::Copy{out, d});
  return true;
}

}  // namespace ember::cpu
