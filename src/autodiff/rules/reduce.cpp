// Backward rules of the reduce family: ir::Reduce (sum, prod, max/min, amax/amin), ir::Scan
// (cumsum, cumprod, cummax, cummin) and ir::Sort. Written with tensor ops (run with grad mode off).
// Composites (mean, var, std, logsumexp, norm, topk...) get their gradients from these.
#include <algorithm>
#include <cmath>

#include "autodiff/rules.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/indexing.h"
#include "ember/ops/reduce.h"
#include "tensor/internal.h"

namespace ember::autograd::rules {

using ir::ReduceOp;
using ir::ScanOp;

namespace {

// Products of all earlier elements along dim 1 of t [R, N] (1 for the first): exact with zeros.
Tensor exclusive_cumprod(const Tensor& t) {
  Tensor e = ones_like(t);
  const int64_t n = t.size(1);
  if (n > 1) e.narrow(1, 1, n - 1).copy_(cumprod(t.narrow(1, 0, n - 1), 1));
  return e;
}

// d prod / d x_i = product of the other elements of i's group, from prefix and suffix products
// (no division, so zeros are handled exactly, as torch's prod_backward).
Tensor prod_backward(const Tensor& g, const Tensor& x, const std::vector<int64_t>& dims) {
  if (x.numel() == 0 || x.dim() == 0) return g.expand(x.shape()).clone();
  std::vector<int64_t> perm;
  for (int64_t k = 0; k < x.dim(); ++k)
    if (std::find(dims.begin(), dims.end(), k) == dims.end()) perm.push_back(k);
  perm.insert(perm.end(), dims.begin(), dims.end());
  int64_t n = 1;
  for (int64_t d : dims) n *= x.size(d);
  const Tensor xp = x.permute(perm);
  const Tensor x2 = xp.reshape({x.numel() / n, n});
  const Tensor others = exclusive_cumprod(x2) * exclusive_cumprod(x2.flip({1})).flip({1});
  std::vector<int64_t> inv(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) inv[size_t(perm[k])] = int64_t(k);
  return (others * g.reshape({-1, 1})).reshape(xp.shape()).permute(inv).contiguous();
}

// max()/amax/amin: the gradient is shared evenly among the elements equal to the result (NaN
// counts as equal to a NaN result), as torch's evenly_distribute_backward.
Tensor distribute_backward(const Tensor& g, const Tensor& x, const Tensor& out,
                           const std::vector<int64_t>& dims) {
  const Tensor hit = logical_or(eq(x, out), logical_and(isnan(x), isnan(out))).to(x.dtype());
  const Tensor count = sum(hit, dims, true);
  return hit * (g / count);
}

Tensor reverse_cumsum(const Tensor& t, int64_t dim) {
  return cumsum(t.flip({dim}), dim).flip({dim});
}

// As torch's cumprod_backward: before the first zero of a line, sum_{k>=i} g_k y_k / x_i; at the
// first zero, the gradient of the products with that zero replaced by one; after it, zero.
// In a create_graph backward with zeros in x: grad_i = sum_{k>=i} g_k prod_{j<=k, j!=i} x_j from
// an [.., n, n] tensor of cumprods with x_i replaced by one (O(n^2), as torch under GradMode).
// The fast formula's constant zero after a line's first zero has a non-zero derivative.
Tensor cumprod_backward_twice_differentiable(const Tensor& g, const Tensor& x, int64_t dim) {
  const Tensor xt = x.transpose(dim, -1);  // [..., n]
  const Tensor gt = g.transpose(dim, -1);
  const int64_t n = xt.size(-1);
  Shape rows = xt.shape();
  rows.insert(rows.end() - 1, n);  // [..., n (i), n (k)]
  const Tensor col = arange(n, TensorOptions(DType::i64, x.device()));
  const Tensor i = col.reshape({n, 1}), k = col.reshape({1, n});
  const Tensor others = cumprod(where(eq(i, k), 1.0, xt.unsqueeze(-2).expand(rows)), -1);
  const Tensor later = ge(k, i).to(x.dtype());
  return sum(others * later * gt.unsqueeze(-2), {-1}).transpose(dim, -1).contiguous();
}

Tensor cumprod_backward(const Tensor& g, const Tensor& x, const Tensor& y, int64_t dim) {
  if (x.numel() == 0) return zeros_like(x);
  const Tensor zero = eq(x, 0);
  if (is_grad_enabled() && any(zero).item<bool>())
    return cumprod_backward_twice_differentiable(g, x, dim);
  const Tensor seen = cumsum(zero, dim);  // zeros up to and including each position
  const Tensor before = eq(seen, 0);
  const Tensor first = logical_and(zero, eq(seen, 1));
  const Tensor g_before = where(before, reverse_cumsum(g * y, dim) / where(before, x, 1.0), 0.0);
  const Tensor y1 = cumprod(where(first, 1.0, x), dim);
  const Tensor g_first =
      where(first, reverse_cumsum(g * y1 * logical_not(before).to(x.dtype()), dim), 0.0);
  return g_before + g_first;
}

}  // namespace

void reduce(ReduceOp op, const Tensor& x, const std::vector<int64_t>& dims, const Tensor& out,
            const Tensor& indices) {
  if (!needs_grad({&x}) || !is_floating(out.dtype())) return;
  const Shape xs = x.shape();
  switch (op) {
    case ReduceOp::sum:
      record1("SumBackward", {x}, out,
              [xs](const Tensor& g) { return std::vector<Tensor>{g.expand(xs)}; });
      return;
    case ReduceOp::prod: {
      SavedTensor sx(x);
      record1("ProdBackward", {x}, out, [sx, dims](const Tensor& g) {
        return std::vector<Tensor>{prod_backward(g, sx.get("ProdBackward"), dims)};
      });
      return;
    }
    case ReduceOp::max:
    case ReduceOp::min: {
      const char* name = op == ReduceOp::max ? "MaxBackward" : "MinBackward";
      if (indices.defined()) {  // max/min(dim): the gradient goes to the returned index
        SavedTensor si(indices);
        const DType dt = x.dtype();
        record(name, {x}, {out, indices}, [si, xs, dt, dims, name](const std::vector<Tensor>& gs) {
          const Tensor idx = si.get(name);
          if (dims.empty()) return std::vector<Tensor>{gs[0].reshape(xs)};
          return std::vector<Tensor>{scatter(zeros(xs, {dt, gs[0].device()}), dims[0], idx, gs[0])};
        });
        return;
      }
      const char* aname = op == ReduceOp::max ? "AmaxBackward" : "AminBackward";
      SavedTensor sx(x), sy(out);
      record1(aname, {x}, out, [sx, sy, dims, aname](const Tensor& g) {
        return std::vector<Tensor>{distribute_backward(g, sx.get(aname), sy.get(aname), dims)};
      });
      return;
    }
    default:
      return;  // any/all: bool results
  }
}

void scan(ScanOp op, const Tensor& x, int64_t dim, const Tensor& out, const Tensor& indices) {
  if (!needs_grad({&x}) || !is_floating(out.dtype())) return;
  switch (op) {
    case ScanOp::cumsum:
      record1("CumsumBackward", {x}, out,
              [dim](const Tensor& g) { return std::vector<Tensor>{reverse_cumsum(g, dim)}; });
      return;
    case ScanOp::cumprod: {
      SavedTensor sx(x), sy(out);
      record1("CumprodBackward", {x}, out, [sx, sy, dim](const Tensor& g) {
        const char* n = "CumprodBackward";
        return std::vector<Tensor>{cumprod_backward(g, sx.get(n), sy.get(n), dim)};
      });
      return;
    }
    case ScanOp::cummax:
    case ScanOp::cummin: {
      const char* name = op == ScanOp::cummax ? "CummaxBackward" : "CumminBackward";
      SavedTensor si(indices);
      const Shape xs = x.shape();
      const DType dt = x.dtype();
      record(name, {x}, {out, indices}, [si, xs, dt, dim, name](const std::vector<Tensor>& gs) {
        return std::vector<Tensor>{
            scatter_add(zeros(xs, {dt, gs[0].device()}), dim, si.get(name), gs[0])};
      });
      return;
    }
  }
}

void sort(const Tensor& x, int64_t dim, const Tensor& values, const Tensor& indices) {
  if (!needs_grad({&x}) || !is_floating(values.dtype())) return;
  SavedTensor si(indices);
  const Shape xs = x.shape();
  const DType dt = x.dtype();
  record("SortBackward", {x}, {values, indices}, [si, xs, dt, dim](const std::vector<Tensor>& gs) {
    // indices is a permutation along dim: each element gets the gradient of its sorted slot.
    return std::vector<Tensor>{
        scatter(zeros(xs, {dt, gs[0].device()}), dim, si.get("SortBackward"), gs[0])};
  });
}

void norm(const Tensor& x, double p, const std::vector<int64_t>& dims, const Tensor& out) {
  if (!needs_grad({&x})) return;
  const Shape kept = detail::reduced_shape(x.shape(), dims, true);
  SavedTensor sx(p == 0 ? Tensor() : x), sy(p == 0 || p == 1 ? Tensor() : out);
  const Shape xs = x.shape();
  const DType dt = x.dtype();
  // As torch's norm_backward: where the norm is 0 the gradient is 0 (not NaN); the inf-norm
  // shares it evenly among the elements of largest magnitude.
  record1("NormBackward", {x}, out, [=](const Tensor& g0) {
    const char* n = "NormBackward";
    if (p == 0) return std::vector<Tensor>{zeros(xs, {dt, g0.device()})};
    const Tensor xv = sx.get(n), g = g0.reshape(kept);
    if (p == 1) return std::vector<Tensor>{sign(xv) * g};
    const Tensor y = sy.get(n).reshape(kept);
    if (std::isinf(p)) {
      const Tensor xa = abs(xv);
      const Tensor hit = logical_or(eq(xa, y), logical_and(isnan(xa), isnan(y))).to(dt);
      return std::vector<Tensor>{sign(xv) * hit * (g / sum(hit, dims, true))};
    }
    if (p == 2) return std::vector<Tensor>{xv * where(eq(y, 0), 0.0, g / y)};
    if (p < 1) {
      const Tensor scaled = sign(xv) * where(eq(xv, 0), 0.0, pow(abs(xv), p - 1));
      return std::vector<Tensor>{scaled * g * pow(y, 1 - p)};
    }
    const Tensor scaled = p < 2 ? sign(xv) * pow(abs(xv), p - 1) : xv * pow(abs(xv), p - 2);
    return std::vector<Tensor>{scaled * where(eq(y, 0), 0.0, g / pow(y, p - 1))};
  });
}

}  // namespace ember::autograd::rules
