// Reference copy (with dtype conversion), fill and where.
#include "backends/ref/dispatch.h"
#include "backends/ref/kernels.h"

namespace ember::ref {

void copy(const ir::Copy& op) {
  const Tensor& s = op.src;
  const Tensor& d = op.dst;
  // Copy through a temporary when source and destination overlap in memory (e.g. x.copy_(x.t())).
  if (s.is_alias_of(d) && !(s.offset() == d.offset() && s.strides() == d.strides())) {
    Tensor tmp = s.clone();
    copy(ir::Copy{tmp, d});
    return;
  }
  dispatch_dtype(s.dtype(), [&](auto st) {
    using S = decltype(st);
    dispatch_dtype(d.dtype(), [&](auto dt) {
      using D = decltype(dt);
      const S* sp = ptr<S>(s);
      D* dp = ptr<D>(d);
      strided_loop<2>(
          d.shape(), {&d.strides(), &s.strides()},
          [&](const std::array<int64_t, 2>& o) { dp[o[0]] = scalar_cast<D>(sp[o[1]]); });
    });
  });
}

void fill(const ir::Fill& op) {
  const Tensor& d = op.dst;
  dispatch_dtype(d.dtype(), [&](auto dt) {
    using D = decltype(dt);
    const D v = op.value.is_float() ? scalar_cast<D>(op.value.to_double())
                                    : scalar_cast<D>(op.value.to_int());
    D* dp = ptr<D>(d);
    strided_loop<1>(d.shape(), {&d.strides()},
                    [&](const std::array<int64_t, 1>& o) { dp[o[0]] = v; });
  });
}

void where(const ir::Where& op) {
  const Tensor& d = op.dst;
  const bool* cp = ptr<bool>(op.cond);
  dispatch_dtype(d.dtype(), [&](auto dt) {
    using D = decltype(dt);
    const D* ap = ptr<D>(op.a);
    const D* bp = ptr<D>(op.b);
    D* dp = ptr<D>(d);
    strided_loop<4>(
        d.shape(), {&d.strides(), &op.cond.strides(), &op.a.strides(), &op.b.strides()},
        [&](const std::array<int64_t, 4>& o) { dp[o[0]] = cp[o[1]] ? ap[o[2]] : bp[o[3]]; });
  });
}

}  // namespace ember::ref
