// Memory formats (ember::MemoryFormat): the strides of each layout, the checks, and the copies
// between layouts.
#include <algorithm>
#include <cstdlib>

#include "autodiff/rules.h"
#include "tensor/internal.h"
#include "tensor/suggest_format.h"

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

MemoryFormat suggest_format(const Tensor& t) {
  const size_t r = size_t(t.dim());
  if (r != 4 && r != 5) return MemoryFormat::contiguous;
  const Shape& s = t.shape();
  const Strides& st = t.strides();
  // torch's is_channels_last_strides_2d_s4 / _3d_s5: C, then the spatial dims from the last,
  // then N, each stride at least the reach of the ones before.
  if (st[1] == 0) return MemoryFormat::contiguous;
  const std::vector<size_t> order =
      r == 4 ? std::vector<size_t>{1, 3, 2, 0} : std::vector<size_t>{1, 4, 3, 2, 0};
  int64_t min = 0;
  for (size_t d : order) {
    if (s[d] == 0 || st[d] < min) return MemoryFormat::contiguous;
    // Ambiguous (an N111 tensor): torch falls back to contiguous.
    if (d == 0 && min == st[1]) return MemoryFormat::contiguous;
    min = st[d];
    if (s[d] > 1) min *= s[d];
  }
  return r == 4 ? MemoryFormat::channels_last : MemoryFormat::channels_last_3d;
}

MemoryFormat preserve_format(const Tensor& t) {
  const int64_t r = t.dim();
  if (r != 4 && r != 5) return MemoryFormat::contiguous;
  // torch's infer_dense_strides: dims innermost first by stride (an insertion sort that leaves
  // ties and broadcast dims in place, the smaller size inside), then dense strides in that order.
  const Shape& s = t.shape();
  std::vector<int64_t> st(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d) st[size_t(d)] = std::llabs(t.stride(d));
  auto should_swap = [&](int64_t d0, int64_t d1) {
    const int64_t s0 = st[size_t(d0)], s1 = st[size_t(d1)];
    if (s0 == 0 || s1 == 0) return 0;
    if (s0 != s1) return s0 < s1 ? -1 : 1;
    return s[size_t(d0)] > s[size_t(d1)] ? 1 : 0;
  };
  std::vector<int64_t> perm(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) perm[size_t(i)] = r - 1 - i;
  for (int64_t i = 1; i < r; ++i) {
    int64_t d1 = i;
    for (int64_t d0 = i - 1; d0 >= 0; --d0) {
      const int c = should_swap(perm[size_t(d0)], perm[size_t(d1)]);
      if (c > 0) {
        std::swap(perm[size_t(d0)], perm[size_t(d1)]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  Strides dense(static_cast<size_t>(r));
  int64_t acc = 1;
  for (int64_t d : perm) {
    dense[size_t(d)] = acc;
    acc *= std::max<int64_t>(s[size_t(d)], 1);
  }
  const MemoryFormat f = r == 4 ? MemoryFormat::channels_last : MemoryFormat::channels_last_3d;
  const Strides want = format_strides(s, f), plain = contiguous_strides(s);
  bool is_f = true, is_plain = true;
  for (int64_t d = 0; d < r; ++d) {
    if (s[size_t(d)] == 1) continue;
    is_f = is_f && dense[size_t(d)] == want[size_t(d)];
    is_plain = is_plain && dense[size_t(d)] == plain[size_t(d)];
  }
  return is_f && !is_plain ? f : MemoryFormat::contiguous;
}

Tensor make_tensor(const Shape& shape, DType dtype, const Device& device, MemoryFormat f,
                   bool lazy) {
  Tensor t = make_tensor(shape, dtype, device, lazy);
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
