// Joining, splitting and rearranging (composite ops: views, copy_ into views, where). pad is in
// pad.cpp.
#include "ember/ops/layout.h"

#include <algorithm>

#include "ember/ops/elementwise.h"
#include "tensor/internal.h"
#include "tensor/suggest_format.h"

namespace ember {

using detail::check_defined;
using detail::make_tensor;

namespace {

// torch's legacy rule: a 1-d tensor with 0 elements is skipped by cat whatever the other shapes.
bool legacy_empty(const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }

}  // namespace

Tensor cat(const std::vector<Tensor>& ts, int64_t dim) {
  if (ts.empty()) EMBER_FAIL("cat", "expected a non-empty list of tensors");
  check_defined(ts[0], "cat");
  DType dt = ts[0].dtype();
  int64_t ref = -1;  // first tensor that takes part
  for (size_t i = 0; i < ts.size(); ++i) {
    detail::check_same_device(ts[0], ts[i], "cat");
    dt = promote_types(dt, ts[i].dtype());
    if (ts[i].dim() == 0)
      EMBER_FAIL("cat", "zero-dimensional tensor (at position ", i, ") cannot be concatenated");
    if (ref < 0 && !legacy_empty(ts[i])) ref = int64_t(i);
  }
  if (ref < 0) return make_tensor({0}, dt, ts[0].device());
  const Tensor& r = ts[size_t(ref)];
  dim = wrap_dim(dim, r.dim(), "cat");
  Shape out_shape = r.shape();
  int64_t total = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    const Tensor& t = ts[i];
    if (legacy_empty(t)) continue;
    bool ok = t.dim() == r.dim();
    for (int64_t d = 0; ok && d < r.dim(); ++d) ok = d == dim || t.size(d) == r.size(d);
    if (!ok)
      EMBER_FAIL("cat", "sizes of tensors must match except in dimension ", dim, ": tensor ", ref,
                 " has shape ", shape_str(r.shape()), " but tensor ", i, " has shape ",
                 shape_str(t.shape()));
    total += t.size(dim);
  }
  out_shape[size_t(dim)] = total;
  // As torch: the inputs' layout when they all suggest the same one, else contiguous.
  MemoryFormat fmt = detail::suggest_format(ts[0]);
  for (const Tensor& t : ts)
    if (detail::suggest_format(t) != fmt) fmt = MemoryFormat::contiguous;
  if (int64_t(out_shape.size()) != (fmt == MemoryFormat::channels_last ? 4 : 5))
    fmt = MemoryFormat::contiguous;
  Tensor out = make_tensor(out_shape, dt, r.device(), fmt);
  int64_t off = 0;
  for (const Tensor& t : ts) {
    if (legacy_empty(t)) continue;
    const int64_t n = t.size(dim);
    if (n > 0) out.narrow(dim, off, n).copy_(t);
    off += n;
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& ts, int64_t dim) {
  if (ts.empty()) EMBER_FAIL("stack", "expected a non-empty list of tensors");
  check_defined(ts[0], "stack");
  dim = wrap_dim(dim, ts[0].dim() + 1, "stack");
  std::vector<Tensor> parts;
  for (size_t i = 0; i < ts.size(); ++i) {
    detail::check_same_device(ts[0], ts[i], "stack");
    if (ts[i].shape() != ts[0].shape())
      EMBER_FAIL("stack", "expects each tensor to be equal size, but got ",
                 shape_str(ts[0].shape()), " at entry 0 and ", shape_str(ts[i].shape()),
                 " at entry ", i);
    parts.push_back(ts[i].unsqueeze(dim));
  }
  return cat(parts, dim);
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  check_defined(x, "split");
  if (x.dim() == 0) EMBER_FAIL("split", "cannot split a 0-d tensor");
  dim = wrap_dim(dim, x.dim(), "split");
  const int64_t n = x.size(dim);
  if (split_size < 0 || (split_size == 0 && n != 0))
    EMBER_FAIL("split", "split_size must be positive (0 only for an empty dim), got ", split_size,
               " for dim ", dim, " of shape ", shape_str(x.shape()));
  std::vector<Tensor> out;
  if (n == 0) return {x.narrow(dim, 0, 0)};
  for (int64_t start = 0; start < n; start += split_size)
    out.push_back(x.narrow(dim, start, std::min(split_size, n - start)));
  return out;
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  check_defined(x, "split");
  if (x.dim() == 0) EMBER_FAIL("split", "cannot split a 0-d tensor");
  dim = wrap_dim(dim, x.dim(), "split");
  int64_t sum = 0;
  for (int64_t s : sizes) {
    if (s < 0) EMBER_FAIL("split", "split sizes must be non-negative, got ", shape_str(sizes));
    sum += s;
  }
  if (sum != x.size(dim))
    EMBER_FAIL("split", "split sizes ", shape_str(sizes), " sum to ", sum, " but dim ", dim,
               " has size ", x.size(dim), " (shape ", shape_str(x.shape()), ")");
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(x.narrow(dim, start, s));
    start += s;
  }
  return out;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  check_defined(x, "chunk");
  if (x.dim() == 0) EMBER_FAIL("chunk", "cannot chunk a 0-d tensor");
  if (chunks <= 0) EMBER_FAIL("chunk", "chunks must be positive, got ", chunks);
  dim = wrap_dim(dim, x.dim(), "chunk");
  const int64_t n = x.size(dim);
  // As torch: an empty dim still gives `chunks` (empty) pieces.
  if (n == 0) return split(x, std::vector<int64_t>(size_t(chunks), 0), dim);
  return split(x, (n + chunks - 1) / chunks, dim);
}

Tensor repeat(const Tensor& x, const std::vector<int64_t>& repeats) {
  check_defined(x, "repeat");
  const int64_t r = int64_t(repeats.size());
  if (r < x.dim())
    EMBER_FAIL("repeat", "number of repeats (", r, ") cannot be smaller than the number of dims (",
               x.dim(), ") of shape ", shape_str(x.shape()));
  for (int64_t v : repeats)
    if (v < 0) EMBER_FAIL("repeat", "repeats must be non-negative, got ", shape_str(repeats));
  // x as [1, s0, 1, s1, ...] expanded to [r0, s0, r1, s1, ...], then merged pairwise.
  Shape padded(size_t(r - x.dim()), 1);
  padded.insert(padded.end(), x.shape().begin(), x.shape().end());
  Shape inter, expanded, out;
  for (int64_t i = 0; i < r; ++i) {
    inter.insert(inter.end(), {1, padded[size_t(i)]});
    expanded.insert(expanded.end(), {repeats[size_t(i)], padded[size_t(i)]});
    out.push_back(repeats[size_t(i)] * padded[size_t(i)]);
  }
  Tensor y = x.reshape(inter).expand(expanded).reshape(out);
  return y.is_alias_of(x) ? y.clone() : y;
}

Tensor tile(const Tensor& x, const std::vector<int64_t>& reps) {
  check_defined(x, "tile");
  std::vector<int64_t> r(reps);
  if (int64_t(r.size()) < x.dim()) r.insert(r.begin(), size_t(x.dim() - int64_t(r.size())), 1);
  return repeat(x, r);
}

namespace {
// x rolled by `shift` along dim d: cat of the last `s` entries and the rest.
Tensor roll_dim(const Tensor& x, int64_t shift, int64_t d) {
  const int64_t n = x.size(d);
  if (n == 0) return x;
  const int64_t s = ((shift % n) + n) % n;
  if (s == 0) return x;
  return cat({x.narrow(d, n - s, s), x.narrow(d, 0, n - s)}, d);
}
}  // namespace

Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims) {
  check_defined(x, "roll");
  if (shifts.empty()) EMBER_FAIL("roll", "expects at least one shift");
  Tensor y;
  if (dims.empty()) {
    if (shifts.size() != 1)
      EMBER_FAIL("roll", "shifts and dims must align: ", shifts.size(), " shifts but no dims");
    y = roll_dim(x.reshape({-1}), shifts[0], 0).reshape(x.shape());
  } else {
    if (shifts.size() != dims.size())
      EMBER_FAIL("roll", "shifts and dims must align: ", shifts.size(), " shifts and ", dims.size(),
                 " dims");
    y = x;
    for (size_t i = 0; i < dims.size() && x.dim() == 0; ++i) wrap_dim(dims[i], 0, "roll");
    for (size_t i = 0; i < dims.size() && x.dim() > 0; ++i)
      y = roll_dim(y, shifts[i], wrap_dim(dims[i], x.dim(), "roll"));
  }
  return y.is_alias_of(x) ? y.clone() : y;
}

namespace {
Tensor triangle(const Tensor& x, int64_t diagonal, bool lower, const char* op) {
  check_defined(x, op);
  if (x.dim() < 2)
    EMBER_FAIL(op, "expects a tensor with at least 2 dims, got shape ", shape_str(x.shape()));
  const int64_t m = x.size(-2), n = x.size(-1);
  const TensorOptions o(DType::i64, x.device());
  // col - row compared with the diagonal: [m, n] bool, broadcast over the batch dims.
  Tensor diff = sub(arange(n, o).unsqueeze(0), arange(m, o).unsqueeze(1));
  Tensor keep = lower ? le(diff, Scalar(diagonal)) : ge(diff, Scalar(diagonal));
  return where(keep, x, make_tensor({}, x.dtype(), x.device()).zero_());
}
}  // namespace

Tensor tril(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, true, "tril"); }
Tensor triu(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, false, "triu"); }

Tensor diag(const Tensor& x, int64_t diagonal) {
  check_defined(x, "diag");
  if (x.dim() == 1) {
    const int64_t n = x.size(0) + (diagonal < 0 ? -diagonal : diagonal);
    Tensor out = make_tensor({n, n}, x.dtype(), x.device());
    out.zero_();
    out.diagonal(diagonal).copy_(x);
    return out;
  }
  if (x.dim() == 2) return x.diagonal(diagonal).clone();
  EMBER_FAIL("diag", "expects a 1-d or 2-d tensor, got shape ", shape_str(x.shape()));
}

Tensor as_strided(const Tensor& x, Shape size, Strides stride,
                  std::optional<int64_t> storage_offset) {
  check_defined(x, "as_strided");
  return x.as_strided(std::move(size), std::move(stride), storage_offset);
}

Tensor diagonal(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  check_defined(x, "diagonal");
  return x.diagonal(offset, dim1, dim2);
}

std::vector<Tensor> meshgrid(const std::vector<Tensor>& ts, const std::string& indexing) {
  if (ts.empty()) EMBER_FAIL("meshgrid", "expects a non-empty list of tensors");
  if (indexing != "ij" && indexing != "xy")
    EMBER_FAIL("meshgrid", "indexing must be \"ij\" or \"xy\", got \"", indexing, "\"");
  const size_t k = ts.size();
  Shape out_shape;
  for (size_t i = 0; i < k; ++i) {
    detail::check_same_device(ts[0], ts[i], "meshgrid");
    if (ts[i].dim() > 1)
      EMBER_FAIL("meshgrid", "expects 0-d or 1-d tensors, got shape ", shape_str(ts[i].shape()),
                 " at position ", i);
    if (ts[i].dtype() != ts[0].dtype())
      EMBER_FAIL("meshgrid", "expects all tensors to have the same dtype, got ",
                 dtype_name(ts[0].dtype()), " and ", dtype_name(ts[i].dtype()));
    out_shape.push_back(ts[i].numel());
  }
  // "xy": the first two inputs index the output's dims 1 and 0 (Cartesian).
  std::vector<size_t> pos(k);
  for (size_t i = 0; i < k; ++i) pos[i] = i;
  if (indexing == "xy" && k >= 2) {
    std::swap(pos[0], pos[1]);
    std::swap(out_shape[0], out_shape[1]);
  }
  std::vector<Tensor> out;
  for (size_t i = 0; i < k; ++i) {
    Shape s(k, 1);
    s[pos[i]] = ts[i].numel();
    out.push_back(ts[i].reshape(s).expand(out_shape));
  }
  return out;
}

Tensor flip(const Tensor& x, const std::vector<int64_t>& dims) {
  check_defined(x, "flip");
  return x.flip(dims);
}

}  // namespace ember
