// The cpu backend's bf16/f16 matmul and convolution (gemm.cpp, conv.cpp: oneDNN's native
// low-precision primitives where the CPU has them, else the f32 way / the composite) against the
// reference backend. Both sides sum in f32 and round once, so they differ only where the f32 sums
// differ in order: the bound is one unit in the last place of the dtype plus a small multiple of
// f32's epsilon times sum |a| |b| (an f16 or bf16 accumulator, or a wrong element, is far outside).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "backends/cpu/autotune_util.h"
#include "backends/cpu/kernels.h"
#include "backends/ref/kernels.h"
#include "ember/ember.h"
#include "ir/ops.h"

namespace ember {
namespace {

namespace F = nn::functional;

bool cpu_has(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  std::string w;
  while (in >> w)
    if (w == flag) return true;
  return false;
}

// One unit in the last place of `t` at |v| (normal numbers; the smallest normal's below).
double ulp(DType t, double v) {
  const int mant = t == DType::bf16 ? 7 : 10, min_exp = t == DType::bf16 ? -126 : -14;
  const int e = v == 0 ? min_exp : std::max(min_exp, int(std::floor(std::log2(std::fabs(v)))));
  return std::ldexp(1.0, e - mant);
}

Tensor rnd(Shape s, DType t, uint64_t seed) {
  manual_seed(Device::cpu(), seed);
  return randn(std::move(s), {DType::f32, Device::cpu()}).to(t);
}

// Compares got with want (one rounding of an f32 sum each) within units * ulp(want) +
// eps * mag, mag: the sum of |terms| of each element (an f32 tensor of the same shape).
void expect_close(const Tensor& got, const Tensor& want, const Tensor& mag, double units,
                  double eps, const std::string& what) {
  const auto g = got.to(DType::f32).to_vector<double>();
  const auto w = want.to(DType::f32).to_vector<double>();
  const auto m = mag.to(DType::f32).to_vector<double>();
  ASSERT_EQ(g.size(), w.size()) << what;
  ASSERT_EQ(m.size(), w.size()) << what;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::fabs(g[i] - w[i]) <= units * ulp(got.dtype(), w[i]) + eps * m[i]) && bad++ == 0)
      first = i;
  EXPECT_EQ(bad, 0u) << what << ": first at " << first << ": " << g[first] << " vs " << w[first]
                     << " (sum of |terms| " << m[first] << ")";
}

struct MmCase {
  int64_t B, M, N, K;
  bool ta, tb, slice, bcast, dst_t;
};

std::string name(const MmCase& c, DType t) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%s %lldx%lldx%lldx%lld%s%s%s%s%s", dtype_name(t), (long long)c.B,
                (long long)c.M, (long long)c.N, (long long)c.K, c.ta ? " ta" : "",
                c.tb ? " tb" : "", c.slice ? " sliced" : "", c.bcast ? " bcast" : "",
                c.dst_t ? " dst^T" : "");
  return buf;
}

// a [B, M, K] and b [B, K, N] in the case's layout (transposed, a sliced column window, b's batch
// stride 0).
void operands(const MmCase& c, DType t, Tensor& a, Tensor& b) {
  const int64_t kk = c.slice ? c.K + 3 : c.K;
  a = c.ta ? rnd({c.B, kk, c.M}, t, 1).transpose(1, 2) : rnd({c.B, c.M, kk}, t, 1);
  if (c.slice) a = a.narrow(2, 1, c.K);
  if (c.bcast)
    b = (c.tb ? rnd({1, c.N, c.K}, t, 2).transpose(1, 2) : rnd({1, c.K, c.N}, t, 2))
            .expand({c.B, c.K, c.N});
  else
    b = c.tb ? rnd({c.B, c.N, c.K}, t, 2).transpose(1, 2) : rnd({c.B, c.K, c.N}, t, 2);
}

const MmCase kMm[] = {
    {1, 64, 64, 64, false, false, false, false, false},
    {1, 257, 129, 300, false, false, false, false, false},
    {1, 100, 70, 1, false, false, false, false, false},  // K = 1
    {1, 1, 300, 200, false, false, false, false, false},
    {1, 300, 1, 200, false, false, false, false, false},
    {1, 150, 90, 130, true, false, false, false, false},
    {1, 150, 90, 130, false, true, false, false, false},
    {1, 150, 90, 130, true, true, false, false, false},
    {3, 40, 50, 60, false, false, false, false, false},
    {4, 33, 65, 17, true, true, false, false, false},
    {3, 40, 50, 60, false, false, false, true, false},  // batch-broadcast b
    {2, 70, 40, 30, false, false, true, false, false},  // a: a window of wider rows
    {2, 70, 40, 30, false, true, true, false, false},
    {2, 64, 48, 80, false, false, false, false, true},  // dst with transposed matrices
    {1, 512, 512, 512, false, false, false, false, false},
};

// The cpu matmul (native bf16 where oneDNN has it) against the reference kernel.
TEST(CpuLowp, MatmulMatchesRefWithinOneRounding) {
  for (DType t : {DType::bf16, DType::f16})
    for (const MmCase& c : kMm) {
      Tensor a, b;
      operands(c, t, a, b);
      const Tensor got = c.dst_t ? empty({c.B, c.N, c.M}, {t, Device::cpu()}).transpose(1, 2)
                                 : empty({c.B, c.M, c.N}, {t, Device::cpu()});
      const Tensor want = empty({c.B, c.M, c.N}, {t, Device::cpu()});
      const Tensor mag = matmul(a.to(DType::f32).abs(), b.to(DType::f32).abs());
      sync(Device::cpu());
      ASSERT_TRUE(cpu::sgemm_matmul(ir::Matmul{a, b, got})) << name(c, t);
      ref::matmul(ir::Matmul{a, b, want});
      expect_close(got, want, mag, 1, 1e-6, name(c, t));
    }
}

// The tolerance above fails on an accumulation in the dtype: summed in bf16 (f16) with one
// rounding per addition, a 1024-term row misses the f32 sum by far more than the bound.
TEST(CpuLowp, BoundRejectsALowPrecisionAccumulator) {
  const int64_t K = 1024, N = 64;
  for (DType t : {DType::bf16, DType::f16}) {
    const Tensor a = rnd({1, 1, K}, t, 3), b = rnd({1, K, N}, t, 4);
    const Tensor got = empty({1, 1, N}, {t, Device::cpu()});
    sync(Device::cpu());
    ASSERT_TRUE(cpu::sgemm_matmul(ir::Matmul{a, b, got}));
    const auto av = a.to(DType::f32).to_vector<float>(), bv = b.to(DType::f32).to_vector<float>();
    const auto mag = matmul(a.to(DType::f32).abs(), b.to(DType::f32).abs()).to_vector<double>();
    const auto g = got.to(DType::f32).to_vector<double>();
    // Rounds every partial sum to the dtype, as an accumulator of that type would.
    auto round = [&](double v) {
      return t == DType::bf16 ? double(float(BFloat16(float(v)))) : double(float(Half(float(v))));
    };
    int outside = 0;
    for (int64_t j = 0; j < N; ++j) {
      double low = 0;
      for (int64_t k = 0; k < K; ++k)
        low = round(low + round(double(av[size_t(k)]) * bv[size_t(k * N + j)]));
      if (std::fabs(low - g[size_t(j)]) > ulp(t, g[size_t(j)]) + 1e-6 * mag[size_t(j)]) ++outside;
    }
    EXPECT_GT(outside, N / 2) << dtype_name(t);
  }
}

// On a CPU with AVX512_BF16, bf16 products run on oneDNN's bf16 kernel, not the f32 way.
TEST(CpuLowp, NativeBf16MatmulIsTakenWithAvx512Bf16) {
  const Tensor a = rnd({1, 96, 80}, DType::bf16, 5), b = rnd({1, 80, 72}, DType::bf16, 6);
  const Tensor d = empty({1, 96, 72}, {DType::bf16, Device::cpu()});
  sync(Device::cpu());
  const std::string impl = cpu::native_half_matmul_impl(ir::Matmul{a, b, d});
  std::printf(
      "oneDNN bf16 matmul: %s; f16: %s\n", impl.empty() ? "(none: f32 way)" : impl.c_str(),
      cpu::native_half_matmul_impl(ir::Matmul{a.to(DType::f16), b.to(DType::f16),
                                              empty({1, 96, 72}, {DType::f16, Device::cpu()})})
          .c_str());
  if (!cpu_has("avx512_bf16")) GTEST_SKIP() << "no avx512_bf16 on this CPU: the f32 way runs";
  EXPECT_NE(impl.find("bf16"), std::string::npos) << impl;
  cpu::tuner().force("cpu.matmul", "onednn-native");
  const int64_t before = cpu::native_half_matmul_runs();
  EXPECT_TRUE(cpu::sgemm_matmul(ir::Matmul{a, b, d}));
  cpu::tuner().force("cpu.matmul", "");
  EXPECT_EQ(cpu::native_half_matmul_runs(), before + 1);
}

struct ConvCase {
  Shape x, w;
  int64_t stride, pad, dil, groups;
  bool bias, cl;
};

const ConvCase kConv[] = {
    {{2, 16, 12, 12}, {32, 16, 3, 3}, 1, 1, 1, 1, true, false},
    {{2, 16, 12, 12}, {32, 16, 3, 3}, 1, 1, 1, 1, true, true},  // channels-last
    {{3, 8, 15, 13}, {16, 8, 3, 3}, 2, 1, 1, 1, false, false},
    {{1, 8, 14, 14}, {8, 4, 3, 3}, 1, 2, 2, 2, true, false},    // dilated, 2 groups
    {{2, 16, 10, 10}, {16, 1, 3, 3}, 1, 1, 1, 16, true, true},  // depthwise, channels-last
    {{2, 32, 9, 9}, {64, 32, 1, 1}, 1, 0, 1, 1, true, true},    // 1x1
    {{1, 3, 20, 20}, {8, 3, 5, 5}, 2, 2, 1, 1, true, false},    // 3 input channels
};

std::string name(const ConvCase& c, DType t) {
  return std::string(dtype_name(t)) + " x" + shape_str(c.x) + " w" + shape_str(c.w) + " s" +
         std::to_string(c.stride) + " p" + std::to_string(c.pad) + " d" + std::to_string(c.dil) +
         " g" + std::to_string(c.groups) + (c.cl ? " channels-last" : "");
}

// Forward and both gradients of conv2d on cpu (oneDNN's bf16 convolutions) against ref (the
// composite: im2col + matmul, each matmul one rounding of an f32 sum; the bias added after,
// rounding again, and col2im summing bf16 windows: hence two units and a looser term for the
// gradients, which add partial sums).
TEST(CpuLowp, Conv2dMatchesRefWithinRounding) {
  for (DType t : {DType::bf16, DType::f16})
    for (const ConvCase& c : kConv) {
      const std::string what = name(c, t);
      Tensor x = rnd(c.x, t, 7), w = rnd(c.w, t, 8);
      if (c.cl) x = x.contiguous(MemoryFormat::channels_last);
      const Tensor bias = c.bias ? rnd({c.w[0]}, t, 9) : Tensor();
      auto run = [&](const Device& dev, Tensor& gx, Tensor& gw) {
        Tensor xd = x.to(dev).detach().requires_grad_(), wd = w.to(dev).detach().requires_grad_();
        Tensor y = F::conv2d(xd, wd, c.bias ? bias.to(dev) : Tensor(), {c.stride}, {c.pad}, {c.dil},
                             c.groups);
        Tensor gy = rnd(y.shape(), t, 10).to(dev);
        (y * gy).sum().backward();
        gx = xd.grad();
        gw = wd.grad();
        return std::make_pair(y, gy);
      };
      Tensor gx, gw, rgx, rgw;
      const auto [y, gy] = run(Device::cpu(), gx, gw);
      const auto [ry, rgy] = run(Device::ref(), rgx, rgw);
      // The sums of |terms|, in f32 on cpu.
      const Tensor x32 = x.to(DType::f32).abs(), w32 = w.to(DType::f32).abs();
      const Tensor gy32 = gy.to(DType::f32).abs();
      Tensor my = F::conv2d(x32, w32, c.bias ? bias.to(DType::f32).abs() : Tensor(), {c.stride},
                            {c.pad}, {c.dil}, c.groups);
      Tensor x32g = x32.detach().requires_grad_(), w32g = w32.detach().requires_grad_();
      (F::conv2d(x32g, w32g, Tensor(), {c.stride}, {c.pad}, {c.dil}, c.groups) * gy32)
          .sum()
          .backward();
      EXPECT_EQ(y.memory_format(), x.memory_format()) << what;
      // ref rounds the sum before adding the bias: half a unit of the sum's magnitude apart.
      const double half_unit = t == DType::bf16 ? 1.0 / 256 : 1.0 / 2048;
      expect_close(y, ry, my, 2, c.bias ? half_unit : 1e-5, what + " forward");
      const double ge = t == DType::bf16 ? 1.0 / 64 : 1.0 / 512;
      expect_close(gx, rgx.to(Device::cpu()), x32g.grad(), 2, ge, what + " grad input");
      expect_close(gw, rgw.to(Device::cpu()), w32g.grad(), 2, ge, what + " grad weight");
    }
}

// A bf16 linear layer and relu (the stream's matmul anchor with an epilogue is f32 only, so the
// bf16 product runs alone, then the bias add and relu): against ref.
TEST(CpuLowp, Bf16LinearReluMatchesRef) {
  const DType t = DType::bf16;
  const Tensor x = rnd({64, 96}, t, 13), w = rnd({48, 96}, t, 14), b = rnd({48}, t, 15);
  const Tensor y = F::relu(linear(x, w, b));
  const Tensor ry = F::relu(linear(x.to(Device::ref()), w.to(Device::ref()), b.to(Device::ref())));
  const Tensor mag =
      matmul(x.to(DType::f32).abs(), w.to(DType::f32).abs().t()) + b.to(DType::f32).abs();
  expect_close(y, ry.to(Device::cpu()), mag, 2, 1.0 / 256, "linear + relu");
}

// On a CPU with AVX512_BF16, bf16 convolutions (forward and both backward passes) run on
// oneDNN's bf16 kernels, not the composite.
TEST(CpuLowp, NativeBf16ConvIsTakenWithAvx512Bf16) {
  const Tensor x = rnd({2, 8, 10, 10}, DType::bf16, 11).requires_grad_();
  const Tensor w = rnd({16, 8, 3, 3}, DType::bf16, 12).requires_grad_();
  const int64_t f0 = cpu::conv_half_runs(), b0 = cpu::conv_backward_runs();
  F::conv2d(x, w, Tensor(), {1}, {1}).sum().backward();
  sync(Device::cpu());
  std::printf("bf16 conv2d on oneDNN: %lld forward/backward passes\n",
              (long long)(cpu::conv_half_runs() - f0));
  if (!cpu_has("avx512_bf16")) GTEST_SKIP() << "no avx512_bf16 on this CPU: the composite runs";
  EXPECT_EQ(cpu::conv_half_runs() - f0, 3);  // forward, backward data, backward weights
  EXPECT_EQ(cpu::conv_backward_runs() - b0, 2);
}

}  // namespace
}  // namespace ember
