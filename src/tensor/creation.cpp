// Factories: empty/zeros/ones/full, arange, linspace, eye, host data, and random tensors.
#include <cmath>

#include "core/dispatch.h"
#include "tensor/internal.h"
#include "tensor/suggest_format.h"

namespace ember {

using detail::make_tensor;

namespace {
// full() under the factory's own name: a bad shape's error names the function called.
Tensor filled(const char* op, const Shape& shape, const Scalar& v, const TensorOptions& o) {
  Tensor t = make_tensor(shape, o.dtype_, o.device_, false, op);
  t.fill_(v);
  return t;
}
}  // namespace

Tensor empty(Shape shape, TensorOptions o) { return make_tensor(shape, o.dtype_, o.device_); }
Tensor zeros(Shape shape, TensorOptions o) { return filled("zeros", shape, 0, o); }
Tensor ones(Shape shape, TensorOptions o) { return filled("ones", shape, 1, o); }
Tensor full(Shape shape, const Scalar& v, TensorOptions o) { return filled("full", shape, v, o); }
// The *_like factories keep a channels-last tensor's layout (torch's memory_format=preserve).
Tensor empty_like(const Tensor& t) {
  detail::check_defined(t, "empty_like");
  return make_tensor(t.shape(), t.dtype(), t.device(), detail::preserve_format(t));
}
Tensor zeros_like(const Tensor& t) { return full_like(t, 0); }
Tensor ones_like(const Tensor& t) { return full_like(t, 1); }
Tensor full_like(const Tensor& t, const Scalar& v) {
  detail::check_defined(t, "full_like");
  Tensor out = make_tensor(t.shape(), t.dtype(), t.device(), detail::preserve_format(t));
  out.fill_(v);
  return out;
}
Tensor scalar_tensor(const Scalar& v, TensorOptions o) { return full({}, v, o); }

Tensor from_blob(const void* data, Shape shape, DType dtype, Device device) {
  Tensor host = make_tensor(shape, dtype, Device::ref());
  if (host.numel() > 0) {
    if (!data) EMBER_FAIL("from_blob", "null data pointer for shape ", shape_str(shape));
    std::memcpy(host.raw_data(), data, size_t(host.numel() * dtype_size(dtype)));
  }
  return host.to(device);
}

template <typename T>
Tensor from_vector(std::span<const T> data, Shape shape, Device device) {
  if (numel_of(shape) != int64_t(data.size()))
    EMBER_FAIL("from_vector", "shape ", shape_str(shape), " holds ", numel_of(shape),
               " elements but ", data.size(), " values were given");
  Tensor host = make_tensor(shape, dtype_of<T>::value, Device::ref());
  T* p = static_cast<T*>(host.raw_data());
  for (size_t i = 0; i < data.size(); ++i) p[i] = data[i];
  return host.to(device);
}

#define EMBER_INSTANTIATE(T) template Tensor from_vector<T>(std::span<const T>, Shape, Device);
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

Tensor arange_typed(const Scalar& start, const Scalar& end, const Scalar& step, DType dtype,
                    Device device) {
  const double s = start.to_double(), e = end.to_double(), st = step.to_double();
  if (st == 0) EMBER_FAIL("arange", "step must be non-zero");
  if (!std::isfinite(s) || !std::isfinite(e))
    EMBER_FAIL("arange", "start and end must be finite, got ", s, " and ", e);
  if ((st > 0 && e < s) || (st < 0 && e > s))
    EMBER_FAIL("arange", "upper bound and step sign are inconsistent (start ", s, ", end ", e,
               ", step ", st, ")");
  const bool ints = !start.is_float() && !end.is_float() && !step.is_float();
  int64_t n;
  if (ints) {
    const int64_t a = start.to_int(), b = end.to_int(), c = step.to_int();
    n = c > 0 ? (b - a + c - 1) / c : (a - b + (-c) - 1) / (-c);
  } else {
    n = int64_t(std::ceil((e - s) / st));
  }
  Tensor host = make_tensor({std::max<int64_t>(n, 0)}, dtype, Device::ref());
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(host.raw_data());
    for (int64_t i = 0; i < n; ++i)
      p[i] = ints ? scalar_cast<T>(start.to_int() + i * step.to_int())
                  : scalar_cast<T>(s + double(i) * st);
  });
  return host.to(device);
}

Tensor arange(const Scalar& end, TensorOptions o) { return arange(0, end, 1, o); }

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, TensorOptions o) {
  const bool ints = !start.is_float() && !end.is_float() && !step.is_float();
  // Integer bounds give i64 unless a dtype was asked for.
  const DType dt = o.has_dtype_ ? o.dtype_ : (ints ? DType::i64 : o.dtype_);
  return arange_typed(start, end, step, dt, o.device_);
}

Tensor linspace(double start, double end, int64_t steps, TensorOptions o) {
  if (steps < 0) EMBER_FAIL("linspace", "number of steps must be non-negative, got ", steps);
  Tensor host = make_tensor({steps}, o.dtype_, Device::ref());
  const double step = steps > 1 ? (end - start) / double(steps - 1) : 0.0;
  dispatch_dtype(o.dtype_, [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(host.raw_data());
    // Symmetric evaluation as torch: the second half counts back from `end`.
    for (int64_t i = 0; i < steps; ++i)
      p[i] = scalar_cast<T>(steps == 1      ? start
                            : i < steps / 2 ? start + step * double(i)
                                            : end - step * double(steps - 1 - i));
  });
  return host.to(o.device_);
}

Tensor eye(int64_t n, int64_t m, TensorOptions o) {
  if (m < 0) m = n;
  if (n < 0) EMBER_FAIL("eye", "n must be non-negative, got ", n);
  Tensor t = zeros({n, m}, o);
  if (n > 0 && m > 0) t.diagonal().fill_(1);
  return t;
}

}  // namespace ember
