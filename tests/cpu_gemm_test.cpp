// The cpu backend's matmul (src/backends/cpu/gemm.cpp, the libraries of gemm.h) against the
// reference kernel for f32, f64, bf16 and f16 on every layout the frontend produces: transposed,
// sliced, batch-broadcast (stride 0), packed (no GEMM layout), non-contiguous dst, K = 0, empty;
// on sizes either side of the oneDNN / OpenBLAS switch and of the batched small-GEMM path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/autotune_util.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/thread_pool.h"
#include "backends/ref/kernels.h"
#include "ember/ember.h"
#include "ir/ops.h"

namespace ember {
namespace {

const DType kFloatTypes[] = {DType::f32, DType::f64, DType::bf16, DType::f16};

Tensor rnd(Shape s, DType t, uint64_t seed) {
  manual_seed(Device::cpu(), seed);
  return randn(std::move(s), {DType::f32, Device::cpu()}).to(t);
}

// Relative tolerance of one dtype's result: the f32/f64 sum order differs between the kernels;
// f16/bf16 round one f32 sum, so a result can land one unit in the last place apart.
double rel_tol(DType t) {
  switch (t) {
    case DType::f64:
      return 1e-12;
    case DType::f32:
      return 2e-5;
    case DType::f16:
      return 2e-3;
    default:
      return 1.6e-2;  // bf16: 2^-7 is one unit in the last place at 1
  }
}

// dst (whatever its layout) = a @ b on the cpu kernel, compared with the reference kernel.
void check(const Tensor& a, const Tensor& b, const Tensor& dst, const std::string& what) {
  SCOPED_TRACE(what + " " + dtype_name(dst.dtype()));
  sync(Device::cpu());  // the kernels below are called directly, under the stream
  const int64_t K = a.size(2);
  const Tensor want = empty(dst.shape(), {dst.dtype(), Device::cpu()});
  ref::matmul(ir::Matmul{a, b, want});
  // f64 needs OpenBLAS (absent, or EMBER_GEMM=onednn): then the backend uses the reference.
  const bool fast = dst.dtype() != DType::f64 || cpu::gemm::have_openblas();
  ASSERT_EQ(cpu::sgemm_matmul(ir::Matmul{a, b, dst}), fast);
  if (!fast) return;
  const auto g = dst.to_vector<double>();
  const auto w = want.to_vector<double>();
  ASSERT_EQ(g.size(), w.size());
  // Scale: the sum of |products| bounds the rounding error of any summation order.
  const auto aa = a.abs().to(DType::f64), ba = b.abs().to(DType::f64);
  const auto bound = matmul(aa, ba).to_vector<double>();
  const double tol = rel_tol(dst.dtype());
  int bad = 0;
  for (size_t i = 0; i < g.size() && bad < 5; ++i) {
    const double lim = tol * std::max(std::abs(w[i]), bound[i] / std::sqrt(double(K) + 1)) + 1e-30;
    if (!(std::abs(g[i] - w[i]) <= lim)) {
      ++bad;
      ADD_FAILURE() << "at " << i << ": cpu " << g[i] << " ref " << w[i] << " (tol " << lim << ")";
    }
  }
}

void check_sizes(int64_t B, int64_t M, int64_t N, int64_t K) {
  for (DType t : kFloatTypes) {
    const Tensor a = rnd({B, M, K}, t, 1), b = rnd({B, K, N}, t, 2);
    check(a, b, empty({B, M, N}, {t, Device::cpu()}),
          "contiguous " + std::to_string(B) + "x" + std::to_string(M) + "x" + std::to_string(N) +
              "x" + std::to_string(K));
  }
}

TEST(CpuGemm, SmallBatchedPath) { check_sizes(8, 16, 24, 20); }
TEST(CpuGemm, BatchedAtTheSmallGemmLimit) { check_sizes(4, 64, 64, 64); }
TEST(CpuGemm, BelowTheLibrarySwitch) { check_sizes(1, 128, 128, 128); }
TEST(CpuGemm, AboveTheLibrarySwitch) { check_sizes(1, 129, 128, 128); }
TEST(CpuGemm, BatchedAboveTheSmallGemmLimit) { check_sizes(3, 130, 129, 131); }
TEST(CpuGemm, SingleRowAndColumn) {
  check_sizes(2, 1, 300, 200);
  check_sizes(2, 300, 1, 200);
  check_sizes(1, 300, 200, 1);
}

TEST(CpuGemm, TransposedOperands) {
  for (DType t : kFloatTypes)
    for (int64_t n : {int64_t(33), int64_t(160)}) {
      const Tensor at = rnd({2, n + 1, n}, t, 3).transpose(1, 2);  // [2, n, n+1], column-major
      const Tensor bt = rnd({2, n + 2, n + 1}, t, 4).transpose(1, 2);
      check(at, bt, empty({2, n, n + 2}, {t, Device::cpu()}), "a^T b^T n=" + std::to_string(n));
      const Tensor b = rnd({2, n + 1, n + 2}, t, 5);
      check(at, b, empty({2, n, n + 2}, {t, Device::cpu()}), "a^T b n=" + std::to_string(n));
    }
}

TEST(CpuGemm, SlicedOperandsWithLeadingDimensions) {
  for (DType t : kFloatTypes)
    for (int64_t n : {int64_t(20), int64_t(140)}) {
      const Tensor big_a = rnd({3, n + 5, n + 7}, t, 6), big_b = rnd({3, n + 9, n + 3}, t, 7);
      const Tensor a = big_a.narrow(1, 2, n).narrow(2, 3, n + 1);  // row stride n + 7
      const Tensor b = big_b.narrow(1, 1, n + 1).narrow(2, 2, n);  // row stride n + 3
      check(a, b, empty({3, n, n}, {t, Device::cpu()}), "sliced n=" + std::to_string(n));
      // Transposed slices: column-major with a leading dimension past the rows.
      const Tensor at = big_a.transpose(1, 2).narrow(1, 1, n).narrow(2, 2, n);
      check(at, b.narrow(1, 0, n), empty({3, n, n}, {t, Device::cpu()}),
            "sliced a^T n=" + std::to_string(n));
    }
}

TEST(CpuGemm, BroadcastBatch) {
  for (DType t : kFloatTypes)
    for (int64_t n : {int64_t(24), int64_t(140)}) {
      const Tensor w = rnd({1, n, n + 3}, t, 8).expand({4, n, n + 3});  // batch stride 0
      const Tensor x = rnd({4, n + 3, n - 2}, t, 9);
      ASSERT_EQ(w.stride(0), 0);
      check(w, x, empty({4, n, n - 2}, {t, Device::cpu()}), "broadcast a n=" + std::to_string(n));
      const Tensor y = rnd({4, n - 1, n}, t, 10);
      check(y, w, empty({4, n - 1, n + 3}, {t, Device::cpu()}),
            "broadcast b n=" + std::to_string(n));
      // Broadcast and without a GEMM layout (every other column): packed once.
      const Tensor ws = rnd({1, n, 2 * n}, t, 11).slice(2, 0, 2 * n, 2).expand({4, n, n});
      ASSERT_EQ(ws.stride(2), 2);
      check(ws, rnd({4, n, 5}, t, 12), empty({4, n, 5}, {t, Device::cpu()}),
            "broadcast strided a n=" + std::to_string(n));
    }
}

TEST(CpuGemm, StridedOperandsArePacked) {
  for (DType t : kFloatTypes) {
    const Tensor as = rnd({2, 40, 90}, t, 13).slice(2, 1, 90, 2);  // [2, 40, 45], stride 2
    const Tensor b = rnd({2, 45, 30}, t, 14);
    check(as, b, empty({2, 40, 30}, {t, Device::cpu()}), "column stride 2");
    // A row broadcast inside the matrix (row stride 0).
    const Tensor r = rnd({2, 1, 45}, t, 15).expand({2, 40, 45});
    check(r, b, empty({2, 40, 30}, {t, Device::cpu()}), "row stride 0");
  }
}

TEST(CpuGemm, NonContiguousDestination) {
  for (DType t : kFloatTypes)
    for (int64_t n : {int64_t(16), int64_t(150)}) {
      const Tensor a = rnd({2, n, n + 1}, t, 16), b = rnd({2, n + 1, n + 2}, t, 17);
      const Tensor dt = empty({2, n + 2, n}, {t, Device::cpu()}).transpose(1, 2);
      check(a, b, dt, "transposed dst n=" + std::to_string(n));
      const Tensor big = full({2, n + 4, n + 6}, 7.0, {t, Device::cpu()});
      const Tensor ds = big.narrow(1, 1, n).narrow(2, 2, n + 2);  // row stride n + 6
      check(a, b, ds, "sliced dst n=" + std::to_string(n));
      // The rest of the buffer is untouched.
      EXPECT_EQ(big.to(DType::f64).narrow(1, 0, 1).sum().item<double>(), 7.0 * 2 * (n + 6));
      EXPECT_EQ(big.to(DType::f64).narrow(2, 0, 2).sum().item<double>(), 7.0 * 2 * (n + 4) * 2);
    }
}

TEST(CpuGemm, ZeroInnerDimensionWritesZeros) {
  for (DType t : kFloatTypes) {
    const Tensor a = rnd({2, 3, 0}, t, 18), b = rnd({2, 0, 4}, t, 19);
    const Tensor dst = full({2, 3, 4}, 5.0, {t, Device::cpu()});
    sync(Device::cpu());  // the kernel is called directly, under the stream
    if (!cpu::sgemm_matmul(ir::Matmul{a, b, dst})) {
      EXPECT_TRUE(t == DType::f64 && !cpu::gemm::have_openblas());
      continue;
    }
    for (double v : dst.to_vector<double>()) EXPECT_EQ(v, 0.0);
  }
}

TEST(CpuGemm, EmptyResult) {
  for (DType t : kFloatTypes)
    for (Shape s : {Shape{0, 3, 4}, Shape{2, 0, 4}, Shape{2, 3, 0}}) {
      const Tensor a = rnd({s[0], s[1], 5}, t, 20), b = rnd({s[0], 5, s[2]}, t, 21);
      sync(Device::cpu());
      EXPECT_EQ(cpu::sgemm_matmul(ir::Matmul{a, b, empty(s, {t, Device::cpu()})}),
                t != DType::f64 || cpu::gemm::have_openblas());
    }
}

TEST(CpuGemm, IntegersFallBackToTheReference) {
  const Tensor a = tensor({0, 1, 2, 3, 4, 5}, {1, 2, 3}, Device::cpu());
  const Tensor b = tensor({0, 1, 2, 3, 4, 5}, {1, 3, 2}, Device::cpu());
  EXPECT_FALSE(cpu::sgemm_matmul(ir::Matmul{a, b, empty({1, 2, 2}, {DType::i32, Device::cpu()})}));
  // Through the backend: [[0,1,2],[3,4,5]] @ [[0,1],[2,3],[4,5]].
  EXPECT_EQ(matmul(a, b).to_vector<double>(), (std::vector<double>{10, 13, 28, 40}));
}

TEST(CpuGemm, Bf16RoundsTheF32ProductOnce) {
  // 1 + 2^-8 + 2^-8: each product is exact in bf16, the f32 sum is 1 + 2^-7 (representable);
  // rounding after every addition would give 1 (1 + 2^-8 ties to even).
  const Tensor a = tensor({1.0, 1.0, 1.0}, {1, 1, 3}, Device::cpu()).to(DType::bf16);
  const Tensor b = tensor({1.0, 1.0 / 256, 1.0 / 256}, {1, 3, 1}, Device::cpu()).to(DType::bf16);
  const Tensor d = empty({1, 1, 1}, {DType::bf16, Device::cpu()});
  sync(Device::cpu());
  ASSERT_TRUE(cpu::sgemm_matmul(ir::Matmul{a, b, d}));
  EXPECT_EQ(d.item<double>(), 1.0 + 1.0 / 128);
}

// f16/bf16 products are the f32 product of the whole converted operands, rounded once, up to the
// summation order: oneDNN's native bf16 kernel (gemm.cpp) and the f32 way sum in other orders,
// so an element may round to the neighbouring value, or further where its sum cancels (bounded by
// f32's rounding of sum |a| |b|). A wrong transpose, a panel left out or an accumulation in the
// dtype is far outside (CpuLowp.BoundRejectsALowPrecisionAccumulator). Layouts: contiguous,
// transposed A, transposed B, a batch; sizes above 512 (the panel size a blocked conversion
// would use).
TEST(CpuGemm, HalfIsTheF32ProductRoundedOnceUpToOrder) {
  struct Case {
    int64_t B, M, N, K;
    bool ta, tb;
  };
  const Case cases[] = {{1, 1100, 300, 64, false, false},
                        {1, 300, 1100, 40, true, false},
                        {2, 1030, 1030, 100, false, true},
                        {1, 2100, 1024, 9, true, true},
                        {1, 1024, 1024, 1024, false, false}};
  for (DType t : {DType::f16, DType::bf16}) {
    const int mant = t == DType::bf16 ? 7 : 10, min_exp = t == DType::bf16 ? -126 : -14;
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " " + std::to_string(c.B) + "x" +
                   std::to_string(c.M) + "x" + std::to_string(c.N) + "x" + std::to_string(c.K));
      const Tensor a =
          c.ta ? rnd({c.B, c.K, c.M}, t, 5).transpose(1, 2) : rnd({c.B, c.M, c.K}, t, 5);
      const Tensor b =
          c.tb ? rnd({c.B, c.N, c.K}, t, 6).transpose(1, 2) : rnd({c.B, c.K, c.N}, t, 6);
      const Tensor got = empty({c.B, c.M, c.N}, {t, Device::cpu()});
      sync(Device::cpu());
      ASSERT_TRUE(cpu::sgemm_matmul(ir::Matmul{a, b, got}));
      const Tensor w32 = empty({c.B, c.M, c.N}, {DType::f32, Device::cpu()});
      const Tensor a32 = a.to(DType::f32), b32 = b.to(DType::f32);
      sync(Device::cpu());
      ASSERT_TRUE(cpu::sgemm_matmul(ir::Matmul{a32, b32, w32}));
      const std::vector<double> mag = matmul(a32.abs(), b32.abs()).to_vector<double>();
      const std::vector<double> g = got.to(DType::f32).to_vector<double>();
      const std::vector<double> w = w32.to(t).to(DType::f32).to_vector<double>();
      ASSERT_EQ(g.size(), w.size());
      size_t bad = 0, first = g.size();
      for (size_t i = 0; i < g.size(); ++i) {
        const int e =
            w[i] == 0 ? min_exp : std::max(min_exp, int(std::floor(std::log2(std::fabs(w[i])))));
        if (!(std::fabs(g[i] - w[i]) <= std::ldexp(1.0, e - mant) + 1e-6 * mag[i]) && bad++ == 0)
          first = i;
      }
      EXPECT_EQ(bad, 0u) << "first at " << first << ": " << g[first] << " vs " << w[first];
    }
  }
}

TEST(CpuGemm, FollowsTheThreadCount) {
  const int before = get_num_threads();
  // OpenBLAS forced through the autotuner (it may pick oneDNN for this shape on its own).
  cpu::tuner().force("cpu.matmul", "openblas");
  for (int n : {1, 2, 3}) {
    set_num_threads(n);
    const Tensor a = rnd({1, 200, 210}, DType::f32, 22), b = rnd({1, 210, 190}, DType::f32, 23);
    check(a, b, empty({1, 200, 190}, {DType::f32, Device::cpu()}), "threads " + std::to_string(n));
    // OpenBLAS ran with Ember's thread count.
    if (cpu::gemm::have_openblas() && !cpu::gemm::sgemm_choice_forced())
      EXPECT_EQ(cpu::gemm::openblas_threads(), n);
  }
  cpu::tuner().force("cpu.matmul", "");
  set_num_threads(before);
}

// Two user threads multiplying at once (each call threaded by the library on its own team).
TEST(CpuGemm, ConcurrentCallers) {
  const Tensor a = rnd({1, 180, 170}, DType::f32, 24), b = rnd({1, 170, 160}, DType::f32, 25);
  const Tensor a64 = a.to(DType::f64), b64 = b.to(DType::f64);
  const Tensor want = empty({1, 180, 160}, {DType::f32, Device::cpu()});
  sync(Device::cpu());
  ref::matmul(ir::Matmul{a, b, want});
  const auto w = want.to_vector<double>();
  std::vector<double> worst(2, 0.0);
  std::vector<std::thread> ts;
  for (int t = 0; t < 2; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 6; ++i) {
        const bool f64 = (i + t) % 2 == 1;
        const Tensor d = empty({1, 180, 160}, {f64 ? DType::f64 : DType::f32, Device::cpu()});
        if (!cpu::sgemm_matmul(ir::Matmul{f64 ? a64 : a, f64 ? b64 : b, d}))
          ref::matmul(ir::Matmul{f64 ? a64 : a, f64 ? b64 : b, d});
        const auto g = d.to_vector<double>();
        for (size_t k = 0; k < g.size(); ++k)
          worst[size_t(t)] = std::max(worst[size_t(t)], std::abs(g[k] - w[k]));
      }
    });
  for (auto& th : ts) th.join();
  EXPECT_LT(worst[0], 1e-3);
  EXPECT_LT(worst[1], 1e-3);
}

// The default (autotune's first candidate, EMBER_AUTOTUNE=off) by size.
TEST(CpuGemm, LibraryChoice) {
  if (std::getenv("EMBER_GEMM")) GTEST_SKIP() << "EMBER_GEMM forces a library";
  EXPECT_EQ(cpu::gemm::sgemm_library(64, 64, 64), cpu::gemm::Library::onednn);
  EXPECT_EQ(cpu::gemm::sgemm_library(128, 128, 128), cpu::gemm::Library::onednn);
  EXPECT_EQ(cpu::gemm::sgemm_library(129, 128, 128),
            cpu::gemm::have_openblas() ? cpu::gemm::Library::openblas : cpu::gemm::Library::onednn);
  const auto big = cpu::gemm::sgemm_library(512, 512, 512);
  EXPECT_EQ(big,
            cpu::gemm::have_openblas() ? cpu::gemm::Library::openblas : cpu::gemm::Library::onednn);
  std::printf("cpu GEMM for 512^3 f32: %s\n", cpu::gemm::library_name(big));
}

}  // namespace
}  // namespace ember
