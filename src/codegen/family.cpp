#include "codegen/family.h"

#include <cmath>
#include <limits>

#include "ember/error.h"

namespace ember::codegen {

void require_index(const char* op, const Caps& caps) {
  if (!caps.i64) EMBER_FAIL(op, "i64 indices need shaderInt64, which this device lacks");
}

void check_fits(const char* op, const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts) {
    if (!t.defined() || t.numel() == 0) continue;
    int64_t lo = t.offset(), hi = t.offset();
    for (int64_t k = 0; k < t.dim(); ++k) {
      const int64_t span = (t.size(k) - 1) * t.stride(k);
      (span < 0 ? lo : hi) += span;
    }
    EMBER_CHECK(lo >= 0 && hi <= int64_t(std::numeric_limits<int32_t>::max()), op,
                "a view spanning elements [", lo, ", ", hi,
                "] exceeds the 32-bit indexing of GPU kernels");
  }
}

bool is_float_dtype(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16;
}

bool is_unsigned_dtype(DType t) {
  return t == DType::u8 || t == DType::u16 || t == DType::u32 || t == DType::u64;
}

std::string ctype(DType t) { return t == DType::b8 ? "uint" : compute_type(t); }

std::string ccast(DType t, const std::string& e) { return ctype(t) + "(" + e + ")"; }

std::string ld(DType t, const std::string& e) {
  return t == DType::b8 ? "uint(" + e + ")" : load(t, e);
}

std::string st(DType t, const std::string& v) {
  return t == DType::b8 ? store(t, "(" + v + ") != 0u") : store(t, v);
}

std::string lowest_literal(DType t) {
  switch (t) {
    case DType::i8:
      return "(-128)";
    case DType::i16:
      return "(-32768)";
    case DType::i32:
      return "(-2147483647 - 1)";
    case DType::i64:
      return "(-9223372036854775807l - 1l)";
    case DType::u64:
      return "0ul";
    default:
      return "0u";
  }
}

std::string highest_literal(DType t) {
  switch (t) {
    case DType::i8:
      return "127";
    case DType::i16:
      return "32767";
    case DType::i32:
      return "2147483647";
    case DType::i64:
      return "9223372036854775807l";
    case DType::u8:
      return "255u";
    case DType::u16:
      return "65535u";
    case DType::u32:
      return "4294967295u";
    case DType::u64:
      return "18446744073709551615ul";
    default:
      return "1u";
  }
}

size_t ParamBuilder::u(int64_t v) {
  EMBER_CHECK(v >= 0 && v <= int64_t(std::numeric_limits<uint32_t>::max()), op_, "size ", v,
              " does not fit the 32-bit indexing of GPU kernels");
  return u32(uint32_t(v));
}

size_t ParamBuilder::i(int64_t v) { return i32(v, op_); }

size_t ParamBuilder::ints(const std::vector<int64_t>& v) {
  const size_t at = words().size();
  for (int64_t x : v) i(x);
  return at;
}

namespace {

// The ref's cast of a scalar to integer type T (float: NaN -> 0, saturated, truncated).
template <typename T>
T int_cast(const Scalar& s) {
  if (!s.is_float()) return T(s.to_int());
  const double v = s.to_double();
  if (std::isnan(v)) return T(0);
  if (v <= double(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (v >= double(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return T(v);
}

}  // namespace

size_t ParamBuilder::scalar(DType t, const Scalar& s) {
  const bool fl = s.is_float();
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16:
      return f(fl ? float(s.to_double()) : float(s.to_int()));
    case DType::f64:
      return d(fl ? s.to_double() : double(s.to_int()));
    case DType::i8:
      return i(int_cast<int8_t>(s));
    case DType::i16:
      return i(int_cast<int16_t>(s));
    case DType::i32:
      return i(int_cast<int32_t>(s));
    case DType::u8:
      return u(int_cast<uint8_t>(s));
    case DType::u16:
      return u(int_cast<uint16_t>(s));
    case DType::u32:
      return u(int_cast<uint32_t>(s));
    case DType::i64:
      return u64(uint64_t(int_cast<int64_t>(s)));
    case DType::u64:
      return u64(int_cast<uint64_t>(s));
    case DType::b8:
      return u(fl ? s.to_double() != 0 : s.to_int() != 0);
  }
  return f(0);
}

std::string pu(size_t k) { return "P_U(" + std::to_string(k) + ")"; }
std::string pi(size_t k) { return "P_I(" + std::to_string(k) + ")"; }
std::string pf(size_t k) { return "P_F(" + std::to_string(k) + ")"; }
std::string pd(size_t k) { return "P_D(" + std::to_string(k) + ")"; }

std::string scalar_param(DType t, size_t k) {
  const std::string w64 = "(u64(" + pu(k) + ") | (u64(" + pu(k + 1) + ") << 32))";
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16:
      return pf(k);
    case DType::f64:
      return pd(k);
    case DType::i8:
    case DType::i16:
    case DType::i32:
      return pi(k);
    case DType::i64:
      return "i64" + w64;
    case DType::u64:
      return w64;
    default:
      return pu(k);
  }
}

std::string decompose(const std::string& lin, int rank, size_t sizes_at,
                      const std::vector<Operand>& ops) {
  std::string s = "  uint rem_ = " + lin + ";\n";
  for (const Operand& o : ops) s += "  int " + o.name + " = " + pi(o.off_at) + ";\n";
  for (int k = rank - 1; k >= 0; --k) {
    std::string c = "c";
    c += std::to_string(k);
    const std::string size = pu(sizes_at + size_t(k));
    // (Built piecewise: GCC 12 warns falsely on "c" + std::to_string(k).)
    s.append("  uint ").append(c).append(" = rem_");
    if (k > 0) s.append(" % ").append(size).append(";\n  rem_ /= ").append(size);
    s.append(";\n");
    for (const Operand& o : ops)
      s.append("  ")
          .append(o.name)
          .append(" += int(")
          .append(c)
          .append(") * ")
          .append(pi(o.strides_at + size_t(k)))
          .append(";\n");
  }
  return s;
}

}  // namespace ember::codegen
