// The f32 GEMM: A and B packed into panels (4 rows of A, 8 columns of B, k-major), then a 4x8
// register-blocked f32x4 micro-kernel over blocks of k, tiles split across the thread pool.
// Each output sums its products in k order from +0 with separate multiply and add (wasm has no
// fused multiply-add), as the reference kernel does: the results are the reference's bits.
// A product with fewer than 4 rows skips the packing: rows of B scaled and added (B row-major)
// or dot products (B column-major, as a Linear layer's weight.t()).
#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/ref/dispatch.h"
#include "backends/wasm/kernels.h"
#include "backends/wasm/thread_pool.h"

#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

namespace ember::wasm {

#ifdef __wasm_simd128__

namespace {

constexpr int64_t kMr = 4, kNr = 8;
constexpr int64_t kKc = 256;  // k per block: a 4 x kKc panel of A stays in L1 across a row of B

// Ap: ceil(M / 4) panels, each K x 4 (rows past M are zero).
void pack_a(int64_t M, int64_t K, const float* A, int64_t rs, int64_t cs, float* Ap,
            bool threaded) {
  const int64_t panels = (M + kMr - 1) / kMr;
  auto run = [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      float* out = Ap + p * K * kMr;
      const int64_t rows = std::min(kMr, M - p * kMr);
      for (int64_t r = 0; r < kMr; ++r) {
        const float* src = A + (p * kMr + r) * rs;
        if (r >= rows) {
          for (int64_t k = 0; k < K; ++k) out[k * kMr + r] = 0.f;
        } else {
          for (int64_t k = 0; k < K; ++k) out[k * kMr + r] = src[k * cs];
        }
      }
    }
  };
  if (threaded)
    parallel_for(panels, std::max<int64_t>(1, 8192 / std::max<int64_t>(K, 1)), run);
  else
    run(0, panels);
}

// Bp: ceil(N / 8) panels, each K x 8 (columns past N are zero).
void pack_b(int64_t N, int64_t K, const float* B, int64_t rs, int64_t cs, float* Bp,
            bool threaded) {
  const int64_t panels = (N + kNr - 1) / kNr;
  auto run = [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      float* out = Bp + p * K * kNr;
      const int64_t j0 = p * kNr, cols = std::min(kNr, N - j0);
      if (cols == kNr && cs == 1) {
        for (int64_t k = 0; k < K; ++k) {
          const float* src = B + k * rs + j0;
          wasm_v128_store(out + k * kNr, wasm_v128_load(src));
          wasm_v128_store(out + k * kNr + 4, wasm_v128_load(src + 4));
        }
        continue;
      }
      for (int64_t j = 0; j < kNr; ++j) {
        const float* src = B + (j0 + j) * cs;
        if (j >= cols) {
          for (int64_t k = 0; k < K; ++k) out[k * kNr + j] = 0.f;
        } else {
          for (int64_t k = 0; k < K; ++k) out[k * kNr + j] = src[k * rs];
        }
      }
    }
  };
  if (threaded)
    parallel_for(panels, std::max<int64_t>(1, 8192 / std::max<int64_t>(K, 1)), run);
  else
    run(0, panels);
}

// c[4 x 8] (rows ldc apart) = (first ? 0 : c) + sum over kc of a[k] (x) b[k], then + bias[r]
// when `bias` (the last block).
inline void kernel_4x8(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                       bool first, const float* bias) {
  v128_t c00, c01, c10, c11, c20, c21, c30, c31;
  if (first) {
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = wasm_f32x4_splat(0.f);
  } else {
    c00 = wasm_v128_load(c), c01 = wasm_v128_load(c + 4);
    c10 = wasm_v128_load(c + ldc), c11 = wasm_v128_load(c + ldc + 4);
    c20 = wasm_v128_load(c + 2 * ldc), c21 = wasm_v128_load(c + 2 * ldc + 4);
    c30 = wasm_v128_load(c + 3 * ldc), c31 = wasm_v128_load(c + 3 * ldc + 4);
  }
  for (int64_t k = 0; k < kc; ++k, a += kMr, b += kNr) {
    const v128_t b0 = wasm_v128_load(b), b1 = wasm_v128_load(b + 4);
    v128_t av = wasm_f32x4_splat(a[0]);
    c00 = wasm_f32x4_add(c00, wasm_f32x4_mul(av, b0));
    c01 = wasm_f32x4_add(c01, wasm_f32x4_mul(av, b1));
    av = wasm_f32x4_splat(a[1]);
    c10 = wasm_f32x4_add(c10, wasm_f32x4_mul(av, b0));
    c11 = wasm_f32x4_add(c11, wasm_f32x4_mul(av, b1));
    av = wasm_f32x4_splat(a[2]);
    c20 = wasm_f32x4_add(c20, wasm_f32x4_mul(av, b0));
    c21 = wasm_f32x4_add(c21, wasm_f32x4_mul(av, b1));
    av = wasm_f32x4_splat(a[3]);
    c30 = wasm_f32x4_add(c30, wasm_f32x4_mul(av, b0));
    c31 = wasm_f32x4_add(c31, wasm_f32x4_mul(av, b1));
  }
  if (bias) {
    v128_t v = wasm_f32x4_splat(bias[0]);
    c00 = wasm_f32x4_add(c00, v), c01 = wasm_f32x4_add(c01, v);
    v = wasm_f32x4_splat(bias[1]);
    c10 = wasm_f32x4_add(c10, v), c11 = wasm_f32x4_add(c11, v);
    v = wasm_f32x4_splat(bias[2]);
    c20 = wasm_f32x4_add(c20, v), c21 = wasm_f32x4_add(c21, v);
    v = wasm_f32x4_splat(bias[3]);
    c30 = wasm_f32x4_add(c30, v), c31 = wasm_f32x4_add(c31, v);
  }
  wasm_v128_store(c, c00), wasm_v128_store(c + 4, c01);
  wasm_v128_store(c + ldc, c10), wasm_v128_store(c + ldc + 4, c11);
  wasm_v128_store(c + 2 * ldc, c20), wasm_v128_store(c + 2 * ldc + 4, c21);
  wasm_v128_store(c + 3 * ldc, c30), wasm_v128_store(c + 3 * ldc + 4, c31);
}

// Tiles [i0, i1) x [j0, j1) of C (multiples of 4 and 8 except at M and N) over all K.
void tiles(int64_t M, int64_t N, int64_t K, const float* Ap, const float* Bp, float* C, int64_t ldc,
           const float* bias, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  float edge[kMr * kNr];
  float edge_bias[kMr];
  for (int64_t k0 = 0; k0 < K; k0 += kKc) {
    const int64_t kc = std::min(kKc, K - k0);
    const bool first = k0 == 0, last = k0 + kc == K;
    for (int64_t i = i0; i < i1; i += kMr) {
      const float* a = Ap + i * K + k0 * kMr;
      const int64_t rows = std::min(kMr, M - i);
      const float* bi = nullptr;
      if (last && bias) {
        for (int64_t r = 0; r < kMr; ++r) edge_bias[r] = r < rows ? bias[i + r] : 0.f;
        bi = edge_bias;
      }
      for (int64_t j = j0; j < j1; j += kNr) {
        const float* b = Bp + j * K + k0 * kNr;
        const int64_t cols = std::min(kNr, N - j);
        float* c = C + i * ldc + j;
        if (rows == kMr && cols == kNr) {
          kernel_4x8(kc, a, b, c, ldc, first, bi);
          continue;
        }
        if (!first)
          for (int64_t r = 0; r < rows; ++r) std::memcpy(edge + r * kNr, c + r * ldc, 4 * cols);
        kernel_4x8(kc, a, b, edge, kNr, first, bi);
        for (int64_t r = 0; r < rows; ++r) std::memcpy(c + r * ldc, edge + r * kNr, 4 * cols);
      }
    }
  }
}

// C[m, :] (+)= A[m, k] * B[k, :] for k in order: B row-major (cs 1), 16 columns per pass.
void small_m_rows(int64_t M, int64_t N, int64_t K, const float* A, int64_t a_rs, int64_t a_cs,
                  const float* B, int64_t b_rs, float* C, int64_t ldc, const float* bias,
                  bool threaded) {
  constexpr int64_t kW = 16;
  auto run = [&](int64_t t0, int64_t t1) {
    for (int64_t m = 0; m < M; ++m) {
      const float* a = A + m * a_rs;
      float* c = C + m * ldc;
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t j = t * kW;
        if (j + kW <= N) {
          v128_t c0 = wasm_f32x4_splat(0.f), c1 = c0, c2 = c0, c3 = c0;
          const float* b = B + j;
          for (int64_t k = 0; k < K; ++k, b += b_rs) {
            const v128_t av = wasm_f32x4_splat(a[k * a_cs]);
            c0 = wasm_f32x4_add(c0, wasm_f32x4_mul(av, wasm_v128_load(b)));
            c1 = wasm_f32x4_add(c1, wasm_f32x4_mul(av, wasm_v128_load(b + 4)));
            c2 = wasm_f32x4_add(c2, wasm_f32x4_mul(av, wasm_v128_load(b + 8)));
            c3 = wasm_f32x4_add(c3, wasm_f32x4_mul(av, wasm_v128_load(b + 12)));
          }
          if (bias) {
            const v128_t bv = wasm_f32x4_splat(bias[m]);
            c0 = wasm_f32x4_add(c0, bv), c1 = wasm_f32x4_add(c1, bv);
            c2 = wasm_f32x4_add(c2, bv), c3 = wasm_f32x4_add(c3, bv);
          }
          wasm_v128_store(c + j, c0), wasm_v128_store(c + j + 4, c1);
          wasm_v128_store(c + j + 8, c2), wasm_v128_store(c + j + 12, c3);
          continue;
        }
        for (int64_t jj = j; jj < N; ++jj) {
          float s = 0.f;
          for (int64_t k = 0; k < K; ++k) s += a[k * a_cs] * B[k * b_rs + jj];
          c[jj] = bias ? s + bias[m] : s;
        }
      }
    }
  };
  const int64_t tiles_n = (N + kW - 1) / kW;
  if (threaded)
    parallel_for(tiles_n, std::max<int64_t>(1, 16384 / std::max<int64_t>(K * M * kW, 1)), run);
  else
    run(0, tiles_n);
}

// C[m, n] = dot(A[m, :], B[:, n]): A rows and B columns contiguous (a_cs 1, b_rs 1). Four
// partial sums per dot (lanes), added at the end: not the reference's order (within f32's
// tolerance for a changed summation order).
void small_m_dots(int64_t M, int64_t N, int64_t K, const float* A, int64_t a_rs, const float* B,
                  int64_t b_cs, float* C, int64_t ldc, const float* bias, bool threaded) {
  auto run = [&](int64_t n0, int64_t n1) {
    for (int64_t m = 0; m < M; ++m) {
      const float* a = A + m * a_rs;
      for (int64_t n = n0; n < n1; ++n) {
        const float* b = B + n * b_cs;
        v128_t s0 = wasm_f32x4_splat(0.f), s1 = s0;
        int64_t k = 0;
        for (; k + 8 <= K; k += 8) {
          s0 = wasm_f32x4_add(s0, wasm_f32x4_mul(wasm_v128_load(a + k), wasm_v128_load(b + k)));
          s1 = wasm_f32x4_add(s1,
                              wasm_f32x4_mul(wasm_v128_load(a + k + 4), wasm_v128_load(b + k + 4)));
        }
        const v128_t s = wasm_f32x4_add(s0, s1);
        float r = (wasm_f32x4_extract_lane(s, 0) + wasm_f32x4_extract_lane(s, 1)) +
                  (wasm_f32x4_extract_lane(s, 2) + wasm_f32x4_extract_lane(s, 3));
        for (; k < K; ++k) r += a[k] * b[k];
        C[m * ldc + n] = bias ? r + bias[m] : r;
      }
    }
  };
  if (threaded)
    parallel_for(N, std::max<int64_t>(1, 16384 / std::max<int64_t>(K * M, 1)), run);
  else
    run(0, N);
}

thread_local std::vector<float> t_apack, t_bpack;

}  // namespace

void sgemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t a_rs, int64_t a_cs,
           const float* B, int64_t b_rs, int64_t b_cs, float* C, int64_t ldc, const float* bias,
           bool threaded) {
  if (M == 0 || N == 0) return;
  threaded = threaded && num_threads() > 1 && M * N * K >= 32768;
  if (K == 0) {
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) C[m * ldc + n] = bias ? 0.f + bias[m] : 0.f;
    return;
  }
  if (M < kMr && a_cs == 1 && b_rs == 1 && K >= 8) {
    small_m_dots(M, N, K, A, a_rs, B, b_cs, C, ldc, bias, threaded);
    return;
  }
  if (M < kMr && b_cs == 1) {
    small_m_rows(M, N, K, A, a_rs, a_cs, B, b_rs, C, ldc, bias, threaded);
    return;
  }
  const int64_t mp = (M + kMr - 1) / kMr, np = (N + kNr - 1) / kNr;
  std::vector<float>& ap = t_apack;
  std::vector<float>& bp = t_bpack;
  ap.resize(size_t(mp * kMr * K));
  bp.resize(size_t(np * kNr * K));
  pack_a(M, K, A, a_rs, a_cs, ap.data(), threaded);
  pack_b(N, K, B, b_rs, b_cs, bp.data(), threaded);
  // Work items: blocks of up to 16 row panels x up to 32 column panels, smaller when that
  // leaves threads idle.
  const int64_t nt = threaded ? num_threads() : 1;
  const int64_t mb = std::min<int64_t>(mp, 16), mblocks = (mp + mb - 1) / mb;
  int64_t nb = std::min<int64_t>(np, 32);
  while (nb > 2 && mblocks * ((np + nb - 1) / nb) < 4 * nt) nb /= 2;
  const int64_t nblocks = (np + nb - 1) / nb;
  auto run = [&](int64_t w0, int64_t w1) {
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t bi = w / nblocks, bj = w % nblocks;
      tiles(M, N, K, ap.data(), bp.data(), C, ldc, bias, bi * mb * kMr,
            std::min(M, (bi + 1) * mb * kMr), bj * nb * kNr, std::min(N, (bj + 1) * nb * kNr));
    }
  };
  if (threaded)
    parallel_for(mblocks * nblocks, 1, run);
  else
    run(0, mblocks * nblocks);
}

bool matmul(const ir::Matmul& op) {
  const Tensor &a = op.a, &b = op.b, &d = op.dst;
  if (a.dtype() != DType::f32 || b.dtype() != DType::f32 || d.dtype() != DType::f32) return false;
  const int64_t batch = d.size(0), M = d.size(1), N = d.size(2), K = a.size(2);
  if (batch == 0 || M == 0 || N == 0) return true;
  // dst must not overlap an operand (the reference packs first); its rows must be unit-stride.
  if (d.is_alias_of(a) || d.is_alias_of(b)) return false;
  const bool unit = d.stride(2) == 1 || N == 1;
  const float* ap = ref::ptr<float>(a);
  const float* bp = ref::ptr<float>(b);
  float* dp = ref::ptr<float>(d);
  const int64_t ldc = M == 1 ? N : d.stride(1);
  auto one = [&](int64_t i, bool threaded, std::vector<float>& tmp) {
    const float* A = ap + i * a.stride(0);
    const float* B = bp + i * b.stride(0);
    float* D = dp + i * d.stride(0);
    if (unit) {
      sgemm(M, N, K, A, a.stride(1), a.stride(2), B, b.stride(1), b.stride(2), D, ldc, nullptr,
            threaded);
      return;
    }
    tmp.resize(size_t(M * N));
    sgemm(M, N, K, A, a.stride(1), a.stride(2), B, b.stride(1), b.stride(2), tmp.data(), N, nullptr,
          threaded);
    for (int64_t r = 0; r < M; ++r)
      for (int64_t c = 0; c < N; ++c) D[r * d.stride(1) + c * d.stride(2)] = tmp[size_t(r * N + c)];
  };
  // Many small products: one per thread at a time; else each product split across threads.
  if (batch > 1 && M * N * K < (int64_t(1) << 18)) {
    parallel_for(batch, std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(M * N * K, 1)),
                 [&](int64_t b0, int64_t b1) {
                   std::vector<float> tmp;
                   for (int64_t i = b0; i < b1; ++i) one(i, false, tmp);
                 });
    return true;
  }
  std::vector<float> tmp;
  for (int64_t i = 0; i < batch; ++i) one(i, true, tmp);
  return true;
}

#else

bool matmul(const ir::Matmul&) { return false; }

#endif

}  // namespace ember::wasm
