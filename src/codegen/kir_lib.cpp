// kir's function library (kir_lib.h): each function's signature and a body builder; calls
// define the callee (and, while its body is built, the library functions it calls) once per
// kernel. Double-precision bodies use only the built-ins GLSL has for double: range reduction
// plus Taylor/atanh series evaluated with Horner's rule (about 1e-16 relative), erf by its
// positive series (|x| < 2.5) or the erfc continued fraction, and erfinv as the ref backend
// (core/math.h) does. Special values follow C's <cmath>.
#include "codegen/kir_lib.h"
#include "codegen/kir_lib_internal.h"

#include <cstdint>
#include <functional>
#include <map>
#include <utility>

#include "ember/error.h"

namespace ember::codegen::kir {

namespace {

using namespace libdetail;
constexpr Type F = Type::f64;

std::vector<double> exp_coeffs(int n) {  // 1/k!, k = 0..n
  std::vector<double> c;
  double f = 1;
  for (int k = 0; k <= n; ++k) {
    if (k) f *= k;
    c.push_back(1.0 / f);
  }
  return c;
}

constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
constexpr double kLn2 = 6.93147180559945309417e-01;
constexpr double kPi = 3.14159265358979323846, kPi2 = 1.57079632679489661923;

// sin(r) and cos(r) of x reduced by pi/2 (three-part pi/2), and the quadrant q in 0..3; first
// returns NaN for NaN and inf.
struct SinCos {
  Expr s, c, q;
};
SinCos sincos_parts(Kernel& k, Expr x) {
  std::vector<double> s, c;  // sin(r)/r and cos(r) in z = r^2
  double f = 1;
  for (int i = 0; i <= 20; ++i) {
    if (i) f *= i;
    const double t = ((i / 2) % 2 ? -1.0 : 1.0) / f;
    (i % 2 ? s : c).push_back(t);
  }
  ret_if(k, isnan_(x) || isinf_(x), lib(k, "ember_nan_f64", {}));
  Expr kq = k.let("k", round_even(x * 0.63661977236758134308));
  Expr r = k.let("r", fma_(-kq, D(1.5707963267948966), x));
  k.assign(r, fma_(-kq, D(6.123233995736766e-17), r));
  k.assign(r, fma_(-kq, D(-1.4973849048591698e-33), r));
  Expr z = k.let("z", r * r);
  Expr sn = k.let("s", r * horner(z, s));
  Expr cs = k.let("c", horner(z, c));
  Expr q = k.let("q", cast(Type::i32, kq - 4.0 * floor_(kq * 0.25)));
  return {sn, cs, q};
}

// Philox-4x32-10 (core/philox.h) on 32-bit words: the block at counter (c0, c1, 0, 0), key
// (k0, k1).
}  // namespace

std::vector<Expr> philox(Kernel& k, const std::vector<Expr>& a) {
  Expr c0 = k.let("c0", a[0]), c1 = k.let("c1", a[1]), c2 = k.let("c2", U(0)),
       c3 = k.let("c3", U(0)), k0 = k.let("k0", a[2]), k1 = k.let("k1", a[3]);
  k.for_range("r", I(0), I(10), I(1), [&](Expr) {
    const Expr m0 = U(0xD2511F53u), m1 = U(0xCD9E8D57u);
    Expr hi0 = k.let("hi0", call(Fn::mul_hi, {m0, c0})), lo0 = k.let("lo0", m0 * c0);
    Expr hi1 = k.let("hi1", call(Fn::mul_hi, {m1, c2})), lo1 = k.let("lo1", m1 * c2);
    Expr n0 = k.let("n0", hi1 ^ c1 ^ k0), n2 = k.let("n2", hi0 ^ c3 ^ k1);
    k.assign(c1, lo1);
    k.assign(c3, lo0);
    k.assign(c0, n0);
    k.assign(c2, n2);
    k.assign(k0, k0 + U(0x9E3779B9u));
    k.assign(k1, k1 + U(0xBB67AE85u));
  });
  return {c0, c1, c2, c3};
}

namespace {

void add_f64_basics(Lib& m) {
  def(m, "ember_inf_f64", F, {}, [](Kernel& k, const Args&) {
    k.ret(call(Fn::f64_from_words, {U(0), U(0x7ff00000u)}));
  });
  def(m, "ember_nan_f64", F, {}, [](Kernel& k, const Args&) {
    k.ret(call(Fn::f64_from_words, {U(0), U(0x7ff80000u)}));
  });
  def(m, "ember_copysign_f64", F, {F, F}, [](Kernel& k, const Args& a) {
    Expr hi =
        (call(Fn::f64_hi, {a[0]}) & U(0x7fffffffu)) | (call(Fn::f64_hi, {a[1]}) & U(0x80000000u));
    k.ret(call(Fn::f64_from_words, {call(Fn::f64_lo, {a[0]}), hi}));
  });
  def(m, "ember_signbit_f64", Type::boolean, {F},
      [](Kernel& k, const Args& a) { k.ret((call(Fn::f64_hi, {a[0]}) & U(0x80000000u)) != U(0)); });
  // 2^k for any int k (two steps so 2^1024 * tiny does not overflow early)
  def(m, "ember_ldexp_f64", F, {F, Type::i32}, [](Kernel& k, const Args& a) {
    Expr h = a[1] / 2.0;
    k.ret(call(Fn::ldexp, {call(Fn::ldexp, {a[0], h}), a[1] - h}));
  });
}

void add_exp_log(Lib& m) {
  def(m, "ember_exp_f64", F, {F}, [](Kernel& k, const Args& a) {
    Expr x = a[0];
    ret_if(k, isnan_(x), x);
    ret_if(k, x > 709.782712893384, lib(k, "ember_inf_f64", {}));
    ret_if(k, x < -745.2, D(0));
    Expr kk = k.let("k", round_even(x * 1.4426950408889634));
    Expr r = k.let("r", fma_(-kk, D(kLn2Hi), x));
    k.assign(r, fma_(-kk, D(kLn2Lo), r));
    k.ret(lib(k, "ember_ldexp_f64", {horner(r, exp_coeffs(14)), cast(Type::i32, kk)}));
  });
  def(m, "ember_exp2_f64", F, {F}, [](Kernel& k, const Args& a) {
    Expr x = a[0];
    ret_if(k, isnan_(x), x);
    ret_if(k, x > 1024.0, lib(k, "ember_inf_f64", {}));
    ret_if(k, x < -1080.0, D(0));
    Expr kk = k.let("k", round_even(x));
    Expr r = k.let("r", (x - kk) * kLn2);
    k.ret(lib(k, "ember_ldexp_f64", {horner(r, exp_coeffs(14)), cast(Type::i32, kk)}));
  });
  def(m, "ember_expm1_f64", F, {F}, [](Kernel& k, const Args& a) {
    const std::vector<double> c = exp_coeffs(19);
    // expm1 = x * sum_{k>=0} x^k/(k+1)!
    const std::vector<double> d(c.begin() + 1, c.end());
    ret_if(k, abs_(a[0]) < 0.5, a[0] * horner(a[0], d));
    k.ret(lib(k, "ember_exp_f64", {a[0]}) - 1.0);
  });
  // log(x) = e ln2 + log(m), m in [sqrt(1/2), sqrt(2)): logm gives log(m), loge gives e.
  def(m, "ember_logm_f64", F, {F}, [](Kernel& k, const Args& a) {
    std::vector<double> c;  // 2 atanh(s) = 2 s sum z^k/(2k+1)
    for (int i = 0; i <= 11; ++i) c.push_back(1.0 / (2 * i + 1));
    Expr mm = k.let("m", call(Fn::frexp_mant, {a[0]}));
    k.if_(mm < 0.70710678118654752, [&] { k.assign(mm, mm * 2.0); });
    Expr f = k.let("f", mm - 1.0);
    Expr s = k.let("s", f / (2.0 + f));
    Expr z = k.let("z", s * s);
    k.ret(2.0 * s * horner(z, c));
  });
  def(m, "ember_loge_f64", Type::i32, {F}, [](Kernel& k, const Args& a) {
    Expr e = call(Fn::frexp_exp, {a[0]});
    k.ret(select(call(Fn::frexp_mant, {a[0]}) < 0.70710678118654752, e - 1.0, e));
  });
  // NaN/negative, zero and inf; then e (f64) and log(m).
  auto log_parts = [](Kernel& k, Expr x) {
    ret_if(k, isnan_(x) || x < 0.0, lib(k, "ember_nan_f64", {}));
    ret_if(k, x == 0.0, -lib(k, "ember_inf_f64", {}));
    ret_if(k, isinf_(x), x);
    Expr e = k.let("e", cast(F, lib(k, "ember_loge_f64", {x})));
    Expr lm = k.let("lm", lib(k, "ember_logm_f64", {x}));
    return std::make_pair(e, lm);
  };
  def(m, "ember_log_f64", F, {F}, [=](Kernel& k, const Args& a) {
    auto [e, lm] = log_parts(k, a[0]);
    k.ret(fma_(e, D(kLn2Hi), fma_(e, D(kLn2Lo), lm)));
  });
  def(m, "ember_log2_f64", F, {F}, [=](Kernel& k, const Args& a) {
    auto [e, lm] = log_parts(k, a[0]);
    k.ret(e + lm * 1.44269504088896340736);
  });
  def(m, "ember_log10_f64", F, {F}, [](Kernel& k, const Args& a) {
    k.ret(lib(k, "ember_log_f64", {a[0]}) * 0.43429448190325182765);
  });
  def(m, "ember_log1p_f64", F, {F}, [](Kernel& k, const Args& a) {
    Expr x = a[0];
    ret_if(k, isinf_(x) && x > 0.0, x);
    Expr u = k.let("u", 1.0 + x);
    ret_if(k, u == 1.0, x);
    Expr lu = lib(k, "ember_log_f64", {u});
    ret_if(k, u == 0.0 || x < -1.0, lu);
    k.ret(lu * (x / (u - 1.0)));
  });
}

void add_trig(Lib& m) {
  // which 0: sin, 1: cos (the quadrant shifted by one)
  def(m, "ember_sincos_f64", F, {F, Type::i32}, [](Kernel& k, const Args& a) {
    SinCos p = sincos_parts(k, a[0]);
    Expr q = k.let("qw", (p.q + a[1]) & 3);
    k.ret(select(q == 0.0, p.s, select(q == 1.0, p.c, select(q == 2.0, -p.s, -p.c))));
  });
  def(m, "ember_sin_f64", F, {F}, [](Kernel& k, const Args& a) {
    k.ret(lib(k, "ember_sincos_f64", {a[0], I(0)}));
  });
  def(m, "ember_cos_f64", F, {F}, [](Kernel& k, const Args& a) {
    k.ret(lib(k, "ember_sincos_f64", {a[0], I(1)}));
  });
  // sin/cos of the quadrant: s/c in quadrants 0 and 2, c/(-s) = -(c/s) in 1 and 3
  def(m, "ember_tan_f64", F, {F}, [](Kernel& k, const Args& a) {
    SinCos p = sincos_parts(k, a[0]);
    k.ret(select((p.q & 1) == 1.0, -(p.c / p.s), p.s / p.c));
  });
  def(m, "ember_atan_f64", F, {F}, [](Kernel& k, const Args& a) {
    std::vector<double> c;
    for (int i = 0; i <= 13; ++i) c.push_back((i % 2 ? -1.0 : 1.0) / (2 * i + 1));
    Expr x = a[0];
    ret_if(k, isnan_(x), x);
    Expr ax = k.let("a", abs_(x));
    Expr r = k.var("r", F);
    k.if_(
        isinf_(ax), [&] { k.assign(r, D(kPi2)); },
        [&] {
          Expr inv = k.let("inv", ax > 1.0);
          k.if_(inv, [&] { k.assign(ax, 1.0 / ax); });
          Expr t = k.let("t", ax / (1.0 + sqrt_(fma_(ax, ax, D(1)))));
          k.assign(t, t / (1.0 + sqrt_(fma_(t, t, D(1)))));
          Expr z = k.let("z", t * t);
          k.assign(r, 4.0 * t * horner(z, c));
          k.if_(inv, [&] { k.assign(r, kPi2 - r); });
        });
    k.ret(neg_if(x < 0.0, r));
  });
  def(m, "ember_atan2_f64", F, {F, F}, [](Kernel& k, const Args& a) {
    Expr y = a[0], x = a[1], pi = D(kPi), pi2 = D(kPi2);
    auto cs = [&](Expr v, Expr s) { return lib(k, "ember_copysign_f64", {v, s}); };
    ret_if(k, isnan_(x) || isnan_(y), x + y);
    ret_if(k, y == 0.0, select(lib(k, "ember_signbit_f64", {x}), cs(pi, y), y));
    ret_if(k, isinf_(x) && isinf_(y), cs(select(x > 0.0, 0.25 * pi, 0.75 * pi), y));
    ret_if(k, x == 0.0 || isinf_(y), cs(pi2, y));
    ret_if(k, isinf_(x), select(x > 0.0, cs(D(0), y), cs(pi, y)));
    Expr ax = k.let("ax", abs_(x)), ay = k.let("ay", abs_(y));
    Expr r = k.let("r", select(ay > ax, pi2 - lib(k, "ember_atan_f64", {ax / ay}),
                               lib(k, "ember_atan_f64", {ay / ax})));
    k.if_(x < 0.0, [&] { k.assign(r, pi - r); });
    k.ret(neg_if(y < 0.0, r));
  });
  def(m, "ember_asin_f64", F, {F}, [](Kernel& k, const Args& a) {
    Expr x = a[0];
    ret_if(k, abs_(x) > 1.0, lib(k, "ember_nan_f64", {}));
    k.ret(lib(k, "ember_atan2_f64", {x, sqrt_((1.0 - x) * (1.0 + x))}));
  });
  def(m, "ember_acos_f64", F, {F}, [](Kernel& k, const Args& a) {
    Expr x = a[0];
    ret_if(k, abs_(x) > 1.0, lib(k, "ember_nan_f64", {}));
    k.ret(lib(k, "ember_atan2_f64", {sqrt_((1.0 - x) * (1.0 + x)), x}));
  });
}

void add_hyperbolic(Lib& m) {
  def(m, "ember_sinh_f64", F, {F}, [](Kernel& k, const Args& a) {
    Expr ax = k.let("a", abs_(a[0])), r = k.var("r", F);
    k.if_(
        ax < 22.0,
        [&] {
          Expr e = k.let("e", lib(k, "ember_expm1_f64", {ax}));
          k.assign(r, 0.5 * (e + e / (e + 1.0)));
        },
        [&] {
          Expr t = k.let("t", lib(k, "ember_exp_f64", {0.5 * ax}));
          k.assign(r, 0.5 * t * t);
        });
    k.ret(neg_if(a[0] < 0.0, r));
  });
  def(m, "ember_cosh_f64", F, {F}, [](Kernel& k, const Args& a) {
    Expr ax = k.let("a", abs_(a[0]));
    k.if_(ax < 22.0, [&] {
      Expr e = k.let("e", lib(k, "ember_exp_f64", {ax}));
      k.ret(0.5 * (e + 1.0 / e));
    });
    Expr t = k.let("t", lib(k, "ember_exp_f64", {0.5 * ax}));
    k.ret(0.5 * t * t);
  });
  def(m, "ember_tanh_f64", F, {F}, [](Kernel& k, const Args& a) {
    Expr ax = k.let("a", abs_(a[0])), r = k.var("r", F);
    k.if_(
        ax > 22.0, [&] { k.assign(r, D(1)); },
        [&] {
          Expr e = k.let("e", lib(k, "ember_expm1_f64", {2.0 * ax}));
          k.assign(r, e / (e + 2.0));
        });
    k.ret(neg_if(a[0] < 0.0, r));
  });
  def(m, "ember_asinh_f64", F, {F}, [](Kernel& k, const Args& a) {
    Expr ax = k.let("a", abs_(a[0])), r = k.var("r", F);
    k.if_(
        ax > 1e8, [&] { k.assign(r, lib(k, "ember_log_f64", {ax}) + kLn2); },
        [&] {
          Expr v = ax + ax * ax / (1.0 + sqrt_(fma_(ax, ax, D(1))));
          k.assign(r, lib(k, "ember_log1p_f64", {v}));
        });
    k.ret(neg_if(a[0] < 0.0, r));
  });
  def(m, "ember_acosh_f64", F, {F}, [](Kernel& k, const Args& a) {
    Expr x = a[0];
    ret_if(k, !(x >= 1.0), lib(k, "ember_nan_f64", {}));
    ret_if(k, x > 1e8, lib(k, "ember_log_f64", {x}) + kLn2);
    Expr t = k.let("t", x - 1.0);
    k.ret(lib(k, "ember_log1p_f64", {t + sqrt_(fma_(t, t, 2.0 * t))}));
  });
  def(m, "ember_atanh_f64", F, {F}, [](Kernel& k, const Args& a) {
    Expr x = a[0];
    Expr ax = k.let("a", abs_(x)), r = k.var("r", F);
    ret_if(k, ax > 1.0 || isnan_(x), lib(k, "ember_nan_f64", {}));
    k.if_(
        ax == 1.0, [&] { k.assign(r, lib(k, "ember_inf_f64", {})); },
        [&] { k.assign(r, 0.5 * lib(k, "ember_log1p_f64", {2.0 * ax / (1.0 - ax)})); });
    k.ret(neg_if(x < 0.0, r));
  });
}

void add_special(Lib& m) {
  def(m, "ember_erf_f64", F, {F}, [](Kernel& k, const Args& a) {
    Expr x = a[0];
    ret_if(k, isnan_(x), x);
    Expr ax = k.let("a", abs_(x)), r = k.var("r", F);
    k.if_(
        ax < 2.5,
        [&] {
          Expr z = k.let("z", ax * ax), term = k.let("term", ax), sum = k.let("sum", ax);
          k.for_range("n", I(1), I(200), I(1), [&](Expr n) {
            k.assign(term, term * (2.0 * z / cast(F, 2.0 * n + 1.0)));
            k.assign(sum, sum + term);
            k.if_(term < 1e-17 * sum, [&] { k.break_(); });
          });
          k.assign(r, 1.12837916709551257390 * lib(k, "ember_exp_f64", {-z}) * sum);
        },
        [&] {
          k.if_(
              ax < 6.0,
              [&] {
                Expr f = k.let("f", ax);
                k.for_(
                    "k", I(50), [](Expr i) { return i >= 1.0; }, [](Expr i) { return i - 1.0; },
                    [&](Expr i) { k.assign(f, ax + (0.5 * cast(F, i)) / f); });
                k.assign(r, 1.0 - lib(k, "ember_exp_f64", {-ax * ax}) * 0.56418958354775628695 / f);
              },
              [&] { k.assign(r, D(1)); });
        });
    k.ret(neg_if(x < 0.0, r));
  });
  def(m, "ember_erfinv_f64", F, {F}, [](Kernel& k, const Args& a) {
    Expr x = a[0];
    ret_if(k, isnan_(x) || x < -1.0 || x > 1.0, lib(k, "ember_nan_f64", {}));
    ret_if(k, x == 1.0, lib(k, "ember_inf_f64", {}));
    ret_if(k, x == -1.0, -lib(k, "ember_inf_f64", {}));
    Expr w = k.let("w", -lib(k, "ember_log_f64", {(1.0 - x) * (1.0 + x)}));
    Expr p = k.var("p", F);
    auto poly = [&](const std::vector<double>& c) {  // p = c0; p = c_i + p * w
      k.assign(p, D(c[0]));
      for (size_t i = 1; i < c.size(); ++i) k.assign(p, c[i] + p * w);
    };
    k.if_(
        w < 5.0,
        [&] {
          k.assign(w, w - 2.5);
          poly({2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                -0.00125372503, -0.00417768164, 0.246640727, 1.50140941});
        },
        [&] {
          k.assign(w, sqrt_(w) - 3.0);
          poly({-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                -0.0076224613, 0.00943887047, 1.00167406, 2.83297682});
        });
    Expr y = k.let("y", p * x);
    k.for_range("i", I(0), I(2), I(1), [&](Expr) {
      k.assign(y, y - (lib(k, "ember_erf_f64", {y}) - x) /
                          (1.1283791670955126 * lib(k, "ember_exp_f64", {-y * y})));
    });
    k.ret(y);
  });
  def(m, "ember_pow_f64", F, {F, F}, [](Kernel& k, const Args& args) {
    Expr a = args[0], b = args[1];
    Expr inf = lib(k, "ember_inf_f64", {});
    ret_if(k, b == 0.0 || a == 1.0, D(1));
    ret_if(k, isnan_(a) || isnan_(b), a + b);
    Expr bint = k.let("bint", trunc_(b) == b);
    Expr bodd = k.let(
        "bodd", bint && abs_(b) < 9007199254740992.0 && abs_(b - 2.0 * floor_(b * 0.5)) == 1.0);
    k.if_(isinf_(b), [&] {
      Expr aa = k.let("aa", abs_(a));
      ret_if(k, aa == 1.0, D(1));
      k.ret(select((aa > 1.0) == (b > 0.0), inf, D(0)));
    });
    k.if_(a == 0.0, [&] {
      ret_if(k, b < 0.0, select(bodd, lib(k, "ember_copysign_f64", {inf, a}), inf));
      k.ret(select(bodd, a, D(0)));
    });
    k.if_(isinf_(a), [&] {
      Expr r = k.let("r", select(b > 0.0, inf, D(0)));
      k.ret(neg_if(a < 0.0 && bodd, r));
    });
    ret_if(k, a < 0.0 && !bint, lib(k, "ember_nan_f64", {}));
    Expr r = k.let("r", lib(k, "ember_exp_f64", {b * lib(k, "ember_log_f64", {abs_(a)})}));
    k.ret(neg_if(a < 0.0 && bodd, r));
  });
  def(m, "ember_hypot_f64", F, {F, F}, [](Kernel& k, const Args& args) {
    Expr a = args[0], b = args[1];
    ret_if(k, isinf_(a) || isinf_(b), lib(k, "ember_inf_f64", {}));
    Expr x = k.let("x", abs_(a)), y = k.let("y", abs_(b));
    Expr mx = k.let("m", call(Fn::max, {x, y}));
    ret_if(k, isnan_(a) || isnan_(b), a + b);
    ret_if(k, mx == 0.0, D(0));
    k.assign(x, x / mx);
    k.assign(y, y / mx);
    k.ret(mx * sqrt_(x * x + y * y));
  });
}

// Float helpers GLSL lacks, fmod, floor division and remainder for f32 and f64.
void add_float(Lib& m) {
  const Type S = Type::f32;
  def(m, "ember_copysign_f32", S, {S, S}, [](Kernel& k, const Args& a) {
    k.ret(bitcast(Type::f32, (bitcast(Type::u32, a[0]) & U(0x7fffffffu)) |
                                 (bitcast(Type::u32, a[1]) & U(0x80000000u))));
  });
  def(m, "ember_log1p_f32", S, {S}, [](Kernel& k, const Args& a) {
    Expr x = a[0];
    ret_if(k, isinf_(x) && x > 0.0, x);
    Expr u = k.let("u", 1.0 + x);
    ret_if(k, u == 1.0, x);
    ret_if(k, u == 0.0 || x < -1.0, call(Fn::log, {u}));
    k.ret(call(Fn::log, {u}) * (x / (u - 1.0)));
  });
  def(m, "ember_expm1_f32", S, {S}, [](Kernel& k, const Args& a) {
    Expr x = a[0];
    Expr u = k.let("u", call(Fn::exp, {x}));
    ret_if(k, u == 1.0, x);
    Expr um1 = k.let("um1", u - 1.0);
    ret_if(k, um1 == -1.0, lit(S, -1));
    ret_if(k, isinf_(u), u);
    k.ret(um1 * x / call(Fn::log, {u}));
  });
  // C's fmod, exact while |a / b| < 2^24 (f32) / 2^53 (f64): fma rounds once
  for (Type t : {Type::f32, Type::f64}) {
    const std::string sfx = t == Type::f32 ? "_f32" : "_f64";
    const std::string fm = "ember_fmod" + sfx, cs = "ember_copysign" + sfx;
    def(m, fm, t, {t, t}, [=](Kernel& k, const Args& args) {
      Expr a = args[0], b = args[1];
      Expr nan = t == Type::f32 ? bitcast(Type::f32, U(0x7fc00000u)) : lib(k, "ember_nan_f64", {});
      ret_if(k, isnan_(a) || isnan_(b) || isinf_(a) || b == 0.0, nan);
      ret_if(k, isinf_(b), a);
      Expr ab = k.let("ab", abs_(b)), aa = k.let("aa", abs_(a));
      Expr r = k.let("r", fma_(-trunc_(aa / ab), ab, aa));
      k.if_(r < 0.0, [&] { k.assign(r, r + ab); });
      k.if_(r >= ab, [&] { k.assign(r, r - ab); });
      k.ret(library_call(k, cs, {r, a}));
    });
    // floor division and remainder as the ref backend's float_floor_div / remainder
    def(m, "ember_floordiv" + sfx, t, {t, t}, [=](Kernel& k, const Args& args) {
      Expr a = args[0], b = args[1];
      ret_if(k, b == 0.0, a / b);
      Expr md = k.let("md", library_call(k, fm, {a, b}));
      Expr dv = k.let("dv", (a - md) / b);
      k.if_(md != 0.0 && ((b < 0.0) != (md < 0.0)), [&] { k.assign(dv, dv - 1.0); });
      ret_if(k, dv == 0.0, library_call(k, cs, {lit(t, 0), a / b}));
      Expr fl = k.let("fl", floor_(dv));
      k.if_(dv - fl > 0.5, [&] { k.assign(fl, fl + 1.0); });
      k.ret(fl);
    });
    def(m, "ember_remainder" + sfx, t, {t, t}, [=](Kernel& k, const Args& args) {
      Expr a = args[0], b = args[1];
      Expr r = k.let("r", library_call(k, fm, {a, b}));
      k.if_(b != 0.0 && r != 0.0 && ((r < 0.0) != (b < 0.0)), [&] { k.assign(r, r + b); });
      k.ret(r);
    });
  }
}

// Integer pow by squaring (wrapping) as the ref backend's int_op; Philox words.
void add_int(Lib& m) {
  const std::pair<const char*, Type> kTypes[] = {
      {"int", Type::i32}, {"uint", Type::u32}, {"i64", Type::i64}, {"u64", Type::u64}};
  for (const auto& [name, t] : kTypes) {
    def(m, std::string("ember_ipow_") + name, t, {t, t}, [t = t](Kernel& k, const Args& args) {
      Expr a = args[0], b = args[1];
      auto K = [&](int64_t v) { return lit_int(t, v); };
      if (is_signed(t))
        ret_if(k, b < K(0),
               select(a == K(1), K(1),
                      select(a == K(-1), select((b & K(1)) != K(0), K(-1), K(1)), K(0))));
      Expr r = k.let("r", K(1)), base = k.let("base", a), e = k.let("e", b);
      k.while_(e != K(0), [&] {
        k.if_((e & K(1)) != K(0), [&] { k.assign(r, r * base); });
        k.assign(base, base * base);
        k.assign(e, e >> 1);
      });
      k.ret(r);
    });
  }
}

const Lib& library() {
  static const Lib lib = [] {
    Lib m;
    add_f64_basics(m);
    add_exp_log(m);
    add_trig(m);
    add_hyperbolic(m);
    add_special(m);
    add_float(m);
    add_f32_math(m);
    add_int(m);
    return m;
  }();
  return lib;
}

}  // namespace

bool is_library_function(const std::string& name) { return library().count(name) != 0; }

Expr library_call(Kernel& k, const std::string& name, std::vector<Expr> args) {
  const auto it = library().find(name);
  if (it == library().end()) EMBER_FAIL(k.name().c_str(), "kir: unknown library function ", name);
  const Def& d = it->second;
  if (args.size() != d.params.size())
    EMBER_FAIL(k.name().c_str(), "kir: library function ", name, " takes ", d.params.size(),
               " arguments, not ", args.size());
  for (size_t i = 0; i < args.size(); ++i)
    if (!args[i].valid() || args[i].type() != d.params[i])
      EMBER_FAIL(k.name().c_str(), "kir: library function ", name, " argument ", i, " is ",
                 args[i].valid() ? type_name(args[i].type()) : "missing", ", not ",
                 type_name(d.params[i]));
  const Function f = k.function(name, d.ret, d.params, [&](const Args& a) { d.body(k, a); });
  return k.call(f, std::move(args));
}

}  // namespace ember::codegen::kir
