// The cpu backend's elementwise kernels for casts (convert.cpp), f16/bf16 ops computed in f32
// (elementwise_half.cpp), integer unary ops and the AVX2 exp (elementwise.cpp, simd_math.h):
// bit-for-bit against the reference backend (exp, sigmoid and silu within a stated ulp bound) on
// contiguous, transposed, stepped, sliced and broadcast operands, below and above the threading
// grain, with NaN payloads, infinities, -0, rounding ties, subnormals and out-of-range values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ir/op_traits.h"
#include "runtime/backend.h"

namespace ember {
namespace {

using ir::BinaryOp;
using ir::UnaryOp;

const Device kCpu = Device::cpu();
const Device kRef = Device::ref();

// The raw bytes of a tensor's elements in row-major order.
std::vector<uint8_t> bytes_of(const Tensor& t) {
  const Tensor c = t.to(kRef).contiguous();
  const size_t es = size_t(dtype_size(c.dtype()));
  const auto* p = static_cast<const uint8_t*>(c.impl()->storage->data()) + size_t(c.offset()) * es;
  return std::vector<uint8_t>(p, p + size_t(c.numel()) * es);
}

// Deterministic pseudo-random doubles in [lo, hi).
std::vector<double> randoms(size_t n, uint64_t seed, double lo, double hi) {
  std::vector<double> v(n);
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = lo + (hi - lo) * double(s >> 11) * 0x1p-53;
  }
  return v;
}

// f64 values covering the casts' edge cases, then random values of several magnitudes.
std::vector<double> cast_values(size_t n, uint64_t seed) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> v = {std::nan(""),
                           -std::nan(""),
                           inf,
                           -inf,
                           0.0,
                           -0.0,
                           0.5,
                           -0.5,
                           1.5,
                           2.5,
                           -2.5,
                           255.5,
                           256,
                           -1,
                           65504,
                           65519.99,
                           65520,
                           1e-8,
                           5.960464477539063e-8,
                           2.98e-8,
                           6.1e-5,
                           1 + 0x1p-8,
                           1 + 3 * 0x1p-8,
                           1 + 0x1p-11,
                           1 + 3 * 0x1p-11,
                           2147483647.0,
                           2147483648.0,
                           -2147483648.0,
                           -2147483649.0,
                           2147483520.0,
                           3e9,
                           -3e9,
                           9.3e18,
                           0x1p63,
                           -0x1p63,
                           1e20,
                           -1e20,
                           1e-40,
                           -1e-45,
                           3.4e38,
                           1e300,
                           127.9,
                           -128.5,
                           0.999};
  const auto a = randoms(n, seed, -3, 3), b = randoms(n, seed + 1, -70000, 70000);
  for (size_t i = 0; v.size() < n; ++i) v.push_back(i % 3 == 0 ? b[i] : a[i]);
  v.resize(n);
  return v;
}

Tensor run_copy(const Tensor& src, DType to, const Device& dev) {
  const Tensor s = src.to(dev);
  Tensor d = empty(s.shape(), {to, dev});
  backend_for(dev).execute(ir::Copy{s, d});
  return d;
}

// The views the kernels see: contiguous, transposed, every other column, a column slice, and a
// broadcast row.
std::vector<std::pair<std::string, Tensor>> views(const Tensor& x) {
  const int64_t r = x.size(0), c = x.size(1);
  return {{"contiguous", x},
          {"transposed", x.t()},
          {"stepped", x.slice(1, 1, c, 2)},
          {"sliced", x.slice(0, 1, r - 1).slice(1, 3, c - 2)},
          {"broadcast", x.slice(0, 0, 1).expand({r, c})}};
}

const DType kCastTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16,
                            DType::i32, DType::i64, DType::u8,  DType::b8};

// x ** 2 of floats is x * x (as torch computes it) on every device: bit for bit the correctly
// rounded square, NaN, infinities and -0 included, for f32, f64 and f16; the gradient 2 x g.
TEST(CpuElementwiseTest, PowTwoIsTheSquareOnEveryDevice) {
  const std::vector<double> v = {-3.5,  -0.0,      0.0,      1e-30, 1.0000001, 3e19,
                                 1e200, -INFINITY, INFINITY, NAN,   65504,     0.1};
  for (const DeviceInfo& info : available_devices())
    for (DType t : {DType::f32, DType::f64, DType::f16}) {
      if (!supports_dtype(info.device, t)) continue;
      SCOPED_TRACE(info.device.str() + " " + dtype_name(t));
      const Tensor x = from_vector(v, {int64_t(v.size())}, Device::ref()).to(t);
      const std::vector<double> got =
          pow(x.to(info.device), 2).to(Device::ref()).to(DType::f64).to_vector<double>();
      const Tensor sq = x.to(DType::f64) * x.to(DType::f64);  // exact, then rounded once
      const std::vector<double> want = sq.to(t).to(DType::f64).to_vector<double>();
      for (size_t i = 0; i < v.size(); ++i)
        EXPECT_TRUE(std::memcmp(&got[i], &want[i], sizeof(double)) == 0 ||
                    (std::isnan(got[i]) && std::isnan(want[i])))
            << v[i] << ": " << got[i] << " vs " << want[i];
    }
  Tensor x = from_vector<float>({-1.5f, 0.25f, 3}, {3}).requires_grad_(true);
  pow(x, 2).sum().backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{-3, 0.5f, 6}));
}

TEST(CpuElementwiseTest, CastsMatchReferenceBitForBit) {
  // [7, 13] stays below the cast grain, [301, 409] runs threaded.
  for (const Shape& shape : {Shape{7, 13}, Shape{301, 409}}) {
    const size_t n = size_t(shape[0] * shape[1]);
    const Tensor base = from_vector<double>(cast_values(n, 3), shape, kRef);
    for (DType from : kCastTypes) {
      const Tensor src = base.to(from);  // on ref
      for (const auto& [name, view] : views(src))
        for (DType to : kCastTypes) {
          if (to == from) continue;
          const Tensor want = run_copy(view, to, kRef), got = run_copy(view, to, kCpu);
          EXPECT_EQ(bytes_of(want), bytes_of(got))
              << dtype_name(from) << " -> " << dtype_name(to) << " " << name << " [" << shape[0]
              << ", " << shape[1] << "]";
        }
    }
  }
}

TEST(CpuElementwiseTest, CastsKeepTheReferenceNaNBits) {
  // NaN payloads and signs, signalling NaNs, and values next to the f16/bf16 rounding ties.
  std::vector<uint32_t> f32 = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu,
                               0x7fa00000u, 0x7f802000u, 0x477ff000u, 0x477fefffu, 0x33000000u,
                               0x33000001u, 0x38800000u, 0x387fffffu, 0x3f808000u, 0x3f818000u,
                               0x3f807fffu, 0x00000001u, 0x80000001u, 0x7f7fffffu, 0xff7fffffu};
  std::vector<uint16_t> f16 = {0x7c01, 0xfc01, 0x7e00, 0xfe00, 0x7fff, 0x7d55, 0x0001, 0x8001,
                               0x03ff, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x8000, 0x3c00, 0x0400};
  for (size_t i = 0; f32.size() < 70000; ++i) f32.push_back(f32[i % 20] ^ uint32_t(i & 0x3f));
  for (size_t i = 0; f16.size() < 70000; ++i) f16.push_back(uint16_t(f16[i % 16] ^ (i & 0x7)));
  const Tensor x32 = from_blob(f32.data(), {int64_t(f32.size())}, DType::f32, kRef).clone();
  const Tensor x16 = from_blob(f16.data(), {int64_t(f16.size())}, DType::f16, kRef).clone();
  const Tensor xb16 = from_blob(f16.data(), {int64_t(f16.size())}, DType::bf16, kRef).clone();
  for (const Tensor& src : {x32, x16, xb16})
    for (DType to : kCastTypes) {
      if (to == src.dtype()) continue;
      for (const Tensor& v : {src, src.slice(0, 3, src.size(0) - 4, 3)})
        EXPECT_EQ(bytes_of(run_copy(v, to, kRef)), bytes_of(run_copy(v, to, kCpu)))
            << dtype_name(src.dtype()) << " -> " << dtype_name(to) << " numel " << v.numel();
    }
}

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Distance in representable floats (0 for equal values, -0 == +0).
int64_t ulps(float a, float b) {
  auto key = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? int64_t(int32_t(0x80000000u) - i) : int64_t(i);
  };
  return std::llabs(key(a) - key(b));
}

Tensor run_unary(UnaryOp op, const Tensor& src, const Device& dev, double p0 = 0) {
  const Tensor s = src.to(dev);
  Tensor d = empty(s.shape(), {s.dtype(), dev});
  backend_for(dev).execute(ir::Unary{op, s, d, p0});
  return d;
}

TEST(CpuElementwiseTest, ExpWithinTwoUlpOfStdExpDenseSweep) {
  // Every 997th float of [-104, 89] (both signs through 0, the subnormal-result range and the
  // overflow edge), then the special values.
  std::vector<float> xs;
  for (uint32_t u = 0; u <= 0x42b20000u; u += 997) xs.push_back(from_bits(u));
  for (uint32_t u = 0x80000000u; u <= 0xc2d00000u; u += 997) xs.push_back(from_bits(u));
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {inf,
                  -inf,
                  std::nanf(""),
                  -std::nanf(""),
                  0.f,
                  -0.f,
                  88.72283935546875f,
                  88.7228317f,
                  88.5f,
                  88.50001f,
                  -86.5f,
                  -86.50001f,
                  -87.33655f,
                  -103.97208f,
                  -103.972084f,
                  -104.f,
                  -150.f,
                  1e-45f,
                  -1e-45f,
                  1e30f,
                  -1e30f})
    xs.push_back(v);
  xs.push_back(1.f);  // odd count: the masked tail runs
  const Tensor x = from_vector<float>(xs, {int64_t(xs.size())}, kRef);
  // Contiguous (the AVX2 clone on x86) and strided (the scalar form) must both hold the bound.
  const Tensor wide =
      from_vector<float>(xs, {int64_t(xs.size()), 1}, kRef).expand({int64_t(xs.size()), 2});
  const auto got = run_unary(UnaryOp::exp, x, kCpu).to_vector<float>();
  const auto got_strided =
      run_unary(UnaryOp::exp, wide.t().contiguous().t(), kCpu).to_vector<float>();
  int64_t worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const float want = std::exp(xs[i]);
    for (float g : {got[i], got_strided[2 * i]}) {
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(g)) << "exp(" << xs[i] << ") = " << g;
        continue;
      }
      const int64_t e = ulps(g, want);
      worst = std::max(worst, e);
      ASSERT_LE(e, 2) << "exp(" << xs[i] << ") = " << g << ", std::exp " << want;
    }
  }
  EXPECT_GT(xs.size(), size_t(2000000));
  // Exact ends: exp(-inf) = 0, exp(inf) = inf, exp(0) = 1, overflow to inf, underflow to 0.
  const size_t sp = xs.size() - 22;
  EXPECT_EQ(got[sp], inf);
  EXPECT_EQ(got[sp + 1], 0.f);
  EXPECT_TRUE(std::isnan(got[sp + 2]) && std::isnan(got[sp + 3]));
  EXPECT_EQ(got[sp + 4], 1.f);
  EXPECT_EQ(got[sp + 5], 1.f);
  EXPECT_EQ(got[sp + 6], inf);
  EXPECT_EQ(got[sp + 15], 0.f);
  EXPECT_EQ(got[sp + 16], 0.f);
  EXPECT_EQ(got[sp + 17], 1.f);
  EXPECT_EQ(got[sp + 18], 1.f);
  EXPECT_EQ(got[sp + 19], inf);
  EXPECT_EQ(got[sp + 20], 0.f);
  std::printf("exp: worst error %lld ulp over %zu values\n", (long long)worst, xs.size());
}

TEST(CpuElementwiseTest, SigmoidAndSiluWithinFourUlpOfReference) {
  auto v = randoms(100003, 11, -30, 30);
  for (double e : {0.0, -0.0, 88.9, -88.9, 104.0, -104.0, 200.0, -200.0, 1e-30}) v.push_back(e);
  v.push_back(std::numeric_limits<double>::infinity());
  v.push_back(-std::numeric_limits<double>::infinity());
  v.push_back(std::nan(""));
  const Tensor x = from_vector<double>(v, {int64_t(v.size())}, kRef).to(DType::f32);
  for (UnaryOp op : {UnaryOp::sigmoid, UnaryOp::silu, UnaryOp::exp}) {
    const auto want = run_unary(op, x, kRef).to_vector<float>();
    const auto got = run_unary(op, x, kCpu).to_vector<float>();
    for (size_t i = 0; i < v.size(); ++i) {
      if (std::isnan(want[i])) {
        ASSERT_TRUE(std::isnan(got[i])) << ir::name(op) << " at " << v[i];
        continue;
      }
      ASSERT_LE(ulps(got[i], want[i]), 4)
          << ir::name(op) << "(" << float(v[i]) << ") = " << got[i] << " want " << want[i];
    }
  }
}

// Compares two float-valued tensors of the same dtype: bit-identical, except that NaNs only need
// to be NaN (f32 arithmetic on two NaNs may keep either payload); ulp_tol > 0 allows that many
// units in the last place of the dtype (f16/bf16 bits are ordered like floats).
void expect_same_values(const Tensor& want, const Tensor& got, int ulp_tol,
                        const std::string& what) {
  ASSERT_EQ(want.dtype(), got.dtype()) << what;
  const auto w = want.to(kRef).to(DType::f32).to_vector<float>();
  const auto g = got.to(kRef).to(DType::f32).to_vector<float>();
  const auto wb = bytes_of(want), gb = bytes_of(got);
  ASSERT_EQ(w.size(), g.size()) << what;
  const size_t es = size_t(dtype_size(want.dtype()));
  int bad = 0;
  for (size_t i = 0; i < w.size() && bad < 5; ++i) {
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    if (std::memcmp(&wb[i * es], &gb[i * es], es) == 0) continue;
    if (ulp_tol > 0 && es == 2) {
      uint16_t a, b;
      std::memcpy(&a, &wb[i * es], 2);
      std::memcpy(&b, &gb[i * es], 2);
      if ((a & 0x8000) == (b & 0x8000) && std::abs(int(a & 0x7fff) - int(b & 0x7fff)) <= ulp_tol)
        continue;
    }
    ++bad;
    ADD_FAILURE() << what << " at " << i << ": want " << w[i] << " got " << g[i];
  }
}

TEST(CpuElementwiseTest, HalfUnaryComputedInF32MatchesReference) {
  const UnaryOp exact[] = {UnaryOp::neg,   UnaryOp::abs,        UnaryOp::square,
                           UnaryOp::relu,  UnaryOp::reciprocal, UnaryOp::sqrt,
                           UnaryOp::rsqrt, UnaryOp::leaky_relu};
  const UnaryOp rounded[] = {UnaryOp::exp, UnaryOp::sigmoid, UnaryOp::silu};
  for (const Shape& shape : {Shape{257, 301}, Shape{3, 70001}}) {
    const size_t n = size_t(shape[0] * shape[1]);
    auto v = randoms(n, 5, -12, 12);
    const double inf = std::numeric_limits<double>::infinity();
    const double sp[] = {std::nan(""), inf, -inf, 0.0, -0.0, 1e-6, -1e-6, 70000, 11.1, -17.3};
    for (size_t i = 0; i < 10; ++i) v[i * 97] = sp[i];
    const Tensor base = from_vector<double>(v, shape, kRef);
    for (DType t : {DType::f16, DType::bf16}) {
      const Tensor x = base.to(t);
      for (const auto& [name, view] : views(x)) {
        for (UnaryOp op : exact)
          expect_same_values(run_unary(op, view, kRef, 0.125), run_unary(op, view, kCpu, 0.125), 0,
                             std::string(ir::name(op)) + " " + dtype_name(t) + " " + name);
        for (UnaryOp op : rounded)
          expect_same_values(run_unary(op, view, kRef), run_unary(op, view, kCpu), 1,
                             std::string(ir::name(op)) + " " + dtype_name(t) + " " + name);
      }
    }
  }
}

// floor / ceil / trunc / round (half to even) through the vector loops: ref's bytes, with ties
// (+-0.5, 1.5, 2.5), -0, NaN, infinities and values past 2^23 / 2^52 (already integers).
TEST(CpuElementwiseTest, RoundingMatchesReferenceBitForBit) {
  auto v = randoms(263 * 307, 51, -40, 40);
  const double inf = std::numeric_limits<double>::infinity();
  const double sp[] = {0.5,
                       -0.5,
                       1.5,
                       2.5,
                       -2.5,
                       -0.0,
                       std::nan(""),
                       inf,
                       -inf,
                       8388609.5,
                       4503599627370497.0,
                       -0.49999997,
                       1e-40};
  for (size_t i = 0; i < 13; ++i)
    for (size_t k = i; k < v.size(); k += 613) v[k] = sp[i];
  for (size_t k = 7; k < v.size(); k += 3) v[k] = std::round(v[k] * 2) / 2;  // many ties
  const Tensor base = from_vector<double>(v, {263, 307}, kRef);
  for (DType t : {DType::f32, DType::f64})
    for (const auto& [name, view] : views(base.to(t)))
      for (UnaryOp op : {UnaryOp::floor, UnaryOp::ceil, UnaryOp::trunc, UnaryOp::round})
        EXPECT_EQ(bytes_of(run_unary(op, view, kRef)), bytes_of(run_unary(op, view, kCpu)))
            << ir::name(op) << " " << dtype_name(t) << " " << name;
}

Tensor run_binary(BinaryOp op, const Tensor& a, const Tensor& b, const Device& dev, DType out) {
  const Tensor x = a.to(dev), y = b.to(dev);
  Tensor d = empty(x.shape(), {out, dev});
  backend_for(dev).execute(ir::Binary{op, x, y, d});
  return d;
}

TEST(CpuElementwiseTest, HalfBinaryComputedInF32MatchesReference) {
  const BinaryOp ops[] = {BinaryOp::add,     BinaryOp::sub,     BinaryOp::mul, BinaryOp::div,
                          BinaryOp::maximum, BinaryOp::minimum, BinaryOp::eq,  BinaryOp::ne,
                          BinaryOp::lt,      BinaryOp::le,      BinaryOp::gt,  BinaryOp::ge};
  const Shape shape{257, 301};
  auto va = randoms(257 * 301, 7, -4, 4), vb = randoms(257 * 301, 8, -4, 4);
  const double inf = std::numeric_limits<double>::infinity();
  const double sp[] = {std::nan(""), inf, -inf, 0.0, -0.0, 3e4, -3e4, 1e-7};
  for (size_t i = 0; i < 8; ++i) {
    va[i * 31] = sp[i];
    vb[i * 37] = sp[7 - i];
    vb[i * 31 + 1000] = va[i * 31 + 1000];  // equal pairs for the comparisons
  }
  const Tensor a0 = from_vector<double>(va, shape, kRef), b0 = from_vector<double>(vb, shape, kRef);
  for (DType t : {DType::f16, DType::bf16}) {
    const Tensor a = a0.to(t), b = b0.to(t);
    const std::vector<std::pair<std::string, std::pair<Tensor, Tensor>>> pairs = {
        {"contiguous", {a, b}},
        {"transposed", {a.t(), b.t()}},
        {"row bcast", {a, b.slice(0, 0, 1).expand(shape)}},
        {"scalar bcast", {a.slice(0, 2, 3).slice(1, 2, 3).expand(shape), b}},
        {"stepped", {a.slice(1, 0, 300, 2), b.slice(1, 1, 301, 2)}},
        {"col bcast", {a, b.slice(1, 0, 1).expand(shape)}}};
    for (BinaryOp op : ops) {
      const bool cmp = ir::traits(op).predicate;
      for (const auto& [name, p] : pairs) {
        const std::string what = std::string(ir::name(op)) + " " + dtype_name(t) + " " + name;
        const Tensor want = run_binary(op, p.first, p.second, kRef, cmp ? DType::b8 : t);
        const Tensor got = run_binary(op, p.first, p.second, kCpu, cmp ? DType::b8 : t);
        if (cmp)
          EXPECT_EQ(bytes_of(want), bytes_of(got)) << what;
        else
          expect_same_values(want, got, 0, what);
      }
    }
    // Into a transposed destination.
    Tensor want = empty({301, 257}, {t, kRef}).t(), got = empty({301, 257}, {t, kCpu}).t();
    backend_for(kRef).execute(ir::Binary{BinaryOp::mul, a, b, want});
    backend_for(kCpu).execute(ir::Binary{BinaryOp::mul, a.to(kCpu), b.to(kCpu), got});
    expect_same_values(want, got, 0, std::string("mul into transposed ") + dtype_name(t));
  }
}

TEST(CpuElementwiseTest, IntegerUnaryMatchesReference) {
  const UnaryOp ops[] = {UnaryOp::neg, UnaryOp::abs, UnaryOp::square, UnaryOp::relu,
                         UnaryOp::bitwise_not};
  const size_t n = 263 * 307;
  const auto r = randoms(n, 9, -3e9, 3e9);
  for (DType t : {DType::i8, DType::i16, DType::i32, DType::i64, DType::u8}) {
    // Wrap random 64-bit values into the type, then put the extremes first.
    std::vector<int64_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = int64_t(r[i]) * 1000003;
    const int64_t extremes[] = {0,
                                1,
                                -1,
                                127,
                                -128,
                                255,
                                32767,
                                -32768,
                                2147483647,
                                -2147483647 - 1,
                                std::numeric_limits<int64_t>::max(),
                                std::numeric_limits<int64_t>::min()};
    for (size_t i = 0; i < 12; ++i) v[i * 53] = extremes[i];
    const Tensor x = from_vector<int64_t>(v, {263, 307}, kRef).to(t);  // wraps as a C++ cast
    for (const auto& [name, view] : views(x))
      for (UnaryOp op : ops) {
        if (op == UnaryOp::neg && t == DType::u8) continue;
        EXPECT_EQ(bytes_of(run_unary(op, view, kRef)), bytes_of(run_unary(op, view, kCpu)))
            << ir::name(op) << " " << dtype_name(t) << " " << name;
      }
  }
}

TEST(CpuElementwiseTest, FloatPredicatesMatchReference) {
  auto v = randoms(263 * 307, 31, -2, 2);
  const double inf = std::numeric_limits<double>::infinity();
  const double sp[] = {std::nan(""), -std::nan(""), inf, -inf, 0.0, -0.0, 1e-310, 1e300, -1e-45};
  for (size_t i = 0; i < 9; ++i)
    for (size_t k = i; k < v.size(); k += 577) v[k] = sp[i];
  const Tensor base = from_vector<double>(v, {263, 307}, kRef);
  for (DType t : {DType::f32, DType::f64})
    for (const auto& [name, view] : views(base.to(t)))
      for (UnaryOp op : {UnaryOp::isnan, UnaryOp::isinf, UnaryOp::isfinite, UnaryOp::logical_not}) {
        auto run = [&, op = op, view = view](const Device& dev) {
          const Tensor s = view.to(dev);
          Tensor d = empty(s.shape(), {DType::b8, dev});
          backend_for(dev).execute(ir::Unary{op, s, d});
          return d;
        };
        EXPECT_EQ(bytes_of(run(kRef)), bytes_of(run(kCpu)))
            << ir::name(op) << " " << dtype_name(t) << " " << name;
      }
}

// Logical ops (nonzero and NaN are true) on f32, i32 and bool, and comparisons on bool, through
// the vector loops: the bytes of ref's results.
TEST(CpuElementwiseTest, LogicalAndBoolBinaryMatchReference) {
  auto v = randoms(263 * 307, 41, -2, 2), w = randoms(263 * 307, 42, -2, 2);
  for (size_t k = 0; k < v.size(); k += 5) v[k] = 0.0;
  for (size_t k = 2; k < w.size(); k += 7) w[k] = 0.0;
  for (size_t k = 3; k < v.size(); k += 101) v[k] = std::nan("");
  const Shape shape{263, 307};
  const Tensor a = from_vector<double>(v, shape, kRef), b = from_vector<double>(w, shape, kRef);
  const BinaryOp logical[] = {BinaryOp::logical_and, BinaryOp::logical_or, BinaryOp::logical_xor};
  for (DType t : {DType::f32, DType::i32, DType::b8}) {
    const Tensor x = a.to(t), y = b.to(t);
    std::vector<BinaryOp> ops(std::begin(logical), std::end(logical));
    if (t == DType::b8)
      for (BinaryOp op : {BinaryOp::eq, BinaryOp::ne, BinaryOp::lt, BinaryOp::ge})
        ops.push_back(op);
    for (BinaryOp op : ops) {
      for (const auto& [name, p] : std::vector<std::pair<std::string, std::pair<Tensor, Tensor>>>{
               {"contiguous", {x, y}},
               {"transposed", {x.t(), y.t()}},
               {"row bcast", {x, y.slice(0, 0, 1).expand(shape)}}})
        EXPECT_EQ(bytes_of(run_binary(op, p.first, p.second, kRef, DType::b8)),
                  bytes_of(run_binary(op, p.first, p.second, kCpu, DType::b8)))
            << ir::name(op) << " " << dtype_name(t) << " " << name;
    }
  }
}

TEST(CpuElementwiseTest, IntegerBinaryMatchesReference) {
  const BinaryOp ops[] = {BinaryOp::add,       BinaryOp::sub,      BinaryOp::mul,
                          BinaryOp::maximum,   BinaryOp::minimum,  BinaryOp::eq,
                          BinaryOp::lt,        BinaryOp::ge,       BinaryOp::div_floor,
                          BinaryOp::div_trunc, BinaryOp::remainder};
  const Shape shape{263, 307};
  const size_t n = 263 * 307;
  const auto ra = randoms(n, 21, -3e9, 3e9), rb = randoms(n, 22, -2e4, 2e4);
  std::vector<int64_t> va(n), vb(n);
  for (size_t i = 0; i < n; ++i) {
    va[i] = i % 4 == 0 ? int64_t(ra[i]) % 1000 : int64_t(ra[i]);
    vb[i] = i % 3 == 0 ? int64_t(rb[i]) % 7 : int64_t(rb[i]);
    if (vb[i] == 0) vb[i] = (i & 1) ? -1 : 1;
  }
  // Extremes: INT_MIN / -1 (wraps), exact quotients, negative remainders.
  const int64_t pa[] = {-2147483647 - 1, -2147483647 - 1, 2147483647, -7, 7, -6, 6, 0, -1, 5};
  const int64_t pb[] = {-1, 1, -1, 2, -2, 3, -3, 5, 7, -2147483647 - 1};
  for (size_t i = 0; i < 10; ++i) {
    va[i * 41] = pa[i];
    vb[i * 41] = pb[i];
  }
  for (DType t : {DType::i32, DType::i64}) {
    const Tensor a = from_vector<int64_t>(va, shape, kRef).to(t);
    const Tensor b = from_vector<int64_t>(vb, shape, kRef).to(t);
    const std::vector<std::pair<std::string, std::pair<Tensor, Tensor>>> pairs = {
        {"contiguous", {a, b}},
        {"transposed", {a.t(), b.t()}},
        {"row bcast", {a, b.slice(0, 0, 1).expand(shape)}},
        {"scalar bcast", {a.slice(0, 41, 42).slice(1, 0, 1).expand(shape), b}},
        {"stepped", {a.slice(1, 0, 306, 2), b.slice(1, 1, 307, 2)}}};
    for (BinaryOp op : ops) {
      if (t == DType::i64 && op >= BinaryOp::div_floor && op <= BinaryOp::remainder) continue;
      const DType out = ir::traits(op).predicate ? DType::b8 : t;
      for (const auto& [name, p] : pairs)
        EXPECT_EQ(bytes_of(run_binary(op, p.first, p.second, kRef, out)),
                  bytes_of(run_binary(op, p.first, p.second, kCpu, out)))
            << ir::name(op) << " " << dtype_name(t) << " " << name;
    }
  }
  // A zero divisor anywhere (here in the second half, another thread's chunk) throws.
  std::vector<int64_t> zb = vb;
  zb[n - 5] = 0;
  const Tensor a = from_vector<int64_t>(va, shape, kRef).to(DType::i32);
  const Tensor z = from_vector<int64_t>(zb, shape, kRef).to(DType::i32);
  for (BinaryOp op : {BinaryOp::div_floor, BinaryOp::div_trunc, BinaryOp::remainder}) {
    try {
      run_binary(op, a, z, kCpu, DType::i32);
      ADD_FAILURE() << ir::name(op) << ": expected ember::Error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("integer division by zero"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace ember
