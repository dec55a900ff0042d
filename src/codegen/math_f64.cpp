// Double-precision math for kernels, in the kernel language. GLSL's double has only + - * /,
// sqrt, fma, floor/ceil/trunc/round, frexp/ldexp and bit packing, so exp, log, trig, erf... are
// written here: range reduction plus Taylor/atanh series evaluated with Horner's rule (about
// 1e-16 relative), erf by its positive series (|x| < 2.5) or the erfc continued fraction, and
// erfinv as the ref backend (core/math.h) does. Special values follow C's <cmath>.
#include <cmath>
#include <cstdio>
#include <map>

#include "codegen/math_f64.h"

namespace ember::codegen {

namespace {

std::string lit(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17elf", v);
  return buf;
}

// Horner evaluation of sum c[i] z^i.
std::string horner(const std::string& z, const std::vector<double>& c) {
  std::string s = lit(c.back());
  for (size_t i = c.size() - 1; i-- > 0;) s = "fma(" + s + ", " + z + ", " + lit(c[i]) + ")";
  return s;
}

std::vector<double> exp_coeffs(int n) {  // 1/k!, k = 0..n
  std::vector<double> c;
  double f = 1;
  for (int k = 0; k <= n; ++k) {
    if (k) f *= k;
    c.push_back(1.0 / f);
  }
  return c;
}

struct Fn {
  std::vector<std::string> deps;
  std::string code;
};

std::map<std::string, Fn> build() {
  std::map<std::string, Fn> m;
  const std::string ln2_hi = "6.93147180369123816490e-01lf",
                    ln2_lo = "1.90821492927058770002e-10lf";
  m["ember_inf_f64"] = {{},
                        "f64 ember_inf_f64() { return packDouble2x32(uvec2(0u, 0x7ff00000u)); }\n"};
  m["ember_nan_f64"] = {{},
                        "f64 ember_nan_f64() { return packDouble2x32(uvec2(0u, 0x7ff80000u)); }\n"};
  m["ember_copysign_f64"] = {
      {},
      "f64 ember_copysign_f64(f64 a, f64 b) {\n"
      "  uvec2 ua = unpackDouble2x32(a), ub = unpackDouble2x32(b);\n"
      "  return packDouble2x32(uvec2(ua.x, (ua.y & 0x7fffffffu) | (ub.y & 0x80000000u)));\n}\n"};
  m["ember_signbit_f64"] = {
      {},
      "bool ember_signbit_f64(f64 a) { return (unpackDouble2x32(a).y & 0x80000000u) != 0u; }\n"};
  // 2^k for any int k (two steps so 2^1024 * tiny does not overflow early)
  m["ember_ldexp_f64"] = {
      {}, "f64 ember_ldexp_f64(f64 x, int k) { return ldexp(ldexp(x, k / 2), k - k / 2); }\n"};
  m["ember_exp_f64"] = {{"ember_inf_f64", "ember_ldexp_f64"},
                        "f64 ember_exp_f64(f64 x) {\n"
                        "  if (isnan(x)) return x;\n"
                        "  if (x > 709.782712893384lf) return ember_inf_f64();\n"
                        "  if (x < -745.2lf) return 0.0lf;\n"
                        "  f64 k = roundEven(x * 1.4426950408889634lf);\n"
                        "  f64 r = fma(-k, " +
                            ln2_hi +
                            ", x);\n"
                            "  r = fma(-k, " +
                            ln2_lo +
                            ", r);\n"
                            "  return ember_ldexp_f64(" +
                            horner("r", exp_coeffs(14)) + ", int(k));\n}\n"};
  m["ember_exp2_f64"] = {{"ember_inf_f64", "ember_ldexp_f64"},
                         "f64 ember_exp2_f64(f64 x) {\n"
                         "  if (isnan(x)) return x;\n"
                         "  if (x > 1024.0lf) return ember_inf_f64();\n"
                         "  if (x < -1080.0lf) return 0.0lf;\n"
                         "  f64 k = roundEven(x);\n"
                         "  f64 r = (x - k) * 6.93147180559945309417e-01lf;\n"
                         "  return ember_ldexp_f64(" +
                             horner("r", exp_coeffs(14)) + ", int(k));\n}\n"};
  {
    std::vector<double> c = exp_coeffs(19);  // expm1 = x * sum_{k>=0} x^k/(k+1)!
    std::vector<double> d(c.begin() + 1, c.end());
    m["ember_expm1_f64"] = {{"ember_exp_f64"},
                            "f64 ember_expm1_f64(f64 x) {\n"
                            "  if (abs(x) < 0.5lf) return x * " +
                                horner("x", d) +
                                ";\n"
                                "  return ember_exp_f64(x) - 1.0lf;\n}\n"};
  }
  {
    std::vector<double> c;  // 2 atanh(s) = 2 s sum z^k/(2k+1)
    for (int k = 0; k <= 11; ++k) c.push_back(1.0 / (2 * k + 1));
    // log(x) = e ln2 + log(m), m in [sqrt(1/2), sqrt(2)); *_e/_m give both parts.
    m["ember_logm_f64"] = {{},
                           "f64 ember_logm_f64(f64 x, out int e) {\n"
                           "  f64 m = frexp(x, e);\n"
                           "  if (m < 0.70710678118654752lf) { m *= 2.0lf; e -= 1; }\n"
                           "  f64 f = m - 1.0lf;\n"
                           "  f64 s = f / (2.0lf + f);\n"
                           "  f64 z = s * s;\n"
                           "  return 2.0lf * s * " +
                               horner("z", c) + ";\n}\n"};
  }
  const std::string log_special =
      "  if (isnan(x) || x < 0.0lf) return ember_nan_f64();\n"
      "  if (x == 0.0lf) return -ember_inf_f64();\n"
      "  if (isinf(x)) return x;\n"
      "  int e;\n"
      "  f64 lm = ember_logm_f64(x, e);\n";
  const std::vector<std::string> log_deps = {"ember_nan_f64", "ember_inf_f64", "ember_logm_f64"};
  m["ember_log_f64"] = {log_deps, "f64 ember_log_f64(f64 x) {\n" + log_special +
                                      "  return fma(f64(e), " + ln2_hi + ", fma(f64(e), " + ln2_lo +
                                      ", lm));\n}\n"};
  m["ember_log2_f64"] = {log_deps, "f64 ember_log2_f64(f64 x) {\n" + log_special +
                                       "  return f64(e) + lm * 1.44269504088896340736lf;\n}\n"};
  m["ember_log10_f64"] = {
      {"ember_log_f64"},
      "f64 ember_log10_f64(f64 x) { return ember_log_f64(x) * 0.43429448190325182765lf; }\n"};
  m["ember_log1p_f64"] = {{"ember_log_f64", "ember_inf_f64"},
                          "f64 ember_log1p_f64(f64 x) {\n"
                          "  if (isinf(x) && x > 0.0lf) return x;\n"
                          "  f64 u = 1.0lf + x;\n"
                          "  if (u == 1.0lf) return x;\n"
                          "  if (u == 0.0lf || x < -1.0lf) return ember_log_f64(u);\n"
                          "  return ember_log_f64(u) * (x / (u - 1.0lf));\n}\n"};
  {
    std::vector<double> s, c;  // sin(r)/r and cos(r) in z = r^2
    double f = 1;
    for (int k = 0; k <= 20; ++k) {
      if (k) f *= k;
      const double t = ((k / 2) % 2 ? -1.0 : 1.0) / f;
      (k % 2 ? s : c).push_back(t);
    }
    m["ember_sincos_f64"] = {
        {"ember_nan_f64"},
        "void ember_sincos_f64(f64 x, out f64 sn, out f64 cs) {\n"
        "  if (isnan(x) || isinf(x)) { sn = ember_nan_f64(); cs = sn; return; }\n"
        "  f64 k = roundEven(x * 0.63661977236758134308lf);\n"
        "  f64 r = fma(-k, 1.5707963267948966lf, x);\n"
        "  r = fma(-k, 6.123233995736766e-17lf, r);\n"
        "  r = fma(-k, -1.4973849048591698e-33lf, r);\n"
        "  f64 z = r * r;\n"
        "  f64 s = r * " +
            horner("z", s) +
            ";\n"
            "  f64 c = " +
            horner("z", c) +
            ";\n"
            "  int q = int(k - 4.0lf * floor(k * 0.25lf));\n"
            "  if (q == 0) { sn = s; cs = c; } else if (q == 1) { sn = c; cs = -s; }\n"
            "  else if (q == 2) { sn = -s; cs = -c; } else { sn = -c; cs = s; }\n}\n"};
  }
  m["ember_sin_f64"] = {
      {"ember_sincos_f64"},
      "f64 ember_sin_f64(f64 x) { f64 s, c; ember_sincos_f64(x, s, c); return s; }\n"};
  m["ember_cos_f64"] = {
      {"ember_sincos_f64"},
      "f64 ember_cos_f64(f64 x) { f64 s, c; ember_sincos_f64(x, s, c); return c; }\n"};
  m["ember_tan_f64"] = {
      {"ember_sincos_f64"},
      "f64 ember_tan_f64(f64 x) { f64 s, c; ember_sincos_f64(x, s, c); return s / c; }\n"};
  {
    std::vector<double> c;
    for (int k = 0; k <= 13; ++k) c.push_back((k % 2 ? -1.0 : 1.0) / (2 * k + 1));
    m["ember_atan_f64"] = {{},
                           "f64 ember_atan_f64(f64 x) {\n"
                           "  if (isnan(x)) return x;\n"
                           "  f64 a = abs(x);\n"
                           "  f64 r;\n"
                           "  if (isinf(a)) { r = 1.57079632679489661923lf; }\n"
                           "  else {\n"
                           "    bool inv = a > 1.0lf;\n"
                           "    if (inv) a = 1.0lf / a;\n"
                           "    f64 t = a / (1.0lf + sqrt(fma(a, a, 1.0lf)));\n"
                           "    t = t / (1.0lf + sqrt(fma(t, t, 1.0lf)));\n"
                           "    f64 z = t * t;\n"
                           "    r = 4.0lf * t * " +
                               horner("z", c) +
                               ";\n"
                               "    if (inv) r = 1.57079632679489661923lf - r;\n"
                               "  }\n"
                               "  return x < 0.0lf ? -r : r;\n}\n"};
  }
  m["ember_atan2_f64"] = {
      {"ember_atan_f64", "ember_copysign_f64", "ember_signbit_f64"},
      "f64 ember_atan2_f64(f64 y, f64 x) {\n"
      "  const f64 PI = 3.14159265358979323846lf, PI_2 = 1.57079632679489661923lf;\n"
      "  if (isnan(x) || isnan(y)) return x + y;\n"
      "  if (y == 0.0lf) return ember_signbit_f64(x) ? ember_copysign_f64(PI, y) : y;\n"
      "  if (isinf(x) && isinf(y))\n"
      "    return ember_copysign_f64(x > 0.0lf ? 0.25lf * PI : 0.75lf * PI, y);\n"
      "  if (x == 0.0lf || isinf(y)) return ember_copysign_f64(PI_2, y);\n"
      "  if (isinf(x)) return x > 0.0lf ? ember_copysign_f64(0.0lf, y) : ember_copysign_f64(PI, "
      "y);\n"
      "  f64 ax = abs(x), ay = abs(y);\n"
      "  f64 r = ay > ax ? PI_2 - ember_atan_f64(ax / ay) : ember_atan_f64(ay / ax);\n"
      "  if (x < 0.0lf) r = PI - r;\n"
      "  return y < 0.0lf ? -r : r;\n}\n"};
  m["ember_asin_f64"] = {{"ember_atan2_f64", "ember_nan_f64"},
                         "f64 ember_asin_f64(f64 x) {\n"
                         "  if (abs(x) > 1.0lf) return ember_nan_f64();\n"
                         "  return ember_atan2_f64(x, sqrt((1.0lf - x) * (1.0lf + x)));\n}\n"};
  m["ember_acos_f64"] = {{"ember_atan2_f64", "ember_nan_f64"},
                         "f64 ember_acos_f64(f64 x) {\n"
                         "  if (abs(x) > 1.0lf) return ember_nan_f64();\n"
                         "  return ember_atan2_f64(sqrt((1.0lf - x) * (1.0lf + x)), x);\n}\n"};
  m["ember_sinh_f64"] = {
      {"ember_expm1_f64", "ember_exp_f64"},
      "f64 ember_sinh_f64(f64 x) {\n"
      "  f64 a = abs(x), r;\n"
      "  if (a < 22.0lf) { f64 e = ember_expm1_f64(a); r = 0.5lf * (e + e / (e + 1.0lf)); }\n"
      "  else { f64 t = ember_exp_f64(0.5lf * a); r = 0.5lf * t * t; }\n"
      "  return x < 0.0lf ? -r : r;\n}\n"};
  m["ember_cosh_f64"] = {
      {"ember_exp_f64"},
      "f64 ember_cosh_f64(f64 x) {\n"
      "  f64 a = abs(x);\n"
      "  if (a < 22.0lf) { f64 e = ember_exp_f64(a); return 0.5lf * (e + 1.0lf / e); }\n"
      "  f64 t = ember_exp_f64(0.5lf * a);\n"
      "  return 0.5lf * t * t;\n}\n"};
  m["ember_tanh_f64"] = {{"ember_expm1_f64"},
                         "f64 ember_tanh_f64(f64 x) {\n"
                         "  f64 a = abs(x), r;\n"
                         "  if (a > 22.0lf) r = 1.0lf;\n"
                         "  else { f64 e = ember_expm1_f64(2.0lf * a); r = e / (e + 2.0lf); }\n"
                         "  return x < 0.0lf ? -r : r;\n}\n"};
  m["ember_asinh_f64"] = {
      {"ember_log_f64", "ember_log1p_f64"},
      "f64 ember_asinh_f64(f64 x) {\n"
      "  f64 a = abs(x), r;\n"
      "  if (a > 1e8lf) r = ember_log_f64(a) + 6.93147180559945309417e-01lf;\n"
      "  else r = ember_log1p_f64(a + a * a / (1.0lf + sqrt(fma(a, a, 1.0lf))));\n"
      "  return x < 0.0lf ? -r : r;\n}\n"};
  m["ember_acosh_f64"] = {
      {"ember_log_f64", "ember_log1p_f64", "ember_nan_f64"},
      "f64 ember_acosh_f64(f64 x) {\n"
      "  if (!(x >= 1.0lf)) return ember_nan_f64();\n"
      "  if (x > 1e8lf) return ember_log_f64(x) + 6.93147180559945309417e-01lf;\n"
      "  f64 t = x - 1.0lf;\n"
      "  return ember_log1p_f64(t + sqrt(fma(t, t, 2.0lf * t)));\n}\n"};
  m["ember_atanh_f64"] = {{"ember_log1p_f64", "ember_nan_f64", "ember_inf_f64"},
                          "f64 ember_atanh_f64(f64 x) {\n"
                          "  f64 a = abs(x), r;\n"
                          "  if (a > 1.0lf || isnan(x)) return ember_nan_f64();\n"
                          "  if (a == 1.0lf) r = ember_inf_f64();\n"
                          "  else r = 0.5lf * ember_log1p_f64(2.0lf * a / (1.0lf - a));\n"
                          "  return x < 0.0lf ? -r : r;\n}\n"};
  m["ember_erf_f64"] = {{"ember_exp_f64"},
                        "f64 ember_erf_f64(f64 x) {\n"
                        "  if (isnan(x)) return x;\n"
                        "  f64 a = abs(x), r;\n"
                        "  if (a < 2.5lf) {\n"
                        "    f64 z = a * a, term = a, sum = a;\n"
                        "    for (int n = 1; n < 200; ++n) {\n"
                        "      term *= 2.0lf * z / f64(2 * n + 1);\n"
                        "      sum += term;\n"
                        "      if (term < 1e-17lf * sum) break;\n"
                        "    }\n"
                        "    r = 1.12837916709551257390lf * ember_exp_f64(-z) * sum;\n"
                        "  } else if (a < 6.0lf) {\n"
                        "    f64 f = a;\n"
                        "    for (int k = 50; k >= 1; --k) f = a + (0.5lf * f64(k)) / f;\n"
                        "    r = 1.0lf - ember_exp_f64(-a * a) * 0.56418958354775628695lf / f;\n"
                        "  } else {\n"
                        "    r = 1.0lf;\n"
                        "  }\n"
                        "  return x < 0.0lf ? -r : r;\n}\n"};
  m["ember_erfinv_f64"] = {
      {"ember_erf_f64", "ember_exp_f64", "ember_log_f64", "ember_nan_f64", "ember_inf_f64"},
      "f64 ember_erfinv_f64(f64 x) {\n"
      "  if (isnan(x) || x < -1.0lf || x > 1.0lf) return ember_nan_f64();\n"
      "  if (x == 1.0lf) return ember_inf_f64();\n"
      "  if (x == -1.0lf) return -ember_inf_f64();\n"
      "  f64 w = -ember_log_f64((1.0lf - x) * (1.0lf + x)), p;\n"
      "  if (w < 5.0lf) {\n"
      "    w -= 2.5lf;\n"
      "    p = 2.81022636e-08lf; p = 3.43273939e-07lf + p * w; p = -3.5233877e-06lf + p * w;\n"
      "    p = -4.39150654e-06lf + p * w; p = 0.00021858087lf + p * w;\n"
      "    p = -0.00125372503lf + p * w; p = -0.00417768164lf + p * w;\n"
      "    p = 0.246640727lf + p * w; p = 1.50140941lf + p * w;\n"
      "  } else {\n"
      "    w = sqrt(w) - 3.0lf;\n"
      "    p = -0.000200214257lf; p = 0.000100950558lf + p * w; p = 0.00134934322lf + p * w;\n"
      "    p = -0.00367342844lf + p * w; p = 0.00573950773lf + p * w;\n"
      "    p = -0.0076224613lf + p * w; p = 0.00943887047lf + p * w;\n"
      "    p = 1.00167406lf + p * w; p = 2.83297682lf + p * w;\n"
      "  }\n"
      "  f64 y = p * x;\n"
      "  for (int i = 0; i < 2; ++i)\n"
      "    y -= (ember_erf_f64(y) - x) / (1.1283791670955126lf * ember_exp_f64(-y * y));\n"
      "  return y;\n}\n"};
  m["ember_pow_f64"] = {
      {"ember_exp_f64", "ember_log_f64", "ember_inf_f64", "ember_nan_f64", "ember_copysign_f64"},
      "f64 ember_pow_f64(f64 a, f64 b) {\n"
      "  if (b == 0.0lf || a == 1.0lf) return 1.0lf;\n"
      "  if (isnan(a) || isnan(b)) return a + b;\n"
      "  bool bint = trunc(b) == b;\n"
      "  bool bodd = bint && abs(b) < 9007199254740992.0lf && abs(b - 2.0lf * floor(b * 0.5lf)) == "
      "1.0lf;\n"
      "  if (isinf(b)) {\n"
      "    f64 aa = abs(a);\n"
      "    if (aa == 1.0lf) return 1.0lf;\n"
      "    return ((aa > 1.0lf) == (b > 0.0lf)) ? ember_inf_f64() : 0.0lf;\n"
      "  }\n"
      "  if (a == 0.0lf) {\n"
      "    if (b < 0.0lf) return bodd ? ember_copysign_f64(ember_inf_f64(), a) : ember_inf_f64();\n"
      "    return bodd ? a : 0.0lf;\n"
      "  }\n"
      "  if (isinf(a)) {\n"
      "    f64 r = b > 0.0lf ? ember_inf_f64() : 0.0lf;\n"
      "    return (a < 0.0lf && bodd) ? -r : r;\n"
      "  }\n"
      "  if (a < 0.0lf && !bint) return ember_nan_f64();\n"
      "  f64 r = ember_exp_f64(b * ember_log_f64(abs(a)));\n"
      "  return (a < 0.0lf && bodd) ? -r : r;\n}\n"};
  m["ember_fmod_f64"] = {
      {"ember_nan_f64", "ember_copysign_f64"},
      "f64 ember_fmod_f64(f64 a, f64 b) {\n"
      "  if (isnan(a) || isnan(b) || isinf(a) || b == 0.0lf) return ember_nan_f64();\n"
      "  if (isinf(b)) return a;\n"
      "  f64 ab = abs(b), aa = abs(a);\n"
      "  f64 r = fma(-trunc(aa / ab), ab, aa);\n"
      "  if (r < 0.0lf) r += ab;\n"
      "  if (r >= ab) r -= ab;\n"
      "  return ember_copysign_f64(r, a);\n}\n"};
  m["ember_hypot_f64"] = {{"ember_inf_f64"},
                          "f64 ember_hypot_f64(f64 a, f64 b) {\n"
                          "  if (isinf(a) || isinf(b)) return ember_inf_f64();\n"
                          "  f64 x = abs(a), y = abs(b), m = max(x, y);\n"
                          "  if (isnan(a) || isnan(b)) return a + b;\n"
                          "  if (m == 0.0lf) return 0.0lf;\n"
                          "  x /= m; y /= m;\n"
                          "  return m * sqrt(x * x + y * y);\n}\n"};
  // float helpers the float path needs (GLSL lacks them)
  m["ember_copysign_f32"] = {{},
                             "float ember_copysign_f32(float a, float b) {\n"
                             "  return uintBitsToFloat((floatBitsToUint(a) & 0x7fffffffu) |\n"
                             "                         (floatBitsToUint(b) & 0x80000000u));\n}\n"};
  m["ember_log1p_f32"] = {{},
                          "float ember_log1p_f32(float x) {\n"
                          "  if (isinf(x) && x > 0.0) return x;\n"
                          "  float u = 1.0 + x;\n"
                          "  if (u == 1.0) return x;\n"
                          "  if (u == 0.0 || x < -1.0) return log(u);\n"
                          "  return log(u) * (x / (u - 1.0));\n}\n"};
  m["ember_expm1_f32"] = {{},
                          "float ember_expm1_f32(float x) {\n"
                          "  float u = exp(x);\n"
                          "  if (u == 1.0) return x;\n"
                          "  float um1 = u - 1.0;\n"
                          "  if (um1 == -1.0) return -1.0;\n"
                          "  if (isinf(u)) return u;\n"
                          "  return um1 * x / log(u);\n}\n"};

  // float fmod exact while |a / b| < 2^24 (fma rounds once); floor division and remainder as the
  // ref backend's float_floor_div / remainder, for both float types
  for (const char* t : {"f32", "f64"}) {
    const std::string T = t == std::string("f32") ? "float" : "f64";
    const std::string z = t == std::string("f32") ? "0.0" : "0.0lf";
    const std::string one = t == std::string("f32") ? "1.0" : "1.0lf";
    const std::string half = t == std::string("f32") ? "0.5" : "0.5lf";
    const std::string fm = std::string("ember_fmod_") + t, cs = std::string("ember_copysign_") + t;
    if (t == std::string("f32"))
      m[fm] = {{"ember_copysign_f32"},
               "float ember_fmod_f32(float a, float b) {\n"
               "  if (isnan(a) || isnan(b) || isinf(a) || b == 0.0) return "
               "uintBitsToFloat(0x7fc00000u);\n"
               "  if (isinf(b)) return a;\n"
               "  float ab = abs(b), aa = abs(a);\n"
               "  float r = fma(-trunc(aa / ab), ab, aa);\n"
               "  if (r < 0.0) r += ab;\n"
               "  if (r >= ab) r -= ab;\n"
               "  return ember_copysign_f32(r, a);\n}\n"};
    m[std::string("ember_floordiv_") + t] = {{fm, cs},
                                             T + " ember_floordiv_" + t + "(" + T + " a, " + T +
                                                 " b) {\n"
                                                 "  if (b == " +
                                                 z +
                                                 ") return a / b;\n"
                                                 "  " +
                                                 T + " md = " + fm +
                                                 "(a, b);\n"
                                                 "  " +
                                                 T +
                                                 " dv = (a - md) / b;\n"
                                                 "  if (md != " +
                                                 z + " && ((b < " + z + ") != (md < " + z +
                                                 "))) dv -= " + one +
                                                 ";\n"
                                                 "  if (dv == " +
                                                 z + ") return " + cs + "(" + z +
                                                 ", a / b);\n"
                                                 "  " +
                                                 T +
                                                 " fl = floor(dv);\n"
                                                 "  if (dv - fl > " +
                                                 half + ") fl += " + one +
                                                 ";\n"
                                                 "  return fl;\n}\n"};
    m[std::string("ember_remainder_") + t] = {{fm},
                                              T + " ember_remainder_" + t + "(" + T + " a, " + T +
                                                  " b) {\n"
                                                  "  " +
                                                  T + " r = " + fm +
                                                  "(a, b);\n"
                                                  "  if (b != " +
                                                  z + " && r != " + z + " && ((r < " + z +
                                                  ") != (b < " + z +
                                                  "))) r += b;\n"
                                                  "  return r;\n}\n"};
  }
  // integer pow by squaring (wrapping), as the ref backend's int_op
  for (const char* t : {"int", "uint", "i64", "u64"}) {
    const std::string T = t;
    const bool sgn = T == "int" || T == "i64";
    std::string code = T + " ember_ipow_" + T + "(" + T + " a, " + T + " b) {\n";
    if (sgn)
      code += "  if (b < " + T + "(0)) return a == " + T + "(1) ? " + T + "(1) : (a == " + T +
              "(-1) ? ((b & " + T + "(1)) != " + T + "(0) ? " + T + "(-1) : " + T + "(1)) : " + T +
              "(0));\n";
    code += "  " + T + " r = " + T +
            "(1), base = a, e = b;\n"
            "  while (e != " +
            T +
            "(0)) {\n"
            "    if ((e & " +
            T + "(1)) != " + T +
            "(0)) r *= base;\n"
            "    base *= base;\n"
            "    e >>= 1;\n"
            "  }\n"
            "  return r;\n}\n";
    m["ember_ipow_" + T] = {{}, code};
  }
  // Philox-4x32-10 (core/philox.h) with 32-bit words only
  m["ember_philox"] = {{},
                       "void ember_philox(uint c0, uint c1, uint k0, uint k1, out uint r0, out "
                       "uint r1, out uint r2,\n"
                       "                  out uint r3) {\n"
                       "  uint c2 = 0u, c3 = 0u;\n"
                       "  for (int r = 0; r < 10; ++r) {\n"
                       "    uint hi0, lo0, hi1, lo1;\n"
                       "    umulExtended(0xD2511F53u, c0, hi0, lo0);\n"
                       "    umulExtended(0xCD9E8D57u, c2, hi1, lo1);\n"
                       "    uint n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;\n"
                       "    c1 = lo1; c3 = lo0; c0 = n0; c2 = n2;\n"
                       "    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;\n"
                       "  }\n"
                       "  r0 = c0; r1 = c1; r2 = c2; r3 = c3;\n}\n"};
  return m;
}

}  // namespace

bool math_f64_fn(const std::string& name, std::vector<std::string>& deps, std::string& code) {
  static const std::map<std::string, Fn> lib = build();
  auto it = lib.find(name);
  if (it == lib.end()) return false;
  deps = it->second.deps;
  code = it->second.code;
  return true;
}

}  // namespace ember::codegen
