// The cpu backend's GEMM libraries behind one interface. Row-major C[M, N] = op(A) @ op(B) with
// op = 'N' (as stored, leading dimension = row stride) or 'T' (the transpose of a row-major
// matrix), alpha = 1, beta = 0 (C is overwritten). Internal.
//
// Which library runs is autotuned per shape class (gemm.cpp, runtime/autotune.h), starting from
// sgemm_library()'s size threshold (measured on AVX2 in BENCHMARKS.md "cpu GEMM library"):
//  - OpenBLAS, the OpenMP build (Debian libopenblas0-openmp), opened at run time by path so the
//    process needs no link-time BLAS and no clash with a pthread OpenBLAS another library loads.
//    It shares the OpenMP runtime (libgomp) with oneDNN and the cpu thread pool, so its threads
//    are the same team and none spin against ours; its thread count is set to num_threads()
//    (EMBER_NUM_THREADS / ember::set_num_threads) before each call. By default f32 above 128^3
//    multiply-adds, and all f64.
//  - oneDNN's dnnl_sgemm: by default f32 small/batched GEMMs; every f32 GEMM when OpenBLAS is
//    absent.
//  - No f64 library without OpenBLAS: dgemm_supported() is false and the caller falls back.
// Env EMBER_GEMM=onednn|openblas forces one library for f32 (A/B measurements; read once; no
// autotuning then);
// onednn also leaves f64 to the reference kernel, as when OpenBLAS is absent.
#pragma once
#include <cstdint>
#include <initializer_list>

namespace ember::cpu::gemm {

enum class Library { onednn, openblas };

/// The default library for this shape (after EMBER_GEMM and availability): what the autotuner
/// (gemm.cpp) tries first and what EMBER_AUTOTUNE=off runs.
Library sgemm_library(int64_t m, int64_t n, int64_t k);
/// Whether EMBER_GEMM forces the f32 library (then nothing is autotuned).
bool sgemm_choice_forced();
/// Whether OpenBLAS is present and takes these sizes and leading dimensions (32-bit int).
bool openblas_takes(std::initializer_list<int64_t> sizes);
/// "oneDNN" or "OpenBLAS (OpenMP)".
const char* library_name(Library l);
/// Whether the OpenMP OpenBLAS was found (and so f64 GEMM is available).
bool have_openblas();
/// The threads OpenBLAS last ran with (openblas_get_num_threads; 0 without OpenBLAS). For tests.
int openblas_threads();

/// Runs on `lib` (oneDNN when lib is OpenBLAS and !openblas_takes(m, n, k, lda, ldb, ldc)).
/// Threaded unless called from inside a parallel_for task (then single-threaded).
void sgemm(Library lib, char ta, char tb, int64_t m, int64_t n, int64_t k, const float* a,
           int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc);
/// Whether dgemm() can run: OpenBLAS is present and every size and leading dimension given fits
/// its 32-bit int. Checked once by the caller before any work (dgemm() assumes it).
bool dgemm_supported(std::initializer_list<int64_t> sizes);
/// Requires dgemm_supported() for m, n, k, lda, ldb, ldc.
void dgemm(char ta, char tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
           const double* b, int64_t ldb, double* c, int64_t ldc);

}  // namespace ember::cpu::gemm
