// Reference batched matmul: dst[b] = a[b] @ b[b] for any strides (batch strides may be 0).
// Each batch packs its operands into contiguous row-major temporaries of the accumulation type
// (skipped when they already are) and runs a blocked i-k-j loop, so the inner loop is a
// vectorisable axpy over a row of the output.
#include <algorithm>
#include <vector>

#include "backends/ref/dispatch.h"
#include "backends/ref/kernels.h"

namespace ember::ref {

namespace {

// The type products are summed in: float for f16/bf16/f32, double for f64; integers wrap in an
// unsigned type of at least 32 bits (well-defined overflow; the low bits equal the integer
// type's two's-complement result); bool sums in uint32 and stores `sum != 0`.
template <typename T>
using mm_acc_t = std::conditional_t<is_float_v<T>, compute_t<T>,
                                    std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>>;

// A contiguous [rows, cols] row-major view of the strided matrix at `base`, converted to C:
// `base` itself when it already is one, else a packed copy in `buf`.
template <typename C, typename T>
const C* pack(const T* base, int64_t rows, int64_t cols, int64_t rs, int64_t cs,
              std::vector<C>& buf) {
  if constexpr (std::is_same_v<C, T>) {
    if ((cs == 1 || cols <= 1) && (rs == cols || rows <= 1)) return base;
  }
  buf.resize(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    const T* src = base + r * rs;
    C* out = buf.data() + r * cols;
    if (cs == 1) {
      for (int64_t c = 0; c < cols; ++c) out[c] = scalar_cast<C>(src[c]);
    } else {
      for (int64_t c = 0; c < cols; ++c) out[c] = scalar_cast<C>(src[c * cs]);
    }
  }
  return buf.data();
}

// out[M, N] += A[M, K] @ B[K, N], all contiguous row-major. Blocked over N and K so a block of
// B (kKb x kNb) stays in cache while the rows of A stream past it; four rows of the output are
// updated per pass so each loaded element of B feeds four multiply-adds.
template <typename C>
void gemm(const C* A, const C* B, C* out, int64_t M, int64_t K, int64_t N) {
  constexpr int64_t kKb = 128, kNb = 512;
  for (int64_t j0 = 0; j0 < N; j0 += kNb) {
    const int64_t jn = std::min(kNb, N - j0);
    for (int64_t k0 = 0; k0 < K; k0 += kKb) {
      const int64_t kn = std::min(kKb, K - k0);
      int64_t i = 0;
      for (; i + 4 <= M; i += 4) {
        C* __restrict c0 = out + i * N + j0;
        C* __restrict c1 = c0 + N;
        C* __restrict c2 = c1 + N;
        C* __restrict c3 = c2 + N;
        const C* a = A + i * K + k0;
        for (int64_t k = 0; k < kn; ++k) {
          const C a0 = a[k], a1 = a[K + k], a2 = a[2 * K + k], a3 = a[3 * K + k];
          const C* __restrict b = B + (k0 + k) * N + j0;
          for (int64_t j = 0; j < jn; ++j) {
            const C bv = b[j];
            c0[j] += a0 * bv;
            c1[j] += a1 * bv;
            c2[j] += a2 * bv;
            c3[j] += a3 * bv;
          }
        }
      }
      for (; i < M; ++i) {
        C* __restrict c = out + i * N + j0;
        const C* a = A + i * K + k0;
        for (int64_t k = 0; k < kn; ++k) {
          const C av = a[k];
          const C* __restrict b = B + (k0 + k) * N + j0;
          for (int64_t j = 0; j < jn; ++j) c[j] += av * b[j];
        }
      }
    }
  }
}

}  // namespace

void matmul(const ir::Matmul& op) {
  const Tensor& a = op.a;
  const Tensor& b = op.b;
  const Tensor& d = op.dst;
  const int64_t batch = d.size(0), M = d.size(1), N = d.size(2), K = a.size(2);
  if (batch == 0 || M == 0 || N == 0) return;
  dispatch_dtype(d.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = mm_acc_t<T>;
    const T* ap = ptr<T>(a);
    const T* bp = ptr<T>(b);
    T* dp = ptr<T>(d);
    const auto& as = a.strides();
    const auto& bs = b.strides();
    const auto& ds = d.strides();
    std::vector<C> abuf, bbuf, obuf;
    const C* A = nullptr;
    const C* B = nullptr;
    for (int64_t i = 0; i < batch; ++i) {
      // A batch stride of 0 (broadcast operand) reuses the previous batch's packing.
      if (i == 0 || as[0] != 0) A = pack<C>(ap + i * as[0], M, K, as[1], as[2], abuf);
      if (i == 0 || bs[0] != 0) B = pack<C>(bp + i * bs[0], K, N, bs[1], bs[2], bbuf);
      T* dst = dp + i * ds[0];
      // Accumulate straight into dst when it is a contiguous matrix of the accumulation type.
      C* out = nullptr;
      if constexpr (std::is_same_v<C, T>) {
        if ((ds[2] == 1 || N == 1) && (ds[1] == N || M == 1)) {
          out = dst;
          std::fill(out, out + M * N, C(0));
        }
      }
      const bool direct = out != nullptr;
      if (!direct) {
        obuf.assign(size_t(M * N), C(0));
        out = obuf.data();
      }
      gemm(A, B, out, M, K, N);
      if (!direct) {
        for (int64_t r = 0; r < M; ++r)
          for (int64_t c = 0; c < N; ++c)
            dst[r * ds[1] + c * ds[2]] = scalar_cast<T>(out[r * N + c]);
      }
    }
  });
}

}  // namespace ember::ref
