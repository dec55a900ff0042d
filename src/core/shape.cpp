#include "ember/shape.h"

#include <algorithm>
#include <sstream>

#include "core/view_strides.h"
#include "ember/error.h"

namespace ember {

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

int64_t checked_numel(const Shape& s, const char* op) {
  // Every dimension counts, zero or not: the strides of [0, 2^62, 2^62] overflow as its
  // element count would without the zero.
  int64_t n = 1;  // the product of the nonzero dimensions
  bool empty = false;
  for (int64_t d : s) {
    if (d < 0) EMBER_FAIL(op, "negative dimension in shape ", shape_str(s));
    if (d == 0) {
      empty = true;
      continue;
    }
    int64_t m;  // n * d, without a division (this runs for every new tensor)
    if (__builtin_mul_overflow(n, d, &m) || m > (int64_t(1) << 62)) {
      if (std::find(s.begin(), s.end(), 0) != s.end())
        EMBER_FAIL(op, "shape ", shape_str(s), " is too large (empty, but the product of its ",
                   "nonzero dimensions, which its strides reach, exceeds 2^62)");
      EMBER_FAIL(op, "shape ", shape_str(s), " has too many elements");
    }
    n = m;
  }
  return empty ? 0 : n;
}

Strides contiguous_strides(const Shape& s) {
  Strides st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    if (i > 0 && __builtin_mul_overflow(acc, std::max<int64_t>(s[i], 1), &acc))
      EMBER_FAIL("contiguous_strides", "the strides of shape ", shape_str(s), " overflow 64 bits");
  }
  return st;
}

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ']';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << shape_str(s); }

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      EMBER_FAIL(op, "shapes ", shape_str(a), " and ", shape_str(b), " cannot be broadcast (dim ",
                 i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t wrap_dim(int64_t dim, int64_t rank, const char* op) {
  const int64_t r = std::max<int64_t>(rank, 1);
  if (dim < -r || dim >= r)
    EMBER_FAIL(op, "dim ", dim, " out of range for a tensor of rank ", rank, " (expected [", -r,
               ", ", r - 1, "])");
  return dim < 0 ? dim + r : dim;
}

namespace detail {

bool view_strides(const Shape& old_s, const Strides& old_st, const Shape& new_s, Strides& out) {
  out.assign(new_s.size(), 0);
  if (numel_of(old_s) == 0 || old_s.empty()) {
    out = contiguous_strides(new_s);
    return true;
  }
  int64_t view_d = int64_t(new_s.size()) - 1;
  int64_t chunk_base_stride = old_st.empty() ? 1 : old_st.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = int64_t(old_s.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_s[size_t(d)];
    if (d == 0 ||
        (old_s[size_t(d - 1)] != 1 && old_st[size_t(d - 1)] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_s[size_t(view_d)] == 1)) {
        out[size_t(view_d)] = view_numel * chunk_base_stride;
        view_numel *= new_s[size_t(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base_stride = old_st[size_t(d - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

}  // namespace detail

}  // namespace ember
