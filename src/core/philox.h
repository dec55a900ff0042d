// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11).
// Counter-based: the value for element i depends only on (seed, counter), so every backend
// can produce the same stream in parallel.
#pragma once
#include <array>
#include <cmath>
#include <cstdint>

namespace ember::philox {

inline std::array<uint32_t, 4> philox4x32(uint64_t counter, uint64_t seed) {
  uint32_t c0 = uint32_t(counter), c1 = uint32_t(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = uint64_t(0xD2511F53u) * c0, p1 = uint64_t(0xCD9E8D57u) * c2;
    const uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0, n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    c1 = uint32_t(p1);
    c3 = uint32_t(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {c0, c1, c2, c3};
}

/// Uniform in [0, 1) with 24 random bits (exact in f32).
inline double uniform01(uint32_t r) { return double(r >> 8) * (1.0 / 16777216.0); }
/// Uniform in [0, 1) with 53 random bits, for f64.
inline double uniform01_53(uint32_t a, uint32_t b) {
  return double(((uint64_t(a) << 21) ^ (uint64_t(b) >> 11)) & ((uint64_t(1) << 53) - 1)) *
         (1.0 / 9007199254740992.0);
}
/// Standard normal from two 32-bit draws (Box-Muller, the cosine branch).
inline double normal(uint32_t a, uint32_t b) {
  const double u1 = (double(a) + 1.0) * (1.0 / 4294967296.0);  // (0, 1]
  const double u2 = double(b) * (1.0 / 4294967296.0);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace ember::philox
