// Tensor::index / index_put_ (LibTorch's x.index({...})): the index list is applied as torch's
// applySlicing does. Basic indices become views (select, slice, unsqueeze) of x, left to right;
// advanced ones (tensors, masks, bools) are collected, one entry per dim of that view, and handed
// to ember::index / ember::index_put, which place the broadcast index dims as torch does.
#include "ember/ops/tensor_index.h"

#include <limits>
#include <sstream>
#include <string>

#include "ember/ops/indexing.h"
#include "tensor/internal.h"

namespace ember {
namespace indexing {

TensorIndex::TensorIndex(const char* str) : type_(Type::Ellipsis) {
  if (str == nullptr || std::string(str) != "...")
    EMBER_FAIL("index", "a string index must be \"...\" (Ellipsis), got \"", str ? str : "(null)",
               "\"");
}

TensorIndex::TensorIndex(Tensor tensor) : type_(Type::Tensor), tensor_(std::move(tensor)) {}

TensorIndex::TensorIndex(std::initializer_list<int64_t> values)
    : type_(Type::Tensor), tensor_(::ember::tensor<int64_t>(values)) {}

std::ostream& operator<<(std::ostream& os, const Slice& s) {
  auto part = [&](const std::optional<int64_t>& v) {
    if (v)
      os << *v;
    else
      os << "None";
  };
  part(s.start());
  os << ':';
  part(s.stop());
  os << ':';
  part(s.step());
  return os;
}

std::ostream& operator<<(std::ostream& os, const TensorIndex& index) {
  switch (index.type()) {
    case TensorIndex::Type::None:
      return os << "None";
    case TensorIndex::Type::Ellipsis:
      return os << "...";
    case TensorIndex::Type::Integer:
      return os << index.integer();
    case TensorIndex::Type::Boolean:
      return os << (index.boolean() ? "true" : "false");
    case TensorIndex::Type::Slice:
      return os << index.slice();
    case TensorIndex::Type::Tensor:
      if (!index.tensor().defined()) return os << "Tensor (undefined)";
      return os << "Tensor " << dtype_name(index.tensor().dtype()) << ' '
                << shape_str(index.tensor().shape());
  }
  return os;
}

}  // namespace indexing

namespace {

using indexing::TensorIndex;
using Kind = TensorIndex::Type;

std::string list_str(const std::vector<TensorIndex>& indices) {
  std::ostringstream os;
  os << '{';
  for (size_t k = 0; k < indices.size(); ++k) os << (k ? ", " : "") << indices[k];
  os << '}';
  return os.str();
}

// What torch's applySlicing leaves: x after the basic indices, and the advanced ones, one entry
// per leading dim of that view (an undefined Tensor for a whole dim; a mask covers its rank).
struct Sliced {
  Tensor view;
  std::vector<Tensor> advanced;
};

// An ember::Error's message without its "[op] " tag.
std::string untagged(const Error& e) {
  std::string m = e.what();
  const size_t end = m.find("] ");
  return !m.empty() && m[0] == '[' && end != std::string::npos ? m.substr(end + 2) : m;
}

// `from` broadcasts to `to` (to's shape is kept).
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t k = 0; k < from.size(); ++k)
    if (from[k] != 1 && from[k] != to[lead + k]) return false;
  return true;
}

bool is_mask(const Tensor& t) { return is_bool(t.dtype()) || t.dtype() == DType::u8; }

// Dims of x an index consumes (for Ellipsis and the too-many check). None and bools add dims.
int64_t consumed(const TensorIndex& i) {
  switch (i.type()) {
    case Kind::Integer:
    case Kind::Slice:
      return 1;
    case Kind::Tensor: {
      const Tensor& t = i.tensor();
      if (!t.defined()) return 0;  // refused below
      return is_mask(t) ? t.dim() : 1;
    }
    default:
      return 0;
  }
}

Sliced apply_basic(const Tensor& x, const std::vector<TensorIndex>& indices, const char* op) {
  detail::check_defined(x, op);
  const auto where = [&]() {
    return " (tensor " + detail::describe(x) + ", indices " + list_str(indices) + ")";
  };
  if (indices.empty())
    EMBER_FAIL(op, "an empty index list is not valid (use {Ellipsis} for all of x)", where());
  int64_t specified = 0, ellipses = 0;
  for (const TensorIndex& i : indices) {
    specified += consumed(i);
    ellipses += i.is_ellipsis();
    if (i.is_tensor() && !i.tensor().defined())
      EMBER_FAIL(op, "an index tensor is undefined", where());
  }
  if (ellipses > 1) EMBER_FAIL(op, "an index can only have a single Ellipsis ('...')", where());
  if (specified > x.dim())
    EMBER_FAIL(op, "too many indices for tensor of dimension ", x.dim(), ": they index ", specified,
               " dims", x.dim() == 0 ? " (a 0-d tensor takes only None, Ellipsis and bools)" : "",
               where());

  Sliced s{x, {}};
  Tensor& r = s.view;
  int64_t dim = 0;      // the dim of r the next index applies to
  int64_t x_dim = 0;    // the dim of x it applies to (for messages)
  int64_t covered = 0;  // dims of r that s.advanced describes
  auto record = [&](const Tensor& t, int64_t dims) {
    for (; covered < dim; ++covered) s.advanced.emplace_back();
    s.advanced.push_back(t);
    covered += dims;
  };
  auto select = [&](int64_t i) {
    const int64_t n = r.size(dim);
    if (i < -n || i >= n)
      EMBER_FAIL(op, "index ", i, " is out of range for dim ", x_dim, " of size ", n, " (valid: [",
                 -n, ", ", n, "))", where());
    r = r.select(dim, i);
    ++x_dim;
  };
  auto add_bool_dim = [&](bool b) {
    r = r.unsqueeze(dim);
    record(zeros({b ? 1 : 0}, {DType::i64, x.device()}), 1);
    ++dim;
  };

  for (const TensorIndex& i : indices) {
    switch (i.type()) {
      case Kind::Integer:
        select(i.integer());
        break;
      case Kind::Slice: {
        const int64_t step = i.slice().step().value_or(1);
        if (step <= 0) EMBER_FAIL(op, "slice step must be greater than zero, got ", step, where());
        r = r.slice(dim, i.slice().start().value_or(0),
                    i.slice().stop().value_or(std::numeric_limits<int64_t>::max()), step);
        ++dim;
        ++x_dim;
        break;
      }
      case Kind::None:
        r = r.unsqueeze(dim++);
        break;
      case Kind::Ellipsis:
        dim += x.dim() - specified;
        x_dim += x.dim() - specified;
        break;
      case Kind::Boolean:
        add_bool_dim(i.boolean());
        break;
      case Kind::Tensor: {
        // Index tensors may live elsewhere (a braced list is made on the default device), as
        // torch moves CPU indices to a CUDA tensor's device.
        Tensor t = i.tensor();
        if (t.device() != x.device()) t = t.to(x.device());
        if (!is_mask(t) && !is_integral(t.dtype()))
          EMBER_FAIL(op, "tensors used as indices must be integer, bool or uint8 tensors, got ",
                     detail::describe(t), where());
        if (t.dim() == 0) {  // a 0-d integer tensor is an integer, a 0-d mask a bool (as torch)
          if (is_mask(t))
            add_bool_dim(t.item<int64_t>() != 0);
          else
            select(t.item<int64_t>());
        } else if (is_mask(t)) {
          for (int64_t k = 0; k < t.dim(); ++k)
            if (t.size(k) != r.size(dim + k)) {
              Shape covered_shape(r.shape().begin() + dim, r.shape().begin() + dim + t.dim());
              EMBER_FAIL(op, "the shape of the mask ", shape_str(t.shape()),
                         " does not match the shape ", shape_str(covered_shape), " of dims ", x_dim,
                         "..", x_dim + t.dim() - 1, " it indexes", where());
            }
          record(t.dtype() == DType::u8 ? t.to(DType::b8) : t, t.dim());
          dim += t.dim();
          x_dim += t.dim();
        } else {
          try {
            detail::check_index(t, r.size(dim), op, true, x_dim);
          } catch (const Error& e) {
            EMBER_FAIL(op, untagged(e), where());
          }
          record(t, 1);
          ++dim;
          ++x_dim;
        }
        break;
      }
    }
  }
  return s;
}

// Runs an ember::index / index_put call, adding x and the index list to its message.
template <typename F>
Tensor with_context(F f, const Tensor& x, const std::vector<TensorIndex>& indices, const char* op) {
  try {
    return f();
  } catch (const Error& e) {
    EMBER_FAIL(op, untagged(e), " (tensor ", detail::describe(x), ", indices ", list_str(indices),
               ")");
  }
}

// torch's slicePrefix1sSize: setitem drops a value's leading size-1 dims.
Tensor drop_leading_ones(const Tensor& v) {
  int64_t k = 0;
  while (k < v.dim() && v.size(k) == 1) ++k;
  if (k == 0) return v;
  return v.view(Shape(v.shape().begin() + k, v.shape().end()));
}

}  // namespace

Tensor Tensor::index(const std::vector<TensorIndex>& indices) const {
  const char* op = "index";
  Sliced s = apply_basic(*this, indices, op);
  if (s.advanced.empty())
    // x.index({Ellipsis}) is a new view of x, not x itself (torch's alias).
    return s.view.impl() == impl() ? view(shape()) : s.view;
  return with_context([&] { return ember::index(s.view, s.advanced); }, *this, indices, op);
}

Tensor Tensor::index(std::initializer_list<TensorIndex> indices) const {
  return index(std::vector<TensorIndex>(indices));
}

Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Tensor& value) {
  const char* op = "index_put_";
  detail::check_defined(value, op);
  Sliced s = apply_basic(*this, indices, op);
  const Tensor v = drop_leading_ones(value);
  if (s.advanced.empty()) {
    if (!broadcasts_to(v.shape(), s.view.shape()))
      EMBER_FAIL(op, "value ", shape_str(value.shape()),
                 " cannot be broadcast to the indexed shape ", shape_str(s.view.shape()),
                 " (tensor ", detail::describe(*this), ", indices ", list_str(indices), ")");
    s.view.copy_(v);
    return *this;
  }
  if (value.dtype() != dtype())
    EMBER_FAIL(op, "with tensor indices the value's dtype ", dtype_name(value.dtype()),
               " must equal the tensor's dtype ", dtype_name(dtype()),
               " (as torch; convert it with .to()) (tensor ", detail::describe(*this), ", indices ",
               list_str(indices), ")");
  // index_put is out of place: write its result back through the view (differentiable copy_).
  const Tensor put =
      with_context([&] { return ember::index_put(s.view, s.advanced, v); }, *this, indices, op);
  s.view.copy_(put);
  return *this;
}

Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Tensor& value) {
  return index_put_(std::vector<TensorIndex>(indices), value);
}

Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Scalar& value) {
  detail::check_defined(*this, "index_put_");
  return index_put_(indices, detail::scalar_to_tensor(value, dtype(), device()));
}

Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Scalar& value) {
  return index_put_(std::vector<TensorIndex>(indices), value);
}

}  // namespace ember
