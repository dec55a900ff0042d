#include "ir/ops.h"

namespace ember::ir {

const char* name(UnaryOp op) {
  static const char* const kNames[] = {
      "neg",   "abs",        "sign",     "exp",        "exp2",  "expm1",       "log",
      "log2",  "log10",      "log1p",    "sqrt",       "rsqrt", "square",      "reciprocal",
      "sin",   "cos",        "tan",      "asin",       "acos",  "atan",        "sinh",
      "cosh",  "tanh",       "asinh",    "acosh",      "atanh", "erf",         "erfinv",
      "floor", "ceil",       "round",    "trunc",      "frac",  "bitwise_not", "logical_not",
      "isnan", "isinf",      "isfinite", "nan_to_num", "relu",  "sigmoid",     "log_sigmoid",
      "silu",  "mish",       "gelu",     "gelu_tanh",  "selu",  "hardsigmoid", "hardswish",
      "elu",   "leaky_relu", "softplus"};
  return kNames[int(op)];
}

const char* name(BinaryOp op) {
  static const char* const kNames[] = {"add",
                                       "sub",
                                       "mul",
                                       "div",
                                       "div_floor",
                                       "div_trunc",
                                       "remainder",
                                       "fmod",
                                       "pow",
                                       "atan2",
                                       "hypot",
                                       "minimum",
                                       "maximum",
                                       "copysign",
                                       "bitwise_and",
                                       "bitwise_or",
                                       "bitwise_xor",
                                       "bitwise_left_shift",
                                       "bitwise_right_shift",
                                       "eq",
                                       "ne",
                                       "lt",
                                       "le",
                                       "gt",
                                       "ge",
                                       "logical_and",
                                       "logical_or",
                                       "logical_xor"};
  return kNames[int(op)];
}

const char* user_name(UnaryOp op) { return op == UnaryOp::gelu_tanh ? "gelu" : name(op); }

const char* user_name(BinaryOp op) {
  return op == BinaryOp::div_floor || op == BinaryOp::div_trunc ? "div" : name(op);
}

const char* user_variant(BinaryOp op) {
  if (op == BinaryOp::div_floor) return "rounding_mode='floor'";
  if (op == BinaryOp::div_trunc) return "rounding_mode='trunc'";
  return "";
}

namespace {
struct Namer {
  const char* operator()(const Copy&) const { return "copy"; }
  const char* operator()(const Fill&) const { return "fill"; }
  const char* operator()(const Unary& o) const { return name(o.op); }
  const char* operator()(const Binary& o) const { return name(o.op); }
  const char* operator()(const Where&) const { return "where"; }
  const char* operator()(const Reduce&) const { return "reduce"; }
  const char* operator()(const Scan&) const { return "scan"; }
  const char* operator()(const Sort&) const { return "sort"; }
  const char* operator()(const Gather&) const { return "gather"; }
  const char* operator()(const Scatter&) const { return "scatter"; }
  const char* operator()(const IndexSelect&) const { return "index_select"; }
  const char* operator()(const IndexAdd&) const { return "index_add"; }
  const char* operator()(const Nonzero&) const { return "nonzero"; }
  const char* operator()(const Matmul&) const { return "matmul"; }
  const char* operator()(const Im2col&) const { return "im2col"; }
  const char* operator()(const Col2im&) const { return "col2im"; }
  const char* operator()(const AdaptivePool&) const { return "adaptive_pool"; }
  const char* operator()(const Interpolate&) const { return "interpolate"; }
  const char* operator()(const Random&) const { return "random"; }
};
}  // namespace

const char* name(const Op& op) { return std::visit(Namer{}, op); }

}  // namespace ember::ir
