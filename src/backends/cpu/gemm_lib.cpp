// The GEMM libraries behind gemm.h: oneDNN (linked) and the OpenMP OpenBLAS (opened at run time).
#include <dlfcn.h>
#include <dnnl.h>

#include <climits>
#include <cstdlib>
#include <string>

#include "backends/cpu/gemm.h"
#include "backends/cpu/thread_pool.h"
#include "core/env.h"
#include "ember/error.h"

// libgomp's (weak: present when oneDNN brought it, as in thread_pool.cpp).
extern "C" int omp_in_parallel() __attribute__((weak));

namespace ember::cpu::gemm {

namespace {

// CBLAS (LP64: 32-bit int) entry points, row-major = 101, no transpose = 111, transpose = 112.
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                            int, float, float*, int);
using CblasDgemm = void (*)(int, int, int, int, int, int, double, const double*, int, const double*,
                            int, double, double*, int);

struct OpenBlas {
  CblasSgemm sgemm = nullptr;
  CblasDgemm dgemm = nullptr;
  int (*threads)() = nullptr;
  void (*set_threads)(int) = nullptr;
};

#if !defined(RTLD_DEEPBIND) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kDeepBind = 0;  // not glibc, or a sanitizer runtime (they refuse RTLD_DEEPBIND)
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr int kDeepBind = 0;
#else
constexpr int kDeepBind = RTLD_DEEPBIND;
#endif
#else
constexpr int kDeepBind = RTLD_DEEPBIND;
#endif

// A sanitizer runtime in the process (a user's program built with -fsanitize=address against
// a library built without) aborts on RTLD_DEEPBIND: checked at run time, not only at build time.
int deep_bind() {
  if (kDeepBind == 0) return 0;
  for (const char* sym : {"__asan_init", "__tsan_init", "__msan_init"})
    if (dlsym(RTLD_DEFAULT, sym)) return 0;
  return kDeepBind;
}

// Opened by full path: the plain "libopenblas.so.0" is Debian's alternatives link (the pthread
// build by default, whose threads spin after each call and fight the OpenMP team). RTLD_DEEPBIND
// keeps its (exported) internals bound to itself even when a pthread OpenBLAS with the same
// symbol names is already loaded (LibTorch links one). Only an OpenMP build is accepted.
const OpenBlas* load_openblas() {
  const std::string env = env_string("EMBER_OPENBLAS_LIB");
  const char* paths[] = {
    env.c_str(),
#if defined(EMBER_LIBRARY_ARCH)  // the target's Debian multiarch triplet (from CMake)
    "/usr/lib/" EMBER_LIBRARY_ARCH "/openblas-openmp/libopenblas.so.0",
#endif
    nullptr
  };
  for (const char* p : paths) {
    if (!p || !*p) continue;
    void* h = dlopen(p, RTLD_NOW | RTLD_LOCAL | deep_bind());
    if (!h) continue;
    auto parallel = reinterpret_cast<int (*)()>(dlsym(h, "openblas_get_parallel"));
    static OpenBlas ob;
    ob.sgemm = reinterpret_cast<CblasSgemm>(dlsym(h, "cblas_sgemm"));
    ob.dgemm = reinterpret_cast<CblasDgemm>(dlsym(h, "cblas_dgemm"));
    ob.threads = reinterpret_cast<int (*)()>(dlsym(h, "openblas_get_num_threads"));
    ob.set_threads = reinterpret_cast<void (*)(int)>(dlsym(h, "openblas_set_num_threads"));
    if (parallel && parallel() == 2 && ob.sgemm && ob.dgemm && ob.threads && ob.set_threads)
      return &ob;  // 2: the OpenMP build
    dlclose(h);
  }
  return nullptr;
}

// EMBER_GEMM (read once): auto (the default), onednn or openblas; another value warns.
const std::string& gemm_env() {
  static const std::string v = env_choice("EMBER_GEMM", {"auto", "onednn", "openblas"}, "auto");
  return v;
}

const OpenBlas* openblas() {
  static const OpenBlas* ob =
      gemm_env() == "onednn" ? static_cast<const OpenBlas*>(nullptr) : load_openblas();
  return ob;
}

bool force_openblas() { return gemm_env() == "openblas"; }

// CBLAS takes 32-bit sizes and leading dimensions.
bool fits_int(std::initializer_list<int64_t> sizes) {
  for (int64_t v : sizes)
    if (v > INT_MAX) return false;
  return true;
}

int cblas_trans(char t) { return t == 'T' ? 112 : 111; }

// OpenBLAS's threads = num_threads() before a call from outside a parallel region (inside one it
// runs single-threaded by itself). It would follow omp_get_max_threads() on its own, except that
// with one OpenMP thread it runs serially without updating its count; setting it keeps it exact.
void sync_threads(const OpenBlas& ob) {
  if (omp_in_parallel && omp_in_parallel()) return;
  const int n = num_threads();
  if (ob.threads() != n) ob.set_threads(n);
}

}  // namespace

bool have_openblas() { return openblas() != nullptr; }
int openblas_threads() { return openblas() ? openblas()->threads() : 0; }

const char* library_name(Library l) {
  return l == Library::openblas ? "OpenBLAS (OpenMP)" : "oneDNN";
}

// The default (autotune's candidate 0, and what EMBER_AUTOTUNE=off runs): up to 128^3
// multiply-adds oneDNN: its AVX2 kernel is ~8% faster single-threaded there (96 vs 88 GFLOP/s, 1
// thread) and the batched small-GEMM path (one GEMM per thread) keeps the library it was tuned
// with. Above, OpenBLAS: with 2 threads it is 1.0-1.3x oneDNN's sgemm at N = 256..4096
// (quiet-machine figures in BENCHMARKS.md), oneDNN's 2-thread partitioning being weakest at 512.
Library sgemm_library(int64_t m, int64_t n, int64_t k) {
  if (!openblas()) return Library::onednn;
  if (force_openblas()) return Library::openblas;
  constexpr int64_t kOneDnnMaxWork = int64_t(128) * 128 * 128;
  return m * n * k > kOneDnnMaxWork ? Library::openblas : Library::onednn;
}

bool sgemm_choice_forced() { return gemm_env() != "auto"; }

bool openblas_takes(std::initializer_list<int64_t> sizes) { return openblas() && fits_int(sizes); }

void sgemm(Library lib, char ta, char tb, int64_t m, int64_t n, int64_t k, const float* a,
           int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  if (lib == Library::openblas && openblas_takes({m, n, k, lda, ldb, ldc})) {
    sync_threads(*openblas());
    openblas()->sgemm(101, cblas_trans(ta), cblas_trans(tb), int(m), int(n), int(k), 1.0f, a,
                      int(lda), b, int(ldb), 0.0f, c, int(ldc));
    return;
  }
  const dnnl_status_t st = dnnl_sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
  if (st != dnnl_success)
    EMBER_FAIL("matmul", "oneDNN sgemm failed with status ", int(st), " for M=", m, " N=", n,
               " K=", k);
}

bool dgemm_supported(std::initializer_list<int64_t> sizes) { return openblas() && fits_int(sizes); }

void dgemm(char ta, char tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
           const double* b, int64_t ldb, double* c, int64_t ldc) {
  sync_threads(*openblas());
  openblas()->dgemm(101, cblas_trans(ta), cblas_trans(tb), int(m), int(n), int(k), 1.0, a, int(lda),
                    b, int(ldb), 0.0, c, int(ldc));
}

}  // namespace ember::cpu::gemm
