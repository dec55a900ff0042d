// execute_native(): f32/f64 matmuls of plain row-major or transposed 2-d or 3-d (batched) views
// run through CLBlast's GEMM on the backend's queue, when libclblast.so.1 is installed (opened at
// run time) and EMBER_OPENCL_CLBLAST is not 0. Everything else is lowered to generated kernels.
// CLBlast is the default; for products big enough, the autotuner also times the generated
// kernels against it (runtime/kernel_backend.cpp: run_matmul_tuned).
// First: it sets CL_TARGET_OPENCL_VERSION before clblast_c.h includes CL/cl.h.
#include "backends/opencl/opencl_backend.h"
// clang-format off
#include <dlfcn.h>
#include <clblast_c.h>
// clang-format on

#include <cstdlib>
#include <string>

#include "core/env.h"
#include "ember/error.h"

namespace ember::cl {

namespace {
struct Blas {
  decltype(&CLBlastSgemmStridedBatched) sgemm = nullptr;
  decltype(&CLBlastDgemmStridedBatched) dgemm = nullptr;
};

const Blas* blas() {
  static const Blas* b = []() -> const Blas* {
    void* lib = dlopen("libclblast.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return nullptr;
    auto* out = new Blas;
    out->sgemm = reinterpret_cast<decltype(out->sgemm)>(dlsym(lib, "CLBlastSgemmStridedBatched"));
    out->dgemm = reinterpret_cast<decltype(out->dgemm)>(dlsym(lib, "CLBlastDgemmStridedBatched"));
    return out->sgemm && out->dgemm ? out : nullptr;
  }();
  if (!env_flag("EMBER_OPENCL_CLBLAST", true))
    return nullptr;  // read at every matmul: a test or a user may switch it
  return b;
}

// The last two dims of `t` as a GEMM operand of rows x cols: its leading dimension and whether
// it is transposed; false when it is neither layout.
bool operand(const Tensor& t, int64_t rows, int64_t cols, size_t& ld, CLBlastTranspose& tr) {
  const auto& s = t.strides();
  const int64_t r = s[s.size() - 2], c = s[s.size() - 1];
  if ((c == 1 || cols == 1) && r >= cols && r > 0) {
    ld = size_t(r);
    tr = CLBlastTransposeNo;
    return true;
  }
  if ((r == 1 || rows == 1) && c >= rows && c > 0) {
    ld = size_t(c);
    tr = CLBlastTransposeYes;
    return true;
  }
  return false;
}
}  // namespace

bool OpenCLBackend::clblast_enabled() const { return blas() != nullptr; }

namespace {
// One CLBlast GEMM: sizes, leading dimensions, transposes and batch strides.
struct Gemm {
  int64_t m = 0, n = 0, k = 0, nbatch = 1;
  size_t lda = 0, ldb = 0, sa = 0, sb = 0;
  CLBlastTranspose ta = CLBlastTransposeNo, tb = CLBlastTransposeNo;
};

// Whether CLBlast takes the matmul (f32/f64, 2-d or 3-d, operands plain or transposed, a
// contiguous result), with its GEMM in `g`.
bool plan(const ir::Matmul& mm, Gemm& g) {
  const Tensor &a = mm.a, &b = mm.b, &c = mm.dst;
  const DType t = c.dtype();
  if ((t != DType::f32 && t != DType::f64) || a.dtype() != t || b.dtype() != t) return false;
  const int64_t d = c.dim();
  if ((d != 2 && d != 3) || a.dim() != d || b.dim() != d || !c.is_contiguous()) return false;
  g.m = c.sizes()[size_t(d - 2)];
  g.n = c.sizes()[size_t(d - 1)];
  g.k = a.sizes()[size_t(d - 1)];
  g.nbatch = d == 3 ? c.sizes()[0] : 1;
  if (g.m == 0 || g.n == 0 || g.k == 0) return false;
  if (d == 3 && (a.sizes()[0] != g.nbatch || b.sizes()[0] != g.nbatch)) return false;
  if (!operand(a, g.m, g.k, g.lda, g.ta) || !operand(b, g.k, g.n, g.ldb, g.tb)) return false;
  if (d == 3 && (a.strides()[0] < 0 || b.strides()[0] < 0)) return false;
  g.sa = d == 3 ? size_t(a.strides()[0]) : 0;
  g.sb = d == 3 ? size_t(b.strides()[0]) : 0;
  return true;
}
}  // namespace

bool OpenCLBackend::native_applies(const ir::Op& op) const {
  const auto* mm = std::get_if<ir::Matmul>(&op);
  Gemm g;
  return mm && blas() && plan(*mm, g);
}

bool OpenCLBackend::execute_native(const ir::Op& op) {
  const auto* mm = std::get_if<ir::Matmul>(&op);
  const Blas* lib = blas();
  Gemm g;
  if (!mm || !lib || !plan(*mm, g)) return false;
  const Tensor &a = mm->a, &b = mm->b, &c = mm->dst;
  const DType t = c.dtype();
  const int64_t m = g.m, n = g.n, k = g.k, nbatch = g.nbatch;
  const size_t lda = g.lda, ldb = g.ldb, sa = g.sa, sb = g.sb;
  const CLBlastTranspose ta = g.ta, tb = g.tb;
  cl_mem ma = cl_mem(a.impl()->storage->data()), mb = cl_mem(b.impl()->storage->data()),
         mc = cl_mem(c.impl()->storage->data());
  Batch& bt = batch();
  cl_command_queue q = queue_;
  CLBlastStatusCode s;
  if (t == DType::f32)
    s = lib->sgemm(CLBlastLayoutRowMajor, ta, tb, size_t(m), size_t(n), size_t(k), 1.0f, ma,
                   size_t(a.offset()), lda, sa, mb, size_t(b.offset()), ldb, sb, 0.0f, mc,
                   size_t(c.offset()), size_t(n), size_t(m * n), size_t(nbatch), &q, nullptr);
  else
    s = lib->dgemm(CLBlastLayoutRowMajor, ta, tb, size_t(m), size_t(n), size_t(k), 1.0, ma,
                   size_t(a.offset()), lda, sa, mb, size_t(b.offset()), ldb, sb, 0.0, mc,
                   size_t(c.offset()), size_t(n), size_t(m * n), size_t(nbatch), &q, nullptr);
  if (s != CLBlastSuccess)
    EMBER_FAIL("matmul", "CLBlast GEMM on ", device().str(), " failed with status ", int(s), " (m ",
               m, ", n ", n, ", k ", k, "); EMBER_OPENCL_CLBLAST=0 uses the generated kernel");
  for (const Tensor* t : {&a, &b, &c}) keep_alive(bt, *t);
  clblast_calls_++;
  count_op();
  return true;
}

}  // namespace ember::cl
