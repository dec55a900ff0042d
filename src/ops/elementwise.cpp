// Element-wise frontend: dtype rules, broadcasting, promotion; lowers to ir::Unary / ir::Binary.
#include "ember/ops/elementwise.h"

#include <limits>

#include "autodiff/rules.h"
#include "ir/op_traits.h"
#include "tensor/autocast.h"
#include "tensor/internal.h"
#include "tensor/overlap.h"

namespace ember {

using detail::check_defined;
using detail::describe;
using detail::make_tensor;
using ir::BinaryOp;
using ir::UnaryOp;

namespace detail {

namespace {

// The op as the user called it, for errors: its public name and what tells it apart among the
// ops of that name ("rounding_mode='floor'" for div(a, b, "floor"); floor_divide has none).
struct Called {
  const char* name;
  const char* variant = "";
};
Called called(BinaryOp op) { return {ir::user_name(op), ir::user_variant(op)}; }

// "with rounding_mode='floor' " before a message, or "".
std::string with_variant(const Called& c) {
  return *c.variant ? std::string("with ") + c.variant + " " : std::string();
}

// The dtype `op` computes in for inputs promoting to `rt` (its traits' rule), or an error.
DType binary_compute_dtype(BinaryOp op, DType rt, const Tensor& a, const Tensor& b,
                           const Called& c) {
  const ir::BinaryTraits& tr = ir::traits(op);
  if (const char* why = ir::rejects(tr.rule, rt))
    EMBER_FAIL(c.name, with_variant(c), why, tr.hint, " (", describe(a), " and ", describe(b), ")");
  return ir::compute_dtype(tr.rule, rt);
}

Tensor binary_impl(BinaryOp op, const Tensor& a, const Tensor& b, DType rt, const Called& c) {
  check_same_device(a, b, c.name);
  const DType compute = binary_compute_dtype(op, rt, a, b, c);
  const Shape s = broadcast_shapes(a.shape(), b.shape(), c.name);
  Tensor out = make_tensor(s, ir::traits(op).predicate ? DType::b8 : compute, a.device(),
                           detail::format_for(s, {&a, &b}), /*lazy=*/true);
  const Tensor ac = cast(a, compute), bc = cast(b, compute);
  try {
    run(ir::Binary{op, ac.shape() == s ? ac : ac.expand(s), bc.shape() == s ? bc : bc.expand(s),
                   out});
  } catch (const ir::IntegerDivisionByZero&) {
    EMBER_FAIL(c.name, "integer division by zero", *c.variant ? " with " : "", c.variant, " (",
               describe(a), " and ", describe(b), ")");
  }
  autograd::rules::binary(op, ac, bc, out);
  return out;
}

Tensor binary(const Called& c, BinaryOp op, const Tensor& a, const Tensor& b) {
  check_same_device(a, b, c.name);
  return binary_impl(op, a, b, result_type(a, b), c);
}

Tensor binary(const Called& c, BinaryOp op, const Tensor& a, const Scalar& b) {
  check_defined(a, c.name);
  const DType rt = result_type(a, b);
  return binary_impl(op, a, scalar_to_tensor(b, rt, a.device()), rt, c);
}

Tensor binary(const Called& c, BinaryOp op, const Scalar& a, const Tensor& b) {
  check_defined(b, c.name);
  const DType rt = result_type(b, a);
  return binary_impl(op, scalar_to_tensor(a, rt, b.device()), b, rt, c);
}

}  // namespace

Tensor unary(UnaryOp op, const Tensor& x, double p0, double p1, double p2) {
  const ir::UnaryTraits& tr = ir::traits(op);
  const char* n = tr.user_name;
  check_defined(x, n);
  if (const char* why = ir::rejects(tr.rule, x.dtype())) EMBER_FAIL(n, why, ", got ", describe(x));
  Tensor src = cast(x, ir::compute_dtype(tr.rule, x.dtype()));
  Tensor out =
      make_tensor(x.shape(), tr.predicate ? DType::b8 : src.dtype(), x.device(), x.memory_format(),
                  /*lazy=*/true);
  run(ir::Unary{op, src, out, p0, p1, p2});
  autograd::rules::unary(op, src, out, p0, p1, p2);
  return out;
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  return binary(called(op), op, a, b);
}
Tensor binary(BinaryOp op, const Tensor& a, const Scalar& b) {
  return binary(called(op), op, a, b);
}
Tensor binary(BinaryOp op, const Scalar& a, const Tensor& b) {
  return binary(called(op), op, a, b);
}

std::vector<Tensor> broadcast_all(const std::vector<Tensor>& ts, const char* op) {
  Shape s;
  for (size_t i = 0; i < ts.size(); ++i) {
    check_defined(ts[i], op);
    if (i) check_same_device(ts[0], ts[i], op);
    s = i ? broadcast_shapes(s, ts[i].shape(), op) : ts[i].shape();
  }
  std::vector<Tensor> out;
  for (const auto& t : ts) out.push_back(t.expand(s));
  return out;
}

}  // namespace detail

using detail::binary;
using detail::unary;

#define EMBER_UNARY(fn, op) \
  Tensor fn(const Tensor& x) { return unary(UnaryOp::op, x); }
// torch's CUDA autocast runs these in f32 on GPU devices (ember/autocast.h).
#define EMBER_UNARY_F32_GPU(fn, op)                                             \
  Tensor fn(const Tensor& x) {                                                  \
    if (detail::amp::Scope s{detail::amp::Policy::f32_gpu, x}) return fn(s(x)); \
    return unary(UnaryOp::op, x);                                               \
  }
EMBER_UNARY(neg, neg)
EMBER_UNARY(abs, abs)
EMBER_UNARY(sign, sign)
EMBER_UNARY_F32_GPU(exp, exp)
EMBER_UNARY(exp2, exp2)
EMBER_UNARY_F32_GPU(expm1, expm1)
EMBER_UNARY_F32_GPU(log, log)
EMBER_UNARY_F32_GPU(log2, log2)
EMBER_UNARY_F32_GPU(log10, log10)
EMBER_UNARY_F32_GPU(log1p, log1p)
EMBER_UNARY(sqrt, sqrt)
EMBER_UNARY_F32_GPU(rsqrt, rsqrt)
EMBER_UNARY(square, square)
EMBER_UNARY_F32_GPU(reciprocal, reciprocal)
EMBER_UNARY(sin, sin)
EMBER_UNARY(cos, cos)
EMBER_UNARY_F32_GPU(tan, tan)
EMBER_UNARY_F32_GPU(asin, asin)
EMBER_UNARY_F32_GPU(acos, acos)
EMBER_UNARY(atan, atan)
EMBER_UNARY_F32_GPU(sinh, sinh)
EMBER_UNARY_F32_GPU(cosh, cosh)
EMBER_UNARY(tanh, tanh)
EMBER_UNARY(asinh, asinh)
EMBER_UNARY(acosh, acosh)
EMBER_UNARY(atanh, atanh)
EMBER_UNARY(erf, erf)
EMBER_UNARY_F32_GPU(erfinv, erfinv)
EMBER_UNARY(floor, floor)
EMBER_UNARY(ceil, ceil)
EMBER_UNARY(round, round)
EMBER_UNARY(trunc, trunc)
EMBER_UNARY(frac, frac)
EMBER_UNARY(isnan, isnan)
EMBER_UNARY(isinf, isinf)
EMBER_UNARY(isfinite, isfinite)
EMBER_UNARY(bitwise_not, bitwise_not)
EMBER_UNARY(logical_not, logical_not)
#undef EMBER_UNARY
#undef EMBER_UNARY_F32_GPU

Tensor nan_to_num(const Tensor& x, double nan, const double* posinf, const double* neginf) {
  check_defined(x, "nan_to_num");
  double hi = std::numeric_limits<double>::max(), lo = std::numeric_limits<double>::lowest();
  switch (x.dtype()) {
    case DType::f32:
      hi = std::numeric_limits<float>::max();
      break;
    case DType::f16:
      hi = 65504.0;
      break;
    case DType::bf16:
      hi = 3.3895313892515355e38;
      break;
    default:
      break;
  }
  if (x.dtype() != DType::f64) lo = -hi;
  return unary(UnaryOp::nan_to_num, x, nan, posinf ? *posinf : hi, neginf ? *neginf : lo);
}

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  if (alpha.to_double() == 1 && !alpha.is_float()) return binary(BinaryOp::add, a, b);
  return binary(BinaryOp::add, a, binary(BinaryOp::mul, b, alpha));
}
Tensor add(const Tensor& a, const Scalar& b) { return binary(BinaryOp::add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  if (alpha.to_double() == 1 && !alpha.is_float()) return binary(BinaryOp::sub, a, b);
  return binary(BinaryOp::sub, a, binary(BinaryOp::mul, b, alpha));
}
Tensor sub(const Tensor& a, const Scalar& b) { return binary(BinaryOp::sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::mul, a, b); }
Tensor mul(const Tensor& a, const Scalar& b) { return binary(BinaryOp::mul, a, b); }

namespace {
BinaryOp div_op(const std::string& mode) {
  if (mode.empty()) return BinaryOp::div;
  if (mode == "floor") return BinaryOp::div_floor;
  if (mode == "trunc") return BinaryOp::div_trunc;
  EMBER_FAIL("div", "rounding_mode must be \"\", \"trunc\" or \"floor\", got \"", mode, "\"");
}
}  // namespace

Tensor div(const Tensor& a, const Tensor& b, const std::string& m) {
  return binary(div_op(m), a, b);
}
Tensor div(const Tensor& a, const Scalar& b, const std::string& m) {
  return binary(div_op(m), a, b);
}
Tensor div(const Scalar& a, const Tensor& b, const std::string& m) {
  return binary(div_op(m), a, b);
}
Tensor floor_divide(const Tensor& a, const Tensor& b) {
  return binary(detail::Called{"floor_divide"}, BinaryOp::div_floor, a, b);
}
Tensor remainder(const Tensor& a, const Tensor& b) { return binary(BinaryOp::remainder, a, b); }
Tensor remainder(const Tensor& a, const Scalar& b) { return binary(BinaryOp::remainder, a, b); }
Tensor fmod(const Tensor& a, const Tensor& b) { return binary(BinaryOp::fmod, a, b); }
Tensor fmod(const Tensor& a, const Scalar& b) { return binary(BinaryOp::fmod, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) {
  if (detail::amp::Scope s{detail::amp::Policy::f32_gpu, a}) return pow(s(a), s(b));
  return binary(BinaryOp::pow, a, b);
}
Tensor pow(const Tensor& a, const Scalar& b) {
  if (detail::amp::Scope s{detail::amp::Policy::f32_gpu, a}) return pow(s(a), b);
  check_defined(a, "pow");
  if (is_integral(a.dtype()) && !b.is_float() && b.to_int() < 0)
    EMBER_FAIL("pow", "integers to negative integer powers are not allowed (", describe(a), " ** ",
               b, ")");
  // x ** 2 of a float is x * x, as torch computes it: the same correctly rounded value, one
  // vectorised multiply instead of a libm call per element (layer norms written as composites).
  if (is_floating(a.dtype()) && !b.is_bool() && b.to_double() == 2.0) return mul(a, a);
  return binary(BinaryOp::pow, a, b);
}
Tensor pow(const Scalar& a, const Tensor& b) {
  if (detail::amp::Scope s{detail::amp::Policy::f32_gpu, b}) return pow(a, s(b));
  return binary(BinaryOp::pow, a, b);
}
Tensor atan2(const Tensor& a, const Tensor& b) { return binary(BinaryOp::atan2, a, b); }
Tensor hypot(const Tensor& a, const Tensor& b) { return binary(BinaryOp::hypot, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::minimum, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::maximum, a, b); }
Tensor copysign(const Tensor& a, const Tensor& b) { return binary(BinaryOp::copysign, a, b); }
// Integer ops take a Python-style scalar on either side (torch's `t >> 1`, `1 << t`, `t & 3`).
#define EMBER_INT_BINARY(fn, op)                                                     \
  Tensor fn(const Tensor& a, const Tensor& b) { return binary(BinaryOp::op, a, b); } \
  Tensor fn(const Tensor& a, const Scalar& b) { return binary(BinaryOp::op, a, b); } \
  Tensor fn(const Scalar& a, const Tensor& b) { return binary(BinaryOp::op, a, b); }
EMBER_INT_BINARY(bitwise_and, bitwise_and)
EMBER_INT_BINARY(bitwise_or, bitwise_or)
EMBER_INT_BINARY(bitwise_xor, bitwise_xor)
EMBER_INT_BINARY(bitwise_left_shift, shift_left)
EMBER_INT_BINARY(bitwise_right_shift, shift_right)
#undef EMBER_INT_BINARY
#define EMBER_CMP(fn, op)                                                            \
  Tensor fn(const Tensor& a, const Tensor& b) { return binary(BinaryOp::op, a, b); } \
  Tensor fn(const Tensor& a, const Scalar& b) { return binary(BinaryOp::op, a, b); }
EMBER_CMP(eq, eq)
EMBER_CMP(ne, ne)
EMBER_CMP(lt, lt)
EMBER_CMP(le, le)
EMBER_CMP(gt, gt)
EMBER_CMP(ge, ge)
#undef EMBER_CMP
Tensor logical_and(const Tensor& a, const Tensor& b) { return binary(BinaryOp::logical_and, a, b); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return binary(BinaryOp::logical_or, a, b); }
Tensor logical_xor(const Tensor& a, const Tensor& b) { return binary(BinaryOp::logical_xor, a, b); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_defined(cond, "where");
  if (!is_bool(cond.dtype())) EMBER_FAIL("where", "condition must be bool, got ", describe(cond));
  auto t = detail::broadcast_all({cond, a, b}, "where");
  const DType rt = detail::result_type(a, b);
  const Shape& s = t[0].shape();
  Tensor out =
      make_tensor(s, rt, a.device(), detail::format_for(s, {&cond, &a, &b}), /*lazy=*/true);
  const Tensor ac = detail::cast(a, rt), bc = detail::cast(b, rt);
  run(ir::Where{t[0], ac.expand(t[0].shape()), bc.expand(t[0].shape()), out});
  autograd::rules::where(cond, ac, bc, out);
  return out;
}
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b) {
  check_defined(a, "where");
  return where(cond, a, detail::scalar_to_tensor(b, detail::result_type(a, b), a.device()));
}
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b) {
  check_defined(b, "where");
  return where(cond, detail::scalar_to_tensor(a, detail::result_type(b, a), b.device()), b);
}

Tensor clamp(const Tensor& x, const Tensor& lo, const Tensor& hi) {
  check_defined(x, "clamp");
  if (!lo.defined() && !hi.defined())
    EMBER_FAIL("clamp", "at least one of min and max must be given");
  Tensor r = x;
  const detail::Called c{"clamp"};
  if (lo.defined()) r = binary(c, BinaryOp::maximum, r, lo);
  if (hi.defined()) r = binary(c, BinaryOp::minimum, r, hi);
  return r;
}
Tensor clamp(const Tensor& x, const Scalar& lo, const Scalar& hi) {
  const detail::Called c{"clamp"};
  return binary(c, BinaryOp::minimum, binary(c, BinaryOp::maximum, x, lo), hi);
}
Tensor clamp_min(const Tensor& x, const Scalar& lo) {
  return binary(detail::Called{"clamp_min"}, BinaryOp::maximum, x, lo);
}
Tensor clamp_max(const Tensor& x, const Scalar& hi) {
  return binary(detail::Called{"clamp_max"}, BinaryOp::minimum, x, hi);
}

// Composites tag their errors (shapes that do not broadcast...) with their own name.
Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& w) {
  detail::check_floating(a, "lerp");
  const detail::Called c{"lerp"};
  return binary(c, BinaryOp::add, a, binary(c, BinaryOp::mul, w, binary(c, BinaryOp::sub, b, a)));
}
Tensor lerp(const Tensor& a, const Tensor& b, const Scalar& w) {
  detail::check_floating(a, "lerp");
  const detail::Called c{"lerp"};
  return binary(c, BinaryOp::add, a, binary(c, BinaryOp::mul, binary(c, BinaryOp::sub, b, a), w));
}
Tensor addcmul(const Tensor& x, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  const detail::Called c{"addcmul"};
  return binary(c, BinaryOp::add, x,
                binary(c, BinaryOp::mul, binary(c, BinaryOp::mul, t1, t2), value));
}
Tensor addcdiv(const Tensor& x, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  check_defined(t1, "addcdiv");
  check_defined(t2, "addcdiv");
  if (is_integral(t1.dtype()) && is_integral(t2.dtype()))
    EMBER_FAIL("addcdiv", "integer division with addcdiv is not supported (", describe(t1), " / ",
               describe(t2), ")");
  const detail::Called c{"addcdiv"};
  return binary(c, BinaryOp::add, x,
                binary(c, BinaryOp::mul, binary(c, BinaryOp::div, t1, t2), value));
}

// ---- operators ----
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return binary(BinaryOp::add, a, b); }
Tensor operator-(const Scalar& a, const Tensor& b) { return binary(BinaryOp::sub, a, b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return binary(BinaryOp::mul, a, b); }
Tensor operator/(const Scalar& a, const Tensor& b) { return binary(BinaryOp::div, a, b); }
Tensor operator%(const Tensor& a, const Tensor& b) { return remainder(a, b); }
Tensor operator%(const Tensor& a, const Scalar& b) { return remainder(a, b); }
Tensor operator%(const Scalar& a, const Tensor& b) { return binary(BinaryOp::remainder, a, b); }

Tensor operator~(const Tensor& a) { return bitwise_not(a); }
#define EMBER_INT_OPERATOR(sym, fn)                                          \
  Tensor operator sym(const Tensor& a, const Tensor& b) { return fn(a, b); } \
  Tensor operator sym(const Tensor& a, const Scalar& b) { return fn(a, b); } \
  Tensor operator sym(const Scalar& a, const Tensor& b) { return fn(a, b); }
EMBER_INT_OPERATOR(&, bitwise_and)
EMBER_INT_OPERATOR(|, bitwise_or)
EMBER_INT_OPERATOR(^, bitwise_xor)
EMBER_INT_OPERATOR(<<, bitwise_left_shift)
EMBER_INT_OPERATOR(>>, bitwise_right_shift)
#undef EMBER_INT_OPERATOR

// A scalar on the left compares the other way round (0.5 < x is x > 0.5).
#define EMBER_COMPARE_OPERATOR(sym, fn, flipped)                             \
  Tensor operator sym(const Tensor& a, const Tensor& b) { return fn(a, b); } \
  Tensor operator sym(const Tensor& a, const Scalar& b) { return fn(a, b); } \
  Tensor operator sym(const Scalar& a, const Tensor& b) { return flipped(b, a); }
EMBER_COMPARE_OPERATOR(==, eq, eq)
EMBER_COMPARE_OPERATOR(!=, ne, ne)
EMBER_COMPARE_OPERATOR(<, lt, gt)
EMBER_COMPARE_OPERATOR(<=, le, ge)
EMBER_COMPARE_OPERATOR(>, gt, lt)
EMBER_COMPARE_OPERATOR(>=, ge, le)
#undef EMBER_COMPARE_OPERATOR

// ---- in place: compute, check the result dtype fits, write through the view ----
namespace {
bool can_cast(DType from, DType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  if (!is_bool(from) && is_bool(to)) return false;
  return true;
}
Tensor& assign(Tensor& self, const Tensor& r, const char* op) {
  if (!can_cast(r.dtype(), self.dtype()))
    EMBER_FAIL(op, "result type ", dtype_name(r.dtype()), " can't be cast to the output dtype ",
               dtype_name(self.dtype()));
  if (r.shape() != self.shape())
    EMBER_FAIL(op, "output with shape ", shape_str(self.shape()),
               " doesn't match the broadcast shape ", shape_str(r.shape()));
  detail::check_leaf_write(self, op);  // named as the op the user called, not copy_
  return self.copy_(r);
}
// What a non-linear in-place op reads: a clone when autodiff records it, since the rule saves
// its input and the write that follows bumps the version the saved tensor is checked against
// (torch saves the original self the same way).
Tensor original(const Tensor& self, const Tensor* other = nullptr) {
  return autograd::needs_grad({&self, other}) ? self.clone() : self;
}

// self = self op o written straight into self, with no temporary, when that is the same as the
// general path: a host device, no autograd history to record, a floating self whose dtype is the
// op's compute dtype, o broadcasting to self, self dense (plain or channels-last: no element
// written twice) and o not overlapping self except element for element. False: not done.
bool binary_inplace(BinaryOp op, Tensor& self, const Tensor& o) {
  if (!self.device().is_host() || o.device() != self.device() || !is_floating(self.dtype()) ||
      autograd::needs_grad({&self, &o}))
    return false;
  const auto& base = self.impl()->view_base;
  if (base && Tensor(base).requires_grad()) return false;
  if (!self.is_contiguous() && self.memory_format() == MemoryFormat::contiguous) return false;
  const DType rt = detail::result_type(self, o);
  if (detail::binary_compute_dtype(op, rt, self, o, detail::called(op)) != self.dtype() ||
      broadcast_shapes(self.shape(), o.shape(), ir::name(op)) != self.shape())
    return false;
  if (o.is_alias_of(self) &&
      (o.shape() != self.shape() || o.strides() != self.strides() || o.offset() != self.offset()))
    return false;
  run(ir::Binary{op, self, detail::cast(o, self.dtype()).expand(self.shape()), self});
  return true;
}
Tensor scaled(const Tensor& o, const Scalar& alpha) {
  return alpha.to_double() == 1 && !alpha.is_float() ? o : binary(BinaryOp::mul, o, alpha);
}
// self = self op (o * alpha), with torch's checks on where self and o lie (src/tensor/overlap.h);
// a self whose elements share memory (unfold windows) is updated part after part, as torch's
// element-by-element loop (an element in two windows is added to twice).
Tensor& inplace(BinaryOp op, Tensor& self, const Tensor& o, const char* name,
                const Scalar& alpha = 1) {
  detail::check_defined(self, name);
  detail::check_same_device(self, o, name);
  detail::check_inplace(self, {&o}, name);
  if (detail::overlaps_itself(self) &&
      broadcast_shapes(self.shape(), o.shape(), name) == self.shape() &&
      detail::write_in_parts(self, {o}, [&](Tensor& part, const std::vector<Tensor>& p) {
        inplace(op, part, p[0], name, alpha);
      }))
    return self;
  const Tensor os = scaled(o, alpha);
  if (binary_inplace(op, self, os)) return self;
  return assign(self,
                binary(detail::Called{name}, op,
                       op == BinaryOp::add || op == BinaryOp::sub ? self : original(self, &os), os),
                name);
}
Tensor& inplace(BinaryOp op, Tensor& self, const Scalar& v, const char* name) {
  detail::check_defined(self, name);
  return inplace(op, self, detail::scalar_to_tensor(v, detail::result_type(self, v), self.device()),
                 name);
}
}  // namespace

Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) {
  return inplace(BinaryOp::add, *this, o, "add_", alpha);
}
Tensor& Tensor::add_(const Scalar& o) { return inplace(BinaryOp::add, *this, o, "add_"); }
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) {
  return inplace(BinaryOp::sub, *this, o, "sub_", alpha);
}
Tensor& Tensor::sub_(const Scalar& o) { return inplace(BinaryOp::sub, *this, o, "sub_"); }
Tensor& Tensor::mul_(const Tensor& o) { return inplace(BinaryOp::mul, *this, o, "mul_"); }
Tensor& Tensor::mul_(const Scalar& o) { return inplace(BinaryOp::mul, *this, o, "mul_"); }
Tensor& Tensor::div_(const Tensor& o) { return inplace(BinaryOp::div, *this, o, "div_"); }
Tensor& Tensor::div_(const Scalar& o) { return inplace(BinaryOp::div, *this, o, "div_"); }
Tensor& Tensor::clamp_(const Scalar& lo, const Scalar& hi) {
  check_defined(*this, "clamp_");
  detail::check_inplace(*this, {}, "clamp_");
  if (detail::write_in_parts(
          *this, {}, [&](Tensor& part, const std::vector<Tensor>&) { part.clamp_(lo, hi); }))
    return *this;
  return assign(*this, clamp(original(*this), lo, hi), "clamp_");
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& v) {
  check_defined(mask, "masked_fill_");
  if (!is_bool(mask.dtype())) EMBER_FAIL("masked_fill_", "mask must be bool, got ", describe(mask));
  const Shape s = broadcast_shapes(shape(), mask.shape(), "masked_fill_");
  if (s != shape())
    EMBER_FAIL("masked_fill_", "mask shape ", shape_str(mask.shape()),
               " does not broadcast to the tensor's shape ", shape_str(shape()));
  // As torch, an expanded tensor may be filled (each memory location once for all its
  // elements: filled when any of their mask values is true).
  detail::check_inplace(*this, {&mask}, "masked_fill_", /*allow_expanded=*/true);
  if (detail::write_in_parts(*this, {mask}, [&](Tensor& part, const std::vector<Tensor>& m) {
        part.masked_fill_(m[0], v);
      }))
    return *this;
  Tensor fillv = detail::scalar_to_tensor(v, dtype(), device());
  return copy_(where(mask, fillv, *this).to(dtype()));
}

Tensor Tensor::abs() const { return ember::abs(*this); }
Tensor Tensor::exp() const { return ember::exp(*this); }
Tensor Tensor::log() const { return ember::log(*this); }
Tensor Tensor::sqrt() const { return ember::sqrt(*this); }
Tensor Tensor::tanh() const { return ember::tanh(*this); }
Tensor Tensor::relu() const { return unary(UnaryOp::relu, *this); }
Tensor Tensor::sigmoid() const { return unary(UnaryOp::sigmoid, *this); }
Tensor Tensor::pow(const Scalar& e) const { return ember::pow(*this, e); }

}  // namespace ember
