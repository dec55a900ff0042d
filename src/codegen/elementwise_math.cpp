// The math of unary and binary kernels: one expression per op and dtype in the kernel language,
// with the ref backend's semantics (src/backends/ref/{unary,binary}.cpp). Floats compute in
// float (f16/bf16 too) or f64; f64 math GLSL lacks comes from math_f64.cpp; float ops GLSL lacks
// (erf, erfinv, pow, atan2, hypot) are computed in f64 when the device has it.
#include <cstdio>

// GCC 12 warns falsely on "literal" + std::string chains (GCC bug 105329).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include "codegen/elementwise_internal.h"
#include "ember/error.h"

namespace ember::codegen {

using ir::BinaryOp;
using ir::UnaryOp;

std::string lit(DType t, double v) {
  char buf[48];
  switch (t) {
    case DType::f64:
      std::snprintf(buf, sizeof buf, "%.17elf", v);
      return buf;
    case DType::f32:
    case DType::f16:
    case DType::bf16:
      std::snprintf(buf, sizeof buf, "%.9e", v);
      return buf;
    case DType::i64:
      return std::to_string(int64_t(v)) + "l";
    case DType::u64:
      return std::to_string(uint64_t(v)) + "ul";
    case DType::u8:
    case DType::u16:
    case DType::u32:
      return std::to_string(uint32_t(v)) + "u";
    case DType::b8:
      return v != 0 ? "true" : "false";
    default:
      return std::to_string(int32_t(v));
  }
}

uint32_t ew_local_size(const Caps& caps) {
  return caps.max_workgroup_size < 256 ? caps.max_workgroup_size : 256;
}

namespace {

bool is_signed_int(DType t) {
  return t == DType::i8 || t == DType::i16 || t == DType::i32 || t == DType::i64;
}

int bits_of(DType t) { return dtype_size(t) * 8; }

std::string fn_value(const std::string& n, DType t, const std::string& x, const Caps& caps,
                     UnaryOp op);

// A float function in compute_type(t): f64 from the library; float from GLSL where it has the
// function, else through f64 (when the device has it) or the float library. The odd functions
// (and expm1, log1p) give x itself at +-0: lavapipe's sinh/asinh/atanh/atan/erf and several of
// the f64 library's series lose the sign of -0 (ref, as C and torch: f(-0) = -0).
// `op` names the public op in errors.
std::string fn(const char* name, DType t, const std::string& x, const Caps& caps, UnaryOp op) {
  const std::string n = name;
  static const char* kKeepsZero[] = {"sin",   "tan",   "asin", "atan",   "sinh",  "tanh",
                                     "asinh", "atanh", "erf",  "erfinv", "expm1", "log1p"};
  for (const char* k : kKeepsZero)
    if (n == k)
      return "(" + x + " == " + lit(t, 0) + " ? " + x + " : " + fn_value(n, t, x, caps, op) + ")";
  return fn_value(n, t, x, caps, op);
}

std::string fn_value(const std::string& n, DType t, const std::string& x, const Caps& caps,
                     UnaryOp op) {
  if (t == DType::f64) return "ember_" + n + "_f64(" + x + ")";
  // lavapipe's float asin/acos are off by up to 4e-4 and its asinh/acosh overflow past 1e19:
  // through the f64 library when the device has it
  if (caps.f64 && (n == "asin" || n == "acos" || n == "asinh" || n == "acosh"))
    return "float(ember_" + n + "_f64(f64(" + x + ")))";
  if (n == "atan") return "(isnan(" + x + ") ? " + x + " : atan(" + x + "))";  // atan(NaN) was 0
  static const char* kBuiltin[] = {"exp",  "exp2",  "log",   "log2",  "sin",  "cos",
                                   "tan",  "asin",  "acos",  "atan",  "sinh", "cosh",
                                   "tanh", "asinh", "acosh", "atanh", "sqrt"};
  for (const char* b : kBuiltin)
    if (n == b) return n + "(" + x + ")";
  if (n == "expm1" || n == "log1p") return "ember_" + n + "_f32(" + x + ")";
  if (n == "log10") return "(log(" + x + ") * 0.4342944819)";
  if (!caps.f64)
    EMBER_FAIL(ir::user_name(op), dtype_name(t), " needs shaderFloat64 on this backend (for ", n,
               ")");
  return "float(ember_" + n + "_f64(f64(" + x + ")))";
}

std::string param(DType t, uint32_t pbase, int k) {
  if (t == DType::f64) return "P_D(" + std::to_string(pbase + 2 * k) + ")";
  return "P_F(" + std::to_string(pbase + k) + ")";
}

std::string float_unary(UnaryOp op, DType t, const std::string& x, uint32_t pb, const Caps& caps) {
  auto K = [&](double v) { return lit(t, v); };
  auto F = [&](const char* n, const std::string& a) { return fn(n, t, a, caps, op); };
  const std::string T = compute_type(t);
  switch (op) {
    case UnaryOp::neg:
      return "(-" + x + ")";
    case UnaryOp::abs:
      return "abs(" + x + ")";
    case UnaryOp::sign:
      // +0 for +-0 and NaN, as ref and torch. Through an int: on lavapipe the same chain of
      // float selects (x > 0 ? 1 : x < 0 ? -1 : 0) gave -0 there
      return T + "(int(" + x + " > " + K(0) + ") - int(" + x + " < " + K(0) + "))";
    case UnaryOp::exp:
      return F("exp", x);
    case UnaryOp::exp2:
      return F("exp2", x);
    case UnaryOp::expm1:
      return F("expm1", x);
    case UnaryOp::log:
      return F("log", x);
    case UnaryOp::log2:
      return F("log2", x);
    case UnaryOp::log10:
      return F("log10", x);
    case UnaryOp::log1p:
      return F("log1p", x);
    case UnaryOp::sqrt:
      return "sqrt(" + x + ")";
    case UnaryOp::rsqrt:
      return "(" + K(1) + " / sqrt(" + x + "))";
    case UnaryOp::square:
      return "(" + x + " * " + x + ")";
    case UnaryOp::reciprocal:
      return "(" + K(1) + " / " + x + ")";
    case UnaryOp::sin:
      return F("sin", x);
    case UnaryOp::cos:
      return F("cos", x);
    case UnaryOp::tan:
      return F("tan", x);
    case UnaryOp::asin:
      return F("asin", x);
    case UnaryOp::acos:
      return F("acos", x);
    case UnaryOp::atan:
      return F("atan", x);
    case UnaryOp::sinh:
      return F("sinh", x);
    case UnaryOp::cosh:
      return F("cosh", x);
    case UnaryOp::tanh:
      return F("tanh", x);
    case UnaryOp::asinh:
      return F("asinh", x);
    case UnaryOp::acosh:
      return F("acosh", x);
    case UnaryOp::atanh:
      return F("atanh", x);
    case UnaryOp::erf:
      return F("erf", x);
    case UnaryOp::erfinv:
      return F("erfinv", x);
    case UnaryOp::floor:
      return "floor(" + x + ")";
    case UnaryOp::ceil:
      return "ceil(" + x + ")";
    case UnaryOp::round:
      return "roundEven(" + x + ")";
    case UnaryOp::trunc:
      return "trunc(" + x + ")";
    case UnaryOp::frac:
      return "(" + x + " - trunc(" + x + "))";
    case UnaryOp::nan_to_num:
      return "(isnan(" + x + ") ? " + T + "(" + param(t, pb, 0) + ") : (isinf(" + x + ") ? (" + x +
             " > " + K(0) + " ? " + T + "(" + param(t, pb, 1) + ") : " + T + "(" + param(t, pb, 2) +
             ")) : " + x + "))";
    case UnaryOp::relu:  // NaN and -0 pass through, as ref
      return "(" + x + " < " + K(0) + " ? " + K(0) + " : " + x + ")";
    case UnaryOp::sigmoid:
      return "(" + K(1) + " / (" + K(1) + " + " + F("exp", "-" + x) + "))";
    case UnaryOp::log_sigmoid:
      return "(min(" + x + ", " + K(0) + ") - " + F("log1p", F("exp", "-abs(" + x + ")")) + ")";
    case UnaryOp::silu:
      return "(" + x + " / (" + K(1) + " + " + F("exp", "-" + x) + "))";
    case UnaryOp::mish:
      return "(" + x + " * " +
             F("tanh",
               "(" + x + " > " + K(20) + " ? " + x + " : " + F("log1p", F("exp", x)) + ")") +
             ")";
    case UnaryOp::gelu:
      return "(" + K(0.5) + " * " + x + " * (" + K(1) + " + " +
             F("erf", x + " * " + K(0.70710678118654752440)) + "))";
    case UnaryOp::gelu_tanh: {
      // tanh is exactly +-1 past |20| in f32 and f64: written out so -inf gives NaN on drivers
      // whose tanh stops short of -1 there (PoCL), as torch and ref.
      const std::string a = "(" + K(0.79788456080286535588) + " * (" + x + " + " + K(0.044715) +
                            " * " + x + " * " + x + " * " + x + "))";
      return "(" + K(0.5) + " * " + x + " * (" + K(1) + " + (" + a + " >= " + K(20) + " ? " + K(1) +
             " : " + a + " <= " + K(-20) + " ? " + K(-1) + " : " + F("tanh", a) + ")))";
    }
    case UnaryOp::selu:  // -0 gives +0, as ref
      return "(" + x + " > " + K(0) + " ? " + K(1.0507009873554804934193349852946) + " * " + x +
             " : (" + x + " == " + K(0) + " ? " + K(0) + " : " +
             K(1.0507009873554804934193349852946) + " * " + K(1.6732632423543772848170429916717) +
             " * " + F("expm1", x) + "))";
    // min(max(x + 3, 0), 6) as selects, so NaN propagates as ref (GLSL's min/max may drop it)
    case UnaryOp::hardsigmoid:
    case UnaryOp::hardswish: {
      const std::string x3 = "(" + x + " + " + K(3) + ")";
      const std::string lo = "(" + x3 + " < " + K(0) + " ? " + K(0) + " : " + x3 + ")";
      const std::string c = "(" + K(6) + " < " + lo + " ? " + K(6) + " : " + lo + ")";
      if (op == UnaryOp::hardsigmoid) return "(" + c + " / " + K(6) + ")";
      return "(" + x + " * " + c + " / " + K(6) + ")";
    }
    case UnaryOp::elu:  // -0 gives +0, as ref
      return "(" + x + " > " + K(0) + " ? " + x + " : (" + x + " == " + K(0) + " ? " + K(0) +
             " : " + T + "(" + param(t, pb, 0) + ") * " + F("expm1", x) + "))";
    case UnaryOp::leaky_relu:
      return "(" + x + " > " + K(0) + " ? " + x + " : " + T + "(" + param(t, pb, 0) + ") * " + x +
             ")";
    case UnaryOp::softplus: {
      const std::string beta = T + "(" + param(t, pb, 0) + ")";
      const std::string bx = "(" + beta + " * " + x + ")";
      return "(" + bx + " > " + T + "(" + param(t, pb, 1) + ") ? " + x + " : " +
             F("log1p", F("exp", bx)) + " / " + beta + ")";
    }
    default:
      return x;
  }
}

std::string int_unary(UnaryOp op, DType t, const std::string& x, uint32_t pb, const Caps& caps) {
  auto K = [&](double v) { return lit(t, v); };
  const std::string T = compute_type(t);
  const bool b = t == DType::b8, sgn = is_signed_int(t);
  switch (op) {
    case UnaryOp::neg:
      if (b) return x;
      return std::string("(") + K(0) + " - " + x + ")";
    case UnaryOp::abs:
      return sgn ? "(" + x + " < " + K(0) + " ? -" + x + " : " + x + ")" : x;
    case UnaryOp::sign:
      if (b) return x;
      if (sgn)
        return "(" + x + " > " + K(0) + " ? " + K(1) + " : (" + x + " < " + K(0) + " ? " + K(-1) +
               " : " + K(0) + "))";
      return "(" + x + " > " + K(0) + " ? " + K(1) + " : " + K(0) + ")";
    case UnaryOp::square:
      return b ? x : "(" + x + " * " + x + ")";
    case UnaryOp::frac:
      return K(0);
    case UnaryOp::bitwise_not:
      return b ? "(!" + x + ")" : "(~" + x + ")";
    case UnaryOp::relu:
      return b ? x : "(" + x + " > " + K(0) + " ? " + x + " : " + K(0) + ")";
    case UnaryOp::leaky_relu: {
      if (b) return x;
      // C(double(x) * p0): the product truncates toward zero
      const std::string prod = caps.f64 ? "(f64(" + x + ") * P_D(" + std::to_string(pb) + "))"
                                        : "(float(" + x + ") * P_F(" + std::to_string(pb) + "))";
      return "(" + x + " > " + K(0) + " ? " + x + " : " + T + "(" + prod + "))";
    }
    default:
      return x;
  }
}

}  // namespace

std::string unary_expr(UnaryOp op, DType t, const std::string& x, uint32_t pbase,
                       const Caps& caps) {
  const bool flt = is_floating(t);
  switch (op) {
    case UnaryOp::isnan:
      return flt ? "isnan(" + x + ")" : "false";
    case UnaryOp::isinf:
      return flt ? "isinf(" + x + ")" : "false";
    case UnaryOp::isfinite:
      return flt ? "(!isnan(" + x + ") && !isinf(" + x + "))" : "true";
    case UnaryOp::logical_not:
      return t == DType::b8 ? "(!" + x + ")" : "(" + x + " == " + lit(t, 0) + ")";
    default:
      break;
  }
  return flt ? float_unary(op, t, x, pbase, caps) : int_unary(op, t, x, pbase, caps);
}

namespace {

std::string compare_expr(BinaryOp op, DType t, const std::string& a0, const std::string& b0) {
  // bools compare as 0/1
  const std::string a = t == DType::b8 ? "uint(" + a0 + ")" : a0;
  const std::string b = t == DType::b8 ? "uint(" + b0 + ")" : b0;
  const std::string z = t == DType::b8 ? "0u" : lit(t, 0);
  const std::string na = "!(" + a + " == " + z + ")", nb = "!(" + b + " == " + z + ")";
  switch (op) {
    case BinaryOp::eq:
      return "(" + a + " == " + b + ")";
    case BinaryOp::ne:
      return "!(" + a + " == " + b + ")";
    case BinaryOp::lt:
      return "(" + a + " < " + b + ")";
    case BinaryOp::le:
      return "(" + a + " <= " + b + ")";
    case BinaryOp::gt:
      return "(" + a + " > " + b + ")";
    case BinaryOp::ge:
      return "(" + a + " >= " + b + ")";
    case BinaryOp::logical_and:
      return "(" + na + " && " + nb + ")";
    case BinaryOp::logical_or:
      return "(" + na + " || " + nb + ")";
    default:  // logical_xor
      return "(" + na + " != " + nb + ")";
  }
}

std::string float_binary(BinaryOp op, DType t, const std::string& a, const std::string& b,
                         const Caps& caps) {
  const std::string sfx = t == DType::f64 ? "_f64" : "_f32";
  // functions GLSL's float lacks go through f64 when the device has it
  auto via = [&](const char* n) {
    if (t == DType::f64) return std::string("ember_") + n + "_f64(" + a + ", " + b + ")";
    if (!caps.f64)
      EMBER_FAIL(ir::user_name(op), *ir::user_variant(op) ? ir::user_variant(op) : "",
                 *ir::user_variant(op) ? " " : "", "on ", dtype_name(t),
                 " needs shaderFloat64 on this backend (for ", n, ")");
    return std::string("float(ember_") + n + "_f64(f64(" + a + "), f64(" + b + ")))";
  };
  switch (op) {
    case BinaryOp::add:
      return "(" + a + " + " + b + ")";
    case BinaryOp::sub:
      return "(" + a + " - " + b + ")";
    case BinaryOp::mul:
      return "(" + a + " * " + b + ")";
    case BinaryOp::div:
      return "(" + a + " / " + b + ")";
    case BinaryOp::div_floor:
      if (t != DType::f64 && caps.f64) return via("floordiv");
      return "ember_floordiv" + sfx + "(" + a + ", " + b + ")";
    case BinaryOp::div_trunc:
      return "trunc(" + a + " / " + b + ")";
    // float fmod needs an exact fma, which lavapipe splits: float operands go through f64, where
    // k * |b| is exact for quotients below 2^29
    case BinaryOp::remainder:
      if (t != DType::f64 && caps.f64) return via("remainder");
      return "ember_remainder" + sfx + "(" + a + ", " + b + ")";
    case BinaryOp::fmod:
      if (t != DType::f64 && caps.f64) return via("fmod");
      return "ember_fmod" + sfx + "(" + a + ", " + b + ")";
    case BinaryOp::pow:
      return via("pow");
    case BinaryOp::atan2:
      return via("atan2");
    case BinaryOp::hypot:
      return via("hypot");
    // a tie (-0, +0) gives a, as ref (GLSL's min/max leave it undefined)
    case BinaryOp::minimum:
      return "((isnan(" + a + ") || isnan(" + b + ")) ? " + a + " + " + b + " : (" + b + " < " + a +
             " ? " + b + " : " + a + "))";
    case BinaryOp::maximum:
      return "((isnan(" + a + ") || isnan(" + b + ")) ? " + a + " + " + b + " : (" + a + " < " + b +
             " ? " + b + " : " + a + "))";
    case BinaryOp::copysign:
      return "ember_copysign" + sfx + "(" + a + ", " + b + ")";
    default:
      return a;
  }
}

std::string int_binary(BinaryOp op, DType t, const std::string& a, const std::string& b) {
  auto K = [&](double v) { return lit(t, v); };
  const bool sgn = is_signed_int(t);
  const std::string T = compute_type(t);
  const std::string bz = "(" + b + " == " + K(0) + ")";
  const std::string bm1 = sgn ? "(" + b + " == " + K(-1) + ")" : "false";
  // the divisor is made 1 where it is 0 or -1 (those lanes take other branches): a select may
  // evaluate both sides, and INT_MIN / -1 or x / 0 can trap on a CPU driver
  const std::string q = "(" + a + " / ((" + bz + " || " + bm1 + ") ? " + K(1) + " : " + b + "))";
  const std::string rem = "(" + a + " - " + q + " * " + b + ")";
  switch (op) {
    case BinaryOp::add:
      return "(" + a + " + " + b + ")";
    case BinaryOp::sub:
      return "(" + a + " - " + b + ")";
    case BinaryOp::mul:
      return "(" + a + " * " + b + ")";
    case BinaryOp::div_trunc:
      // division by zero has no exception on a GPU: gives 0 (the ref backend throws)
      return "(" + bz + " ? " + K(0) + " : (" + bm1 + " ? " + K(0) + " - " + a + " : " + q + "))";
    case BinaryOp::div_floor:
      if (!sgn) return "(" + bz + " ? " + K(0) + " : " + q + ")";
      return "(" + bz + " ? " + K(0) + " : (" + bm1 + " ? " + K(0) + " - " + a + " : (" + q +
             " - ((" + rem + " != " + K(0) + " && ((" + a + " < " + K(0) + ") != (" + b + " < " +
             K(0) + "))) ? " + K(1) + " : " + K(0) + "))))";
    case BinaryOp::remainder:
      if (!sgn) return "(" + bz + " ? " + K(0) + " : " + rem + ")";
      return "((" + bz + " || " + bm1 + ") ? " + K(0) + " : ((" + rem + " != " + K(0) + " && ((" +
             rem + " < " + K(0) + ") != (" + b + " < " + K(0) + "))) ? " + rem + " + " + b + " : " +
             rem + "))";
    case BinaryOp::fmod:
      return "((" + bz + " || " + bm1 + ") ? " + K(0) + " : " + rem + ")";
    case BinaryOp::pow:
      return "ember_ipow_" + T + "(" + a + ", " + b + ")";
    case BinaryOp::minimum:
      return "(" + a + " < " + b + " ? " + a + " : " + b + ")";
    case BinaryOp::maximum:
      return "(" + a + " > " + b + " ? " + a + " : " + b + ")";
    case BinaryOp::bitwise_and:
      return "(" + a + " & " + b + ")";
    case BinaryOp::bitwise_or:
      return "(" + a + " | " + b + ")";
    case BinaryOp::bitwise_xor:
      return "(" + a + " ^ " + b + ")";
    case BinaryOp::shift_left:
    case BinaryOp::shift_right: {
      std::string out = "(";
      if (sgn) out += b + " < " + K(0) + " || ";
      out += b + " >= " + K(bits_of(t)) + ")";
      const std::string sh = "int(" + out + " ? " + K(0) + " : " + b + ")";
      if (op == BinaryOp::shift_left)
        return "(" + out + " ? " + K(0) + " : (" + a + " << " + sh + "))";
      const std::string fill =
          sgn ? "(" + a + " < " + K(0) + " ? " + K(-1) + " : " + K(0) + ")" : K(0);
      return "(" + out + " ? " + fill + " : (" + a + " >> " + sh + "))";
    }
    default:
      return a;
  }
}

std::string bool_binary(BinaryOp op, const std::string& a, const std::string& b) {
  switch (op) {
    case BinaryOp::add:
    case BinaryOp::bitwise_or:
    case BinaryOp::maximum:
      return "(" + a + " || " + b + ")";
    case BinaryOp::mul:
    case BinaryOp::bitwise_and:
    case BinaryOp::minimum:
      return "(" + a + " && " + b + ")";
    case BinaryOp::bitwise_xor:
    case BinaryOp::sub:
      return "(" + a + " != " + b + ")";
    default:
      return a;
  }
}

}  // namespace

std::string binary_expr(BinaryOp op, DType t, const std::string& a, const std::string& b,
                        const Caps& caps) {
  if (ir::traits(op).predicate) return compare_expr(op, t, a, b);
  if (t == DType::b8) return bool_binary(op, a, b);
  if (is_floating(t)) return float_binary(op, t, a, b, caps);
  return int_binary(op, t, a, b);
}

}  // namespace ember::codegen
