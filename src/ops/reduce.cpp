// Reduction frontend: validation, dtype rules and lowering to ir::Reduce; var/std/logsumexp/
// norm/count_nonzero are composites of public tensor ops. Scans and sorts are in scan_sort.cpp.
#include "ember/ops/reduce.h"

#include <algorithm>
#include <cmath>

#include "autodiff/rules.h"
#include "ember/ops/elementwise.h"
#include "tensor/autocast.h"
#include "tensor/internal.h"

namespace ember {

using detail::check_defined;
using detail::describe;
using ir::ReduceOp;

namespace {

std::vector<int64_t> reduce_dims(const Tensor& x, const std::vector<int64_t>& dims,
                                 const char* op) {
  check_defined(x, op);
  const int64_t r = std::max<int64_t>(x.dim(), 1);
  for (int64_t d : dims)
    if (d < -r || d >= r)
      EMBER_FAIL(op, "dim ", d, " is out of range for ", describe(x), " (expected [", -r, ", ",
                 r - 1, "])");
  return detail::normalize_dims(dims, x.dim(), op);
}

int64_t reduced_numel(const Tensor& x, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= x.shape()[size_t(d)];
  return n;
}

// One ir::Reduce into a new `out` tensor; squeezed unless keepdim; indices for max/min.
Tensor reduce_prim(ReduceOp op, const Tensor& x, const std::vector<int64_t>& dims, bool keepdim,
                   DType out, Tensor* indices = nullptr) {
  const Shape kept = detail::reduced_shape(x.shape(), dims, true);
  Tensor dst = detail::make_tensor(kept, out, x.device(), /*lazy=*/true);
  Tensor idx;
  if (indices) idx = detail::make_tensor(kept, DType::i64, x.device());
  run(ir::Reduce{op, x, dims, dst, idx});
  autograd::rules::reduce(op, x, dims, dst, idx);
  if (!keepdim) {
    const Shape squeezed = detail::reduced_shape(x.shape(), dims, false);
    dst = dst.view(squeezed);
    if (indices) idx = idx.view(squeezed);
  }
  if (indices) *indices = idx;
  return dst;
}

void check_nonempty(const Tensor& x, const std::vector<int64_t>& dims, const char* op) {
  if (x.numel() != 0) return;
  for (int64_t d : dims)
    if (x.shape()[size_t(d)] == 0)
      EMBER_FAIL(op, "cannot reduce over zero-size dim ", d, ": the operation has no identity (",
                 describe(x), ")");
}

// sum/prod: integers and bool accumulate in and return i64, as torch.
DType sum_dtype(DType t) { return is_floating(t) ? t : DType::i64; }

DType float_or_fail(const Tensor& x, const char* op) {
  if (!is_floating(x.dtype()))
    EMBER_FAIL(op, "could not infer output dtype: input must be floating point, got ", describe(x));
  return x.dtype();
}

// Halves compute composites in f32 (as torch's accumulation type) and round once at the end.
Tensor upcast_half(const Tensor& x) {
  return x.dtype() == DType::f16 || x.dtype() == DType::bf16 ? x.to(DType::f32) : x;
}

std::tuple<Tensor, Tensor> max_min_dim(const Tensor& x, int64_t dim, bool keepdim, bool is_max,
                                       const char* op) {
  const auto dims = reduce_dims(x, {dim}, op);
  check_nonempty(x, dims, op);
  Tensor idx;
  Tensor v = reduce_prim(is_max ? ReduceOp::max : ReduceOp::min, x, dims, keepdim, x.dtype(), &idx);
  return {v, idx};
}

Tensor max_min_all(const Tensor& x, bool is_max, const char* op) {
  const auto dims = reduce_dims(x, {}, op);
  check_nonempty(x, dims, op);
  return reduce_prim(is_max ? ReduceOp::max : ReduceOp::min, x, dims, false, x.dtype());
}

Tensor amax_amin(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim, bool is_max,
                 const char* op) {
  const auto d = reduce_dims(x, dims, op);
  check_nonempty(x, d, op);
  return reduce_prim(is_max ? ReduceOp::max : ReduceOp::min, x, d, keepdim, x.dtype());
}

Tensor arg_flat(const Tensor& x, bool is_max, const char* op) {
  check_defined(x, op);
  if (x.numel() == 0)
    EMBER_FAIL(op, "cannot take the index of an extreme of an empty tensor (", describe(x), ")");
  Tensor idx;
  reduce_prim(is_max ? ReduceOp::max : ReduceOp::min, x.reshape({-1}), {0}, false, x.dtype(), &idx);
  return idx;
}

}  // namespace

Tensor sum(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  if (detail::amp::Scope s{detail::amp::Policy::f32_gpu, x})
    return sum(s(x), std::move(dims), keepdim);
  const auto d = reduce_dims(x, dims, "sum");
  return reduce_prim(ReduceOp::sum, x, d, keepdim, sum_dtype(x.dtype()));
}

Tensor prod(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  if (detail::amp::Scope s{detail::amp::Policy::f32, x})
    return prod(s(x), std::move(dims), keepdim);
  const auto d = reduce_dims(x, dims, "prod");
  return reduce_prim(ReduceOp::prod, x, d, keepdim, sum_dtype(x.dtype()));
}

Tensor mean(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  const auto d = reduce_dims(x, dims, "mean");
  const DType t = float_or_fail(x, "mean");
  // Public ops only (autodiff gets mean from sum and div). Halves sum into f32 and round once
  // after the division; 0/0 gives NaN for an empty dim.
  return div(sum(upcast_half(x), d, keepdim), double(reduced_numel(x, d))).to(t);
}

Tensor max(const Tensor& x) { return max_min_all(x, true, "max"); }
Tensor min(const Tensor& x) { return max_min_all(x, false, "min"); }
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  return max_min_dim(x, dim, keepdim, true, "max");
}
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  return max_min_dim(x, dim, keepdim, false, "min");
}
Tensor amax(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return amax_amin(x, dims, keepdim, true, "amax");
}
Tensor amin(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return amax_amin(x, dims, keepdim, false, "amin");
}
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  return std::get<1>(max_min_dim(x, dim, keepdim, true, "argmax"));
}
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) {
  return std::get<1>(max_min_dim(x, dim, keepdim, false, "argmin"));
}
Tensor argmax(const Tensor& x) { return arg_flat(x, true, "argmax"); }
Tensor argmin(const Tensor& x) { return arg_flat(x, false, "argmin"); }

Tensor any(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  const auto d = reduce_dims(x, dims, "any");
  return reduce_prim(ReduceOp::any, x, d, keepdim, DType::b8);
}
Tensor all(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  const auto d = reduce_dims(x, dims, "all");
  return reduce_prim(ReduceOp::all, x, d, keepdim, DType::b8);
}

namespace {

// (var, mean) with mean kept in keepdim shape for reuse; two passes for numerical soundness.
std::tuple<Tensor, Tensor> var_mean_impl(const Tensor& x, const std::vector<int64_t>& dims,
                                         int64_t correction, bool keepdim, const char* op) {
  const auto d = reduce_dims(x, dims, op);
  if (!is_floating(x.dtype()))
    EMBER_FAIL(op, "only supports floating-point dtypes, got ", describe(x));
  const Tensor xc = upcast_half(x);
  const Tensor m = mean(xc, d, true);
  const Tensor dev = xc - m;
  const Tensor ss = sum(dev * dev, d, keepdim);
  const double denom = std::max<double>(0.0, double(reduced_numel(x, d) - correction));
  Tensor v = div(ss, denom).to(x.dtype());
  Tensor mo = keepdim ? m : m.view(detail::reduced_shape(x.shape(), d, false));
  return {v, mo.to(x.dtype())};
}

}  // namespace

Tensor var(const Tensor& x, std::vector<int64_t> dims, int64_t correction, bool keepdim) {
  return std::get<0>(var_mean_impl(x, dims, correction, keepdim, "var"));
}
Tensor std(const Tensor& x, std::vector<int64_t> dims, int64_t correction, bool keepdim) {
  auto [v, m] = var_mean_impl(x, dims, correction, keepdim, "std");
  return sqrt(v);
}
std::tuple<Tensor, Tensor> var_mean(const Tensor& x, std::vector<int64_t> dims, int64_t correction,
                                    bool keepdim) {
  return var_mean_impl(x, dims, correction, keepdim, "var_mean");
}

Tensor logsumexp(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  if (detail::amp::Scope s{detail::amp::Policy::f32_gpu, x})
    return logsumexp(s(x), std::move(dims), keepdim);
  const auto d = reduce_dims(x, dims, "logsumexp");
  const DType out = is_floating(x.dtype()) ? x.dtype() : kDefaultFloat;
  const Tensor xc = upcast_half(x.to(out));
  if (reduced_numel(x, d) == 0 || x.numel() == 0)
    return log(sum(exp(xc), d, keepdim)).to(out);  // log(0) = -inf, as torch
  // Subtract the max for stability; an infinite max is replaced by 0 so inf - inf is avoided.
  // The shift cancels out of the value, so it carries no gradient (as torch).
  Tensor m = amax(xc.detach(), d, true);
  m = where(isinf(m), 0.0, m);
  Tensor r = log(sum(exp(xc - m), d, true)) + m;
  if (!keepdim) r = r.view(detail::reduced_shape(x.shape(), d, false));
  return r.to(out);
}

Tensor norm(const Tensor& x, double p, std::vector<int64_t> dims, bool keepdim) {
  if (detail::amp::Scope s{detail::amp::Policy::f32_gpu, x})
    return norm(s(x), p, std::move(dims), keepdim);
  const auto d = reduce_dims(x, dims, "norm");
  if (!is_floating(x.dtype()))
    EMBER_FAIL("norm", "expected a floating-point tensor, got ", describe(x));
  if (std::isnan(p)) EMBER_FAIL("norm", "p must not be NaN");
  // Computed without recording; NormBackward follows torch's choices where the norm is 0.
  Tensor r;
  {
    NoGradGuard no_grad;
    const Tensor xa = abs(upcast_half(x));
    if (std::isinf(p)) {
      if (reduced_numel(x, d) == 0)
        EMBER_FAIL("norm", "cannot compute the ", p > 0 ? "inf" : "-inf",
                   " norm over a zero-size dim: the operation has no identity (", describe(x), ")");
      r = p > 0 ? amax(xa, d, keepdim) : amin(xa, d, keepdim);
    } else if (p == 0) {
      r = sum(ne(xa, 0), d, keepdim).to(xa.dtype());
    } else if (p == 1) {
      r = sum(xa, d, keepdim);
    } else if (p == 2) {
      r = sqrt(sum(xa * xa, d, keepdim));
    } else {
      r = pow(sum(pow(xa, p), d, keepdim), 1.0 / p);
    }
    r = r.to(x.dtype());
    if (r.impl()->view_base) r = r.clone();  // the node goes on a tensor of its own
  }
  autograd::rules::norm(x, p, d, r);
  return r;
}

Tensor norm(const Tensor& x, const std::string& p, std::vector<int64_t> dims, bool keepdim) {
  if (p == "fro") return norm(x, 2.0, std::move(dims), keepdim);
  EMBER_FAIL("norm", "unsupported norm type \"", p, "\" (expected \"fro\" or a number)");
}

Tensor count_nonzero(const Tensor& x, std::vector<int64_t> dims) {
  const auto d = reduce_dims(x, dims, "count_nonzero");
  return reduce_prim(ReduceOp::sum, ne(x, 0), d, false, DType::i64);
}

// ---- Tensor methods ----
Tensor Tensor::sum() const { return ember::sum(*this); }
Tensor Tensor::sum(std::vector<int64_t> dims, bool keepdim) const {
  return ember::sum(*this, std::move(dims), keepdim);
}
Tensor Tensor::mean() const { return ember::mean(*this); }
Tensor Tensor::mean(std::vector<int64_t> dims, bool keepdim) const {
  return ember::mean(*this, std::move(dims), keepdim);
}
Tensor Tensor::max() const { return ember::max(*this); }
Tensor Tensor::min() const { return ember::min(*this); }
Tensor Tensor::argmax(int64_t dim, bool keepdim) const {
  return ember::argmax(*this, dim, keepdim);
}

}  // namespace ember
