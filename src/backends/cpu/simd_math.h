// Branch-free float math that compilers vectorise (used inside the cpu kernels' row loops).
// Internal.
#pragma once
#include <cstdint>
#include <cstring>

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
  const int32_t n1 = ni / 2;
  const float y = p * pow2i(n1) * pow2i(ni - n1);
  float out = x > hi ? __builtin_inff() : y;
  out = x < lo ? 0.f : out;
  return x != x ? x : out;
}

}  // namespace ember::cpu

#pragma GCC pop_options
