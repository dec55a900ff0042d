// Branch-free float math that compilers vectorise (used inside the cpu kernels' row loops).
// Internal.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

// Compiled without -ftrapping-math so that GCC if-converts and vectorises the selects (we never
// read floating-point exception flags; values are unchanged).
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math", "no-math-errno")
// The lane templates below return 32- and 64-byte vectors from functions without an AVX target;
// they are always inlined into their callers' AVX clones, so the ABI note does not apply.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace ember::cpu {

/// 2^n for n in [-126, 127] as a float (built from its exponent bits).
__attribute__((always_inline)) inline float pow2i(int32_t n) {
  const int32_t bits = (n + 127) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// exp(x) for float within ~2 ulp (Cephes' expf polynomial): exact inf/0/NaN at the ends and
/// gradual underflow, so it matches std::exp to the op table's f32 tolerance.
__attribute__((always_inline)) inline float exp_f32(float x) {
  const float hi = 88.72283935546875f, lo = -103.97208404541015625f;
  float xc = x > 89.f ? 89.f : x;
  xc = xc < -104.f ? -104.f : xc;
  xc = xc != xc ? 0.f : xc;
  // n = round(x / ln 2) with the 1.5 * 2^23 trick; r = x - n ln 2 in two parts.
  const float magic = 12582912.f;
  const float t = xc * 1.44269504088896341f + magic;
  const float n = t - magic;
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  const float r2 = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r2 + r + 1.f;
  // Scale by 2^n in two halves so that results near overflow and in the subnormal range round once.
  const int32_t ni = int32_t(n);
  const int32_t n1 = ni >> 1;  // floor(n / 2): both halves stay normal for n in [-150, 128]
  const float y = p * pow2i(n1) * pow2i(ni - n1);
  float out = x > hi ? __builtin_inff() : y;
  out = x < lo ? 0.f : out;
  return x != x ? x : out;
}

#if defined(__x86_64__)
// ---- explicit AVX2+FMA exp (8 lanes), for callers compiled with target("avx2,fma") ----

/// exp_f32 on 8 lanes: the same reduction, polynomial and scaling, with FMAs (the scalar form is
/// compiled without contraction, so the two may differ in the last bit; both stay within 2 ulp of
/// std::exp, tests/cpu_elementwise_test.cpp). Vectors whose lanes all lie in
/// [-86.5, 88.5] (2^n stays a normal float and the polynomial cannot overflow) scale by adding n to
/// the exponent bits; any other vector (overflow, underflow, subnormal results, NaN) takes the
/// two-half scaling and the inf/0/NaN blends.
__attribute__((always_inline, target("avx2,fma"))) inline __m256 exp256(__m256 x) {
  const __m256 magic = _mm256_set1_ps(12582912.f);
  const __m256 fast_lo = _mm256_set1_ps(-86.5f), fast_hi = _mm256_set1_ps(88.5f);
  const int slow = _mm256_movemask_ps(
      _mm256_or_ps(_mm256_cmp_ps(x, fast_lo, _CMP_NGE_UQ), _mm256_cmp_ps(x, fast_hi, _CMP_NLE_UQ)));
  __m256 xc = x;
  if (slow) {
    xc = _mm256_min_ps(xc, _mm256_set1_ps(89.f));
    xc = _mm256_max_ps(xc, _mm256_set1_ps(-104.f));
    xc = _mm256_andnot_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q), xc);  // NaN -> 0
  }
  const __m256 t = _mm256_fmadd_ps(xc, _mm256_set1_ps(1.44269504088896341f), magic);
  const __m256 n = _mm256_sub_ps(t, magic);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  const __m256 r2 = _mm256_mul_ps(r, r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_add_ps(_mm256_fmadd_ps(p, r2, r), _mm256_set1_ps(1.f));
  // n as an integer: the low bits of t (t = magic + n exactly).
  const __m256i ni = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_castps_si256(magic));
  if (!slow)
    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), _mm256_slli_epi32(ni, 23)));
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  y = _mm256_blendv_ps(y, _mm256_set1_ps(__builtin_inff()),
                       _mm256_cmp_ps(x, _mm256_set1_ps(88.72283935546875f), _CMP_GT_OQ));
  y = _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_set1_ps(-103.97208404541015625f), _CMP_LT_OQ), y);
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}
#endif

// ---- lane-generic tanh, erf and gelu: one template for float, 8 and 16 lanes ----
// Written once with GCC vector extensions (operators, `m ? a : b` selects), instantiated for
// V = float (the scalar form), F8 (AVX2) and F16 (AVX-512): every step is one IEEE operation
// (add, mul, div, compare, select, bit and integer ops; no FMA), so the three give the same bits
// when the caller is compiled without contraction (-ffp-contract=off, as elementwise.cpp is: the
// contraction of an inlined template is its caller's). Both sides of each select are computed.
#if defined(__x86_64__)
using F8 = __v8sf;  // __m256 without may_alias (a template argument)
using F16 = __v16sf;
#endif

namespace lanes {

#define EMBER_LANES inline __attribute__((always_inline))

template <class V>
struct IntOf {
  using type = int32_t;
};
#if defined(__x86_64__)
template <>
struct IntOf<F8> {
  using type = __v8si;
};
template <>
struct IntOf<F16> {
  using type = __v16si;
};
#endif
template <class V>
using int_t = typename IntOf<V>::type;
template <class V>
constexpr bool kScalar = std::is_same_v<V, float>;

template <class V>
EMBER_LANES V splat(float c) {
  if constexpr (kScalar<V>) {
    return c;
  } else {
    V r;
    for (unsigned i = 0; i < sizeof(V) / sizeof(float); ++i) r[i] = c;
    return r;
  }
}
template <class V>
EMBER_LANES int_t<V> bits(const V& x) {
  return __builtin_bit_cast(int_t<V>, x);
}
template <class V>
EMBER_LANES V from_bits(const int_t<V>& x) {
  return __builtin_bit_cast(V, x);
}
// Truncation toward zero of integer-valued lanes.
template <class V>
EMBER_LANES int_t<V> to_int(const V& x) {
  if constexpr (kScalar<V>)
    return int32_t(x);
  else
    return __builtin_convertvector(x, int_t<V>);
}
/// exp(x) for x in [-87, 88] (2^n normal, no special values): exp_f32's Cephes reduction and
/// polynomial without FMAs (within 2 ulp), the scaling one exact multiply by 2^n.
template <class V>
EMBER_LANES V exp_normal(const V& x) {
  const float magic = 12582912.f;
  const V t = x * 1.44269504088896341f + magic;
  const V n = t - magic;
  V r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  const V r2 = r * r;
  V p = splat<V>(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r2 + r + 1.f;
  return p * from_bits<V>((to_int(n) + 127) << 23);
}

template <class V>
EMBER_LANES V to_float(const int_t<V>& n) {
  if constexpr (kScalar<V>)
    return float(n);
  else
    return __builtin_convertvector(n, V);
}

/// log(x) within 1 ulp (0.78 at worst over all floats), after Cephes' logf: x = 2^e m with m in
/// [sqrt(1/2), sqrt(2)), then log(m) = f - f^2 / 2 + f^3 P(f) for f = m - 1 (exact), plus e ln 2 in
/// two parts. Subnormals are scaled by 2^23 first; 0 -> -inf, x < 0 and NaN -> NaN, inf -> inf.
template <class V>
EMBER_LANES V log(const V& x) {
  const auto sub = x < 0x1p-126f;
  const V xs = sub ? x * 0x1p23f : x;
  const int_t<V> ix = bits(xs);
  int_t<V> e = ((ix >> 23) & 0xff) - 126;  // xs = 2^e m, m in [0.5, 1)
  e = sub ? e - 23 : e;
  const V m = from_bits<V>((ix & 0x007fffff) | 0x3f000000);
  const auto low = m < 0.707106781186547524f;
  e = low ? e - 1 : e;
  const V f = low ? m + m - 1.f : m - 1.f;  // exact (Sterbenz)
  const V z = f * f;
  V p = splat<V>(7.0376836292e-2f);
  p = p * f + -1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f + -1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f + -1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f + -2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  const V fe = to_float<V>(e);
  V y = p * f * z;
  y = y + fe * -2.12194440e-4f;
  y = y - 0.5f * z;
  V r = f + y;
  r = r + fe * 0.693359375f;
  r = x == 0.f ? splat<V>(-__builtin_inff()) : r;
  r = x == __builtin_inff() ? x : r;
  return x >= 0.f ? r : splat<V>(__builtin_nanf(""));  // x < 0 or NaN
}

/// log1p(x) within 2 ulp (1.44 at worst over all floats): u = 1 + x rounded, then log(u) minus the
/// rounding error of u to first order, ((u - 1) - x) / u (exact when u is 1: log1p(x) = x, signed
/// zeros kept). x = -1 -> -inf, x < -1 and NaN -> NaN, inf -> inf.
template <class V>
EMBER_LANES V log1p(const V& x) {
  const V u = 1.f + x;
  const V c = ((u - 1.f) - x) / u;
  const V lu = lanes::log<V>(u);
  // c is NaN where x is -1 (0 / 0) or inf ((inf - inf) / inf): log(u) alone is right there.
  // (Two selects: GCC scalarises this function's compares with three.)
  const V r = c == c ? lu - c : lu;
  return u == 1.f ? x : r;
}

/// tanh(x) within 2 ulp (1.33 at worst over all floats; tests/simd_math_test.cpp), after Cephes'
/// tanhf: for |x| < 0.625 the odd polynomial x + x^3 P(x^2), else 1 - 2 / (exp(2|x|) + 1), with
/// |x| clamped to 9.5 (from 9.01 the result rounds to 1); the sign is put back last, so -0 -> -0
/// and subnormals -> themselves, +-inf -> +-1, NaN -> NaN.
template <class V>
EMBER_LANES V tanh(const V& x) {
  const int_t<V> ix = bits(x), sign = ix & INT32_MIN;
  const V a = from_bits<V>(ix & INT32_MAX);
  const V z = a * a;
  V p = splat<V>(-5.70498872745e-3f);
  p = p * z + 2.06390887954e-2f;
  p = p * z + -5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z + -3.33332819422e-1f;
  const V small = p * z * a + a;
  const V ac = a <= 9.5f ? a : splat<V>(9.5f);  // NaN -> 9.5 (restored below)
  const V big = 1.f - 2.f / (exp_normal(ac + ac) + 1.f);
  const V r = a < 0.625f ? small : big;
  return x != x ? x : from_bits<V>(bits(r) | sign);
}

/// erf(x) within 3 ulp (2.58 at worst over all floats), after Cephes' erff/erfcf: for |x| < 1 the
/// polynomial x T(x^2), else 1 - exp(-x^2) / |x| P(1/x^2) (P on [1, 2), R on [2, 4]), with |x|
/// clamped to 4 (from 3.92 the result rounds to 1). Sign, -0, subnormals, +-inf -> +-1 and NaN as
/// tanh.
template <class V>
EMBER_LANES V erf(const V& x) {
  const int_t<V> ix = bits(x), sign = ix & INT32_MIN;
  const V a = from_bits<V>(ix & INT32_MAX);
  const V ac = a <= 4.f ? a : splat<V>(4.f);  // NaN -> 4 (restored below)
  const V z = ac * ac;
  V t = splat<V>(7.853861353153693e-5f);
  t = t * z + -8.010193625184903e-4f;
  t = t * z + 5.188327685732524e-3f;
  t = t * z + -2.685381193529856e-2f;
  t = t * z + 1.128358514861418e-1f;
  t = t * z + -3.761262582423300e-1f;
  t = t * z + 1.128379165726710e+0f;
  const V small = ac * t;
  const V q = 1.f / ac, y = q * q;
  V p = splat<V>(2.326819970068386e-2f);
  p = p * y + -1.387039388740657e-1f;
  p = p * y + 3.687424674597105e-1f;
  p = p * y + -5.824733027278666e-1f;
  p = p * y + 6.210004621745983e-1f;
  p = p * y + -4.944515323274145e-1f;
  p = p * y + 3.404879937665872e-1f;
  p = p * y + -2.741127028184656e-1f;
  p = p * y + 5.638259427386472e-1f;
  V pr = splat<V>(-1.047766399936249e+1f);
  pr = pr * y + 1.297719955372516e+1f;
  pr = pr * y + -7.495518717768503e+0f;
  pr = pr * y + 2.921019019210786e+0f;
  pr = pr * y + -1.015265279202700e+0f;
  pr = pr * y + 4.218463358204948e-1f;
  pr = pr * y + -2.820767439740514e-1f;
  pr = pr * y + 5.641895067754075e-1f;
  p = ac < 2.f ? p : pr;
  // x^2 rounded costs erfc up to ~x^2 2^-24 relative: below 0.5 ulp of the result here.
  const V big = 1.f - exp_normal(-z) * q * p;
  const V r = ac < 1.f ? small : big;
  return x != x ? x : from_bits<V>(bits(r) | sign);
}

/// gelu(x) = 0.5 x (1 + erf(x / sqrt 2)) and its tanh form, in the reference's order of
/// operations (ref/unary.cpp) with erf and tanh above.
template <class V>
EMBER_LANES V gelu(const V& x) {
  return 0.5f * x * (1.f + lanes::erf<V>(x * 0.70710678118654752440f));
}
template <class V>
EMBER_LANES V gelu_tanh(const V& x) {
  const float k = 0.79788456080286535588f;  // sqrt(2/pi)
  return 0.5f * x * (1.f + lanes::tanh<V>(k * (x + 0.044715f * x * x * x)));
}

#undef EMBER_LANES

}  // namespace lanes

}  // namespace ember::cpu

#pragma GCC diagnostic pop
#pragma GCC pop_options
