// The math of unary and binary kernels: one kir expression per op and dtype, with the ref
// backend's semantics (src/backends/ref/{unary,binary}.cpp). Floats compute in f32 (f16/bf16
// too) or f64; f64 math GLSL lacks comes from the kir library (kir_lib.h); float ops GLSL lacks
// (erf, erfinv, pow, atan2, hypot) are computed in f64 when the device has it, else by the
// library's f32 versions.
#include "codegen/elementwise_internal.h"
#include "codegen/kir_lib.h"

namespace ember::codegen {

using ir::BinaryOp;
using ir::UnaryOp;
using kir::Expr;
using kir::Fn;
using kir::Type;

uint32_t ew_local_size(const Caps& caps) {
  return caps.max_workgroup_size < 256 ? caps.max_workgroup_size : 256;
}

namespace {

bool is_signed_int(DType t) {
  return t == DType::i8 || t == DType::i16 || t == DType::i32 || t == DType::i64;
}

int bits_of(DType t) { return dtype_size(t) * 8; }

Expr lib(kir::Kernel& k, const std::string& name, std::vector<Expr> args) {
  return kir::library_call(k, name, std::move(args));
}

Expr fn_value(kir::Kernel& k, const std::string& n, DType t, Expr x, const Caps& caps);

// A float function in compute type: f64 from the library; f32 from the built-ins where the
// dialect has the function, else through f64 (when the device has it) or the float library.
// The odd functions (and expm1, log1p) give x itself at +-0: lavapipe's sinh/asinh/atanh/atan/
// erf and several of the f64 library's series lose the sign of -0 (ref, as C and torch:
// f(-0) = -0).
Expr fn(kir::Kernel& k, const char* name, DType t, Expr x, const Caps& caps) {
  const std::string n = name;
  static const char* kKeepsZero[] = {"sin",   "tan",   "asin", "atan",   "sinh",  "tanh",
                                     "asinh", "atanh", "erf",  "erfinv", "expm1", "log1p"};
  for (const char* z : kKeepsZero)
    if (n == z) return select(x == 0, x, fn_value(k, n, t, x, caps));
  return fn_value(k, n, t, x, caps);
}

Expr fn_value(kir::Kernel& k, const std::string& n, DType t, Expr x, const Caps& caps) {
  if (t == DType::f64) return lib(k, "ember_" + n + "_f64", {x});
  auto via_f64 = [&] {
    return kir::cast(Type::f32, lib(k, "ember_" + n + "_f64", {kir::cast(Type::f64, x)}));
  };
  // lavapipe's float asin/acos are off by up to 4e-4 and its asinh/acosh overflow past 1e19:
  // through the f64 library when the device has it
  if (caps.f64 && (n == "asin" || n == "acos" || n == "asinh" || n == "acosh")) return via_f64();
  if (n == "atan") return select(kir::call(Fn::isnan, {x}), x, kir::call(Fn::atan, {x}));
  static const struct {
    const char* name;
    Fn fn;
  } kBuiltin[] = {
      {"exp", Fn::exp},     {"exp2", Fn::exp2},   {"log", Fn::log},     {"log2", Fn::log2},
      {"sin", Fn::sin},     {"cos", Fn::cos},     {"tan", Fn::tan},     {"asin", Fn::asin},
      {"acos", Fn::acos},   {"sinh", Fn::sinh},   {"cosh", Fn::cosh},   {"tanh", Fn::tanh},
      {"asinh", Fn::asinh}, {"acosh", Fn::acosh}, {"atanh", Fn::atanh}, {"sqrt", Fn::sqrt}};
  for (const auto& b : kBuiltin)
    if (n == b.name) return kir::call(b.fn, {x});
  if (n == "expm1" || n == "log1p") return lib(k, "ember_" + n + "_f32", {x});
  if (n == "log10") return kir::call(Fn::log, {x}) * 0.4342944819;
  // erf, erfinv: f64 where the device has it (as before), else the f32 library (kir_lib_f32)
  return caps.f64 ? via_f64() : lib(k, "ember_" + n + "_f32", {x});
}

Expr param(DType t, uint32_t pbase, int i) {
  if (t == DType::f64) return kir::param_f64(pbase + 2 * uint32_t(i));
  return kir::param_f32(pbase + uint32_t(i));
}

Expr float_unary(kir::Kernel& k, UnaryOp op, DType t, Expr x, uint32_t pb, const Caps& caps) {
  const Type T = kir::compute_of(t);
  auto K = [&](double v) { return kir::lit(T, v); };
  auto F = [&](const char* n, Expr a) { return fn(k, n, t, a, caps); };
  auto P = [&](int i) { return param(t, pb, i); };
  switch (op) {
    case UnaryOp::neg:
      return -x;
    case UnaryOp::abs:
      return kir::call(Fn::abs, {x});
    case UnaryOp::sign:
      // +0 for +-0 and NaN, as ref and torch. Through an int: on lavapipe the same chain of
      // float selects (x > 0 ? 1 : x < 0 ? -1 : 0) gave -0 there
      return kir::cast(T, kir::cast(Type::i32, x > 0) - kir::cast(Type::i32, x < 0));
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
      return kir::call(Fn::sqrt, {x});
    case UnaryOp::rsqrt:
      return K(1) / kir::call(Fn::sqrt, {x});
    case UnaryOp::square:
      return x * x;
    case UnaryOp::reciprocal:
      return K(1) / x;
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
      return kir::call(Fn::floor, {x});
    case UnaryOp::ceil:
      return kir::call(Fn::ceil, {x});
    case UnaryOp::round:
      return kir::call(Fn::round_even, {x});
    case UnaryOp::trunc:
      return kir::call(Fn::trunc, {x});
    case UnaryOp::frac:
      return x - kir::call(Fn::trunc, {x});
    case UnaryOp::nan_to_num:
      return select(kir::call(Fn::isnan, {x}), P(0),
                    select(kir::call(Fn::isinf, {x}), select(x > 0, P(1), P(2)), x));
    case UnaryOp::relu:  // NaN and -0 pass through, as ref
      return select(x < 0, K(0), x);
    case UnaryOp::sigmoid:
      return K(1) / (K(1) + F("exp", -x));
    case UnaryOp::log_sigmoid:
      return kir::call(Fn::min, {x, K(0)}) - F("log1p", F("exp", -kir::call(Fn::abs, {x})));
    case UnaryOp::silu:
      return x / (K(1) + F("exp", -x));
    case UnaryOp::mish:
      return x * F("tanh", select(x > 20, x, F("log1p", F("exp", x))));
    case UnaryOp::gelu:
      return K(0.5) * x * (K(1) + F("erf", x * K(0.70710678118654752440)));
    case UnaryOp::gelu_tanh: {
      // tanh is exactly +-1 past |20| in f32 and f64: written out so -inf gives NaN on drivers
      // whose tanh stops short of -1 there (PoCL), as torch and ref.
      const Expr a = K(0.79788456080286535588) * (x + K(0.044715) * x * x * x);
      return K(0.5) * x * (K(1) + select(a >= 20, K(1), select(a <= -20, K(-1), F("tanh", a))));
    }
    case UnaryOp::selu:  // -0 gives +0, as ref
      return select(x > 0, K(1.0507009873554804934193349852946) * x,
                    select(x == 0, K(0),
                           K(1.0507009873554804934193349852946) *
                               K(1.6732632423543772848170429916717) * F("expm1", x)));
    // min(max(x + 3, 0), 6) as selects, so NaN propagates as ref (min/max may drop it)
    case UnaryOp::hardsigmoid:
    case UnaryOp::hardswish: {
      const Expr x3 = x + 3;
      const Expr lo = select(x3 < 0, K(0), x3);
      const Expr c = select(K(6) < lo, K(6), lo);
      if (op == UnaryOp::hardsigmoid) return c / 6;
      return x * c / 6;
    }
    case UnaryOp::elu:  // -0 gives +0, as ref
      return select(x > 0, x, select(x == 0, K(0), P(0) * F("expm1", x)));
    case UnaryOp::leaky_relu:
      return select(x > 0, x, P(0) * x);
    case UnaryOp::softplus: {
      const Expr beta = P(0);
      const Expr bx = beta * x;
      return select(bx > P(1), x, F("log1p", F("exp", bx)) / beta);
    }
    default:
      return x;
  }
}

Expr int_unary(UnaryOp op, DType t, Expr x, uint32_t pb, const Caps& caps) {
  const Type T = kir::compute_of(t);
  auto K = [&](double v) { return kir::lit(T, v); };
  const bool b = t == DType::b8, sgn = is_signed_int(t);
  switch (op) {
    case UnaryOp::neg:
      return b ? x : K(0) - x;
    case UnaryOp::abs:
      return sgn ? select(x < 0, -x, x) : x;
    case UnaryOp::sign:
      if (b) return x;
      if (sgn) return select(x > 0, K(1), select(x < 0, K(-1), K(0)));
      return select(x > 0, K(1), K(0));
    case UnaryOp::square:
      return b ? x : x * x;
    case UnaryOp::frac:
      return K(0);
    case UnaryOp::bitwise_not:
      return b ? !x : ~x;
    case UnaryOp::relu:
      return b ? x : select(x > 0, x, K(0));
    case UnaryOp::leaky_relu: {
      if (b) return x;
      // C(double(x) * p0): the product truncates toward zero
      const Expr prod = caps.f64 ? kir::cast(Type::f64, x) * kir::param_f64(pb)
                                 : kir::cast(Type::f32, x) * kir::param_f32(pb);
      return select(x > 0, x, kir::cast(T, prod));
    }
    default:
      return x;
  }
}

}  // namespace

Expr unary_expr(kir::Kernel& k, UnaryOp op, DType t, Expr x, uint32_t pbase, const Caps& caps) {
  const bool flt = is_floating(t);
  switch (op) {
    case UnaryOp::isnan:
      return flt ? kir::call(Fn::isnan, {x}) : kir::lit_bool(false);
    case UnaryOp::isinf:
      return flt ? kir::call(Fn::isinf, {x}) : kir::lit_bool(false);
    case UnaryOp::isfinite:
      return flt ? !kir::call(Fn::isnan, {x}) && !kir::call(Fn::isinf, {x}) : kir::lit_bool(true);
    case UnaryOp::logical_not:
      return t == DType::b8 ? !x : x == 0;
    default:
      break;
  }
  return flt ? float_unary(k, op, t, x, pbase, caps) : int_unary(op, t, x, pbase, caps);
}

namespace {

Expr compare_expr(BinaryOp op, DType t, Expr a, Expr b) {
  if (t == DType::b8) {  // bools compare as 0/1
    a = kir::cast(Type::u32, a);
    b = kir::cast(Type::u32, b);
  }
  const Expr na = !(a == 0), nb = !(b == 0);
  switch (op) {
    case BinaryOp::eq:
      return a == b;
    case BinaryOp::ne:
      return !(a == b);
    case BinaryOp::lt:
      return a < b;
    case BinaryOp::le:
      return a <= b;
    case BinaryOp::gt:
      return a > b;
    case BinaryOp::ge:
      return a >= b;
    case BinaryOp::logical_and:
      return na && nb;
    case BinaryOp::logical_or:
      return na || nb;
    default:  // logical_xor
      return na != nb;
  }
}

Expr float_binary(kir::Kernel& k, BinaryOp op, DType t, Expr a, Expr b, const Caps& caps) {
  const std::string sfx = t == DType::f64 ? "_f64" : "_f32";
  // functions the f32 built-ins lack go through f64 when the device has it, else through the
  // f32 library (pow, atan2, hypot; kir_lib_f32.cpp)
  auto via = [&](const char* n) {
    if (t == DType::f64) return lib(k, std::string("ember_") + n + "_f64", {a, b});
    if (!caps.f64) return lib(k, std::string("ember_") + n + "_f32", {a, b});
    return kir::cast(Type::f32, lib(k, std::string("ember_") + n + "_f64",
                                    {kir::cast(Type::f64, a), kir::cast(Type::f64, b)}));
  };
  switch (op) {
    case BinaryOp::add:
      return a + b;
    case BinaryOp::sub:
      return a - b;
    case BinaryOp::mul:
      return a * b;
    case BinaryOp::div:
      return a / b;
    case BinaryOp::div_floor:
      if (t != DType::f64 && caps.f64) return via("floordiv");
      return lib(k, "ember_floordiv" + sfx, {a, b});
    case BinaryOp::div_trunc:
      return kir::call(Fn::trunc, {a / b});
    // float fmod needs an exact fma, which lavapipe splits: float operands go through f64, where
    // k * |b| is exact for quotients below 2^29
    case BinaryOp::remainder:
      if (t != DType::f64 && caps.f64) return via("remainder");
      return lib(k, "ember_remainder" + sfx, {a, b});
    case BinaryOp::fmod:
      if (t != DType::f64 && caps.f64) return via("fmod");
      return lib(k, "ember_fmod" + sfx, {a, b});
    case BinaryOp::pow:
      return via("pow");
    case BinaryOp::atan2:
      return via("atan2");
    case BinaryOp::hypot:
      return via("hypot");
    // a tie (-0, +0) gives a, as ref (min/max leave it undefined)
    case BinaryOp::minimum:
      return select(kir::call(Fn::isnan, {a}) || kir::call(Fn::isnan, {b}), a + b,
                    select(b < a, b, a));
    case BinaryOp::maximum:
      return select(kir::call(Fn::isnan, {a}) || kir::call(Fn::isnan, {b}), a + b,
                    select(a < b, b, a));
    case BinaryOp::copysign:
      return lib(k, "ember_copysign" + sfx, {a, b});
    default:
      return a;
  }
}

Expr int_binary(kir::Kernel& k, BinaryOp op, DType t, Expr a, Expr b) {
  const Type T = kir::compute_of(t);
  auto K = [&](double v) { return kir::lit(T, v); };
  const bool sgn = is_signed_int(t);
  const Expr bz = b == 0;
  const Expr bm1 = sgn ? b == -1 : kir::lit_bool(false);
  // the divisor is made 1 where it is 0 or -1 (those lanes take other branches): a select may
  // evaluate both sides, and INT_MIN / -1 or x / 0 can trap on a CPU driver
  const Expr q = a / select(bz || bm1, K(1), b);
  const Expr rem = a - q * b;
  switch (op) {
    case BinaryOp::add:
      return a + b;
    case BinaryOp::sub:
      return a - b;
    case BinaryOp::mul:
      return a * b;
    case BinaryOp::div_trunc:
      // division by zero has no exception on a GPU: gives 0 (the ref backend throws)
      return select(bz, K(0), select(bm1, K(0) - a, q));
    case BinaryOp::div_floor:
      if (!sgn) return select(bz, K(0), q);
      return select(
          bz, K(0),
          select(bm1, K(0) - a, q - select(rem != 0 && ((a < 0) != (b < 0)), K(1), K(0))));
    case BinaryOp::remainder:
      if (!sgn) return select(bz, K(0), rem);
      return select(bz || bm1, K(0), select(rem != 0 && ((rem < 0) != (b < 0)), rem + b, rem));
    case BinaryOp::fmod:
      return select(bz || bm1, K(0), rem);
    case BinaryOp::pow: {
      static const char* kNames[] = {"int", "uint", "i64", "u64"};
      const int i = T == Type::i32 ? 0 : T == Type::u32 ? 1 : T == Type::i64 ? 2 : 3;
      return lib(k, std::string("ember_ipow_") + kNames[i], {a, b});
    }
    case BinaryOp::minimum:
      return select(a < b, a, b);
    case BinaryOp::maximum:
      return select(a > b, a, b);
    case BinaryOp::bitwise_and:
      return a & b;
    case BinaryOp::bitwise_or:
      return a | b;
    case BinaryOp::bitwise_xor:
      return a ^ b;
    case BinaryOp::shift_left:
    case BinaryOp::shift_right: {
      const Expr out = sgn ? (b < 0 || b >= bits_of(t)) : b >= bits_of(t);
      const Expr sh = kir::cast(Type::i32, select(out, K(0), b));
      if (op == BinaryOp::shift_left) return select(out, K(0), a << sh);
      const Expr fill = sgn ? select(a < 0, K(-1), K(0)) : K(0);
      return select(out, fill, a >> sh);
    }
    default:
      return a;
  }
}

Expr bool_binary(BinaryOp op, Expr a, Expr b) {
  switch (op) {
    case BinaryOp::add:
    case BinaryOp::bitwise_or:
    case BinaryOp::maximum:
      return a || b;
    case BinaryOp::mul:
    case BinaryOp::bitwise_and:
    case BinaryOp::minimum:
      return a && b;
    case BinaryOp::bitwise_xor:
    case BinaryOp::sub:
      return a != b;
    default:
      return a;
  }
}

}  // namespace

Expr binary_expr(kir::Kernel& k, BinaryOp op, DType t, Expr a, Expr b, const Caps& caps) {
  if (ir::traits(op).predicate) return compare_expr(op, t, a, b);
  if (t == DType::b8) return bool_binary(op, a, b);
  if (is_floating(t)) return float_binary(k, op, t, a, b, caps);
  return int_binary(k, op, t, a, b);
}

}  // namespace ember::codegen
