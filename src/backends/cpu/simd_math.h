// Branch-free float math that compilers vectorise (used inside the cpu kernels' row loops).
// Internal.
#pragma once
#include <cstdint>
#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

// Compiled without -ftrapping-math so that GCC if-converts and vectorises the selects (we never
// read floating-point exception flags; values are unchanged).
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math", "no-math-errno")

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

}  // namespace ember::cpu

#pragma GCC pop_options
