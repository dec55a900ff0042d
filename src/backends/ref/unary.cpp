// Reference unary math. Halves compute in float; integer inputs only see integer-valid ops
// (the frontend promotes integers to float for the rest).
#include <algorithm>
#include <cmath>

#include "backends/ref/dispatch.h"
#include "backends/ref/kernels.h"
#include "core/math.h"
#include "ir/op_traits.h"

namespace ember::ref {

namespace {

using ir::UnaryOp;

template <typename C>
C float_op(UnaryOp op, C x, double p0, double p1, double p2) {
  using std::abs;
  switch (op) {
    case UnaryOp::neg:
      return -x;
    case UnaryOp::abs:
      return std::fabs(x);
    case UnaryOp::sign:
      return C((x > 0) - (x < 0));  // NaN -> 0, as torch 1.13
    case UnaryOp::exp:
      return std::exp(x);
    case UnaryOp::exp2:
      return std::exp2(x);
    case UnaryOp::expm1:
      return std::expm1(x);
    case UnaryOp::log:
      return std::log(x);
    case UnaryOp::log2:
      return std::log2(x);
    case UnaryOp::log10:
      return std::log10(x);
    case UnaryOp::log1p:
      return std::log1p(x);
    case UnaryOp::sqrt:
      return std::sqrt(x);
    case UnaryOp::rsqrt:
      return C(1) / std::sqrt(x);
    case UnaryOp::square:
      return x * x;
    case UnaryOp::reciprocal:
      return C(1) / x;
    case UnaryOp::sin:
      return std::sin(x);
    case UnaryOp::cos:
      return std::cos(x);
    case UnaryOp::tan:
      return std::tan(x);
    case UnaryOp::asin:
      return std::asin(x);
    case UnaryOp::acos:
      return std::acos(x);
    case UnaryOp::atan:
      return std::atan(x);
    case UnaryOp::sinh:
      return std::sinh(x);
    case UnaryOp::cosh:
      return std::cosh(x);
    case UnaryOp::tanh:
      return std::tanh(x);
    case UnaryOp::asinh:
      return std::asinh(x);
    case UnaryOp::acosh:
      return std::acosh(x);
    case UnaryOp::atanh:
      return std::atanh(x);
    case UnaryOp::erf:
      return std::erf(x);
    case UnaryOp::erfinv:
      return C(math::erfinv(double(x)));
    case UnaryOp::floor:
      return std::floor(x);
    case UnaryOp::ceil:
      return std::ceil(x);
    case UnaryOp::round:
      return std::nearbyint(x);
    case UnaryOp::trunc:
      return std::trunc(x);
    case UnaryOp::frac:
      return x - std::trunc(x);
    case UnaryOp::nan_to_num:
      if (std::isnan(x)) return C(p0);
      if (std::isinf(x)) return x > 0 ? C(p1) : C(p2);
      return x;
    case UnaryOp::relu:  // torch's clamp_min(x, 0): NaN and -0 pass through
      // std::isless: clang 14 turns `x < 0 ? 0 : x` into wasm's f32.max, which gives +0 for -0
      if constexpr (std::is_floating_point_v<C>)
        return std::isless(x, C(0)) ? C(0) : x;
      else
        return x < 0 ? C(0) : x;
    case UnaryOp::sigmoid:
      return C(1) / (C(1) + std::exp(-x));
    case UnaryOp::log_sigmoid:
      return std::fmin(x, C(0)) - std::log1p(std::exp(-std::fabs(x)));
    case UnaryOp::silu:
      return x / (C(1) + std::exp(-x));
    case UnaryOp::mish: {
      const C sp = x > C(20) ? x : std::log1p(std::exp(x));
      return x * std::tanh(sp);
    }
    case UnaryOp::gelu:
      return C(0.5) * x * (C(1) + std::erf(x * C(0.70710678118654752440)));
    case UnaryOp::gelu_tanh: {
      const C k = C(0.79788456080286535588);  // sqrt(2/pi)
      return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
    }
    case UnaryOp::selu: {
      const C alpha = C(1.6732632423543772848170429916717);
      const C scale = C(1.0507009873554804934193349852946);
      // -0 gives +0, as torch (which computes exp(x) - 1 there)
      return x > 0 ? scale * x : (x == 0 ? C(0) : scale * alpha * std::expm1(x));
    }
    // std::min/max as torch, so NaN propagates (fmin/fmax would drop it)
    case UnaryOp::hardsigmoid:
      return std::min(std::max(x + C(3), C(0)), C(6)) / C(6);
    case UnaryOp::hardswish:
      return x * std::min(std::max(x + C(3), C(0)), C(6)) / C(6);
    case UnaryOp::elu:
      return x > 0 ? x : (x == 0 ? C(0) : C(p0) * std::expm1(x));  // -0 gives +0, as selu
    case UnaryOp::leaky_relu:
      return x > 0 ? x : C(p0) * x;
    case UnaryOp::softplus: {
      const C bx = C(p0) * x;
      return bx > C(p1) ? x : std::log1p(std::exp(bx)) / C(p0);
    }
    default:
      break;
  }
  return x;
}

template <typename C>
C int_op(UnaryOp op, C x, double p0) {
  switch (op) {
    case UnaryOp::neg:
      if constexpr (std::is_same_v<C, bool>)
        return x;
      else
        return wrap_sub(C(0), x);
    case UnaryOp::abs:
      if constexpr (std::is_signed_v<C>)
        return x < 0 ? wrap_sub(C(0), x) : x;
      else
        return x;
    case UnaryOp::sign:
      if constexpr (std::is_signed_v<C>)
        return C((x > 0) - (x < 0));
      else
        return C(x > 0);
    case UnaryOp::square:
      if constexpr (std::is_same_v<C, bool>)
        return x;
      else
        return wrap_mul(x, x);
    case UnaryOp::floor:
    case UnaryOp::ceil:
    case UnaryOp::round:
    case UnaryOp::trunc:
    case UnaryOp::nan_to_num:
      return x;
    case UnaryOp::frac:
      return C(0);
    case UnaryOp::bitwise_not:
      if constexpr (std::is_same_v<C, bool>)
        return !x;
      else
        return C(~x);
    case UnaryOp::relu:
      return x > 0 ? x : C(0);
    case UnaryOp::leaky_relu:
      return x > 0 ? x : C(double(x) * p0);
    default:
      break;
  }
  return x;
}

bool predicate(UnaryOp op, double x) {
  switch (op) {
    case UnaryOp::isnan:
      return std::isnan(x);
    case UnaryOp::isinf:
      return std::isinf(x);
    case UnaryOp::isfinite:
      return std::isfinite(x);
    case UnaryOp::logical_not:
      return x == 0;
    default:
      return false;
  }
}

}  // namespace

void unary(const ir::Unary& op) {
  const Tensor& s = op.src;
  const Tensor& d = op.dst;
  const bool pred = ir::traits(op.op).predicate;
  dispatch_dtype(s.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* sp = ptr<T>(s);
    if (pred) {
      bool* dp = ptr<bool>(d);
      strided_loop<2>(d.shape(), {&d.strides(), &s.strides()},
                      [&](const std::array<int64_t, 2>& o) {
                        dp[o[0]] = predicate(op.op, double(C(sp[o[1]])));
                      });
      return;
    }
    T* dp = ptr<T>(d);
    strided_loop<2>(d.shape(), {&d.strides(), &s.strides()}, [&](const std::array<int64_t, 2>& o) {
      const C x = C(sp[o[1]]);
      if constexpr (std::is_floating_point_v<C>)
        dp[o[0]] = T(float_op<C>(op.op, x, op.p0, op.p1, op.p2));
      else
        dp[o[0]] = T(int_op<C>(op.op, x, op.p0));
    });
  });
}

}  // namespace ember::ref
