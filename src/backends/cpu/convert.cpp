// The cpu backend's casts (Copy between dtypes) and f16/bf16 <-> f32 runs. Pairs among f32, f64,
// f16, bf16, i32, i64, u8 and bool run vector loops (two clones: baseline x86-64 and AVX2, plus
// F16C for f16), threaded over the pool for large or strided ones; results are bit-identical to
// ref::cast: float -> int truncates, NaN -> 0 and out-of-range values saturate; anything -> bool
// is != 0; f16/bf16 go through f32 (as Half/BFloat16 do), rounding to nearest-even with the
// reference's NaN bits.
#include <cstring>
#include <limits>
#include <type_traits>

#include "backends/cpu/convert.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "backends/ref/dispatch.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ember::cpu {

namespace {

#define EMBER_CPU_F16C __attribute__((target("avx2,fma,f16c")))

#if defined(__x86_64__)
bool has_f16c() {
  static const bool v = has_avx2() && __builtin_cpu_supports("f16c");
  return v;
}
#endif

/// scalar_cast<To>(x) for non-16-bit-float types (bit-identical), branch-free for float -> integer
/// so that it vectorises: NaN -> 0, x <= lowest -> lowest, x >= max -> max (the bounds are powers
/// of two or exact in From, so the comparisons equal the reference's long double ones), else
/// truncation.
template <typename To, typename From>
inline To cvt(From x) {
  if constexpr (std::is_integral_v<To> && !std::is_same_v<To, bool> &&
                std::is_floating_point_v<From>) {
    constexpr From lo = From(std::numeric_limits<To>::lowest());
    constexpr From hi = From(std::numeric_limits<To>::max());
    const From c0 = x != x ? From(0) : x;
    const bool big = c0 >= hi;
    const From c = c0 < lo ? lo : (big ? From(0) : c0);
    const To r = To(c);
    return big ? std::numeric_limits<To>::max() : r;
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else {
    return To(x);  // as ref::cast, written here so that it inlines (ref's has other options)
  }
}

// ---- f16 / bf16 <-> f32 runs ----
void f16_to_f32_base(float* d, const uint16_t* s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = Half::to_float(s[i]);
}
void f32_to_f16_base(uint16_t* d, const float* s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = Half::from_float(s[i]);
}

#if defined(__x86_64__)
// vcvtph2ps / vcvtps2ph round as Half (nearest-even, subnormals exact) but quieten NaNs and keep
// payload bits; blocks holding a NaN are redone with the reference conversion.
EMBER_CPU_F16C void f16_to_f32_f16c(float* d, const uint16_t* s, int64_t n) {
  int64_t i = 0;
  const __m128i abs_mask = _mm_set1_epi16(0x7fff), inf = _mm_set1_epi16(0x7c00);
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(h));
    if (_mm_movemask_epi8(_mm_cmpgt_epi16(_mm_and_si128(h, abs_mask), inf)))
      f16_to_f32_base(d + i, s + i, 8);
  }
  f16_to_f32_base(d + i, s + i, n - i);
}
EMBER_CPU_F16C void f32_to_f16_f16c(uint16_t* d, const float* s, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(s + i);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                     _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    if (_mm256_movemask_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q))) f32_to_f16_base(d + i, s + i, 8);
  }
  f32_to_f16_base(d + i, s + i, n - i);
}
#endif

// bf16: the upper half of an f32; rounding as BFloat16::from_float, written branch-free.
__attribute__((always_inline)) inline void bf16_to_f32_body(float* d, const uint16_t* s,
                                                            int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = uint32_t(s[i]) << 16;
    std::memcpy(d + i, &u, 4);
  }
}
__attribute__((always_inline)) inline void f32_to_bf16_body(uint16_t* d, const float* s,
                                                            int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, s + i, 4);
    const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
    const uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16, q = (u >> 16) | 0x40u;
    d[i] = uint16_t(nan ? q : r);
  }
}
void bf16_to_f32_base(float* d, const uint16_t* s, int64_t n) { bf16_to_f32_body(d, s, n); }
EMBER_CPU_AVX2 void bf16_to_f32_avx2(float* d, const uint16_t* s, int64_t n) {
  bf16_to_f32_body(d, s, n);
}
void f32_to_bf16_base(uint16_t* d, const float* s, int64_t n) { f32_to_bf16_body(d, s, n); }

#if defined(__x86_64__)
// Rounds 8 f32 lanes to bf16 in the low half of each 32-bit lane (NaN: quiet, sign kept).
__attribute__((always_inline, target("avx2,fma"))) inline __m256i bf16_round8(__m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i hi = _mm256_srli_epi32(u, 16);
  const __m256i inc =
      _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(hi, _mm256_set1_epi32(1)));
  const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, inc), 16);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  return _mm256_blendv_epi8(r, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
}
#endif

EMBER_CPU_AVX2 void f32_to_bf16_avx2(uint16_t* d, const float* s, int64_t n) {
  int64_t i = 0;
#if defined(__x86_64__)
  // 16 at a time; packus packs per 128-bit lane, so the 64-bit quarters are put back in order.
  for (; i + 16 <= n; i += 16) {
    const __m256i a = bf16_round8(_mm256_loadu_ps(s + i));
    const __m256i b = bf16_round8(_mm256_loadu_ps(s + i + 8));
    const __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), p);
  }
#endif
  f32_to_bf16_body(d + i, s + i, n - i);
}

// ---- casts ----
template <typename T>
inline constexpr bool is_h = is_half_v<T>;
// The element type a run of T is handled as: uint16_t bits for f16/bf16, T otherwise.
template <typename T>
using bits_t = std::conditional_t<is_h<T>, uint16_t, T>;

#define EMBER_CAST_ROW_BODY                                        \
  if (sd == 1 && ss == 1) {                                        \
    for (int64_t i = 0; i < n; ++i) d[i] = cvt<D>(s[i]);           \
  } else {                                                         \
    for (int64_t i = 0; i < n; ++i) d[i * sd] = cvt<D>(s[i * ss]); \
  }

template <typename D, typename S>
void cast_row_base(D* d, const S* s, int64_t n, int64_t sd, int64_t ss) {
  EMBER_CAST_ROW_BODY
}
template <typename D, typename S>
EMBER_CPU_AVX2 void cast_row_avx2(D* d, const S* s, int64_t n, int64_t sd, int64_t ss) {
  EMBER_CAST_ROW_BODY
}
#if defined(__x86_64__)
// f32/f64 -> i64 on contiguous runs (AVX2 has no such conversion): 4 lanes truncated as doubles
// and, when all lie within +-2^51, turned into integers by adding 1.5 * 2^52 (the integer lands
// in the low mantissa bits); other groups (NaN, huge values) take cvt.
template <typename S>
EMBER_CPU_AVX2 void to_i64_avx2(int64_t* d, const S* s, int64_t n) {
  const __m256d magic = _mm256_set1_pd(0x1.8p52), lim = _mm256_set1_pd(0x1p51);
  const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffll));
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m256d x;
    if constexpr (std::is_same_v<S, float>)
      x = _mm256_cvtps_pd(_mm_loadu_ps(s + i));
    else
      x = _mm256_loadu_pd(s + i);
    const __m256d t = _mm256_round_pd(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    // Not (|t| < 2^51): NaN compares false, so it is caught too.
    if (_mm256_movemask_pd(_mm256_cmp_pd(_mm256_and_pd(t, abs_mask), lim, _CMP_NLT_UQ))) {
      for (int k = 0; k < 4; ++k) d[i + k] = cvt<int64_t>(s[i + k]);
      continue;
    }
    const __m256i r =
        _mm256_sub_epi64(_mm256_castpd_si256(_mm256_add_pd(t, magic)), _mm256_castpd_si256(magic));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), r);
  }
  for (; i < n; ++i) d[i] = cvt<int64_t>(s[i]);
}
#endif

#if defined(__x86_64__)
// f32 -> i32 on contiguous runs: vcvttps2dq gives INT_MIN for NaN and out-of-range lanes; the
// reference wants 0 for NaN and INT_MAX for x >= 2^31.
EMBER_CPU_AVX2 void f32_to_i32_avx2(int32_t* d, const float* s, int64_t n) {
  const __m256 two31 = _mm256_set1_ps(0x1p31f);
  const __m256i imax = _mm256_set1_epi32(0x7fffffff);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(s + i);
    __m256i r = _mm256_cvttps_epi32(x);
    r = _mm256_blendv_epi8(r, imax, _mm256_castps_si256(_mm256_cmp_ps(x, two31, _CMP_GE_OQ)));
    r = _mm256_andnot_si256(_mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q)), r);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), r);
  }
  for (; i < n; ++i) d[i] = cvt<int32_t>(s[i]);
}
#endif

template <typename D, typename S>
void cast_row(D* d, const S* s, int64_t n, int64_t sd, int64_t ss, bool avx2) {
#if defined(__x86_64__)
  if constexpr (std::is_same_v<D, int64_t> && std::is_floating_point_v<S>) {
    if (avx2 && sd == 1 && ss == 1) return to_i64_avx2(d, s, n);
  }
  if constexpr (std::is_same_v<D, int32_t> && std::is_same_v<S, float>) {
    if (avx2 && sd == 1 && ss == 1) return f32_to_i32_avx2(d, s, n);
  }
#endif
  if (avx2)
    cast_row_avx2(d, s, n, sd, ss);
  else
    cast_row_base(d, s, n, sd, ss);
}

// Halves in or out: through an f32 block (as Half/BFloat16 convert through float).

template <typename D, typename S>
void cast_row_via_f32(bits_t<D>* d, const bits_t<S>* s, int64_t n, int64_t sd, int64_t ss,
                      bool avx2) {
  // Contiguous half <-> f32: one pass, no block buffer.
  if constexpr (is_h<S> && std::is_same_v<D, float>) {
    if (sd == 1 && ss == 1) return half_to_f32(dtype_of<S>::value, d, s, n);
  }
  if constexpr (is_h<D> && std::is_same_v<S, float>) {
    if (sd == 1 && ss == 1) return f32_to_half(dtype_of<D>::value, d, s, n);
  }
  constexpr int64_t kBlock = 512;
  alignas(32) float f[kBlock];
  alignas(32) uint16_t h[kBlock];
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    const bits_t<S>* sp = s + b * ss;
    bits_t<D>* dp = d + b * sd;
    if constexpr (is_h<S>) {
      const uint16_t* src = sp;
      if (ss != 1) {
        for (int64_t i = 0; i < m; ++i) h[i] = sp[i * ss];
        src = h;
      }
      half_to_f32(dtype_of<S>::value, f, src, m);
    } else {
      cast_row<float>(f, sp, m, 1, ss, avx2);
    }
    if constexpr (is_h<D>) {
      if (sd == 1) {
        f32_to_half(dtype_of<D>::value, dp, f, m);
      } else {
        f32_to_half(dtype_of<D>::value, h, f, m);
        for (int64_t i = 0; i < m; ++i) dp[i * sd] = h[i];
      }
    } else {
      cast_row<D>(dp, f, m, sd, 1, avx2);
    }
  }
}

// Chunk sizes of the threaded casts. Contiguous casts are bound by memory bandwidth, which a second
// thread did not raise for cache-resident tensors (1M f32 -> f16/f64/i32 on this 2-core VM, 32 MB
// L3: 0.084 / 0.170 / 0.105 ms on one thread against 0.093 / 0.178 / 0.115 ms on two), so each
// thread gets at least kCastChunkBytes of traffic; strided casts (cache misses per element) split
// at kCastGrain elements.
constexpr int64_t kCastChunkBytes = int64_t(8) << 20;
constexpr int64_t kCastGrain = 1 << 16;

template <typename D, typename S>
void run_cast(const ir::Copy& op) {
  using DB = bits_t<D>;
  using SB = bits_t<S>;
  DB* d = ref::ptr<DB>(op.dst);
  const SB* s = ref::ptr<SB>(op.src);
  const bool avx2 = has_avx2();
  const int64_t grain = op.dst.is_contiguous() && op.src.is_contiguous()
                            ? kCastChunkBytes / int64_t(sizeof(DB) + sizeof(SB))
                            : kCastGrain;
  parallel_rows<2>(
      op.dst.shape(), {&op.dst.strides(), &op.src.strides()}, grain,
      [&](const std::array<int64_t, 2>& o, int64_t n, const std::array<int64_t, 2>& st) {
        if constexpr (is_h<D> || is_h<S>)
          cast_row_via_f32<D, S>(d + o[0], s + o[1], n, st[0], st[1], avx2);
        else
          cast_row<D>(d + o[0], s + o[1], n, st[0], st[1], avx2);
      });
}

// Calls f(T{}) for the dtypes the cast kernels take; false for the others.
template <typename F>
bool cast_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32:
    case DType::f64:
    case DType::f16:
    case DType::bf16:
    case DType::i32:
    case DType::i64:
    case DType::u8:
    case DType::b8:
      dispatch_dtype(t, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || is_h<T> ||
                      std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> ||
                      std::is_same_v<T, uint8_t> || std::is_same_v<T, bool>)
          f(tag);
      });
      return true;
    default:
      return false;
  }
}

}  // namespace

void f16_to_f32(float* d, const uint16_t* s, int64_t n) {
#if defined(__x86_64__)
  if (has_f16c()) return f16_to_f32_f16c(d, s, n);
#endif
  f16_to_f32_base(d, s, n);
}
void f32_to_f16(uint16_t* d, const float* s, int64_t n) {
#if defined(__x86_64__)
  if (has_f16c()) return f32_to_f16_f16c(d, s, n);
#endif
  f32_to_f16_base(d, s, n);
}
void bf16_to_f32(float* d, const uint16_t* s, int64_t n) {
  if (has_avx2())
    bf16_to_f32_avx2(d, s, n);
  else
    bf16_to_f32_base(d, s, n);
}
void half_to_f32(DType t, float* d, const uint16_t* s, int64_t n) {
  if (t == DType::f16)
    f16_to_f32(d, s, n);
  else
    bf16_to_f32(d, s, n);
}

void f32_to_half(DType t, uint16_t* d, const float* s, int64_t n) {
  if (t == DType::f16)
    f32_to_f16(d, s, n);
  else
    f32_to_bf16(d, s, n);
}

void f32_to_bf16(uint16_t* d, const float* s, int64_t n) {
  if (has_avx2())
    f32_to_bf16_avx2(d, s, n);
  else
    f32_to_bf16_base(d, s, n);
}

bool cast_copy(const ir::Copy& op) {
  const Tensor& s = op.src;
  const Tensor& d = op.dst;
  if (s.dtype() == d.dtype()) return false;
  if (s.is_alias_of(d)) return false;  // the reference copies through a temporary
  bool done = false;
  const bool known = cast_dtype(s.dtype(), [&](auto st) {
    cast_dtype(d.dtype(), [&](auto dt) {
      using S = decltype(st);
      using D = decltype(dt);
      if constexpr (!std::is_same_v<S, D>) {
        run_cast<D, S>(op);
        done = true;
      }
    });
  });
  return known && done;
}

}  // namespace ember::cpu
