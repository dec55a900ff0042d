// Scan and sort frontend: cumsum cumprod cummax cummin (ir::Scan), sort argsort topk (ir::Sort).
#include "ember/ops/reduce.h"

#include <algorithm>

#include "autodiff/rules.h"
#include "tensor/autocast.h"
#include "tensor/internal.h"

namespace ember {

using detail::check_defined;
using detail::describe;
using ir::ScanOp;

namespace {

// The wrapped dim, or "[op] dim 3 is out of range for float32 [2, 3] on cpu (expected [-2, 1])".
int64_t one_dim(const Tensor& x, int64_t dim, const char* op) {
  check_defined(x, op);
  const int64_t r = std::max<int64_t>(x.dim(), 1);
  if (dim < -r || dim >= r)
    EMBER_FAIL(op, "dim ", dim, " is out of range for ", describe(x), " (expected [", -r, ", ",
               r - 1, "])");
  return dim < 0 ? dim + r : dim;
}

// 0-d tensors are scanned/sorted as [1] and viewed back.
Tensor as_1d(const Tensor& x) { return x.dim() == 0 ? x.reshape({1}) : x; }
Tensor restore(const Tensor& t, const Tensor& x) { return x.dim() == 0 ? t.view({}) : t; }

std::tuple<Tensor, Tensor> scan(ScanOp op, const Tensor& x, int64_t dim, DType out,
                                bool with_indices) {
  const Tensor s = as_1d(x);
  Tensor dst = detail::make_tensor(s.shape(), out, x.device());
  Tensor idx;
  if (with_indices) idx = detail::make_tensor(s.shape(), DType::i64, x.device());
  run(ir::Scan{op, s, dim, dst, idx});
  autograd::rules::scan(op, s, dim, dst, idx);
  return {restore(dst, x), with_indices ? restore(idx, x) : idx};
}

// cumsum/cumprod: integers and bool accumulate in and return i64, as torch.
DType cum_dtype(DType t) { return is_floating(t) ? t : DType::i64; }

}  // namespace

Tensor cumsum(const Tensor& x, int64_t dim) {
  if (detail::amp::Scope s{detail::amp::Policy::f32_gpu, x}) return cumsum(s(x), dim);
  const int64_t d = one_dim(x, dim, "cumsum");
  return std::get<0>(scan(ScanOp::cumsum, x, d, cum_dtype(x.dtype()), false));
}
Tensor cumprod(const Tensor& x, int64_t dim) {
  if (detail::amp::Scope s{detail::amp::Policy::f32_gpu, x}) return cumprod(s(x), dim);
  const int64_t d = one_dim(x, dim, "cumprod");
  return std::get<0>(scan(ScanOp::cumprod, x, d, cum_dtype(x.dtype()), false));
}
std::tuple<Tensor, Tensor> cummax(const Tensor& x, int64_t dim) {
  const int64_t d = one_dim(x, dim, "cummax");
  return scan(ScanOp::cummax, x, d, x.dtype(), true);
}
std::tuple<Tensor, Tensor> cummin(const Tensor& x, int64_t dim) {
  const int64_t d = one_dim(x, dim, "cummin");
  return scan(ScanOp::cummin, x, d, x.dtype(), true);
}

namespace {

std::tuple<Tensor, Tensor> sort_impl(const Tensor& x, int64_t d, bool descending) {
  const Tensor s = as_1d(x);
  Tensor values = detail::make_tensor(s.shape(), x.dtype(), x.device());
  Tensor indices = detail::make_tensor(s.shape(), DType::i64, x.device());
  run(ir::Sort{s, d, descending, values, indices});
  autograd::rules::sort(s, d, values, indices);
  return {restore(values, x), restore(indices, x)};
}

}  // namespace

std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool /*stable*/) {
  // Always stable: an unstable sort may return any order of ties, and the stable one is one.
  return sort_impl(x, one_dim(x, dim, "sort"), descending);
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending, bool /*stable*/) {
  return std::get<1>(sort_impl(x, one_dim(x, dim, "argsort"), descending));
}

std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest,
                                bool /*sorted*/) {
  const int64_t d = one_dim(x, dim, "topk");
  const int64_t n = x.dim() == 0 ? 1 : x.shape()[size_t(d)];
  if (k < 0 || k > n)
    EMBER_FAIL("topk", "k (", k, ") is out of range for dim ", dim, " of size ", n, " (",
               describe(x), ")");
  auto [v, i] = sort_impl(x, d, largest);
  if (x.dim() == 0) return {v, i};
  // Own the data (as torch's outputs do) rather than returning views of the full sort.
  return {v.narrow(d, 0, k).clone(), i.narrow(d, 0, k).clone()};
}

}  // namespace ember
