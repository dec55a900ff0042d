// The cpu backend's f32 tanh, erf, log, log1p, gelu and gelu_tanh (src/backends/cpu/simd_math.h,
// lane templates run by elementwise.cpp's row loops): error in ulps against double-precision std::
// math over a dense sweep of all finite floats, the special values, and the same bits on
// every row-loop clone (baseline, AVX2, AVX-512) that this CPU runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/kernels.h"
#include "ir/op_traits.h"

namespace ember {
namespace {

using cpu::CpuIsa;
using ir::UnaryOp;

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
uint32_t to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Every 509th bit pattern (all finite floats of both signs, normal and subnormal), then edge
// values; an odd count, so the row loops' masked tails run.
std::vector<float> sweep() {
  std::vector<float> xs;
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 509) {
    const float f = from_bits(uint32_t(u));
    if (std::isfinite(f)) xs.push_back(f);
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.f,
                  -0.f,
                  inf,
                  -inf,
                  std::nanf(""),
                  -std::nanf(""),
                  1e-45f,
                  -1e-45f,
                  1e-38f,
                  0.625f,
                  0.62499994f,
                  -0.625f,
                  1.f,
                  0.99999994f,
                  -1.f,
                  2.f,
                  1.9999999f,
                  3.92f,
                  4.f,
                  4.0000005f,
                  9.01f,
                  9.5f,
                  9.500001f,
                  10.f,
                  88.f,
                  -88.f,
                  1e30f,
                  -1e30f,
                  std::numeric_limits<float>::max(),
                  -std::numeric_limits<float>::max()})
    xs.push_back(v);
  if (xs.size() % 2 == 0) xs.push_back(0.5f);
  return xs;
}

std::vector<float> run(CpuIsa isa, UnaryOp op, const std::vector<float>& xs) {
  std::vector<float> out(xs.size());
  cpu::unary_f32_run_on(isa, op, 0.0, out.data(), xs.data(), int64_t(xs.size()));
  return out;
}

// The unit in the last place of a float of want's magnitude (the subnormal one below 2^-126).
double ulp_of(double want) {
  int e;
  std::frexp(want, &e);
  return std::ldexp(1.0, std::max(e, -125) - 24);
}
// |got - want| in those units.
double ulp_error(float got, double want) { return std::fabs(double(got) - want) / ulp_of(want); }

// Max ulp error of `op` (cpu, widest clone) against `exact` over the sweep; NaN in, NaN out.
double max_ulps(UnaryOp op, double (*exact)(double), float* worst_at) {
  const auto xs = sweep();
  const auto got = run(cpu::cpu_isa(), op, xs);
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (std::isnan(xs[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << ir::name(op) << "(NaN) = " << got[i];
      continue;
    }
    const double want = exact(double(xs[i]));
    if (std::isnan(want)) {  // outside the domain
      EXPECT_TRUE(std::isnan(got[i])) << ir::name(op) << "(" << xs[i] << ") = " << got[i];
      continue;
    }
    if (std::isinf(want)) {
      EXPECT_EQ(got[i], want) << ir::name(op) << "(" << xs[i] << ")";
      continue;
    }
    const double e = ulp_error(got[i], want);
    if (e > worst) worst = e, *worst_at = xs[i];
  }
  return worst;
}

TEST(SimdMathTest, TanhWithinTwoUlpDenseSweep) {
  float at = 0;
  const double worst = max_ulps(
      UnaryOp::tanh, [](double x) { return std::tanh(x); }, &at);
  std::printf("tanh: worst %.3f ulp at %a\n", worst, double(at));
  EXPECT_LE(worst, 2.0) << "at " << at;
}

TEST(SimdMathTest, ErfWithinThreeUlpDenseSweep) {
  float at = 0;
  const double worst = max_ulps(
      UnaryOp::erf, [](double x) { return std::erf(x); }, &at);
  std::printf("erf: worst %.3f ulp at %a\n", worst, double(at));
  EXPECT_LE(worst, 3.0) << "at " << at;
}

// log and log1p: NaN for x < 0 (x < -1), so only the values with a real logarithm are compared.
TEST(SimdMathTest, LogWithinOneUlpDenseSweep) {
  float at = 0;
  const double worst = max_ulps(
      UnaryOp::log, [](double x) { return x < 0 ? std::nan("") : std::log(x); }, &at);
  std::printf("log: worst %.3f ulp at %a\n", worst, double(at));
  EXPECT_LE(worst, 1.0) << "at " << at;
}

TEST(SimdMathTest, Log1pWithinTwoUlpDenseSweep) {
  float at = 0;
  const double worst = max_ulps(
      UnaryOp::log1p, [](double x) { return x < -1 ? std::nan("") : std::log1p(x); }, &at);
  std::printf("log1p: worst %.3f ulp at %a\n", worst, double(at));
  EXPECT_LE(worst, 2.0) << "at " << at;
}

// gelu computes 0.5 x (1 + erf(x / sqrt 2)) in f32, as the reference and torch do: for x < 0 the
// sum 1 + erf cancels, so the bound is 3 ulp of the result plus 0.5 |x| times 4 ulp of a number
// in [0.5, 1) (erf's own error, carried through the sum); the tanh form likewise.
TEST(SimdMathTest, GeluWithinBoundOfDoubleFormula) {
  const auto xs = sweep();
  for (UnaryOp op : {UnaryOp::gelu, UnaryOp::gelu_tanh}) {
    const auto got = run(cpu::cpu_isa(), op, xs);
    double worst_pos = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const double x = xs[i];
      if (!std::isfinite(x)) continue;
      const double want =
          op == UnaryOp::gelu
              ? 0.5 * x * (1 + std::erf(x * 0.70710678118654752440))
              : 0.5 * x * (1 + std::tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
      if (std::isinf(float(want))) {  // 0.5 x (1 + 1) rounds to inf in f32 too
        EXPECT_EQ(got[i], float(want)) << ir::name(op) << "(" << x << ")";
        continue;
      }
      const double err = std::fabs(double(got[i]) - want);
      const double bound = 3 * ulp_of(want) + 0.5 * std::fabs(x) * 0x1p-22;
      ASSERT_LE(err, bound) << ir::name(op) << "(" << x << ") = " << got[i] << ", want " << want;
      const double e = err / ulp_of(want);
      if (x > 0) worst_pos = std::max(worst_pos, e);
    }
    std::printf("%s: worst %.3f ulp for x > 0\n", ir::name(op), worst_pos);
  }
}

TEST(SimdMathTest, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  for (CpuIsa isa : {CpuIsa::baseline, cpu::cpu_isa()}) {
    auto f = [&](UnaryOp op, float x) { return run(isa, op, {x, x, x})[0]; };
    // Signed zeros and subnormals: tanh(x) = x; erf(x) = 2x / sqrt(pi), rounded.
    for (float x : {0.f, -0.f, 1e-45f, -1e-45f, 1e-40f, 1e-38f})
      EXPECT_EQ(to_bits(f(UnaryOp::tanh, x)), to_bits(x)) << x;
    EXPECT_EQ(to_bits(f(UnaryOp::erf, 0.f)), to_bits(0.f));
    EXPECT_EQ(to_bits(f(UnaryOp::erf, -0.f)), to_bits(-0.f));
    EXPECT_EQ(f(UnaryOp::erf, 1e-45f), 1e-45f);  // 1.128 * 2^-149 rounds to 2^-149
    EXPECT_EQ(f(UnaryOp::erf, -1e-40f), float(-1e-40f * 1.1283791670955126));
    // Saturation to +-1, exactly, from where the correctly rounded value is 1.
    for (float x : {9.02f, 9.5f, 10.f, 100.f, 1e30f, inf}) {
      EXPECT_EQ(f(UnaryOp::tanh, x), 1.f) << x;
      EXPECT_EQ(f(UnaryOp::tanh, -x), -1.f) << x;
    }
    for (float x : {3.93f, 4.f, 10.f, 1e30f, inf}) {
      EXPECT_EQ(f(UnaryOp::erf, x), 1.f) << x;
      EXPECT_EQ(f(UnaryOp::erf, -x), -1.f) << x;
    }
    // log and log1p: the poles, the domain's ends, exact points and signed zeros.
    EXPECT_EQ(f(UnaryOp::log, 0.f), -inf);
    EXPECT_EQ(f(UnaryOp::log, -0.f), -inf);
    EXPECT_EQ(f(UnaryOp::log, inf), inf);
    EXPECT_EQ(to_bits(f(UnaryOp::log, 1.f)), to_bits(0.f));
    EXPECT_TRUE(std::isnan(f(UnaryOp::log, -1e-45f)) && std::isnan(f(UnaryOp::log, -inf)));
    EXPECT_EQ(f(UnaryOp::log, 1e-45f), float(std::log(double(1e-45f))));
    EXPECT_EQ(f(UnaryOp::log1p, -1.f), -inf);
    EXPECT_EQ(f(UnaryOp::log1p, inf), inf);
    EXPECT_TRUE(std::isnan(f(UnaryOp::log1p, -1.0000001f)) && std::isnan(f(UnaryOp::log1p, -inf)));
    for (float x : {0.f, -0.f, 1e-45f, -1e-45f, 1e-30f, -1e-30f})
      EXPECT_EQ(to_bits(f(UnaryOp::log1p, x)), to_bits(x)) << x;
    for (UnaryOp op : {UnaryOp::tanh, UnaryOp::erf, UnaryOp::log, UnaryOp::log1p, UnaryOp::gelu,
                       UnaryOp::gelu_tanh})
      EXPECT_TRUE(std::isnan(f(op, nan)) && std::isnan(f(op, -nan))) << ir::name(op);
    // gelu as the reference's formula: x for large x, -0 for large negative x, +0 at 0.
    for (UnaryOp op : {UnaryOp::gelu, UnaryOp::gelu_tanh}) {
      EXPECT_EQ(f(op, inf), inf) << ir::name(op);
      EXPECT_EQ(f(op, 1e30f), 1e30f) << ir::name(op);
      EXPECT_EQ(to_bits(f(op, -1e30f)), to_bits(-0.f)) << ir::name(op);
      EXPECT_EQ(to_bits(f(op, 0.f)), to_bits(0.f)) << ir::name(op);
    }
  }
}

// The clones compute the same bits as the baseline (scalar) one on the whole sweep.
void expect_clone_matches(CpuIsa isa) {
  const auto xs = sweep();
  for (UnaryOp op : {UnaryOp::tanh, UnaryOp::erf, UnaryOp::log, UnaryOp::log1p, UnaryOp::gelu,
                     UnaryOp::gelu_tanh}) {
    const auto want = run(CpuIsa::baseline, op, xs), got = run(isa, op, xs);
    int64_t bad = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      if (to_bits(want[i]) == to_bits(got[i])) continue;
      if (++bad <= 5)
        ADD_FAILURE() << ir::name(op) << "(" << xs[i] << "): baseline " << want[i] << ", clone "
                      << got[i];
    }
    EXPECT_EQ(bad, 0) << ir::name(op) << " over " << xs.size() << " values";
  }
}

TEST(SimdMathTest, Avx2CloneGivesScalarBits) {
  if (!cpu::has_avx2()) GTEST_SKIP() << "this CPU has no AVX2+FMA";
  expect_clone_matches(CpuIsa::avx2);
}

TEST(SimdMathTest, Avx512CloneGivesScalarBits) {
  if (!cpu::has_avx512()) GTEST_SKIP() << "this CPU has no AVX-512F";
  expect_clone_matches(CpuIsa::avx512);
}

}  // namespace
}  // namespace ember
