// Helpers for reference kernels: dtype dispatch and strided N-d loops. Internal.
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ember/tensor.h"

namespace ember::ref {

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
/// bool is != 0). Out-of-range float->int is clamped to avoid undefined behaviour.
template <typename To, typename From>
inline To cast(From v) {
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
    return cast<To>(float(v));
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

/// Typed pointer to element 0 of a host tensor view.
template <typename T>
inline T* ptr(const Tensor& t) {
  return static_cast<T*>(t.impl()->storage->data) + t.impl()->offset;
}

/// Iterates every index of `shape` and calls f(offs) with offs[k] the element offset of operand k
/// (strides[k] in elements). Adjacent dims that are contiguous for all operands are merged and the
/// innermost loop is a plain strided loop.
template <size_t N, typename F>
void strided_loop(const Shape& shape, const std::array<const Strides*, N>& strides, F&& f) {
  const int64_t rank = int64_t(shape.size());
  for (int64_t s : shape)
    if (s == 0) return;
  // Merge dims (outer to inner) into a compact list.
  int64_t sz[64];
  int64_t st[N][64];
  int64_t r = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (shape[d] == 1) continue;
    bool merge = r > 0;
    for (size_t k = 0; k < N && merge; ++k) merge = st[k][r - 1] == (*strides[k])[d] * shape[d];
    if (merge) {
      sz[r - 1] *= shape[d];
      for (size_t k = 0; k < N; ++k) st[k][r - 1] = (*strides[k])[d];
    } else {
      sz[r] = shape[d];
      for (size_t k = 0; k < N; ++k) st[k][r] = (*strides[k])[d];
      ++r;
    }
  }
  std::array<int64_t, N> off{};
  if (r == 0) {
    f(off);
    return;
  }
  int64_t idx[64] = {0};
  const int64_t inner = sz[r - 1];
  std::array<int64_t, N> inner_st;
  for (size_t k = 0; k < N; ++k) inner_st[k] = st[k][r - 1];
  while (true) {
    std::array<int64_t, N> o = off;
    for (int64_t i = 0; i < inner; ++i) {
      f(o);
      for (size_t k = 0; k < N; ++k) o[k] += inner_st[k];
    }
    int64_t d = r - 2;
    for (; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < N; ++k) off[k] += st[k][d];
      if (idx[d] < sz[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= st[k][d] * sz[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace ember::ref
