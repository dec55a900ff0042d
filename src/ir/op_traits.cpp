#include "ir/op_traits.h"

#include <iterator>

#include "ember/error.h"

namespace ember::ir {

namespace {

using R = DTypeRule;
using U = UnaryOp;
using B = BinaryOp;

constexpr UnaryTraits kUnary[] = {
    {U::neg, "neg", "neg", R::no_bool, false},
    {U::abs, "abs", "abs", R::no_bool, false},
    {U::sign, "sign", "sign", R::any, false},
    {U::exp, "exp", "exp", R::to_float, false},
    {U::exp2, "exp2", "exp2", R::to_float, false},
    {U::expm1, "expm1", "expm1", R::to_float, false},
    {U::log, "log", "log", R::to_float, false},
    {U::log2, "log2", "log2", R::to_float, false},
    {U::log10, "log10", "log10", R::to_float, false},
    {U::log1p, "log1p", "log1p", R::to_float, false},
    {U::sqrt, "sqrt", "sqrt", R::to_float, false},
    {U::rsqrt, "rsqrt", "rsqrt", R::to_float, false},
    {U::square, "square", "square", R::bool_to_i64, false},
    {U::reciprocal, "reciprocal", "reciprocal", R::to_float, false},
    {U::sin, "sin", "sin", R::to_float, false},
    {U::cos, "cos", "cos", R::to_float, false},
    {U::tan, "tan", "tan", R::to_float, false},
    {U::asin, "asin", "asin", R::to_float, false},
    {U::acos, "acos", "acos", R::to_float, false},
    {U::atan, "atan", "atan", R::to_float, false},
    {U::sinh, "sinh", "sinh", R::to_float, false},
    {U::cosh, "cosh", "cosh", R::to_float, false},
    {U::tanh, "tanh", "tanh", R::to_float, false},
    {U::asinh, "asinh", "asinh", R::to_float, false},
    {U::acosh, "acosh", "acosh", R::to_float, false},
    {U::atanh, "atanh", "atanh", R::to_float, false},
    {U::erf, "erf", "erf", R::to_float, false},
    {U::erfinv, "erfinv", "erfinv", R::to_float, false},
    {U::floor, "floor", "floor", R::any, false},
    {U::ceil, "ceil", "ceil", R::any, false},
    {U::round, "round", "round", R::any, false},
    {U::trunc, "trunc", "trunc", R::any, false},
    {U::frac, "frac", "frac", R::float_only, false},
    {U::bitwise_not, "bitwise_not", "bitwise_not", R::int_or_bool, false},
    {U::logical_not, "logical_not", "logical_not", R::any, true},
    {U::isnan, "isnan", "isnan", R::any, true},
    {U::isinf, "isinf", "isinf", R::any, true},
    {U::isfinite, "isfinite", "isfinite", R::any, true},
    {U::nan_to_num, "nan_to_num", "nan_to_num", R::any, false},
    {U::relu, "relu", "relu", R::no_bool, false},
    {U::sigmoid, "sigmoid", "sigmoid", R::to_float, false},
    {U::log_sigmoid, "log_sigmoid", "log_sigmoid", R::to_float, false},
    {U::silu, "silu", "silu", R::to_float, false},
    {U::mish, "mish", "mish", R::to_float, false},
    {U::gelu, "gelu", "gelu", R::to_float, false},
    {U::gelu_tanh, "gelu_tanh", "gelu", R::to_float, false},
    {U::selu, "selu", "selu", R::to_float, false},
    {U::hardsigmoid, "hardsigmoid", "hardsigmoid", R::to_float, false},
    {U::hardswish, "hardswish", "hardswish", R::to_float, false},
    {U::elu, "elu", "elu", R::to_float, false},
    {U::leaky_relu, "leaky_relu", "leaky_relu", R::float_only, false},
    {U::softplus, "softplus", "softplus", R::to_float, false},
};

constexpr BinaryTraits kBinary[] = {
    {B::add, "add", "add", "", R::any, false, ""},
    {B::sub, "sub", "sub", "", R::no_bool, false, "; use logical_xor"},
    {B::mul, "mul", "mul", "", R::any, false, ""},
    {B::div, "div", "div", "", R::to_float, false, ""},
    {B::div_floor, "div_floor", "div", "rounding_mode='floor'", R::no_bool, false, ""},
    {B::div_trunc, "div_trunc", "div", "rounding_mode='trunc'", R::no_bool, false, ""},
    {B::remainder, "remainder", "remainder", "", R::no_bool, false, ""},
    {B::fmod, "fmod", "fmod", "", R::no_bool, false, ""},
    {B::pow, "pow", "pow", "", R::no_bool, false, ""},
    {B::atan2, "atan2", "atan2", "", R::to_float, false, ""},
    {B::hypot, "hypot", "hypot", "", R::to_float, false, ""},
    {B::minimum, "minimum", "minimum", "", R::any, false, ""},
    {B::maximum, "maximum", "maximum", "", R::any, false, ""},
    {B::copysign, "copysign", "copysign", "", R::to_float, false, ""},
    {B::bitwise_and, "bitwise_and", "bitwise_and", "", R::int_or_bool, false, ""},
    {B::bitwise_or, "bitwise_or", "bitwise_or", "", R::int_or_bool, false, ""},
    {B::bitwise_xor, "bitwise_xor", "bitwise_xor", "", R::int_or_bool, false, ""},
    {B::shift_left, "bitwise_left_shift", "bitwise_left_shift", "", R::int_only, false, ""},
    {B::shift_right, "bitwise_right_shift", "bitwise_right_shift", "", R::int_only, false, ""},
    {B::eq, "eq", "eq", "", R::any, true, ""},
    {B::ne, "ne", "ne", "", R::any, true, ""},
    {B::lt, "lt", "lt", "", R::any, true, ""},
    {B::le, "le", "le", "", R::any, true, ""},
    {B::gt, "gt", "gt", "", R::any, true, ""},
    {B::ge, "ge", "ge", "", R::any, true, ""},
    {B::logical_and, "logical_and", "logical_and", "", R::any, true, ""},
    {B::logical_or, "logical_or", "logical_or", "", R::any, true, ""},
    {B::logical_xor, "logical_xor", "logical_xor", "", R::any, true, ""},
};

// Row i describes enumerator i: traits() indexes the tables by the enum's value.
template <typename T, size_t N>
constexpr bool in_enum_order(const T (&rows)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (size_t(rows[i].op) != i) return false;
  return true;
}
static_assert(std::size(kUnary) == kUnaryOpCount, "one row per UnaryOp");
static_assert(std::size(kBinary) == kBinaryOpCount, "one row per BinaryOp");
static_assert(in_enum_order(kUnary), "kUnary rows follow UnaryOp's order");
static_assert(in_enum_order(kBinary), "kBinary rows follow BinaryOp's order");

}  // namespace

// An enumerator appended after the last one, with neither a row nor a new count, fails here.
const UnaryTraits& traits(UnaryOp op) {
  EMBER_CHECK(size_t(op) < kUnaryOpCount, "op_traits", "UnaryOp ", int(op),
              " has no row in src/ir/op_traits.cpp");
  return kUnary[size_t(op)];
}
const BinaryTraits& traits(BinaryOp op) {
  EMBER_CHECK(size_t(op) < kBinaryOpCount, "op_traits", "BinaryOp ", int(op),
              " has no row in src/ir/op_traits.cpp");
  return kBinary[size_t(op)];
}

const char* name(UnaryOp op) { return traits(op).name; }
const char* name(BinaryOp op) { return traits(op).name; }
const char* user_name(UnaryOp op) { return traits(op).user_name; }
const char* user_name(BinaryOp op) { return traits(op).user_name; }
const char* user_variant(BinaryOp op) { return traits(op).variant; }

const char* rejects(DTypeRule rule, DType t) {
  switch (rule) {
    case R::float_only:
      return is_floating(t) ? nullptr : "expects a floating-point tensor";
    case R::no_bool:
      return is_bool(t) ? "is not supported for bool tensors" : nullptr;
    case R::int_or_bool:
      return is_floating(t) ? "is only supported for integer and bool tensors" : nullptr;
    case R::int_only:
      return is_integral(t) ? nullptr : "is only supported for integer tensors";
    default:
      return nullptr;
  }
}

DType compute_dtype(DTypeRule rule, DType t) {
  switch (rule) {
    case R::to_float:
      return is_floating(t) ? t : kDefaultFloat;
    case R::bool_to_i64:
      return is_bool(t) ? DType::i64 : t;
    default:
      return t;
  }
}

}  // namespace ember::ir
