// kir's function library: the math GLSL lacks, as kir helper functions defined in a kernel on
// first use. Internal to src/codegen.
//
// Double precision (GLSL's double has only + - * /, sqrt, fma, floor/ceil/trunc/roundEven,
// abs/min/max, isnan/isinf, frexp/ldexp and bit packing; the library uses nothing else):
//   ember_exp_f64, ember_exp2_f64   range reduction to r = x - k ln2 (Cody-Waite, two-part ln2)
//                                   and the Taylor series of e^r to degree 14, then 2^k
//   ember_expm1_f64                 Taylor series x * sum x^k/(k+1)! for |x| < 0.5, else exp - 1
//   ember_log_f64, _log2_, _log10_  x = m 2^e, m in [sqrt(1/2), sqrt(2)): e ln2 +
//                                   2 atanh((m-1)/(m+1)) by its series (ember_logm_f64 gives the
//                                   log of m, ember_loge_f64 the exponent e)
//   ember_log1p_f64                 log(1 + x) corrected by x / (u - 1) (Goldberg's trick)
//   ember_sin_f64, _cos_, _tan_     reduction by pi/2 (three-part pi/2), Taylor series of sin and
//                                   cos to degree 20, quadrant select; ember_sincos_f64(x, 0/1)
//                                   gives sin/cos, which sin and cos call
//   ember_atan_f64                  two argument halvings, then the atan series (|t| < 0.2)
//   ember_atan2_f64, _asin_, _acos_ atan with C's special cases; asin/acos through atan2
//   ember_sinh/cosh/tanh_f64        through expm1 / exp (large |x| by exp(|x|/2)^2)
//   ember_asinh/acosh/atanh_f64     through log1p / log (fdlibm's formulas)
//   ember_erf_f64                   its positive series (|x| < 2.5), the erfc continued fraction
//                                   (|x| < 6), else +-1
//   ember_erfinv_f64                Giles' single-precision approximation plus two Newton steps,
//                                   as the ref backend (core/math.h)
//   ember_pow_f64                   exp(b log|a|) with C's special cases
//   ember_fmod_f64, ember_hypot_f64 C's fmod (exact while |a / b| < 2^53), scaled hypot
//   ember_inf_f64, ember_nan_f64, ember_copysign_f64, ember_signbit_f64 (bool),
//   ember_ldexp_f64(x, i32 k)       (ldexp in two steps so 2^1024 * tiny does not overflow early)
// Float helpers GLSL lacks: ember_copysign_f32, ember_log1p_f32, ember_expm1_f32 (Kahan's
//   exp/log correction), ember_fmod_f32 (exact while |a / b| < 2^24).
// f32 versions of f64 functions for devices without f64 (kir_lib_f32.cpp): ember_erf_f32
//   (Maclaurin series, Numerical Recipes' erfcc), ember_erfinv_f32 (Giles' single-precision
//   approximation), ember_pow_f32 (2^(b log2|a|) with a split product), ember_atan2_f32 (atan
//   series after reduction), ember_hypot_f32; C's special values, about 2e-7 relative (pow 2e-6).
// Both float types: ember_floordiv_{f32,f64}, ember_remainder_{f32,f64} (the ref backend's
//   float_floor_div / remainder, via fmod).
// Integers: ember_ipow_{int,uint,i64,u64}(a, b): a^b by squaring, wrapping, as the ref backend's
//   int_op (negative b: 1, +-1 or 0).
// Special values follow C's <cmath> except where noted by the callers (several series lose the
// sign of -0; elementwise_math.cpp passes +-0 through for the odd functions).
#pragma once
#include <string>
#include <vector>

#include "codegen/kir.h"

namespace ember::codegen::kir {

/// Whether `name` (e.g. "ember_exp_f64", "ember_expm1_f32") is a library function.
bool is_library_function(const std::string& name);

/// Defines library function `name` (and the library functions it calls) in k on first use and
/// returns the call expression; throws ember::Error for an unknown name or a wrong argument
/// count/types.
Expr library_call(Kernel& k, const std::string& name, std::vector<Expr> args);

/// Emits Philox-4x32-10 (Salmon et al. 2011; core/philox.h) in k's current body on 32-bit
/// words: the four words (u32 locals) of the block at counter (a[0], a[1], 0, 0) with key
/// (a[2], a[3]).
std::vector<Expr> philox(Kernel& k, const std::vector<Expr>& a);

}  // namespace ember::codegen::kir
