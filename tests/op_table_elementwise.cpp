// Op-table cases for element-wise ops, copies and casts.
#include <cmath>

#include "op_table.h"

namespace ember::testing {
namespace {

using Fn1 = Tensor (*)(const Tensor&);

// One unary case: values uniform in [lo, hi).
int unary_case(const std::string& name, std::vector<DType> dtypes, Fn1 fn, double lo, double hi) {
  return register_case(OpCase{name, std::move(dtypes),
                              [lo, hi](DType dt, uint64_t seed) {
                                return Inputs{uniform({3, 5}, dt, seed, lo, hi)};
                              },
                              [fn](const Inputs& in) { return std::vector<Tensor>{fn(in[0])}; }});
}

std::vector<DType> no_bool() { return numeric_dtypes(); }
std::vector<DType> signed_no_bool() { return signed_dtypes(); }

const int kUnary = [] {
  const auto all = all_dtypes();
  const auto num = no_bool();
  const auto flt = float_dtypes();
  unary_case("neg", signed_no_bool(), neg, -3, 3);
  unary_case("abs", signed_no_bool(), abs, -3, 3);
  unary_case("sign", num, sign, -3, 3);
  unary_case("exp", all, exp, -2, 2);
  unary_case("exp2", all, exp2, -2, 2);
  unary_case("expm1", all, expm1, -2, 2);
  unary_case("log", num, log, 1, 5);
  unary_case("log2", num, log2, 1, 5);
  unary_case("log10", num, log10, 1, 5);
  unary_case("log1p", num, log1p, 0, 5);
  unary_case("sqrt", num, sqrt, 0, 5);
  unary_case("rsqrt", num, rsqrt, 1, 5);
  unary_case("square", signed_no_bool(), square, -3, 3);
  unary_case("reciprocal", flt, reciprocal, 0.5, 3);
  unary_case("sin", all, sin, -3, 3);
  unary_case("cos", all, cos, -3, 3);
  unary_case("tan", flt, tan, -1, 1);
  unary_case("asin", flt, asin, -0.9, 0.9);
  unary_case("acos", flt, acos, -0.9, 0.9);
  unary_case("atan", all, atan, -3, 3);
  unary_case("sinh", flt, sinh, -2, 2);
  unary_case("cosh", flt, cosh, -2, 2);
  unary_case("tanh", all, tanh, -3, 3);
  unary_case("asinh", flt, asinh, -3, 3);
  unary_case("acosh", flt, acosh, 1.1, 4);
  unary_case("atanh", flt, atanh, -0.9, 0.9);
  unary_case("erf", all, erf, -2, 2);
  unary_case("erfinv", flt, erfinv, -0.9, 0.9);
  unary_case("floor", num, floor, -3, 3);
  unary_case("ceil", num, ceil, -3, 3);
  unary_case("round", num, round, -3, 3);
  unary_case("trunc", num, trunc, -3, 3);
  unary_case("frac", flt, frac, -3, 3);
  unary_case("isnan", all, isnan, -3, 3);
  unary_case("isinf", all, isinf, -3, 3);
  unary_case("isfinite", all, isfinite, -3, 3);
  unary_case(
      "bitwise_not",
      [] {
        auto v = int_dtypes();
        v.push_back(DType::b8);
        return v;
      }(),
      bitwise_not, -3, 3);
  unary_case("logical_not", all, logical_not, -3, 3);
  // nan_to_num on inputs holding NaN and infinities.
  register_case(
      OpCase{"nan_to_num", float_dtypes(),
             [](DType dt, uint64_t seed) {
               Tensor x = uniform({4, 5}, DType::f64, seed, -3, 3);
               x.select(0, 0).select(0, 1).fill_(NAN);
               x.select(0, 1).select(0, 2).fill_(INFINITY);
               x.select(0, 2).select(0, 3).fill_(-INFINITY);
               return Inputs{x.to(dt)};
             },
             [](const Inputs& in) {
               const double pos = 7.0;
               return std::vector<Tensor>{nan_to_num(in[0]), nan_to_num(in[0], 1.5, &pos)};
             }});
  return 0;
}();

using Fn2 = Tensor (*)(const Tensor&, const Tensor&);

// Binary case on [3, 1, 4] x [2, 4] (broadcasting); b drawn from [blo, bhi).
int binary_case(const std::string& name, std::vector<DType> dtypes, Fn2 fn, double alo, double ahi,
                double blo, double bhi, bool nonzero_b = false) {
  return register_case(
      OpCase{name, std::move(dtypes),
             [=](DType dt, uint64_t seed) {
               Tensor b = uniform({2, 4}, dt, seed + 7, blo, bhi);
               if (nonzero_b) b = where(eq(b, 0), ones_like(b), b);
               return Inputs{uniform({3, 1, 4}, dt, seed, alo, ahi), b};
             },
             [fn](const Inputs& in) { return std::vector<Tensor>{fn(in[0], in[1])}; }});
}

Tensor add2(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor sub2(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor add_alpha(const Tensor& a, const Tensor& b) { return add(a, b, 2); }
Tensor div2(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor div_floor(const Tensor& a, const Tensor& b) { return div(a, b, "floor"); }
Tensor div_trunc(const Tensor& a, const Tensor& b) { return div(a, b, "trunc"); }
Tensor pow2(const Tensor& a, const Tensor& b) { return pow(a, b); }
Tensor remainder2(const Tensor& a, const Tensor& b) { return remainder(a, b); }
Tensor fmod2(const Tensor& a, const Tensor& b) { return fmod(a, b); }
Tensor eq2(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor ne2(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor lt2(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor le2(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor gt2(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor ge2(const Tensor& a, const Tensor& b) { return ge(a, b); }

const int kBinary = [] {
  const auto all = all_dtypes();
  const auto num = numeric_dtypes();
  const auto flt = float_dtypes();
  auto ints_bool = int_dtypes();
  ints_bool.push_back(DType::b8);
  binary_case("add", all, add2, -3, 3, -3, 3);
  binary_case("add_alpha", num, add_alpha, -3, 3, -3, 3);
  binary_case("sub", num, sub2, -3, 3, -3, 3);
  binary_case("mul", all, mul, -3, 3, -3, 3);
  binary_case("div", all, div2, -3, 3, 1, 4, true);
  binary_case("div_floor", num, div_floor, -6, 6, -4, 4, true);
  binary_case("div_trunc", num, div_trunc, -6, 6, -4, 4, true);
  binary_case("floor_divide", num, floor_divide, -6, 6, -4, 4, true);
  binary_case("remainder", num, remainder2, -6, 6, -4, 4, true);
  binary_case("fmod", num, fmod2, -6, 6, -4, 4, true);
  binary_case("pow", num, pow2, 0, 3, 0, 3);
  binary_case("atan2", num, atan2, -3, 3, -3, 3);
  binary_case("hypot", flt, hypot, -3, 3, -3, 3);
  binary_case("minimum", all, minimum, -3, 3, -3, 3);
  binary_case("maximum", all, maximum, -3, 3, -3, 3);
  binary_case("copysign", num, copysign, -3, 3, -3, 3);
  binary_case("bitwise_and", ints_bool, bitwise_and, 0, 100, 0, 100);
  binary_case("bitwise_or", ints_bool, bitwise_or, 0, 100, 0, 100);
  binary_case("bitwise_xor", ints_bool, bitwise_xor, 0, 100, 0, 100);
  binary_case("bitwise_left_shift", int_dtypes(), bitwise_left_shift, 0, 16, 0, 8);
  binary_case("bitwise_right_shift", int_dtypes(), bitwise_right_shift, -100, 100, 0, 8);
  binary_case("eq", all, eq2, -2, 2, -2, 2);
  binary_case("ne", all, ne2, -2, 2, -2, 2);
  binary_case("lt", all, lt2, -2, 2, -2, 2);
  binary_case("le", all, le2, -2, 2, -2, 2);
  binary_case("gt", all, gt2, -2, 2, -2, 2);
  binary_case("ge", all, ge2, -2, 2, -2, 2);
  binary_case("logical_and", all, logical_and, -2, 2, -2, 2);
  binary_case("logical_or", all, logical_or, -2, 2, -2, 2);
  binary_case("logical_xor", all, logical_xor, -2, 2, -2, 2);
  return 0;
}();

// Ternary ops, scalar operands, casts and in-place ops.
EMBER_OP_CASE({"where", all_dtypes(),
               [](DType dt, uint64_t seed) {
                 return Inputs{uniform({3, 4}, DType::b8, seed), uniform({3, 4}, dt, seed + 1),
                               uniform({4}, dt, seed + 2)};
               },
               [](const Inputs& in) { return std::vector<Tensor>{where(in[0], in[1], in[2])}; }});
EMBER_OP_CASE({"clamp", numeric_dtypes(),
               [](DType dt, uint64_t seed) {
                 return Inputs{uniform({3, 4}, dt, seed, -5, 5),
                               uniform({3, 4}, dt, seed + 1, -3, -1),
                               uniform({4}, dt, seed + 2, 1, 3)};
               },
               [](const Inputs& in) {
                 return std::vector<Tensor>{clamp(in[0], in[1], in[2]), clamp(in[0], -1, 2),
                                            clamp_min(in[0], 0), clamp_max(in[0], 1)};
               }});
EMBER_OP_CASE({"lerp", float_dtypes(),
               [](DType dt, uint64_t seed) {
                 return Inputs{uniform({3, 4}, dt, seed), uniform({3, 4}, dt, seed + 1),
                               uniform({3, 4}, dt, seed + 2, 0, 1)};
               },
               [](const Inputs& in) {
                 return std::vector<Tensor>{lerp(in[0], in[1], in[2]), lerp(in[0], in[1], 0.25)};
               }});
EMBER_OP_CASE({"addcmul_addcdiv", float_dtypes(),
               [](DType dt, uint64_t seed) {
                 return Inputs{uniform({3, 4}, dt, seed), uniform({3, 4}, dt, seed + 1),
                               uniform({4}, dt, seed + 2, 1, 2)};
               },
               [](const Inputs& in) {
                 return std::vector<Tensor>{addcmul(in[0], in[1], in[2], 0.5),
                                            addcdiv(in[0], in[1], in[2], 2)};
               }});
EMBER_OP_CASE({"scalar_operands", numeric_dtypes(),
               [](DType dt, uint64_t seed) {
                 return Inputs{uniform({3, 4}, dt, seed, 1, 5)};
               },
               [](const Inputs& in) {
                 const Tensor& x = in[0];
                 return std::vector<Tensor>{x + 2,     x * 0.5,    3 - x,          x / 2,
                                            pow(x, 2), gt(x, 2.5), remainder(x, 3)};
               }});
EMBER_OP_CASE({"cast", all_dtypes(),
               [](DType dt, uint64_t seed) {
                 return Inputs{uniform({3, 4}, dt, seed, 0, 100)};
               },
               [](const Inputs& in) {
                 std::vector<Tensor> out;
                 // A target dtype the device lacks is left out (undefined).
                 for (DType t : kAllDTypes)
                   out.push_back(supports_dtype(in[0].device(), t) ? in[0].to(t) : Tensor());
                 return out;
               }});
EMBER_OP_CASE({"inplace_through_view", numeric_dtypes(),
               [](DType dt, uint64_t seed) {
                 return Inputs{uniform({4, 6}, dt, seed, 0, 10), uniform({6}, dt, seed + 1, 1, 3)};
               },
               [](const Inputs& in) {
                 Tensor x = in[0].clone();
                 Tensor v = x.slice(0, 1, 4, 2);  // rows 1 and 3
                 v.add_(in[1]);
                 v.mul_(2);
                 x.select(1, 0).fill_(7);
                 x.narrow(1, 2, 2).copy_(in[1].narrow(0, 0, 2));
                 return std::vector<Tensor>{x};
               }});
EMBER_OP_CASE(
    {"bitwise_scalar_operands", int_dtypes(),
     [](DType dt, uint64_t seed) {
       return Inputs{uniform({3, 4}, dt, seed, -100, 100), uniform({4}, dt, seed + 1, 0, 8)};
     },
     [](const Inputs& in) {
       const Tensor &x = in[0], &s = in[1];
       // Shift amounts past the width or negative saturate (scalars wrap to the dtype:
       // -1 is 255 for uint8).
       return std::vector<Tensor>{x >> 1,  x << 2,  bitwise_right_shift(x, 9),
                                  x << 70, x >> -1, 1 << s,
                                  3 >> s,  x & 6,   12 | x,
                                  x ^ -1,  ~x,      bitwise_left_shift(x, true),
                                  x & s,   x >> s,  bitwise_and(300, x)};
     }});
EMBER_OP_CASE({"bitwise_bool_scalar_operands",
               {DType::b8},
               [](DType dt, uint64_t seed) {
                 return Inputs{uniform({3, 4}, dt, seed)};
               },
               [](const Inputs& in) {
                 const Tensor& b = in[0];
                 return std::vector<Tensor>{b & true, false | b, b ^ true, ~b,
                                            b | 2,    b << 1,    3 >> b,   b & 1};
               }});

// ---- special values: signed zeros, infinities and NaN (the table compares them bit for bit) ----
// [4, 4] of -0, +0, -inf, inf, NaN and small values whose results round to a signed zero
// (ceil(-0.3) = -0, -0.3 * 0 = -0) or sit at a branch of the formula (-1, 1, 3, -3).
Tensor special_values(DType dt) {
  const double inf = INFINITY;
  return from_vector<double>({-0.0, 0.0, -inf, inf, NAN, -0.3, 0.3, -0.5, 0.5, -1.5, -2.5, 2.5,
                              -1e-30, -1.0, 1.0, -3.0},
                             {4, 4}, Device::ref())
      .to(dt);
}
// [12] for binary ops: a and b of the table are [12, 1] and [12] (every pair).
Tensor special_pairs(DType dt) {
  const double inf = INFINITY;
  return from_vector<double>({-0.0, 0.0, -inf, inf, NAN, -0.3, 0.3, -2.0, 2.0, -2.5, 1.0, -1.0},
                             {12}, Device::ref())
      .to(dt);
}

int special_unary_case(const std::string& name, std::function<Tensor(const Tensor&)> fn) {
  return register_case(OpCase{"special/" + name, float_dtypes(),
                              [](DType dt, uint64_t) { return Inputs{special_values(dt)}; },
                              [fn](const Inputs& in) { return std::vector<Tensor>{fn(in[0])}; }});
}
int special_binary_case(const std::string& name, Fn2 fn) {
  return register_case(
      OpCase{"special/" + name, float_dtypes(),
             [](DType dt, uint64_t) {
               const Tensor v = special_pairs(dt);
               return Inputs{v.reshape({12, 1}).contiguous(), v};
             },
             [fn](const Inputs& in) { return std::vector<Tensor>{fn(in[0], in[1])}; }});
}

const int kSpecial = [] {
  namespace F = nn::functional;
  const std::pair<const char*, Fn1> unary[] = {{"neg", neg},
                                               {"abs", abs},
                                               {"sign", sign},
                                               {"exp", exp},
                                               {"exp2", exp2},
                                               {"expm1", expm1},
                                               {"log", log},
                                               {"log2", log2},
                                               {"log10", log10},
                                               {"log1p", log1p},
                                               {"sqrt", sqrt},
                                               {"rsqrt", rsqrt},
                                               {"square", square},
                                               {"reciprocal", reciprocal},
                                               {"sin", sin},
                                               {"cos", cos},
                                               {"tan", tan},
                                               {"asin", asin},
                                               {"acos", acos},
                                               {"atan", atan},
                                               {"sinh", sinh},
                                               {"cosh", cosh},
                                               {"tanh", tanh},
                                               {"asinh", asinh},
                                               {"acosh", acosh},
                                               {"atanh", atanh},
                                               {"erf", erf},
                                               {"erfinv", erfinv},
                                               {"floor", floor},
                                               {"ceil", ceil},
                                               {"round", round},
                                               {"trunc", trunc},
                                               {"frac", frac},
                                               {"isnan", isnan},
                                               {"isinf", isinf},
                                               {"isfinite", isfinite},
                                               {"logical_not", logical_not}};
  for (const auto& [name, fn] : unary) special_unary_case(name, fn);
  special_unary_case("nan_to_num", [](const Tensor& x) { return nan_to_num(x); });
  // activations (unary kernels and composites)
  special_unary_case("relu", [](const Tensor& x) { return F::relu(x); });
  special_unary_case("relu6", [](const Tensor& x) { return F::relu6(x); });
  special_unary_case("hardtanh", [](const Tensor& x) { return F::hardtanh(x); });
  special_unary_case("leaky_relu", [](const Tensor& x) { return F::leaky_relu(x); });
  special_unary_case("elu", [](const Tensor& x) { return F::elu(x); });
  special_unary_case("selu", [](const Tensor& x) { return F::selu(x); });
  special_unary_case("celu", [](const Tensor& x) { return F::celu(x); });
  special_unary_case("gelu", [](const Tensor& x) { return F::gelu(x); });
  special_unary_case("gelu_tanh", [](const Tensor& x) { return F::gelu(x, "tanh"); });
  special_unary_case("silu", [](const Tensor& x) { return F::silu(x); });
  special_unary_case("mish", [](const Tensor& x) { return F::mish(x); });
  special_unary_case("softplus", [](const Tensor& x) { return F::softplus(x); });
  special_unary_case("hardsigmoid", [](const Tensor& x) { return F::hardsigmoid(x); });
  special_unary_case("hardswish", [](const Tensor& x) { return F::hardswish(x); });
  special_unary_case("sigmoid", [](const Tensor& x) { return F::sigmoid(x); });
  special_unary_case("log_sigmoid", [](const Tensor& x) { return F::log_sigmoid(x); });
  special_unary_case("softsign", [](const Tensor& x) { return F::softsign(x); });
  special_unary_case("tanhshrink", [](const Tensor& x) { return F::tanhshrink(x); });
  special_unary_case("hardshrink", [](const Tensor& x) { return F::hardshrink(x); });
  special_unary_case("softshrink", [](const Tensor& x) { return F::softshrink(x); });
  special_unary_case("threshold", [](const Tensor& x) { return F::threshold(x, -0.4, -0.0); });
  // scalar operands that are signed zeros, and clamps at zero
  special_unary_case("scalar_zero_operands", [](const Tensor& x) {
    return stack({x * -0.0, x * 0.0, x + 0.0, x + -0.0, x - 0.0, 0.0 - x, -0.0 - x, x / -2.0});
  });
  special_unary_case("clamp_at_zero", [](const Tensor& x) {
    return stack({clamp(x, -0.0, 1.0), clamp(x, 0.0, 1.0), clamp_min(x, 0.0), clamp_max(x, -0.0)});
  });
  special_unary_case("cast_float", [](const Tensor& x) {
    return stack({x.to(DType::f64).to(x.dtype()), x.to(DType::f32).to(x.dtype())});
  });

  const std::pair<const char*, Fn2> binary[] = {{"add", add2},
                                                {"sub", sub2},
                                                {"add_alpha", add_alpha},
                                                {"mul", mul},
                                                {"div", div2},
                                                {"div_floor", div_floor},
                                                {"div_trunc", div_trunc},
                                                {"floor_divide", floor_divide},
                                                {"remainder", remainder2},
                                                {"fmod", fmod2},
                                                {"pow", pow2},
                                                {"atan2", atan2},
                                                {"hypot", hypot},
                                                {"minimum", minimum},
                                                {"maximum", maximum},
                                                {"copysign", copysign},
                                                {"eq", eq2},
                                                {"ne", ne2},
                                                {"lt", lt2},
                                                {"le", le2},
                                                {"gt", gt2},
                                                {"ge", ge2},
                                                {"logical_and", logical_and},
                                                {"logical_xor", logical_xor}};
  for (const auto& [name, fn] : binary) special_binary_case(name, fn);
  return 0;
}();

}  // namespace
}  // namespace ember::testing
