// Element-wise ops: NumPy broadcasting and PyTorch type promotion (ember::detail::result_type).
// Every function accepts tensors of any shape that broadcast together, on one device; scalars
// (ember::Scalar) take part in promotion as Python numbers do. Errors: ember::Error naming the op
// and the shapes when shapes do not broadcast, devices differ, or the dtype is not accepted.
#pragma once
#include "ember/tensor.h"

namespace ember {

// ---- unary. Float-only math (exp, log, sin, erf, sqrt...) promotes integer/bool input to f32,
// as torch does; abs/neg/sign/square/floor/ceil/round/trunc/frac keep integer dtypes. ----
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);  // -1, 0, 1 (NaN gives 0, as torch 1.13)
Tensor exp(const Tensor& x);
Tensor exp2(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log2(const Tensor& x);
Tensor log10(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor square(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tan(const Tensor& x);
Tensor asin(const Tensor& x);
Tensor acos(const Tensor& x);
Tensor atan(const Tensor& x);
Tensor sinh(const Tensor& x);
Tensor cosh(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor asinh(const Tensor& x);
Tensor acosh(const Tensor& x);
Tensor atanh(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor erfinv(const Tensor& x);  // Giles' approximation refined by Newton steps
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);  // half to even, as torch.round
Tensor trunc(const Tensor& x);
Tensor frac(const Tensor& x);      // x - trunc(x)
Tensor isnan(const Tensor& x);     // bool
Tensor isinf(const Tensor& x);     // bool
Tensor isfinite(const Tensor& x);  // bool
/// NaN -> nan, +inf -> posinf, -inf -> neginf; defaults: 0 and the dtype's largest/lowest finite.
Tensor nan_to_num(const Tensor& x, double nan = 0.0, const double* posinf = nullptr,
                  const double* neginf = nullptr);
Tensor bitwise_not(const Tensor& x);  // integer and bool only
Tensor logical_not(const Tensor& x);  // bool result

// ---- binary ----
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);  // a + alpha * b
Tensor add(const Tensor& a, const Scalar& b);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);  // a - alpha * b
Tensor sub(const Tensor& a, const Scalar& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
/// rounding_mode: "" (true division; integers promote to f32), "trunc", "floor".
Tensor div(const Tensor& a, const Tensor& b, const std::string& rounding_mode = "");
Tensor div(const Tensor& a, const Scalar& b, const std::string& rounding_mode = "");
Tensor div(const Scalar& a, const Tensor& b, const std::string& rounding_mode = "");
Tensor floor_divide(const Tensor& a, const Tensor& b);
/// Python-style modulus: the result has the sign of b. Integer division by zero throws.
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Scalar& b);
/// C-style fmod: the result has the sign of a.
Tensor fmod(const Tensor& a, const Tensor& b);
Tensor fmod(const Tensor& a, const Scalar& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Scalar& b);
Tensor pow(const Scalar& a, const Tensor& b);
Tensor atan2(const Tensor& a, const Tensor& b);
Tensor hypot(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);  // NaN propagates
Tensor maximum(const Tensor& a, const Tensor& b);  // NaN propagates
Tensor copysign(const Tensor& a, const Tensor& b);
/// Bitwise and/or/xor of integer or bool operands (floating ones throw ember::Error). A scalar
/// operand may stand on either side and promotes as a Python number (torch's `t & 3`, `3 & t`):
/// an int8 tensor with an int stays int8 (the scalar wraps to it), a bool tensor with a bool
/// stays bool, a bool tensor with an int gives int64.
Tensor bitwise_and(const Tensor& a, const Tensor& b);
Tensor bitwise_and(const Tensor& a, const Scalar& b);
Tensor bitwise_and(const Scalar& a, const Tensor& b);
Tensor bitwise_or(const Tensor& a, const Tensor& b);
Tensor bitwise_or(const Tensor& a, const Scalar& b);
Tensor bitwise_or(const Scalar& a, const Tensor& b);
Tensor bitwise_xor(const Tensor& a, const Tensor& b);
Tensor bitwise_xor(const Tensor& a, const Scalar& b);
Tensor bitwise_xor(const Scalar& a, const Tensor& b);
/// a << b and a >> b (arithmetic for signed types) of integer operands, promoting as above
/// (`int8 >> 1` stays int8; a bool tensor with an int shifts as int64; bool or floating compute
/// dtypes throw ember::Error). Shifting by a negative amount or by at least the bit width gives 0
/// (-1 for a negative value shifted right) on every backend; torch 1.13 leaves that to the CPU
/// (x86 takes the amount mod 32 or 64), torch 2 gives these values.
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b);
Tensor bitwise_left_shift(const Tensor& a, const Scalar& b);
Tensor bitwise_left_shift(const Scalar& a, const Tensor& b);
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b);
Tensor bitwise_right_shift(const Tensor& a, const Scalar& b);
Tensor bitwise_right_shift(const Scalar& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);  // comparisons return bool
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Scalar& b);
Tensor ne(const Tensor& a, const Scalar& b);
Tensor lt(const Tensor& a, const Scalar& b);
Tensor le(const Tensor& a, const Scalar& b);
Tensor gt(const Tensor& a, const Scalar& b);
Tensor ge(const Tensor& a, const Scalar& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);

// ---- bitwise operators (as Python's on torch tensors): ~ is bitwise_not, & | ^ are
// bitwise_and/or/xor, << >> are bitwise_left_shift/right_shift; a scalar may stand on either
// side. ----
Tensor operator~(const Tensor& a);
Tensor operator&(const Tensor& a, const Tensor& b);
Tensor operator&(const Tensor& a, const Scalar& b);
Tensor operator&(const Scalar& a, const Tensor& b);
Tensor operator|(const Tensor& a, const Tensor& b);
Tensor operator|(const Tensor& a, const Scalar& b);
Tensor operator|(const Scalar& a, const Tensor& b);
Tensor operator^(const Tensor& a, const Tensor& b);
Tensor operator^(const Tensor& a, const Scalar& b);
Tensor operator^(const Scalar& a, const Tensor& b);
Tensor operator<<(const Tensor& a, const Tensor& b);
Tensor operator<<(const Tensor& a, const Scalar& b);
Tensor operator<<(const Scalar& a, const Tensor& b);
Tensor operator>>(const Tensor& a, const Tensor& b);
Tensor operator>>(const Tensor& a, const Scalar& b);
Tensor operator>>(const Scalar& a, const Tensor& b);

// ---- comparison operators (as Python's on torch tensors): == != < <= > >= are eq, ne, lt, le,
// gt, ge, with broadcasting and type promotion; the result is a bool tensor, never a C++ bool
// (`if (a == b)` does not compile; use equal() or item()). A scalar may stand on either side:
// 0.5 < x is gt(x, 0.5). ----
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Scalar& b);
Tensor operator==(const Scalar& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Scalar& b);
Tensor operator!=(const Scalar& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Scalar& b);
Tensor operator<(const Scalar& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Scalar& b);
Tensor operator<=(const Scalar& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Scalar& b);
Tensor operator>(const Scalar& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Scalar& b);
Tensor operator>=(const Scalar& a, const Tensor& b);

// ---- ternary ----
/// cond (bool) ? a : b, all three broadcast; a and b promote together.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b);
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b);
/// min(max(x, lo), hi); an undefined bound tensor / nullptr scalar is omitted.
Tensor clamp(const Tensor& x, const Tensor& lo, const Tensor& hi);
Tensor clamp(const Tensor& x, const Scalar& lo, const Scalar& hi);
Tensor clamp_min(const Tensor& x, const Scalar& lo);
Tensor clamp_max(const Tensor& x, const Scalar& hi);
/// a + w * (b - a); floating only.
Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& w);
Tensor lerp(const Tensor& a, const Tensor& b, const Scalar& w);
/// x + value * t1 * t2.
Tensor addcmul(const Tensor& x, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
/// x + value * t1 / t2 (true division).
Tensor addcdiv(const Tensor& x, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);

}  // namespace ember
