#include "ember/dtype.h"

#include <cmath>

#include "ember/error.h"

namespace ember {

int dtype_size(DType t) {
  switch (t) {
    case DType::f64:
    case DType::i64:
    case DType::u64:
      return 8;
    case DType::f32:
    case DType::i32:
    case DType::u32:
      return 4;
    case DType::f16:
    case DType::bf16:
    case DType::i16:
    case DType::u16:
      return 2;
    case DType::i8:
    case DType::u8:
    case DType::b8:
      return 1;
  }
  return 1;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "float32";
    case DType::f64:
      return "float64";
    case DType::f16:
      return "float16";
    case DType::bf16:
      return "bfloat16";
    case DType::i8:
      return "int8";
    case DType::i16:
      return "int16";
    case DType::i32:
      return "int32";
    case DType::i64:
      return "int64";
    case DType::u8:
      return "uint8";
    case DType::u16:
      return "uint16";
    case DType::u32:
      return "uint32";
    case DType::u64:
      return "uint64";
    case DType::b8:
      return "bool";
  }
  return "?";
}

DType dtype_from_name(const std::string& n) {
  struct Alias {
    const char* name;
    DType t;
  };
  static const Alias kAliases[] = {
      {"f32", DType::f32},    {"float32", DType::f32},   {"float", DType::f32},
      {"f64", DType::f64},    {"float64", DType::f64},   {"double", DType::f64},
      {"f16", DType::f16},    {"float16", DType::f16},   {"half", DType::f16},
      {"bf16", DType::bf16},  {"bfloat16", DType::bf16}, {"i8", DType::i8},
      {"int8", DType::i8},    {"i16", DType::i16},       {"int16", DType::i16},
      {"i32", DType::i32},    {"int32", DType::i32},     {"int", DType::i32},
      {"i64", DType::i64},    {"int64", DType::i64},     {"long", DType::i64},
      {"u8", DType::u8},      {"uint8", DType::u8},      {"u16", DType::u16},
      {"uint16", DType::u16}, {"u32", DType::u32},       {"uint32", DType::u32},
      {"u64", DType::u64},    {"uint64", DType::u64},    {"bool", DType::b8},
      {"b8", DType::b8}};
  for (const auto& a : kAliases)
    if (n == a.name) return a.t;
  EMBER_FAIL("dtype", "unknown dtype '", n, "' (expected e.g. f32, float64, int64, bool)");
}

bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16;
}
bool is_integral(DType t) { return !is_floating(t) && t != DType::b8; }
bool is_signed(DType t) {
  return is_floating(t) || t == DType::i8 || t == DType::i16 || t == DType::i32 || t == DType::i64;
}

std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

namespace {
int int_bits(DType t) { return dtype_size(t) * 8; }
DType signed_of_bits(int bits) {
  switch (bits) {
    case 8:
      return DType::i8;
    case 16:
      return DType::i16;
    case 32:
      return DType::i32;
    default:
      return DType::i64;
  }
}
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::b8) return b;
  if (b == DType::b8) return a;
  const bool fa = is_floating(a), fb = is_floating(b);
  if (fa && fb) {
    if ((a == DType::f16 && b == DType::bf16) || (a == DType::bf16 && b == DType::f16))
      return DType::f32;
    return dtype_size(a) >= dtype_size(b) ? a : b;
  }
  if (fa) return a;
  if (fb) return b;
  // Both integers.
  const bool sa = is_signed(a), sb = is_signed(b);
  if (sa == sb) return int_bits(a) >= int_bits(b) ? a : b;
  const DType s = sa ? a : b, u = sa ? b : a;
  if (int_bits(s) > int_bits(u)) return s;
  return signed_of_bits(std::min(64, int_bits(u) * 2));
}

// float <-> binary16, round to nearest even, handling subnormals, inf and NaN.
uint16_t Half::from_float(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return uint16_t(sign | 0x7c00u | (x > 0x7f800000u ? 0x200u : 0u));
  if (x >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to inf
  if (x < 0x38800000u) {                                  // subnormal or zero in half
    if (x < 0x33000000u) return uint16_t(sign);
    const uint32_t e = x >> 23;
    const uint32_t m = (x & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14 + (113 - e)
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return uint16_t(sign | r);
  }
  uint32_t r = ((x - 0x38000000u) >> 13);
  const uint32_t rem = x & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
  return uint16_t(sign | r);
}

float Half::to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
  if (e == 0) {
    if (m == 0) {
      x = sign;
    } else {  // subnormal: normalise
      e = 113;
      while (!(m & 0x400u)) {
        m <<= 1;
        --e;
      }
      m &= 0x3ffu;
      x = sign | (e << 23) | (m << 13);
    }
  } else if (e == 31) {
    x = sign | 0x7f800000u | (m << 13);
  } else {
    x = sign | ((e + 112) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t BFloat16::from_float(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
  const uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  return uint16_t(x >> 16);
}

DType Scalar::natural_dtype() const {
  switch (kind_) {
    case Kind::Bool:
      return DType::b8;
    case Kind::Int:
      return DType::i64;
    case Kind::Float:
      return kDefaultFloat;
  }
  return kDefaultFloat;
}

std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  if (s.is_float()) return os << s.to_double();
  if (s.is_bool()) return os << (s.to_int() ? "true" : "false");
  return os << s.to_int();
}

}  // namespace ember
