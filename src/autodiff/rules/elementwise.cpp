// Backward rules of unary, binary and where, written with tensor ops (run with grad mode off).
#include <cmath>

#include "autodiff/rules.h"
#include "ember/ops/elementwise.h"
#include "tensor/internal.h"

namespace ember::autograd::rules {

using ir::BinaryOp;
using ir::UnaryOp;

namespace {
Tensor sigmoid_of(const Tensor& x) { return detail::unary(UnaryOp::sigmoid, x); }
Tensor gtz(const Tensor& x) { return gt(x, 0).to(x.dtype()); }

// d out / d x for a unary op, times g.
Tensor unary_grad(UnaryOp op, const Tensor& g, const Tensor& x, const Tensor& y, double p0,
                  double p1) {
  constexpr double kLn2 = 0.69314718055994530942, kLn10 = 2.30258509299404568402;
  constexpr double kTwoOverSqrtPi = 1.12837916709551257390, kSqrtPiOver2 = 0.88622692545275801365;
  switch (op) {
    case UnaryOp::neg:
      return -g;
    case UnaryOp::abs:
      return g * sign(x);
    case UnaryOp::sign:
    case UnaryOp::floor:
    case UnaryOp::ceil:
    case UnaryOp::round:
    case UnaryOp::trunc:
      return zeros_like(g);
    case UnaryOp::exp:
      return g * y;
    case UnaryOp::exp2:
      return g * y * kLn2;
    case UnaryOp::expm1:
      return g * (y + 1);
    case UnaryOp::log:
      return g / x;
    case UnaryOp::log2:
      return g / (x * kLn2);
    case UnaryOp::log10:
      return g / (x * kLn10);
    case UnaryOp::log1p:
      return g / (x + 1);
    case UnaryOp::sqrt:
      return g / (y * 2);
    case UnaryOp::rsqrt:
      return g * y * y * y * -0.5;
    case UnaryOp::square:
      return g * x * 2;
    case UnaryOp::reciprocal:
      return -g * y * y;
    case UnaryOp::sin:
      return g * cos(x);
    case UnaryOp::cos:
      return -g * sin(x);
    case UnaryOp::tan:
      return g * (y * y + 1);
    case UnaryOp::asin:
      return g * rsqrt(1 - x * x);
    case UnaryOp::acos:
      return -g * rsqrt(1 - x * x);
    case UnaryOp::atan:
      return g / (x * x + 1);
    case UnaryOp::sinh:
      return g * cosh(x);
    case UnaryOp::cosh:
      return g * sinh(x);
    case UnaryOp::tanh:
      return g * (1 - y * y);
    case UnaryOp::asinh:
      return g * rsqrt(x * x + 1);
    case UnaryOp::acosh:
      return g * rsqrt(x * x - 1);
    case UnaryOp::atanh:
      return g / (1 - x * x);
    case UnaryOp::erf:
      return g * exp(-(x * x)) * kTwoOverSqrtPi;
    case UnaryOp::erfinv:
      return g * exp(y * y) * kSqrtPiOver2;
    case UnaryOp::frac:
      return g;
    case UnaryOp::nan_to_num:
      return g * isfinite(x).to(g.dtype());
    case UnaryOp::relu:
      return g * gtz(y);
    case UnaryOp::sigmoid:
      return g * y * (1 - y);
    case UnaryOp::log_sigmoid:
      return g * sigmoid_of(-x);
    case UnaryOp::silu: {
      Tensor s = sigmoid_of(x);
      return g * s * (x * (1 - s) + 1);
    }
    case UnaryOp::mish: {
      Tensor t = tanh(detail::unary(UnaryOp::softplus, x, 1.0, 20.0));
      return g * (t + x * sigmoid_of(x) * (1 - t * t));
    }
    case UnaryOp::gelu: {
      Tensor cdf = (erf(x * 0.70710678118654752440) + 1) * 0.5;
      Tensor pdf = exp(x * x * -0.5) * 0.39894228040143267794;
      return g * (cdf + x * pdf);
    }
    case UnaryOp::gelu_tanh: {
      const double k = 0.79788456080286535588, c = 0.044715;
      Tensor t = tanh((x + x * x * x * c) * k);
      return g * ((t + 1) * 0.5 + x * (1 - t * t) * (x * x * (3 * c) + 1) * (0.5 * k));
    }
    case UnaryOp::selu: {
      const double alpha = 1.6732632423543772848170429916717;
      const double scale = 1.0507009873554804934193349852946;
      return g * where(gt(x, 0), full_like(x, scale), exp(x) * (scale * alpha));
    }
    case UnaryOp::hardsigmoid:
      return g * logical_and(gt(x, -3.0), lt(x, 3.0)).to(g.dtype()) / 6;
    case UnaryOp::hardswish:
      return g *
             where(lt(x, -3.0), zeros_like(x), where(le(x, 3.0), (x * 2 + 3) / 6, ones_like(x)));
    case UnaryOp::elu:
      return g * where(gt(x, 0), ones_like(x), exp(x) * p0);
    case UnaryOp::leaky_relu:
      return g * where(gt(x, 0), ones_like(x), full_like(x, p0));
    case UnaryOp::softplus:
      return g * where(gt(x * p0, p1), ones_like(x), sigmoid_of(x * p0));
    default:
      break;
  }
  EMBER_FAIL(ir::user_name(op), "is not differentiable");
}
}  // namespace

void unary(UnaryOp op, const Tensor& x, const Tensor& out, double p0, double p1, double) {
  if (!needs_grad({&x}) || !is_floating(out.dtype())) return;
  const std::string name = std::string(ir::name(op)) + "Backward";
  // Save only what the rule reads, so in-place writes elsewhere do not invalidate the graph.
  bool uses_out = false, uses_x = true;
  switch (op) {
    case UnaryOp::exp:
    case UnaryOp::exp2:
    case UnaryOp::expm1:
    case UnaryOp::sqrt:
    case UnaryOp::rsqrt:
    case UnaryOp::reciprocal:
    case UnaryOp::tan:
    case UnaryOp::tanh:
    case UnaryOp::sigmoid:
    case UnaryOp::erfinv:
    case UnaryOp::relu:
      uses_out = true;
      uses_x = false;
      break;
    case UnaryOp::neg:
    case UnaryOp::frac:
    case UnaryOp::floor:
    case UnaryOp::ceil:
    case UnaryOp::round:
    case UnaryOp::trunc:
      uses_x = false;
      break;
    default:
      break;
  }
  SavedTensor sx(uses_x ? x : Tensor()), sy(uses_out ? out : Tensor());
  record1(name.c_str(), {x}, out, [op, sx, sy, p0, p1](const Tensor& g) {
    const char* n = ir::user_name(op);
    return std::vector<Tensor>{unary_grad(op, g, sx.get(n), sy.get(n), p0, p1)};
  });
}

void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  if (!needs_grad({&a, &b}) || !is_floating(out.dtype())) return;
  const std::string name = std::string(ir::name(op)) + "Backward";
  const bool linear = op == BinaryOp::add || op == BinaryOp::sub || op == BinaryOp::div_floor ||
                      op == BinaryOp::div_trunc;
  const bool uses_out = op == BinaryOp::pow || op == BinaryOp::hypot || op == BinaryOp::copysign;
  SavedTensor sa(linear ? Tensor() : a), sb(linear ? Tensor() : b), sy(uses_out ? out : Tensor());
  const Shape as = a.shape(), bs = b.shape();
  const DType at = a.dtype(), bt = b.dtype();
  const bool ga = a.requires_grad(), gb = b.requires_grad();
  record1(name.c_str(), {a, b}, out, [=](const Tensor& g) {
    const char* n = ir::user_name(op);
    Tensor x = sa.get(n), y = sb.get(n);
    Tensor da, db;
    switch (op) {
      case BinaryOp::add:
        da = g;
        db = g;
        break;
      case BinaryOp::sub:
        da = g;
        db = -g;
        break;
      case BinaryOp::mul:
        da = g * y;
        db = g * x;
        break;
      case BinaryOp::div:
        da = g / y;
        db = -g * x / (y * y);
        break;
      case BinaryOp::div_floor:
      case BinaryOp::div_trunc:
        da = zeros_like(g);
        db = zeros_like(g);
        break;
      case BinaryOp::remainder:
        da = g;
        db = -g * div(x, y, "floor");
        break;
      case BinaryOp::fmod:
        da = g;
        db = -g * div(x, y, "trunc");
        break;
      case BinaryOp::pow: {
        Tensor r = sy.get(n);
        if (ga) da = where(eq(y, 0), zeros_like(g), g * y * pow(x, y - 1));
        if (gb) db = where(logical_and(eq(x, 0), ge(y, 0)), zeros_like(g), g * r * log(x));
        break;
      }
      case BinaryOp::atan2: {
        Tensor d = x * x + y * y;
        da = g * y / d;
        db = -g * x / d;
        break;
      }
      case BinaryOp::hypot: {
        Tensor r = sy.get(n);
        da = g * x / r;
        db = g * y / r;
        break;
      }
      case BinaryOp::minimum:
      case BinaryOp::maximum: {
        Tensor pick_a = op == BinaryOp::maximum ? gt(x, y) : lt(x, y);
        Tensor tie = eq(x, y).to(g.dtype()) * 0.5;
        da = g * (pick_a.to(g.dtype()) + tie);
        db = g * (logical_not(logical_or(pick_a, eq(x, y))).to(g.dtype()) + tie);
        break;
      }
      case BinaryOp::copysign: {
        Tensor r = sy.get(n);
        da = where(eq(x, 0), zeros_like(g), g * sign(x) * sign(r));
        db = zeros_like(g);
        break;
      }
      default:
        EMBER_FAIL(n, "is not differentiable");
    }
    return std::vector<Tensor>{ga && da.defined() ? reduce_to(da, as, at) : Tensor(),
                               gb && db.defined() ? reduce_to(db, bs, bt) : Tensor()};
  });
}

void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  if (!needs_grad({&a, &b})) return;
  SavedTensor sc(cond);
  const Shape as = a.shape(), bs = b.shape();
  const DType at = a.dtype(), bt = b.dtype();
  record1("WhereBackward", {a, b}, out, [=](const Tensor& g) {
    Tensor c = sc.get("WhereBackward");
    Tensor z = zeros_like(g);
    return std::vector<Tensor>{reduce_to(ember::where(c, g, z), as, at),
                               reduce_to(ember::where(c, z, g), bs, bt)};
  });
}

void convert(const Tensor& x, const Tensor& out, const char* name) {
  if (!needs_grad({&x}) || !is_floating(out.dtype())) return;
  const DType dt = x.dtype();
  const Device dev = x.device();
  record1(name, {x}, out,
          [dt, dev](const Tensor& g) { return std::vector<Tensor>{detail::cast(g, dt).to(dev)}; });
}

}  // namespace ember::autograd::rules
