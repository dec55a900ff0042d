// Element types in C++: dtype dispatch, the types arithmetic and accumulation run in, and the one
// element conversion every host path uses (ref kernels, the cpu backend, tensor creation and
// item(), codegen's fill constants). Internal, header-only; depends on ember/dtype.h only.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "ember/dtype.h"

namespace ember {

/// Calls f(T{}) with T the C++ type of `t` (bool, Half, BFloat16, float, ... uint64_t).
template <typename F>
void dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32:
      f(float{});
      return;
    case DType::f64:
      f(double{});
      return;
    case DType::f16:
      f(Half{});
      return;
    case DType::bf16:
      f(BFloat16{});
      return;
    case DType::i8:
      f(int8_t{});
      return;
    case DType::i16:
      f(int16_t{});
      return;
    case DType::i32:
      f(int32_t{});
      return;
    case DType::i64:
      f(int64_t{});
      return;
    case DType::u8:
      f(uint8_t{});
      return;
    case DType::u16:
      f(uint16_t{});
      return;
    case DType::u32:
      f(uint32_t{});
      return;
    case DType::u64:
      f(uint64_t{});
      return;
    case DType::b8:
      f(bool{});
      return;
  }
}

template <typename T>
inline constexpr bool is_half_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <typename T>
inline constexpr bool is_float_v = std::is_floating_point_v<T> || is_half_v<T>;

/// Type arithmetic is done in: float for f16/bf16, the type itself otherwise.
template <typename T>
using compute_t = std::conditional_t<is_half_v<T>, float, T>;
/// Accumulator for sums/products: double for floats, int64/uint64 for integers, int64 for bool.
template <typename T>
using acc_t = std::conditional_t<
    is_float_v<T>, double,
    std::conditional_t<std::is_unsigned_v<T> && !std::is_same_v<T, bool>, uint64_t, int64_t>>;

/// Converts between any two element types with C++ semantics (float->int truncates; anything->
/// bool is != 0). Out-of-range float->int is clamped to avoid undefined behaviour, NaN gives 0.
template <typename To, typename From>
inline To scalar_cast(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (is_half_v<From>)
      return float(v) != 0.f;
    else
      return v != From(0);
  } else if constexpr (is_half_v<To>) {
    return To(float(compute_t<From>(v)));
  } else if constexpr (is_half_v<From>) {
    return scalar_cast<To>(float(v));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (std::isnan(v)) return To(0);
    constexpr long double lo = (long double)std::numeric_limits<To>::lowest();
    constexpr long double hi = (long double)std::numeric_limits<To>::max();
    long double x = v;
    if (x <= lo) return std::numeric_limits<To>::lowest();
    if (x >= hi) return std::numeric_limits<To>::max();
    return To(v);
  } else {
    return To(v);
  }
}

/// Integer arithmetic that wraps around (two's complement, as torch) without signed overflow
/// or promotion to int: computed in an unsigned type at least as wide as unsigned int.
template <typename C>
using wide_unsigned_t =
    std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned, std::make_unsigned_t<C>>;
template <typename C>
C wrap_add(C a, C b) {
  return C(wide_unsigned_t<C>(a) + wide_unsigned_t<C>(b));
}
template <typename C>
C wrap_sub(C a, C b) {
  return C(wide_unsigned_t<C>(a) - wide_unsigned_t<C>(b));
}
template <typename C>
C wrap_mul(C a, C b) {
  return C(wide_unsigned_t<C>(a) * wide_unsigned_t<C>(b));
}

}  // namespace ember
