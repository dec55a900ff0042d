// Reference binary ops with PyTorch semantics (floor/trunc division, Python-style remainder,
// NaN-propagating minimum/maximum, saturating shifts).
#include <cmath>

#include "backends/ref/dispatch.h"
#include "backends/ref/kernels.h"
#include "ir/op_traits.h"

namespace ember::ref {

namespace {

using ir::BinaryOp;

template <typename C>
C float_floor_div(C a, C b) {
  if (b == 0) return a / b;
  const C mod = std::fmod(a, b);
  C div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= C(1);
  if (div == 0) return std::copysign(C(0), a / b);
  C fl = std::floor(div);
  if (div - fl > C(0.5)) fl += C(1);
  return fl;
}

template <typename C>
C float_op(BinaryOp op, C a, C b) {
  switch (op) {
    case BinaryOp::add:
      return a + b;
    case BinaryOp::sub:
      return a - b;
    case BinaryOp::mul:
      return a * b;
    case BinaryOp::div:
      return a / b;
    case BinaryOp::div_floor:
      return float_floor_div(a, b);
    case BinaryOp::div_trunc:
      return std::trunc(a / b);
    case BinaryOp::remainder: {
      if (b == 0) return std::fmod(a, b);
      C r = std::fmod(a, b);
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    }
    case BinaryOp::fmod:
      return std::fmod(a, b);
    case BinaryOp::pow:
      return std::pow(a, b);
    case BinaryOp::atan2:
      return std::atan2(a, b);
    case BinaryOp::hypot:
      return std::hypot(a, b);
    // a tie (-0 and +0) gives a, as torch's scalar loop (its vectorised loop gives b)
    case BinaryOp::minimum:
      return (std::isnan(a) || std::isnan(b)) ? a + b : (b < a ? b : a);
    case BinaryOp::maximum:
      return (std::isnan(a) || std::isnan(b)) ? a + b : (a < b ? b : a);
    case BinaryOp::copysign:
      return std::copysign(a, b);
    default:
      return a;
  }
}

[[noreturn]] void zero_div(BinaryOp op) {
  throw ir::IntegerDivisionByZero(std::string("[") + ir::user_name(op) +
                                  "] integer division by zero");
}

template <typename C>
C int_op(BinaryOp op, C a, C b) {
  constexpr int bits = int(sizeof(C) * 8);
  switch (op) {
    case BinaryOp::add:
      return wrap_add(a, b);
    case BinaryOp::sub:
      return wrap_sub(a, b);
    case BinaryOp::mul:
      return wrap_mul(a, b);
    case BinaryOp::div_trunc:
      if (b == 0) zero_div(op);
      if constexpr (std::is_signed_v<C>)
        if (b == C(-1)) return wrap_sub(C(0), a);  // avoids INT_MIN / -1 overflow
      return C(a / b);
    case BinaryOp::div_floor: {
      if (b == 0) zero_div(op);
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return wrap_sub(C(0), a);
        C q = C(a / b);
        if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
        return q;
      } else {
        return C(a / b);
      }
    }
    case BinaryOp::remainder: {
      if (b == 0) zero_div(op);
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return C(0);
        C r = C(a % b);
        if (r != 0 && ((r < 0) != (b < 0))) r = C(r + b);
        return r;
      } else {
        return C(a % b);
      }
    }
    case BinaryOp::fmod:
      if (b == 0) zero_div(op);
      if constexpr (std::is_signed_v<C>)
        if (b == C(-1)) return C(0);
      return C(a % b);
    case BinaryOp::pow: {
      if constexpr (std::is_signed_v<C>) {
        if (b < 0) return a == 1 ? C(1) : (a == -1 ? C((b & 1) ? -1 : 1) : C(0));
      }
      C r = 1, base = a;
      auto e = b;
      while (e) {
        if (e & 1) r = wrap_mul(r, base);
        base = wrap_mul(base, base);
        e = decltype(e)(e >> 1);
      }
      return r;
    }
    case BinaryOp::minimum:
      return a < b ? a : b;
    case BinaryOp::maximum:
      return a > b ? a : b;
    case BinaryOp::bitwise_and:
      return C(a & b);
    case BinaryOp::bitwise_or:
      return C(a | b);
    case BinaryOp::bitwise_xor:
      return C(a ^ b);
    case BinaryOp::shift_left:
      if (b < 0 || b >= bits) return C(0);
      return C(static_cast<std::make_unsigned_t<C>>(a) << b);
    case BinaryOp::shift_right:
      if (b < 0 || b >= bits) {
        if constexpr (std::is_signed_v<C>)
          return a < 0 ? C(-1) : C(0);
        else
          return C(0);
      }
      return C(a >> b);
    default:
      return a;
  }
}

bool bool_op(BinaryOp op, bool a, bool b) {
  switch (op) {
    case BinaryOp::add:
    case BinaryOp::bitwise_or:
    case BinaryOp::maximum:
      return a || b;
    case BinaryOp::mul:
    case BinaryOp::bitwise_and:
    case BinaryOp::minimum:
      return a && b;
    case BinaryOp::bitwise_xor:
    case BinaryOp::sub:
      return a != b;
    default:
      return a;
  }
}

template <typename C>
bool compare(BinaryOp op, C a, C b) {
  switch (op) {
    case BinaryOp::eq:
      return a == b;
    case BinaryOp::ne:
      return a != b;
    case BinaryOp::lt:
      return a < b;
    case BinaryOp::le:
      return a <= b;
    case BinaryOp::gt:
      return a > b;
    case BinaryOp::ge:
      return a >= b;
    case BinaryOp::logical_and:
      return (a != C(0)) && (b != C(0));
    case BinaryOp::logical_or:
      return (a != C(0)) || (b != C(0));
    case BinaryOp::logical_xor:
      return (a != C(0)) != (b != C(0));
    default:
      return false;
  }
}

}  // namespace

void binary(const ir::Binary& op) {
  const Tensor& d = op.dst;
  dispatch_dtype(op.a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* ap = ptr<T>(op.a);
    const T* bp = ptr<T>(op.b);
    const std::array<const Strides*, 3> st = {&d.strides(), &op.a.strides(), &op.b.strides()};
    if (ir::traits(op.op).predicate) {
      bool* dp = ptr<bool>(d);
      strided_loop<3>(d.shape(), st, [&](const std::array<int64_t, 3>& o) {
        dp[o[0]] = compare<C>(op.op, C(ap[o[1]]), C(bp[o[2]]));
      });
      return;
    }
    T* dp = ptr<T>(d);
    strided_loop<3>(d.shape(), st, [&](const std::array<int64_t, 3>& o) {
      const C a = C(ap[o[1]]), b = C(bp[o[2]]);
      if constexpr (std::is_same_v<C, bool>)
        dp[o[0]] = bool_op(op.op, a, b);
      else if constexpr (std::is_floating_point_v<C>)
        dp[o[0]] = T(float_op<C>(op.op, a, b));
      else
        dp[o[0]] = int_op<C>(op.op, a, b);
    });
  });
}

}  // namespace ember::ref
