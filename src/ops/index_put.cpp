// Indexing frontend, part 2: advanced indexing (index, index_put), masks (masked_fill,
// masked_select), nonzero and slice assignment. Advanced indexing is lowered to one flat
// index_select / scatter / index_add over the indexed dims, so backends need no extra primitive.
#include <algorithm>

#include "autodiff/rules.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/indexing.h"
#include "tensor/internal.h"
#include "tensor/overlap.h"

namespace ember {

using detail::check_defined;
using detail::check_same_device;
using detail::describe;
using detail::make_tensor;

namespace {

// x[indices...] as torch's advanced indexing: which dims are indexed, by which (broadcast,
// wrapped, i64) indices, and where the broadcast index dims land in the result.
struct Plan {
  Tensor base;                // x, with a unit dim inserted for each 0-d bool mask
  std::vector<int64_t> perm;  // indexed dims first (in order), then the others
  Tensor flat_index;          // [numel(B)] i64 row-major position within the indexed dims
  Shape b;                    // broadcast shape of the index tensors
  Shape rest;                 // sizes of the dims that are not indexed
  int64_t n_indexed = 1;      // product of the indexed dims' sizes
  int64_t insert_at = 0;      // where B goes in the result (0 unless indexed dims are adjacent)
  Shape result;               // the shape of x[indices...]
};

Plan make_plan(const char* op, const Tensor& x, const std::vector<Tensor>& indices) {
  check_defined(x, op);
  Plan p;
  p.base = x;
  std::vector<int64_t> dims;
  std::vector<Tensor> idx;
  int64_t cur = 0;
  auto too_many = [&]() {
    EMBER_FAIL(op, "too many indices for tensor ", describe(x), ": ", indices.size(), " given");
  };
  for (const Tensor& t : indices) {
    if (!t.defined()) {  // an undefined entry keeps the whole dim, as None / ':' in torch
      if (++cur > p.base.dim()) too_many();
      continue;
    }
    check_same_device(x, t, op);
    if (is_bool(t.dtype()) && t.dim() == 0) {
      p.base = p.base.unsqueeze(cur);
      const int64_t n = t.item<bool>() ? 1 : 0;
      dims.push_back(cur++);
      idx.push_back(zeros({n}, {DType::i64, x.device()}));
    } else if (is_bool(t.dtype())) {
      if (cur + t.dim() > p.base.dim()) too_many();
      for (int64_t k = 0; k < t.dim(); ++k)
        if (t.size(k) != p.base.size(cur + k))
          EMBER_FAIL(op, "mask ", shape_str(t.shape()), " does not match the indexed tensor ",
                     shape_str(x.shape()), " at dim ", cur + k, " (", t.size(k),
                     " != ", p.base.size(cur + k), ")");
      const Tensor nz = nonzero(t);
      for (int64_t k = 0; k < t.dim(); ++k) {
        dims.push_back(cur++);
        idx.push_back(nz.select(1, k));
      }
    } else {
      if (cur >= p.base.dim()) too_many();
      idx.push_back(detail::check_index(t, p.base.size(cur), op, true, cur));
      dims.push_back(cur++);
    }
  }
  if (idx.empty()) EMBER_FAIL(op, "needs at least one index tensor, got none");
  idx = detail::broadcast_all(idx, op);
  p.b = idx[0].shape();
  // Row-major position within the indexed dims: sum_j idx_j * prod(sizes of later indexed dims).
  Tensor flat = idx.back();
  int64_t step = p.base.size(dims.back());
  for (size_t j = idx.size() - 1; j-- > 0;) {
    flat = add(flat, mul(idx[j], Scalar(step)));
    step *= p.base.size(dims[j]);
  }
  p.n_indexed = step;
  p.flat_index = flat.reshape({-1});
  p.perm = dims;
  for (int64_t k = 0; k < p.base.dim(); ++k)
    if (std::find(dims.begin(), dims.end(), k) == dims.end()) {
      p.perm.push_back(k);
      p.rest.push_back(p.base.size(k));
    }
  const bool adjacent = dims.back() - dims.front() + 1 == int64_t(dims.size());
  p.insert_at = adjacent ? dims.front() : 0;
  p.result.assign(p.rest.begin(), p.rest.begin() + p.insert_at);
  p.result.insert(p.result.end(), p.b.begin(), p.b.end());
  p.result.insert(p.result.end(), p.rest.begin() + p.insert_at, p.rest.end());
  return p;
}

// Permutation taking [B..., rest...] to the result's order [rest[:at], B..., rest[at:]].
std::vector<int64_t> to_result_order(const Plan& p) {
  const int64_t nb = int64_t(p.b.size()), nr = int64_t(p.rest.size());
  std::vector<int64_t> perm;
  for (int64_t k = 0; k < p.insert_at; ++k) perm.push_back(nb + k);
  for (int64_t k = 0; k < nb; ++k) perm.push_back(k);
  for (int64_t k = p.insert_at; k < nr; ++k) perm.push_back(nb + k);
  return perm;
}

std::vector<int64_t> inverse(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) inv[size_t(perm[k])] = int64_t(k);
  return inv;
}

}  // namespace

Tensor index(const Tensor& x, const std::vector<Tensor>& indices) {
  const Plan p = make_plan("index", x, indices);
  const int64_t nb = numel_of(p.b), nr = numel_of(p.rest);
  const Tensor src = p.base.permute(p.perm).reshape({p.n_indexed, nr});
  Tensor out = make_tensor({nb, nr}, x.dtype(), x.device());
  if (out.numel() > 0) run(ir::IndexSelect{src, 0, p.flat_index, out});
  autograd::rules::index_select(src, 0, p.flat_index, out);
  Shape grouped = p.b;
  grouped.insert(grouped.end(), p.rest.begin(), p.rest.end());
  return out.view(grouped).permute(to_result_order(p)).contiguous();
}

Tensor index_put(const Tensor& x, const std::vector<Tensor>& indices, const Tensor& values,
                 bool accumulate) {
  const char* op = "index_put";
  const Plan p = make_plan(op, x, indices);
  check_same_device(x, values, op);
  if (values.dtype() != x.dtype())
    EMBER_FAIL(op, "values dtype ", dtype_name(values.dtype()), " must equal the tensor's dtype ",
               dtype_name(x.dtype()), " (values ", describe(values), ")");
  if (broadcast_shapes(values.shape(), p.result, op) != p.result)
    EMBER_FAIL(op, "values ", shape_str(values.shape()),
               " cannot be broadcast to the indexed shape ", shape_str(p.result));
  const int64_t nb = numel_of(p.b), nr = numel_of(p.rest);
  const Tensor vals =
      values.expand(p.result).permute(inverse(to_result_order(p))).reshape({nb, nr});
  const Tensor permuted_in = p.base.permute(p.perm);
  // The kernel writes into a fresh [n_indexed, nr] copy; the rule links it to the input's and the
  // values' histories (the views around it are tracked).
  const Tensor flat_in = permuted_in.reshape({p.n_indexed, nr});
  Tensor flat;
  {
    NoGradGuard no_grad;
    flat = flat_in.clone();
  }
  if (nb > 0 && nr > 0) {
    if (accumulate)
      run(ir::IndexAdd{flat, 0, p.flat_index, vals, 1});
    else  // writes in index order: the last of duplicate indices wins
      run(ir::Scatter{flat, 0, p.flat_index.unsqueeze(1).expand({nb, nr}), vals,
                      ir::ScatterReduce::none, true});
  }
  autograd::rules::index_put(flat_in, p.flat_index, vals, accumulate, flat);
  return flat.view(permuted_in.shape()).permute(inverse(p.perm)).contiguous().view(x.shape());
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value) {
  check_defined(x, "masked_fill");
  return masked_fill(x, mask, detail::scalar_to_tensor(value, x.dtype(), x.device()));
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value) {
  const char* op = "masked_fill";
  check_same_device(x, mask, op);
  check_same_device(x, value, op);
  if (!is_bool(mask.dtype())) EMBER_FAIL(op, "mask must be bool, got ", describe(mask));
  if (value.dim() != 0) EMBER_FAIL(op, "value must be a 0-d tensor, got ", describe(value));
  broadcast_shapes(x.shape(), mask.shape(), op);  // names masked_fill when they don't broadcast
  // x and mask broadcast together, as torch's out-of-place masked_fill.
  return where(mask, value.to(x.dtype()), x);
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  const char* op = "masked_select";
  check_same_device(x, mask, op);
  if (!is_bool(mask.dtype())) EMBER_FAIL(op, "mask must be bool, got ", describe(mask));
  const Shape s = broadcast_shapes(x.shape(), mask.shape(), op);
  const Tensor xf = x.expand(s).reshape({-1});
  const Tensor pos = nonzero(mask.expand(s).reshape({-1}));
  Tensor out = make_tensor({pos.size(0)}, x.dtype(), x.device());
  const Tensor idx = pos.select(1, 0);
  if (out.numel() > 0) run(ir::IndexSelect{xf, 0, idx, out});
  autograd::rules::index_select(xf, 0, idx, out);
  return out;
}

Tensor nonzero(const Tensor& x) {
  check_defined(x, "nonzero");
  // The output size depends on the data: count on the host first (floats: NaN counts).
  const std::vector<bool> nz = x.to_vector<bool>();
  const int64_t count = int64_t(std::count(nz.begin(), nz.end(), true));
  Tensor out = make_tensor({count, x.dim()}, DType::i64, x.device());
  if (out.numel() > 0) run(ir::Nonzero{x, out});
  return out;
}

Tensor& slice_assign_(Tensor& x, int64_t dim, int64_t start, int64_t stop, int64_t step,
                      const Tensor& value) {
  const char* op = "slice_assign_";
  check_defined(x, op);
  check_defined(value, op);
  if (x.dim() == 0) EMBER_FAIL(op, "cannot slice a 0-d tensor (", describe(x), ")");
  const int64_t d = wrap_dim(dim, x.dim(), op);
  if (step <= 0) EMBER_FAIL(op, "step must be positive, got ", step);
  Tensor view = x.slice(d, start, stop, step);
  if (broadcast_shapes(view.shape(), value.shape(), op) != view.shape())
    EMBER_FAIL(op, "value ", shape_str(value.shape()), " cannot be broadcast to the slice ",
               shape_str(view.shape()), " of ", describe(x));
  detail::check_inplace(view, {&value}, op);
  view.copy_(value);
  return x;
}

}  // namespace ember
