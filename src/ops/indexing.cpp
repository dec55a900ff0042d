// Indexing frontend, part 1: index validation, gather/scatter family, index_select, index_add,
// take_along_dim, one_hot. Every index is range-checked (check_index) before a kernel runs.
// Advanced indexing (index, index_put), masks and nonzero are in index_put.cpp.
#include "ember/ops/indexing.h"

#include <algorithm>

#include "ember/autograd.h"

#include "autodiff/rules.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/reduce.h"
#include "tensor/internal.h"

namespace ember {

using detail::check_defined;
using detail::check_same_device;
using detail::describe;
using detail::make_tensor;

namespace detail {

namespace {
[[noreturn]] void out_of_range(const char* op, const std::string& value, int64_t size, int64_t dim,
                               bool allow_negative) {
  std::string where = dim >= 0 ? "dim " + std::to_string(dim) : std::string("a dim");
  EMBER_FAIL(op, "index ", value, " is out of range for ", where, " of size ", size, " (valid: [",
             allow_negative ? -size : 0, ", ", size, "))");
}
}  // namespace

Tensor check_index(const Tensor& index, int64_t size, const char* op, bool allow_negative,
                   int64_t dim) {
  check_defined(index, op);
  if (!is_integral(index.dtype()))
    EMBER_FAIL(op, "index must be an integer tensor, got ", describe(index));
  if (index.numel() == 0) return cast(index, DType::i64);
  if (index.device().is_host() && index.dtype() != DType::u64) {
    // The values themselves (in place when no recorded op touches the index): no reductions
    // recorded and read back, no flush of the stream's other pending ops.
    const std::vector<int64_t> v = index.to_vector<int64_t>();
    int64_t l = v[0], h = v[0];
    for (int64_t x : v) {
      l = std::min(l, x);
      h = std::max(h, x);
    }
    if (h >= size) out_of_range(op, std::to_string(h), size, dim, allow_negative);
    if (l < (allow_negative ? -size : 0))
      out_of_range(op, std::to_string(l), size, dim, allow_negative);
    const Tensor i64 = cast(index, DType::i64);
    return l >= 0 ? i64 : where(lt(i64, Scalar(0)), add(i64, Scalar(size)), i64);
  }
  // Two reductions on the index's device (not a host copy of the whole index), read at the next
  // sync (u64 on host devices: now).
  const std::string where_op = op;
  if (index.dtype() == DType::u64) {
    const Tensor hi = amax(index);
    check_device_data(index.device(), [=] {
      const uint64_t h = hi.item<uint64_t>();
      if (h >= uint64_t(size))
        out_of_range(where_op.c_str(), std::to_string(h), size, dim, allow_negative);
    });
    const Tensor i64 = cast(index, DType::i64);
    return index.device().is_host() ? i64 : clamp(i64, Scalar(0), Scalar(size - 1));
  }
  const Tensor lo = amin(index), hi = amax(index);
  check_device_data(index.device(), [=] {
    const int64_t h = hi.item<int64_t>(), l = lo.item<int64_t>();
    if (h >= size) out_of_range(where_op.c_str(), std::to_string(h), size, dim, allow_negative);
    if (l < (allow_negative ? -size : 0))
      out_of_range(where_op.c_str(), std::to_string(l), size, dim, allow_negative);
  });
  const Tensor i64 = cast(index, DType::i64);
  const Tensor wrapped = where(lt(i64, Scalar(0)), add(i64, Scalar(size)), i64);
  return clamp(wrapped, Scalar(0), Scalar(size - 1));
}

}  // namespace detail

namespace {

// 0-d tensors act as 1-d tensors of one element, as in torch's gather/scatter family.
Tensor as_1d(const Tensor& t) { return t.dim() == 0 ? t.reshape({1}) : t; }

void check_same_rank(const char* op, const Tensor& a, const char* an, const Tensor& b,
                     const char* bn) {
  if (as_1d(a).dim() != as_1d(b).dim())
    EMBER_FAIL(op, an, " ", shape_str(a.shape()), " and ", bn, " ", shape_str(b.shape()),
               " must have the same number of dims");
}

// index.size(k) <= t.size(k) for every k (but `skip`), as torch's scatter/gather shape check.
void check_fits(const char* op, const Tensor& index, const Tensor& t, const char* tn,
                int64_t skip) {
  for (int64_t k = 0; k < index.dim(); ++k)
    if (k != skip && index.size(k) > t.size(k))
      EMBER_FAIL(op, "index ", shape_str(index.shape()), " is larger than ", tn, " ",
                 shape_str(t.shape()), " at dim ", k, " (", index.size(k), " > ", t.size(k), ")");
}

Tensor gather_impl(const char* op, const Tensor& x, int64_t dim, const Tensor& index) {
  check_same_device(x, index, op);
  check_same_rank(op, x, "input", index, "index");
  const Tensor xs = as_1d(x), is = as_1d(index);
  const int64_t d = wrap_dim(dim, xs.dim(), op);
  check_fits(op, is, xs, "input", d);
  const Tensor idx = detail::check_index(is, xs.size(d), op, false, d);
  Tensor out = make_tensor(is.shape(), x.dtype(), x.device());
  if (out.numel() > 0) run(ir::Gather{xs, d, idx, out});
  autograd::rules::gather(xs, d, idx, out);
  return index.dim() == 0 ? out.reshape({}) : out;
}

Tensor scatter_impl(const char* op, const Tensor& x, int64_t dim, const Tensor& index,
                    const Tensor& src, ir::ScatterReduce reduce, bool include_self) {
  check_same_device(x, index, op);
  check_same_device(x, src, op);
  if (src.dtype() != x.dtype())
    EMBER_FAIL(op, "src dtype ", dtype_name(src.dtype()), " must equal the input's dtype ",
               dtype_name(x.dtype()), " (input ", describe(x), ", src ", describe(src), ")");
  check_same_rank(op, x, "input", index, "index");
  check_same_rank(op, src, "src", index, "index");
  const Tensor xs = as_1d(x), is = as_1d(index), ss = as_1d(src);
  const int64_t d = wrap_dim(dim, xs.dim(), op);
  check_fits(op, is, xs, "input", d);
  check_fits(op, is, ss, "src", -1);
  const Tensor idx = detail::check_index(is, xs.size(d), op, false, d);
  Tensor out;
  if (is.numel() > 0) {
    {
      // The scatter rule below is out's whole history (a clone's node would be replaced, and a
      // saved out must not remember it: create_graph differentiates through the saved out).
      NoGradGuard no_grad;
      out = xs.clone();
    }
    Tensor sv = ss;
    for (int64_t k = 0; k < is.dim(); ++k) sv = sv.narrow(k, 0, is.size(k));
    run(ir::Scatter{out, d, idx, sv, reduce, include_self});
    autograd::rules::scatter(reduce, include_self, xs, d, idx, sv, out);
  } else {
    out = xs.clone();
  }
  return x.dim() == 0 ? out.reshape({}) : out;
}

// A 1-d i64 index (0-d counts as one element) for index_select / index_add.
Tensor vector_index(const char* op, const Tensor& index, int64_t size, int64_t dim) {
  check_defined(index, op);
  if (index.dim() > 1) EMBER_FAIL(op, "index must be 0-d or 1-d, got ", describe(index));
  return detail::check_index(index.reshape({-1}), size, op, false, dim);
}

}  // namespace

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  return gather_impl("gather", x, dim, index);
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_impl("scatter", x, dim, index, src, ir::ScatterReduce::none, true);
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value) {
  check_same_device(x, index, "scatter");
  const Tensor v = detail::scalar_to_tensor(value, x.dtype(), x.device()).expand(index.shape());
  return scatter_impl("scatter", x, dim, index, v, ir::ScatterReduce::none, true);
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_impl("scatter_add", x, dim, index, src, ir::ScatterReduce::sum, true);
}

Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self) {
  const char* op = "scatter_reduce";
  check_defined(x, op);
  ir::ScatterReduce r;
  if (reduce == "sum")
    r = ir::ScatterReduce::sum;
  else if (reduce == "prod")
    r = ir::ScatterReduce::prod;
  else if (reduce == "mean")
    r = ir::ScatterReduce::mean;
  else if (reduce == "amax")
    r = ir::ScatterReduce::amax;
  else if (reduce == "amin")
    r = ir::ScatterReduce::amin;
  else
    EMBER_FAIL(op, "reduce must be one of \"sum\", \"prod\", \"mean\", \"amax\", \"amin\", got \"",
               reduce, "\"");
  if (r == ir::ScatterReduce::mean && is_bool(x.dtype()))
    EMBER_FAIL(op, "reduce \"mean\" is not supported for bool tensors (", describe(x), ")");
  return scatter_impl(op, x, dim, index, src, r, include_self);
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  const char* op = "index_select";
  check_same_device(x, index, op);
  const Tensor xs = as_1d(x);
  const int64_t d = wrap_dim(dim, xs.dim(), op);
  const Tensor idx = vector_index(op, index, xs.size(d), d);
  if (x.dim() == 0 && idx.numel() != 1)
    EMBER_FAIL(op, "index of a 0-d tensor must have one element, got ", describe(index));
  Shape s = xs.shape();
  s[size_t(d)] = idx.numel();
  Tensor out = make_tensor(s, x.dtype(), x.device());
  if (out.numel() > 0) run(ir::IndexSelect{xs, d, idx, out});
  autograd::rules::index_select(xs, d, idx, out);
  return x.dim() == 0 ? out.reshape({}) : out;
}

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                 const Scalar& alpha) {
  const char* op = "index_add";
  check_same_device(x, index, op);
  check_same_device(x, src, op);
  if (src.dtype() != x.dtype())
    EMBER_FAIL(op, "src dtype ", dtype_name(src.dtype()), " must equal the input's dtype ",
               dtype_name(x.dtype()));
  if (!is_floating(x.dtype()) && alpha.is_float())
    EMBER_FAIL(op, "alpha ", alpha, " must not be a floating-point number for ", describe(x));
  const Tensor xs = as_1d(x), ss = as_1d(src);
  const int64_t d = wrap_dim(dim, xs.dim(), op);
  const Tensor idx = vector_index(op, index, xs.size(d), d);
  bool ok = ss.dim() == xs.dim() && ss.size(d) == idx.numel();
  for (int64_t k = 0; ok && k < xs.dim(); ++k) ok = k == d || ss.size(k) == xs.size(k);
  if (!ok)
    EMBER_FAIL(op, "src ", shape_str(src.shape()), " must have the input's shape ",
               shape_str(x.shape()), " with dim ", d, " of size ", idx.numel(),
               " (the index's length)");
  Tensor out = xs.clone();
  if (ss.numel() > 0) {
    run(ir::IndexAdd{out, d, idx, ss, alpha});
    autograd::rules::index_add(xs, d, idx, ss, alpha.to_double(), out);
  }
  return x.dim() == 0 ? out.reshape({}) : out;
}

Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim) {
  const char* op = "take_along_dim";
  check_same_device(x, indices, op);
  if (!dim) return gather_impl(op, x.reshape({-1}), 0, indices.reshape({-1}));
  if (x.dim() != indices.dim())
    EMBER_FAIL(op, "input ", shape_str(x.shape()), " and indices ", shape_str(indices.shape()),
               " must have the same number of dims");
  const int64_t d = wrap_dim(*dim, x.dim(), op);
  if (x.dim() == 0) return gather_impl(op, x, d, indices);
  Shape a = x.shape(), b = indices.shape();
  a[size_t(d)] = b[size_t(d)] = 1;
  const Shape s = broadcast_shapes(a, b, op);
  Shape sx = s, si = s;
  sx[size_t(d)] = x.size(d);
  si[size_t(d)] = indices.size(d);
  return gather_impl(op, x.expand(sx), d, indices.expand(si));
}

Tensor one_hot(const Tensor& x, int64_t num_classes) {
  const char* op = "one_hot";
  check_defined(x, op);
  if (!is_integral(x.dtype()))
    EMBER_FAIL(op, "expects an integer tensor of class indices, got ", describe(x));
  if (num_classes < -1) EMBER_FAIL(op, "num_classes must be -1 or non-negative, got ", num_classes);
  if (num_classes == -1) {
    if (x.numel() == 0)
      EMBER_FAIL(op, "cannot infer num_classes from an empty tensor (", describe(x), ")");
    int64_t mx = 0;
    for (int64_t v : x.to_vector<int64_t>()) mx = std::max(mx, v);
    num_classes = mx + 1;
  }
  if (x.numel() > 0) {
    // torch: "Class values must be smaller than num_classes." / "... must be non-negative."
    const Tensor lo_t = is_signed(x.dtype()) ? amin(x) : Tensor(), hi_t = amax(x);
    const std::string what = describe(x);
    detail::check_device_data(x.device(), [=] {
      const int64_t lo = lo_t.defined() ? lo_t.item<int64_t>() : 0;
      const uint64_t hi = hi_t.to(DType::u64).item<uint64_t>();
      if (lo < 0)
        EMBER_FAIL("one_hot", "class value ", lo, " is negative; class values must be in [0, ",
                   num_classes, ") (", what, ")");
      if (hi >= uint64_t(num_classes))
        EMBER_FAIL("one_hot", "class value ", hi, " is out of range for num_classes=", num_classes,
                   " (valid: [0, ", num_classes, "); ", what, ")");
    });
  }
  const Tensor idx = detail::cast(x, DType::i64);
  const Tensor classes = arange_typed(0, num_classes, 1, DType::i64, x.device());
  return eq(idx.unsqueeze(-1), classes).to(DType::i64);
}

}  // namespace ember
