// Counter-based random streams for ember::data: Philox-4x32-10 keyed by splitmix64 of
// (seed, a, b), so a draw depends only on those numbers (not on threads or call order).
#pragma once
#include <array>
#include <cstdint>

#include "core/philox.h"

namespace ember::data::detail {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

class Stream {
 public:
  Stream(uint64_t seed, uint64_t a, uint64_t b = 0)
      : key_(splitmix64(splitmix64(splitmix64(seed) ^ a) ^ b)) {}
  uint32_t next_u32() {
    if (used_ == 4) {
      block_ = philox::philox4x32(counter_++, key_);
      used_ = 0;
    }
    return block_[used_++];
  }
  uint64_t next_u64() {
    const uint64_t hi = next_u32();
    return (hi << 32) | next_u32();
  }
  /// Uniform in [0, n) without bias (rejection of the short last interval); n >= 1.
  uint64_t below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t r;
    do r = next_u64();
    while (r >= limit);
    return r % n;
  }
  /// Uniform in [0, 1) with 53 bits.
  double uniform() { return double(next_u64() >> 11) * (1.0 / 9007199254740992.0); }

 private:
  uint64_t key_;
  uint64_t counter_ = 0;
  std::array<uint32_t, 4> block_{};
  int used_ = 4;
};

}  // namespace ember::data::detail
