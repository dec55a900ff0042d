// View ops: new geometry over the same storage, no copy (flip and reshape copy when they must).
#include <algorithm>
#include <functional>
#include <optional>
#include <string>

#include "autodiff/graph.h"
#include "core/view_strides.h"
#include "tensor/internal.h"

namespace ember {

using detail::check_defined;
using detail::make_view;
using detail::view_strides;

namespace {

// Records the backward of a view op: fn maps the view's gradient to the input's.
Tensor track(Tensor out, const Tensor& in, const char* name,
             std::function<Tensor(const Tensor&)> fn) {
  if (autograd::needs_grad({&in}))
    autograd::record1(name, {in}, out,
                      [fn = std::move(fn)](const Tensor& g) { return std::vector<Tensor>{fn(g)}; });
  return out;
}

// Gradient of a view that selects part of `shape`: zeros with the part set to g.
Tensor scatter_into(const Tensor& g, const Shape& shape,
                    const std::function<Tensor(Tensor&)>& part) {
  Tensor gx = zeros(shape, {g.dtype(), g.device()});
  Tensor region = part(gx);
  region.copy_(g);
  return gx;
}

Shape infer_shape(Shape shape, int64_t numel, const Shape& from, const char* op) {
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) EMBER_FAIL(op, "only one dimension can be inferred in ", shape_str(shape));
      infer = int64_t(i);
    } else if (shape[i] < 0) {
      EMBER_FAIL(op, "invalid shape ", shape_str(shape));
    } else if (__builtin_mul_overflow(known, shape[i], &known)) {
      EMBER_FAIL(op, "shape ", shape_str(shape), " has too many elements");
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel % known != 0)
      EMBER_FAIL(op, "shape ", shape_str(shape), " is invalid for input of size ", numel,
                 " (shape ", shape_str(from), ")");
    shape[size_t(infer)] = numel / known;
  } else if (known != numel) {
    EMBER_FAIL(op, "shape ", shape_str(shape), " is invalid for input of size ", numel, " (shape ",
               shape_str(from), ")");
  }
  checked_numel(shape, op);  // an empty shape's other dims too: its strides reach them
  return shape;
}

}  // namespace

Tensor Tensor::view(Shape s) const {
  check_defined(*this, "view");
  s = infer_shape(std::move(s), numel(), shape(), "view");
  Strides st;
  if (!view_strides(shape(), strides(), s, st))
    EMBER_FAIL("view", "cannot view shape ", shape_str(shape()), " with strides ",
               shape_str(strides()), " as ", shape_str(s), " without a copy; use reshape()");
  return track(make_view(*this, s, st, offset()), *this, "ViewBackward",
               [old = shape()](const Tensor& g) { return g.reshape(old); });
}

Tensor Tensor::reshape(Shape s) const {
  check_defined(*this, "reshape");
  s = infer_shape(std::move(s), numel(), shape(), "reshape");
  Strides st;
  if (view_strides(shape(), strides(), s, st))
    return track(make_view(*this, s, st, offset()), *this, "ViewBackward",
                 [old = shape()](const Tensor& g) { return g.reshape(old); });
  return contiguous().view(s);
}

Tensor Tensor::flatten(int64_t start, int64_t end) const {
  check_defined(*this, "flatten");
  if (dim() == 0) return reshape({1});
  start = wrap_dim(start, dim(), "flatten");
  end = wrap_dim(end, dim(), "flatten");
  if (start > end) EMBER_FAIL("flatten", "start_dim ", start, " is after end_dim ", end);
  Shape s(shape().begin(), shape().begin() + start);
  int64_t m = 1;
  for (int64_t i = start; i <= end; ++i) m *= shape()[size_t(i)];
  s.push_back(m);
  s.insert(s.end(), shape().begin() + end + 1, shape().end());
  return reshape(s);
}

Tensor Tensor::permute(std::vector<int64_t> dims) const {
  check_defined(*this, "permute");
  if (int64_t(dims.size()) != dim())
    EMBER_FAIL("permute", "got ", dims.size(), " dims for a tensor of rank ", dim(), " (shape ",
               shape_str(shape()), ")");
  Shape s(dims.size());
  Strides st(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], dim(), "permute");
    if (seen[size_t(d)]) EMBER_FAIL("permute", "dim ", dims[i], " repeated");
    seen[size_t(d)] = true;
    s[i] = shape()[size_t(d)];
    st[i] = strides()[size_t(d)];
  }
  std::vector<int64_t> inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    inverse[size_t(wrap_dim(dims[i], dim(), "permute"))] = int64_t(i);
  return track(make_view(*this, s, st, offset()), *this, "PermuteBackward",
               [inverse](const Tensor& g) { return g.permute(inverse); });
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  check_defined(*this, "transpose");
  if (dim() == 0) return *this;
  d0 = wrap_dim(d0, dim(), "transpose");
  d1 = wrap_dim(d1, dim(), "transpose");
  Shape s = shape();
  Strides st = strides();
  std::swap(s[size_t(d0)], s[size_t(d1)]);
  std::swap(st[size_t(d0)], st[size_t(d1)]);
  return track(make_view(*this, s, st, offset()), *this, "TransposeBackward",
               [d0, d1](const Tensor& g) { return g.transpose(d0, d1); });
}

Tensor Tensor::t() const {
  check_defined(*this, "t");
  if (dim() > 2) EMBER_FAIL("t", "expects a tensor with <= 2 dims, got shape ", shape_str(shape()));
  return dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::mT() const {
  check_defined(*this, "mT");
  if (dim() < 2)
    EMBER_FAIL("mT", "expects a tensor with >= 2 dims, got shape ", shape_str(shape()));
  return transpose(-2, -1);
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t stop, int64_t step) const {
  check_defined(*this, "slice");
  d = wrap_dim(d, dim(), "slice");
  if (dim() == 0) EMBER_FAIL("slice", "cannot slice a 0-d tensor");
  if (step <= 0) EMBER_FAIL("slice", "step must be positive, got ", step);
  const int64_t n = shape()[size_t(d)];
  if (start < 0) start += n;
  if (stop < 0) stop += n;
  start = std::clamp<int64_t>(start, 0, n);
  stop = std::clamp<int64_t>(stop, start, n);
  Shape s = shape();
  Strides st = strides();
  s[size_t(d)] = (stop - start + step - 1) / step;
  const int64_t off = offset() + start * st[size_t(d)];
  st[size_t(d)] *= step;
  return track(make_view(*this, s, st, off), *this, "SliceBackward",
               [old = shape(), d, start, stop, step](const Tensor& g) {
                 return scatter_into(g, old,
                                     [&](Tensor& gx) { return gx.slice(d, start, stop, step); });
               });
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  check_defined(*this, "narrow");
  d = wrap_dim(d, dim(), "narrow");
  const int64_t n = size(d);
  if (start < 0) start += n;
  if (start < 0 || length < 0 || start + length > n)
    EMBER_FAIL("narrow", "start ", start, " + length ", length, " exceeds dim ", d, " of size ", n,
               " (shape ", shape_str(shape()), ")");
  return slice(d, start, start + length);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  check_defined(*this, "select");
  if (dim() == 0) EMBER_FAIL("select", "cannot index a 0-d tensor");
  d = wrap_dim(d, dim(), "select");
  const int64_t n = shape()[size_t(d)];
  if (index < -n || index >= n)
    EMBER_FAIL("select", "index ", index, " is out of range for dim ", d, " of size ", n,
               " (shape ", shape_str(shape()), ")");
  if (index < 0) index += n;
  Shape s = shape();
  Strides st = strides();
  const int64_t off = offset() + index * st[size_t(d)];
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  return track(make_view(*this, s, st, off), *this, "SelectBackward",
               [old = shape(), d, index](const Tensor& g) {
                 return scatter_into(g, old, [&](Tensor& gx) { return gx.select(d, index); });
               });
}

Tensor Tensor::expand(Shape target) const {
  check_defined(*this, "expand");
  const int64_t r = dim(), n = int64_t(target.size());
  if (n < r)
    EMBER_FAIL("expand", "cannot expand shape ", shape_str(shape()), " to fewer dims ",
               shape_str(target));
  Strides st(size_t(n), 0);
  for (int64_t i = n - 1; i >= 0; --i) {
    const int64_t j = i - (n - r);
    if (j >= 0) {
      const int64_t cur = shape()[size_t(j)];
      if (target[size_t(i)] == -1) target[size_t(i)] = cur;
      if (cur == target[size_t(i)]) {
        st[size_t(i)] = strides()[size_t(j)];
      } else if (cur == 1) {
        st[size_t(i)] = 0;
      } else {
        EMBER_FAIL("expand", "cannot expand shape ", shape_str(shape()), " to ", shape_str(target),
                   " (dim ", i, ": ", cur, " vs ", target[size_t(i)], ")");
      }
    } else if (target[size_t(i)] < 0) {
      EMBER_FAIL("expand", "-1 is not allowed for a new leading dim in ", shape_str(target));
    }
  }
  if (target == shape()) return *this;
  checked_numel(target, "expand");
  return track(
      make_view(*this, target, st, offset()), *this, "ExpandBackward",
      [old = shape(), dt = dtype()](const Tensor& g) { return autograd::reduce_to(g, old, dt); });
}

Tensor Tensor::squeeze() const {
  check_defined(*this, "squeeze");
  Shape s;
  Strides st;
  for (int64_t i = 0; i < dim(); ++i)
    if (shape()[size_t(i)] != 1) {
      s.push_back(shape()[size_t(i)]);
      st.push_back(strides()[size_t(i)]);
    }
  return track(make_view(*this, s, st, offset()), *this, "SqueezeBackward",
               [old = shape()](const Tensor& g) { return g.reshape(old); });
}

Tensor Tensor::squeeze(int64_t d) const {
  check_defined(*this, "squeeze");
  if (dim() == 0) return *this;
  d = wrap_dim(d, dim(), "squeeze");
  if (shape()[size_t(d)] != 1) return *this;
  Shape s = shape();
  Strides st = strides();
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  return track(make_view(*this, s, st, offset()), *this, "SqueezeBackward",
               [old = shape()](const Tensor& g) { return g.reshape(old); });
}

Tensor Tensor::unsqueeze(int64_t d) const {
  check_defined(*this, "unsqueeze");
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  Shape s = shape();
  Strides st = strides();
  const int64_t inner = d < dim() ? st[size_t(d)] * s[size_t(d)] : 1;
  s.insert(s.begin() + d, 1);
  st.insert(st.begin() + d, inner);
  return track(make_view(*this, s, st, offset()), *this, "UnsqueezeBackward",
               [old = shape()](const Tensor& g) { return g.reshape(old); });
}

Tensor Tensor::unfold(int64_t d, int64_t size, int64_t step) const {
  check_defined(*this, "unfold");
  const int64_t r = std::max<int64_t>(dim(), 1);
  d = wrap_dim(d, r, "unfold");
  const int64_t n = dim() == 0 ? 1 : shape()[size_t(d)];
  if (size < 0 || size > n)
    EMBER_FAIL("unfold", "size ", size, " exceeds dim ", d, " of size ", n, " (shape ",
               shape_str(shape()), ")");
  if (step <= 0) EMBER_FAIL("unfold", "step must be positive, got ", step);
  Shape s = dim() == 0 ? Shape{1} : shape();
  Strides st = dim() == 0 ? Strides{1} : strides();
  const int64_t dst = st[size_t(d)];
  s[size_t(d)] = (n - size) / step + 1;
  st[size_t(d)] = dst * step;
  s.push_back(size);
  st.push_back(dst);
  const int64_t windows = s[size_t(d)];
  return track(make_view(*this, s, st, offset()), *this, "UnfoldBackward",
               [old = shape(), d, size, step, windows, r0 = dim() == 0](const Tensor& g) {
                 // Windows may overlap: add each window offset's slice.
                 Tensor gx = zeros(r0 ? Shape{1} : old, {g.dtype(), g.device()});
                 for (int64_t k = 0; k < size && windows > 0; ++k) {
                   Tensor part = gx.slice(d, k, k + (windows - 1) * step + 1, step);
                   part.copy_(part + g.select(-1, k));
                 }
                 return gx.reshape(old);
               });
}

Tensor Tensor::diagonal(int64_t off, int64_t d1, int64_t d2) const {
  check_defined(*this, "diagonal");
  if (dim() < 2) EMBER_FAIL("diagonal", "expects >= 2 dims, got shape ", shape_str(shape()));
  d1 = wrap_dim(d1, dim(), "diagonal");
  d2 = wrap_dim(d2, dim(), "diagonal");
  if (d1 == d2) EMBER_FAIL("diagonal", "dim1 and dim2 must differ, both are ", d1);
  const int64_t n1 = shape()[size_t(d1)], n2 = shape()[size_t(d2)];
  int64_t len, start = offset();
  if (off >= 0) {
    len = std::max<int64_t>(std::min(n1, n2 - off), 0);
    if (len > 0) start += off * strides()[size_t(d2)];
  } else {
    len = std::max<int64_t>(std::min(n1 + off, n2), 0);
    if (len > 0) start -= off * strides()[size_t(d1)];
  }
  Shape s;
  Strides st;
  for (int64_t i = 0; i < dim(); ++i)
    if (i != d1 && i != d2) {
      s.push_back(shape()[size_t(i)]);
      st.push_back(strides()[size_t(i)]);
    }
  s.push_back(len);
  st.push_back(strides()[size_t(d1)] + strides()[size_t(d2)]);
  return track(make_view(*this, s, st, start), *this, "DiagonalBackward",
               [old = shape(), off, d1, d2](const Tensor& g) {
                 return scatter_into(g, old, [&](Tensor& gx) { return gx.diagonal(off, d1, d2); });
               });
}

Tensor Tensor::as_strided(Shape size, Strides stride, std::optional<int64_t> storage_offset) const {
  const char* op = "as_strided";
  check_defined(*this, op);
  const int64_t off = storage_offset.value_or(offset());
  if (size.size() != stride.size())
    EMBER_FAIL(op, "size ", shape_str(size), " and stride ", shape_str(stride),
               " differ in length (", size.size(), " vs ", stride.size(), ")");
  for (int64_t n : size)
    if (n < 0) EMBER_FAIL(op, "negative size in ", shape_str(size));
  for (int64_t st : stride)
    if (st < 0)
      EMBER_FAIL(op, "negative strides are not supported, got stride ", shape_str(stride));
  if (off < 0) EMBER_FAIL(op, "invalid storage offset ", off);
  if (size.size() > 64) EMBER_FAIL(op, "rank ", size.size(), " exceeds the maximum of 64");
  const int64_t n = checked_numel(size, op);
  // The furthest element must lie in the storage (torch's checkInBoundsForStorage); an empty
  // result needs none.
  if (n > 0) {
    const int64_t item = element_size();
    int64_t last = off;  // index of the furthest element, overflow-checked
    bool overflow = false;
    for (size_t i = 0; i < size.size(); ++i) {
      int64_t d = 0;
      overflow |= __builtin_mul_overflow(size[i] - 1, stride[i], &d);
      overflow |= __builtin_add_overflow(last, d, &last);
    }
    int64_t need = 0;
    overflow |= __builtin_mul_overflow(last + 1, item, &need);
    const int64_t have = impl()->storage->nbytes;
    if (overflow || need > have)
      EMBER_FAIL(op, "sizes ", shape_str(size), ", strides ", shape_str(stride),
                 ", storage offset ", off, ", and itemsize ", item, " requiring a storage size of ",
                 overflow ? std::string("more than 2^63") : std::to_string(need),
                 " are out of bounds for storage of size ", have, " (tensor ", shape_str(shape()),
                 ")");
  }
  autograd::Geometry in{shape(), strides(), offset()}, out{size, stride, off};
  return track(make_view(*this, std::move(size), std::move(stride), off), *this,
               "AsStridedBackward", [in = std::move(in), out = std::move(out)](const Tensor& g) {
                 return autograd::as_strided_backward(g, in, out);
               });
}

Tensor Tensor::flip(std::vector<int64_t> dims) const {
  check_defined(*this, "flip");
  Strides st = strides();
  int64_t off = offset();
  for (int64_t d :
       detail::normalize_dims(dims.empty() ? std::vector<int64_t>{} : dims, dim(), "flip")) {
    if (dims.empty()) break;
    const int64_t n = shape()[size_t(d)];
    if (n > 0) off += (n - 1) * st[size_t(d)];
    st[size_t(d)] = -st[size_t(d)];
  }
  // A negative-stride view, materialised so the result owns its data as torch.flip does.
  Tensor out;
  {
    NoGradGuard no_grad;
    out = make_view(*this, shape(), st, off).clone();
  }
  return track(out, *this, "FlipBackward", [dims](const Tensor& g) { return g.flip(dims); });
}

}  // namespace ember
