// Single-precision erf, erfinv, pow, atan2 and hypot (kir_lib.h) for devices without f64
// (WebGPU): only f32 arithmetic, bit operations and the f32 built-ins exp, log, sqrt, frexp.
// Special values follow C's <cmath> as the f64 library's do. Relative errors against the ref
// backend (std:: on float), measured on a host model of these formulas: erf 2.4e-7, erfinv
// 3e-7, pow 1.6e-6 (results near 2^+-40; 1e-7 for moderate ones), atan2 2.4e-7, hypot 1.8e-7.

#include "codegen/kir_lib_internal.h"

namespace ember::codegen::kir::libdetail {

namespace {

constexpr Type S = Type::f32;

Expr K(double v) { return lit(S, v); }
Expr inf_f32() { return bitcast(S, U(0x7f800000u)); }
Expr nan_f32() { return bitcast(S, U(0x7fc00000u)); }
// v with its low 12 mantissa bits cleared: the products of two such values are exact.
Expr high_bits(Expr v) { return bitcast(S, bitcast(Type::u32, v) & U(0xfffff000u)); }
// 2^k for an i32 k in [-126, 127].
Expr pow2(Expr k) { return bitcast(S, cast(Type::u32, k + 127.0) << 23); }

constexpr double kPi = 3.14159265358979323846, kPi2 = 1.57079632679489661923;
constexpr double kPi4 = 0.78539816339744830962, kLn2 = 0.69314718055994530942;

// Coefficients: erf's Maclaurin series (2/sqrt(pi)) (-1)^n / (n! (2n+1)); 2/ln2 / (2i+1)
// (log2(m) = 2/ln2 atanh(s)); ln2^k / k! (2^r); atan's (-1)^i / (2i+1).
std::vector<double> erf_series() {
  std::vector<double> c;
  double f = 1;
  for (int n = 0; n <= 12; ++n) {
    if (n) f *= n;
    c.push_back(1.12837916709551257390 * (n % 2 ? -1 : 1) / (f * (2 * n + 1)));
  }
  return c;
}
std::vector<double> log2_series() {
  std::vector<double> c;
  for (int i = 0; i <= 6; ++i) c.push_back(2.0 / kLn2 / (2 * i + 1));
  return c;
}
std::vector<double> exp2_series() {
  std::vector<double> c;
  double f = 1, p = 1;
  for (int k = 0; k <= 8; ++k) {
    if (k) f *= k, p *= kLn2;
    c.push_back(p / f);
  }
  return c;
}
std::vector<double> atan_series() {
  std::vector<double> c;
  for (int i = 0; i <= 9; ++i) c.push_back((i % 2 ? -1.0 : 1.0) / (2 * i + 1));
  return c;
}

void add_erf(Lib& m) {
  // |x| < 1: the Maclaurin series to x^25; else 1 - erfc with Numerical Recipes' erfcc
  // (Press et al., 2nd ed., 6.2; fractional error < 1.2e-7); 1 from |x| = 4 (erfc(4) < 2^-25).
  def(m, "ember_erf_f32", S, {S}, [](Kernel& k, const Args& a) {
    Expr x = a[0];
    ret_if(k, isnan_(x), x);
    Expr ax = k.let("a", abs_(x));
    ret_if(k, ax < 1.0, x * horner(x * x, erf_series()));
    Expr r = k.let("r", K(1));
    k.if_(ax < 4.0, [&] {
      Expr t = k.let("t", 1.0 / (1.0 + 0.5 * ax));
      Expr p = horner(t, {-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807,
                          -1.13520398, 1.48851587, -0.82215223, 0.17087277});
      k.assign(r, 1.0 - t * call(Fn::exp, {-ax * ax + p}));
    });
    k.ret(neg_if(x < 0.0, r));
  });
  // M. Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011), single precision;
  // the ref backend refines the same guess in f64.
  def(m, "ember_erfinv_f32", S, {S}, [](Kernel& k, const Args& a) {
    Expr x = a[0];
    ret_if(k, isnan_(x) || x < -1.0 || x > 1.0, nan_f32());
    ret_if(k, x == 1.0, inf_f32());
    ret_if(k, x == -1.0, -inf_f32());
    Expr w = k.let("w", -call(Fn::log, {(1.0 - x) * (1.0 + x)}));
    Expr p = k.var("p", S);
    k.if_(
        w < 5.0,
        [&] {
          k.assign(p, horner(w - 2.5, {1.50140941, 0.246640727, -0.00417768164, -0.00125372503,
                                       0.00021858087, -4.39150654e-06, -3.5233877e-06,
                                       3.43273939e-07, 2.81022636e-08}));
        },
        [&] {
          k.assign(p, horner(sqrt_(w) - 3.0,
                             {2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773,
                              -0.00367342844, 0.00134934322, 0.000100950558, -0.000200214257}));
        });
    k.ret(p * x);
  });
}

void add_pow(Lib& m) {
  // C's special cases as ember_pow_f64; else 2^(b log2|a|) as fdlibm's pow does: log2|a| =
  // e + log2(m) (m in [sqrt(1/2), sqrt(2)), its atanh series) as hi + lo, the product with b
  // split into an exact high part and a small rest (high_bits), 2^r by its Taylor series on
  // |r| <= 1/2 and the integer part as two exact powers of two (so overflow and underflow round
  // as IEEE products do).
  def(m, "ember_pow_f32", S, {S, S}, [](Kernel& k, const Args& args) {
    Expr a = args[0], b = args[1];
    ret_if(k, b == 0.0 || a == 1.0, K(1));
    ret_if(k, isnan_(a) || isnan_(b), a + b);
    Expr bint = k.let("bint", trunc_(b) == b);
    Expr bodd =
        k.let("bodd", bint && abs_(b) < 16777216.0 && abs_(b - 2.0 * floor_(b * 0.5)) == 1.0);
    Expr aa = k.let("aa", abs_(a));
    k.if_(isinf_(b), [&] {
      ret_if(k, aa == 1.0, K(1));
      k.ret(select((aa > 1.0) == (b > 0.0), inf_f32(), K(0)));
    });
    k.if_(a == 0.0, [&] {
      ret_if(k, b < 0.0, select(bodd, lib(k, "ember_copysign_f32", {inf_f32(), a}), inf_f32()));
      k.ret(select(bodd, a, K(0)));
    });
    k.if_(isinf_(a), [&] { k.ret(neg_if(a < 0.0 && bodd, select(b > 0.0, inf_f32(), K(0)))); });
    ret_if(k, a < 0.0 && !bint, nan_f32());
    Expr mm = k.let("m", call(Fn::frexp_mant, {aa}));
    Expr e = k.let("e", cast(S, call(Fn::frexp_exp, {aa})));
    k.if_(mm < 0.70710678118654752, [&] {
      k.assign(mm, mm * 2.0);
      k.assign(e, e - 1.0);
    });
    Expr f = k.let("f", mm - 1.0);
    Expr s = k.let("s", f / (2.0 + f));
    Expr lm = k.let("lm", s * horner(s * s, log2_series()));
    Expr lh = k.let("lh", e + lm);
    Expr ll = k.let("ll", (e - lh) + lm);  // e - lh is exact
    Expr bh = k.let("bh", high_bits(b)), lhh = k.let("lhh", high_bits(lh));
    Expr th = k.let("th", bh * lhh);  // exact
    Expr tl = k.let("tl", bh * (lh - lhh) + (b - bh) * lh + b * ll);
    Expr r = k.var("r", S);
    k.if_(
        th > 200.0, [&] { k.assign(r, inf_f32()); },
        [&] {
          k.if_(
              th < -200.0, [&] { k.assign(r, K(0)); },
              [&] {
                Expr n = k.let("n", round_even(th));
                Expr p = horner((th - n) + tl, exp2_series());
                Expr ni = k.let("ni", cast(Type::i32, n));
                Expr n1 = k.let("n1", ni / 2.0);
                k.assign(r, p * pow2(n1) * pow2(ni - n1));
              });
        });
    k.ret(neg_if(a < 0.0 && bodd, r));
  });
}

void add_atan2_hypot(Lib& m) {
  // C's special cases as ember_atan2_f64; else atan of the ratio in [0, 1], reduced past
  // tan(pi/8) by atan(t) = pi/4 + atan((t - 1) / (t + 1)), by its series to u^19.
  def(m, "ember_atan2_f32", S, {S, S}, [](Kernel& k, const Args& args) {
    Expr y = args[0], x = args[1];
    auto cs = [&](Expr v, Expr sg) { return lib(k, "ember_copysign_f32", {v, sg}); };
    ret_if(k, isnan_(x) || isnan_(y), x + y);
    const Expr xneg = (bitcast(Type::u32, x) & U(0x80000000u)) != U(0);
    ret_if(k, y == 0.0, select(xneg, cs(K(kPi), y), y));
    ret_if(k, isinf_(x) && isinf_(y), cs(select(x > 0.0, K(kPi4), K(3 * kPi4)), y));
    ret_if(k, x == 0.0 || isinf_(y), cs(K(kPi2), y));
    ret_if(k, isinf_(x), select(x > 0.0, cs(K(0), y), cs(K(kPi), y)));
    Expr ax = k.let("ax", abs_(x)), ay = k.let("ay", abs_(y));
    Expr sw = k.let("sw", ay > ax);
    Expr t = k.let("t", select(sw, ax / ay, ay / ax));
    Expr big = k.let("big", t > 0.41421356237309504880);
    Expr u = k.let("u", select(big, (t - 1.0) / (t + 1.0), t));
    Expr r = k.let("r", u * horner(u * u, atan_series()));
    k.assign(r, select(big, kPi4 + r, r));
    k.assign(r, select(sw, kPi2 - r, r));
    k.assign(r, select(x < 0.0, kPi - r, r));
    k.ret(neg_if(y < 0.0, r));
  });
  // inf wins over NaN (C); else max * sqrt(1 + (min / max)^2), which cannot overflow early.
  def(m, "ember_hypot_f32", S, {S, S}, [](Kernel& k, const Args& args) {
    Expr a = args[0], b = args[1];
    ret_if(k, isinf_(a) || isinf_(b), inf_f32());
    ret_if(k, isnan_(a) || isnan_(b), a + b);
    Expr x = k.let("x", abs_(a)), y = k.let("y", abs_(b));
    Expr mx = k.let("mx", call(Fn::max, {x, y})), mn = k.let("mn", call(Fn::min, {x, y}));
    ret_if(k, mx == 0.0, K(0));
    Expr q = k.let("q", mn / mx);
    k.ret(mx * sqrt_(1.0 + q * q));
  });
}

}  // namespace

void add_f32_math(Lib& m) {
  add_erf(m);
  add_pow(m);
  add_atan2_hypot(m);
}

}  // namespace ember::codegen::kir::libdetail
