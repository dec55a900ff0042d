// Element types, the 16-bit float storage types, Scalar and PyTorch's type promotion.
#pragma once
#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>

namespace ember {

/// Element types. Order matters only for printing; promotion uses promote_types().
enum class DType : uint8_t { f32, f64, f16, bf16, i8, i16, i32, i64, u8, u16, u32, u64, b8 };
inline constexpr int kNumDTypes = 13;
inline constexpr DType kAllDTypes[kNumDTypes] = {
    DType::f32, DType::f64, DType::f16, DType::bf16, DType::i8,  DType::i16, DType::i32,
    DType::i64, DType::u8,  DType::u16, DType::u32,  DType::u64, DType::b8};

/// Size of one element in bytes.
int dtype_size(DType t);
/// "float32", "int64", "bool"... (PyTorch's names).
const char* dtype_name(DType t);
/// Parses "f32"/"float32"/"float", "i64"/"int64"/"long", "bool"... Throws ember::Error.
DType dtype_from_name(const std::string& name);
bool is_floating(DType t);  // f16 bf16 f32 f64
bool is_integral(DType t);  // signed and unsigned integers, not bool
bool is_signed(DType t);    // floating or signed integer
inline bool is_bool(DType t) { return t == DType::b8; }
std::ostream& operator<<(std::ostream& os, DType t);

/// The dtype both a and b convert to without loss, as torch.promote_types: bool < integers <
/// floats; u8+i8 -> i16, u16+i16 -> i32, u32+i32 -> i64, u64+signed -> i64 (torch has no rule;
/// documented in docs/ops.md); f16+bf16 -> f32.
DType promote_types(DType a, DType b);

/// The default float dtype (f32), used for float scalars meeting integer tensors.
inline constexpr DType kDefaultFloat = DType::f32;

/// IEEE 754 binary16 stored as bits; arithmetic goes through float.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float f) : bits(from_float(f)) {}  // NOLINT: implicit like a builtin float type
  operator float() const { return to_float(bits); }
  static uint16_t from_float(float f);
  static float to_float(uint16_t h);
};

/// bfloat16 (upper half of an f32, round-to-nearest-even) stored as bits.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f) : bits(from_float(f)) {}  // NOLINT
  operator float() const {
    uint32_t u = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  static uint16_t from_float(float f);
};

/// A number given where a tensor could be: keeps its category (bool, integer, float) so that
/// `x + 1` keeps x's dtype and `int_tensor * 0.5` becomes float, as PyTorch does.
class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float };
  Scalar() : kind_(Kind::Int), i_(0), d_(0) {}
  Scalar(bool v) : kind_(Kind::Bool), i_(v), d_(v) {}                           // NOLINT
  Scalar(int v) : kind_(Kind::Int), i_(v), d_(v) {}                             // NOLINT
  Scalar(long v) : kind_(Kind::Int), i_(v), d_(double(v)) {}                    // NOLINT
  Scalar(long long v) : kind_(Kind::Int), i_(v), d_(double(v)) {}               // NOLINT
  Scalar(unsigned v) : kind_(Kind::Int), i_(v), d_(v) {}                        // NOLINT
  Scalar(unsigned long v) : kind_(Kind::Int), i_(int64_t(v)), d_(double(v)) {}  // NOLINT
  Scalar(float v) : kind_(Kind::Float), i_(int64_t(v)), d_(v) {}                // NOLINT
  Scalar(double v) : kind_(Kind::Float), i_(int64_t(v)), d_(v) {}               // NOLINT
  Kind kind() const { return kind_; }
  bool is_float() const { return kind_ == Kind::Float; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  double to_double() const { return kind_ == Kind::Float ? d_ : double(i_); }
  int64_t to_int() const { return kind_ == Kind::Float ? int64_t(d_) : i_; }
  /// The dtype a 0-d tensor of this value would have (bool, i64 or the default float).
  DType natural_dtype() const;

 private:
  Kind kind_;
  int64_t i_;
  double d_;
};
std::ostream& operator<<(std::ostream& os, const Scalar& s);

/// Maps a C++ type to its DType (float -> f32, int64_t -> i64, bool -> b8, Half -> f16...).
template <typename T>
struct dtype_of;
#define EMBER_DTYPE_OF(T, D)                 \
  template <>                                \
  struct dtype_of<T> {                       \
    static constexpr DType value = DType::D; \
  };
EMBER_DTYPE_OF(float, f32)
EMBER_DTYPE_OF(double, f64)
EMBER_DTYPE_OF(Half, f16)
EMBER_DTYPE_OF(BFloat16, bf16)
EMBER_DTYPE_OF(int8_t, i8)
EMBER_DTYPE_OF(int16_t, i16)
EMBER_DTYPE_OF(int32_t, i32)
EMBER_DTYPE_OF(int64_t, i64)
EMBER_DTYPE_OF(uint8_t, u8)
EMBER_DTYPE_OF(uint16_t, u16)
EMBER_DTYPE_OF(uint32_t, u32)
EMBER_DTYPE_OF(uint64_t, u64)
EMBER_DTYPE_OF(bool, b8)
#undef EMBER_DTYPE_OF

}  // namespace ember
