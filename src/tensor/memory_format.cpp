// Memory formats (ember::MemoryFormat): the strides of each layout, the checks, and the copies
// between layouts.
#include "autodiff/rules.h"
#include "tensor/internal.h"

namespace ember {

const char* memory_format_name(MemoryFormat f) {
  switch (f) {
    case MemoryFormat::contiguous:
      return "contiguous";
    case MemoryFormat::channels_last:
      return "channels_last";
    case MemoryFormat::channels_last_3d:
      return "channels_last_3d";
    case MemoryFormat::preserve:
      return "preserve";
  }
  return "?";
}

namespace detail {

void check_format(const Shape& s, MemoryFormat f, const char* op) {
  const size_t rank = f == MemoryFormat::channels_last ? 4 : 5;
  if (f == MemoryFormat::preserve)
    EMBER_FAIL(op,
               "memory format preserve names no layout; use contiguous, channels_last or "
               "channels_last_3d");
  if (f != MemoryFormat::contiguous && s.size() != rank)
    EMBER_FAIL(op, memory_format_name(f), " needs a ", rank, "-d tensor [N, C, ",
               rank == 4 ? "H, W" : "D, H, W", "], got ", shape_str(s));
}

Strides format_strides(const Shape& s, MemoryFormat f) {
  if (f == MemoryFormat::contiguous) return contiguous_strides(s);
  check_format(s, f, "memory_format");
  // Channels innermost, then the spatial dims from last to first, then N.
  Strides st(s.size());
  int64_t acc = 1;
  st[1] = acc;
  acc *= s[1];
  for (size_t d = s.size(); d-- > 2;) {
    st[d] = acc;
    acc *= s[d];
  }
  st[0] = acc;
  return st;
}

MemoryFormat format_for(const Shape& s, std::initializer_list<const Tensor*> operands) {
  for (const Tensor* t : operands)
    if (t->defined() && t->shape() == s) return t->memory_format();
  return MemoryFormat::contiguous;
}

Tensor make_tensor(const Shape& shape, DType dtype, const Device& device, MemoryFormat f) {
  Tensor t = make_tensor(shape, dtype, device);
  if (f != MemoryFormat::contiguous) t.impl()->strides = format_strides(shape, f);
  return t;
}

}  // namespace detail

bool Tensor::is_contiguous(MemoryFormat f) const {
  if (f == MemoryFormat::contiguous) return is_contiguous();
  if (f == MemoryFormat::preserve) detail::check_format(shape(), f, "is_contiguous");
  if (dim() != (f == MemoryFormat::channels_last ? 4 : 5)) return false;
  const Strides want = detail::format_strides(shape(), f);
  for (int64_t d = 0; d < dim(); ++d)
    if (size(d) != 1 && stride(d) != want[size_t(d)]) return false;
  return true;
}

MemoryFormat Tensor::memory_format() const {
  detail::check_defined(*this, "memory_format");
  if (dim() == 4 && !is_contiguous() && is_contiguous(MemoryFormat::channels_last))
    return MemoryFormat::channels_last;
  if (dim() == 5 && !is_contiguous() && is_contiguous(MemoryFormat::channels_last_3d))
    return MemoryFormat::channels_last_3d;
  return MemoryFormat::contiguous;
}

Tensor Tensor::contiguous(MemoryFormat f) const {
  detail::check_defined(*this, "contiguous");
  detail::check_format(shape(), f, "contiguous");
  if (is_contiguous(f)) return *this;
  Tensor out = detail::make_tensor(shape(), dtype(), device(), f);
  run(ir::Copy{*this, out});
  autograd::rules::convert(*this, out, "CloneBackward");
  return out;
}

Tensor empty(Shape shape, TensorOptions o, MemoryFormat f) {
  detail::check_format(shape, f, "empty");
  return detail::make_tensor(shape, o.dtype_, o.device_, f);
}

}  // namespace ember
