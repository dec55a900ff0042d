// Tensor metadata, storage, conversion and host access.
#include "ember/tensor.h"

#include <cstring>

#include "autodiff/graph.h"
#include "autodiff/rules.h"
#include "core/dispatch.h"
#include "tensor/internal.h"
#include "tensor/overlap.h"
#include "tensor/suggest_format.h"

namespace ember {

Storage::Storage(Backend* b, Device d, int64_t bytes, bool lazy)
    : backend(b), device(d), nbytes(bytes) {
  if (!lazy || bytes == 0) data_ = backend->allocate(bytes);
}
Storage::~Storage() {
  if (void* p = data_.load()) backend->deallocate(p, nbytes);
}
void Storage::release_buffer() {
  if (nbytes == 0) return;
  if (void* p = data_.exchange(nullptr, std::memory_order_acq_rel)) backend->deallocate(p, nbytes);
}
void* Storage::allocate_now() const {
  void* p = backend->allocate(nbytes);
  void* none = nullptr;
  if (data_.compare_exchange_strong(none, p, std::memory_order_acq_rel)) return p;
  backend->deallocate(p, nbytes);  // another thread allocated first
  return none;
}

namespace detail {

Tensor make_tensor(const Shape& shape, DType dtype, const Device& device, bool lazy,
                   const char* op) {
  if (shape.size() > 64) EMBER_FAIL(op, "rank ", shape.size(), " exceeds the maximum of 64");
  const int64_t n = checked_numel(shape, op);
  if (n > (int64_t(1) << 62) / dtype_size(dtype))
    EMBER_FAIL(op, "shape ", shape_str(shape), " of ", dtype_name(dtype), " is too large");
  auto impl = std::make_shared<TensorImpl>();
  Backend& b = backend_for(device);
  if (!b.supports_dtype(dtype))
    EMBER_FAIL("empty", "dtype ", dtype_name(dtype), " is not supported on device ", device.str());
  impl->storage = std::make_shared<Storage>(&b, device, n * dtype_size(dtype), lazy);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  impl->inference = is_inference_mode_enabled();  // every new storage starts here
  return Tensor(std::move(impl));
}

Tensor make_view(const Tensor& base, Shape shape, Strides strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.impl()->storage;
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = base.dtype();
  impl->view_base = base.impl()->view_base ? base.impl()->view_base : base.impl_ptr();
  impl->inference = base.impl()->inference;  // a view of a normal tensor stays normal
  return Tensor(std::move(impl));
}

void check_device_data(const Device& device, std::function<void()> check) {
  if (device.is_host()) return check();
  backend_for(device).defer_check(std::move(check));
}

void fail_undefined(const char* op) {
  EMBER_FAIL(op, "tensor is undefined (default-constructed Tensor)");
}

std::string describe(const Tensor& t) {
  if (!t.defined()) return "undefined";
  return std::string(dtype_name(t.dtype())) + " " + shape_str(t.shape()) + " on " +
         t.device().str();
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  check_defined(a, op);
  check_defined(b, op);
  if (a.device() != b.device())
    EMBER_FAIL(op, "tensors are on different devices: ", a.device().str(), " and ",
               b.device().str(), " (shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()),
               "); move one with .to(device)");
}

void check_floating(const Tensor& t, const char* op) {
  check_defined(t, op);
  if (!is_floating(t.dtype()))
    EMBER_FAIL(op, "expected a floating-point tensor, got ", describe(t));
}

namespace {
int category(DType t) { return is_bool(t) ? 0 : (is_floating(t) ? 2 : 1); }
int category(const Scalar& s) { return s.is_bool() ? 0 : (s.is_float() ? 2 : 1); }
}  // namespace

DType result_type(const Tensor& a, const Tensor& b) {
  const bool a0 = a.dim() == 0, b0 = b.dim() == 0;
  if (a0 == b0) return promote_types(a.dtype(), b.dtype());
  const Tensor& dimmed = a0 ? b : a;
  const Tensor& zero = a0 ? a : b;
  if (category(zero.dtype()) > category(dimmed.dtype()))
    return category(zero.dtype()) == 2 && category(dimmed.dtype()) < 2
               ? zero.dtype()
               : promote_types(dimmed.dtype(), zero.dtype());
  return dimmed.dtype();
}

DType result_type(const Tensor& a, const Scalar& b) {
  if (category(b) > category(a.dtype())) return b.is_float() ? kDefaultFloat : DType::i64;
  return a.dtype();
}

Tensor scalar_to_tensor(const Scalar& v, DType dtype, const Device& device) {
  Tensor t = make_tensor({}, dtype, device, /*lazy=*/true);
  t.fill_(v);
  return t;
}

std::vector<int64_t> normalize_dims(const std::vector<int64_t>& dims, int64_t rank,
                                    const char* op) {
  std::vector<int64_t> out;
  if (dims.empty()) {
    for (int64_t i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  std::vector<bool> seen(size_t(std::max<int64_t>(rank, 1)), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, rank, op);
    if (seen[size_t(w)]) EMBER_FAIL(op, "dim ", d, " appears more than once");
    seen[size_t(w)] = true;
  }
  for (int64_t i = 0; i < std::max<int64_t>(rank, 1); ++i)
    if (seen[size_t(i)] && i < rank) out.push_back(i);
  return out;
}

Shape reduced_shape(const Shape& s, const std::vector<int64_t>& dims, bool keepdim) {
  Shape out;
  for (int64_t i = 0; i < int64_t(s.size()); ++i) {
    bool red = false;
    for (int64_t d : dims) red |= d == i;
    if (!red)
      out.push_back(s[size_t(i)]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

}  // namespace detail

using detail::check_defined;
using detail::describe;

const Shape& Tensor::shape() const& {
  check_defined(*this, "shape");
  return impl_->shape;
}
const Strides& Tensor::strides() const& {
  check_defined(*this, "strides");
  return impl_->strides;
}
Shape Tensor::shape_copy() const { return shape(); }
Strides Tensor::strides_copy() const { return strides(); }
int64_t Tensor::size(int64_t d) const { return shape()[size_t(wrap_dim(d, dim(), "size"))]; }
int64_t Tensor::stride(int64_t d) const { return strides()[size_t(wrap_dim(d, dim(), "stride"))]; }
int64_t Tensor::numel() const { return numel_of(shape()); }
int64_t Tensor::offset() const {
  check_defined(*this, "offset");
  return impl_->offset;
}
DType Tensor::dtype() const {
  check_defined(*this, "dtype");
  return impl_->dtype;
}
Device Tensor::device() const {
  check_defined(*this, "device");
  return impl_->storage->device;
}
bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;  // as torch: an empty tensor is contiguous whatever its strides
  const auto& s = shape();
  const auto& st = strides();
  int64_t expect = 1;
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] != 1 && st[i] != expect) return false;
    expect *= s[i];
  }
  return true;
}
bool Tensor::is_alias_of(const Tensor& o) const {
  return defined() && o.defined() && impl_->storage == o.impl_->storage;
}

void* Tensor::kept_host_pointer(DType expected, const char* op) const {
  check_defined(*this, op);
  if (!device().is_host())
    EMBER_FAIL(op, "tensor is on ", device().str(), "; call .to(Device::cpu()) first");
  if (expected != dtype())
    EMBER_FAIL(op, "requested ", dtype_name(expected), " but the tensor is ", describe(*this));
  // Set before the stream runs: an op recorded from now on sees the flag and runs at once.
  impl_->storage->host_pointer_kept.store(true, std::memory_order_release);
  return raw_data();
}

void* Tensor::raw_data() const {
  check_defined(*this, "data_ptr");
  if (!device().is_host())
    EMBER_FAIL("data_ptr", "tensor is on ", device().str(), "; call .to(Device::cpu()) first");
  Storage& s = *impl_->storage;
  // Host access sees every recorded op that reads or writes this storage done.
  if (s.pending.load(std::memory_order_acquire) > 0) s.backend->flush_stream();
  s.writes.fetch_add(1, std::memory_order_relaxed);  // the caller may write through it
  return static_cast<char*>(s.data()) + impl_->offset * element_size();
}

Tensor Tensor::to(const Device& d) const {
  check_defined(*this, "to");
  if (d == device()) return *this;
  Tensor out = detail::make_tensor(shape(), dtype(), d, memory_format());
  {
    NoGradGuard no_grad;
    out.copy_(*this);
  }
  autograd::rules::convert(*this, out, "ToDeviceBackward");
  return out;
}

Tensor Tensor::to(DType t) const {
  check_defined(*this, "to");
  if (t == dtype()) return *this;
  Tensor out = detail::make_tensor(shape(), t, device(), memory_format(), /*lazy=*/true);
  run(ir::Copy{*this, out});
  autograd::rules::convert(*this, out, "ToDtypeBackward");
  return out;
}

Tensor Tensor::clone() const {
  check_defined(*this, "clone");
  // torch's memory_format=preserve: a channels-last tensor clones channels-last.
  Tensor out =
      detail::make_tensor(shape(), dtype(), device(), detail::preserve_format(*this), true);
  run(ir::Copy{*this, out});
  autograd::rules::convert(*this, out, "CloneBackward");
  return out;
}

Tensor Tensor::contiguous() const { return contiguous(MemoryFormat::contiguous); }

namespace detail {
// A refused op leaves the tensor unchanged: nothing is written before this check.
void check_leaf_write(const Tensor& t, const char* op) {
  if (!is_grad_enabled()) return;
  const Tensor base = t.impl()->view_base ? Tensor(t.impl()->view_base) : t;
  for (const Tensor* c : {&t, &base})
    if (c->requires_grad() && c->is_leaf())
      EMBER_FAIL(op, c == &t ? "a leaf tensor" : "a view of a leaf tensor",
                 " that requires grad (shape ", shape_str(c->shape()),
                 ") is being used in an in-place operation; wrap it in NoGradGuard");
}
}  // namespace detail

Tensor& Tensor::fill_(const Scalar& v) {
  check_defined(*this, "fill_");
  detail::check_leaf_write(*this, "fill_");
  run(ir::Fill{*this, v});
  // Filling a region of a tensor with history: that region gets no gradient.
  if (is_grad_enabled() &&
      (requires_grad() || (impl_->view_base && Tensor(impl_->view_base).requires_grad())))
    autograd::record_copy(*this, detail::scalar_to_tensor(v, dtype(), device()), Tensor());
  return *this;
}

Tensor& Tensor::copy_(const Tensor& src) {
  check_defined(*this, "copy_");
  check_defined(src, "copy_");
  if (impl_->inference) autograd::check_inference_write(*this);  // before a cross-device upload
  detail::check_leaf_write(*this, "copy_");
  const Shape b = broadcast_shapes(shape(), src.shape(), "copy_");
  if (b != shape())
    EMBER_FAIL("copy_", "source shape ", shape_str(src.shape()),
               " cannot be broadcast to destination shape ", shape_str(shape()));
  // As torch: a copy onto the very same elements is left alone; else an expanded destination or
  // a source partly overlapping it is refused, and a destination whose elements share memory
  // (unfold windows) is written element after element, the last write winning.
  const bool same_data = src.is_alias_of(*this) && src.offset() == offset() &&
                         src.strides() == strides() && src.shape() == shape() &&
                         src.dtype() == dtype();
  if (!same_data) {
    detail::check_inplace(*this, {&src}, "copy_");
    if (detail::write_in_parts(
            *this, {src}, [](Tensor& part, const std::vector<Tensor>& o) { part.copy_(o[0]); }))
      return *this;
  }
  Tensor s = src.expand(shape());
  if (src.device() != device()) {
    // Cross-device: stage a contiguous host copy of the source, then upload.
    Tensor c = s.contiguous();
    Tensor host = detail::make_tensor(c.shape(), c.dtype(), Device::ref());
    Backend& sb = backend_for(c.device());
    sb.sync();
    sb.read(c.impl()->storage->data(), c.offset() * c.element_size(), host.raw_data(),
            c.numel() * c.element_size());
    if (device().is_host()) {
      run(ir::Copy{host, *this});
    } else {
      Tensor staged = is_contiguous() && dtype() == host.dtype()
                          ? *this
                          : detail::make_tensor(shape(), host.dtype(), device());
      backend_for(device()).write(staged.impl()->storage->data(),
                                  staged.offset() * staged.element_size(), host.raw_data(),
                                  host.numel() * host.element_size());
      staged.impl()->storage->version++;
      staged.impl()->storage->writes.fetch_add(1, std::memory_order_relaxed);
      if (!staged.is_alias_of(*this)) run(ir::Copy{staged, *this});
    }
    autograd::record_copy(*this, src, Tensor());
    return *this;
  }
  run(ir::Copy{s, *this});
  autograd::record_copy(*this, src, Tensor());
  return *this;
}

namespace {
/// Contiguous host copy of t (ref device) for reading values.
Tensor host_copy(const Tensor& t) {
  Tensor h = t.device().is_host() ? t : t.to(Device::ref());
  return h.contiguous();
}

/// The values of a host tensor that no recorded op reads or writes, in row-major order, read
/// in place: the stream's other pending work stays recorded (a shape read between ops does not
/// cut a fusible chain). False when that does not hold (the caller syncs and copies).
template <typename T>
bool read_in_place(const Tensor& t, std::vector<T>& out) {
  if (!t.device().is_host()) return false;
  const Storage& st = *t.impl()->storage;
  if (st.pending.load(std::memory_order_acquire) != 0 || !st.allocated()) return false;
  const int64_t n = t.numel(), rank = t.dim();
  out.resize(size_t(n));
  if (n == 0) return true;
  const Shape& shape = t.shape();
  const Strides& strides = t.strides();
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const S* base = static_cast<const S*>(st.data()) + t.offset();
    std::vector<int64_t> idx(size_t(rank), 0);
    int64_t off = 0;
    for (int64_t i = 0; i < n; ++i) {
      out[size_t(i)] = scalar_cast<T>(base[off]);
      for (int64_t d = rank - 1; d >= 0; --d) {
        off += strides[size_t(d)];
        if (++idx[size_t(d)] < shape[size_t(d)]) break;
        off -= strides[size_t(d)] * shape[size_t(d)];
        idx[size_t(d)] = 0;
      }
    }
  });
  return true;
}
}  // namespace

template <typename T>
T Tensor::item() const {
  check_defined(*this, "item");
  if (numel() != 1)
    EMBER_FAIL("item", "a tensor with ", numel(),
               " elements cannot be converted to a scalar (shape ", shape_str(shape()), ")");
  std::vector<T> v;
  if (read_in_place(*this, v)) return v[0];
  sync(device());
  Tensor h = host_copy(*this);
  T out{};
  dispatch_dtype(h.dtype(), [&](auto tag) {
    using S = decltype(tag);
    out = scalar_cast<T>(*static_cast<const S*>(h.raw_data()));
  });
  return out;
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  check_defined(*this, "to_vector");
  std::vector<T> v;
  if (read_in_place(*this, v)) return v;
  sync(device());
  Tensor h = host_copy(*this);
  std::vector<T> out(size_t(h.numel()));
  dispatch_dtype(h.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const S* p = static_cast<const S*>(h.raw_data());
    for (size_t i = 0; i < out.size(); ++i) out[i] = scalar_cast<T>(p[i]);
  });
  return out;
}

#define EMBER_INSTANTIATE(T)          \
  template T Tensor::item<T>() const; \
  template std::vector<T> Tensor::to_vector<T>() const;
EMBER_INSTANTIATE(float)
EMBER_INSTANTIATE(double)
EMBER_INSTANTIATE(Half)
EMBER_INSTANTIATE(BFloat16)
EMBER_INSTANTIATE(int8_t)
EMBER_INSTANTIATE(int16_t)
EMBER_INSTANTIATE(int32_t)
EMBER_INSTANTIATE(int64_t)
EMBER_INSTANTIATE(uint8_t)
EMBER_INSTANTIATE(uint16_t)
EMBER_INSTANTIATE(uint32_t)
EMBER_INSTANTIATE(uint64_t)
EMBER_INSTANTIATE(bool)
#undef EMBER_INSTANTIATE

}  // namespace ember
