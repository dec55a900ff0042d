// Memory overlap (as ATen's MemoryOverlap.cpp) and the part-by-part write of a destination whose
// elements share memory.
#include "tensor/overlap.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "tensor/internal.h"

namespace ember::detail {

bool is_non_overlapping_and_dense(const Tensor& t) {
  const Shape& s = t.shape();
  const Strides& st = t.strides();
  const size_t r = s.size();
  if (r == 0) return true;
  if (r == 1) return s[0] < 2 || st[0] == 1;
  std::vector<size_t> perm(r);
  std::iota(perm.begin(), perm.end(), size_t(0));
  // Size-0/1 dims last (their strides do not matter), the others by stride.
  std::sort(perm.begin(), perm.end(), [&](size_t a, size_t b) {
    if (s[a] < 2) return false;
    if (s[b] < 2) return true;
    return st[a] < st[b];
  });
  int64_t require = 1;
  for (size_t i : perm) {
    if (s[i] < 2) return true;
    if (st[i] != require) return false;
    require *= s[i];
  }
  return true;
}

InternalOverlap internal_overlap(const Tensor& t) {
  if (is_non_overlapping_and_dense(t)) return InternalOverlap::no;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.stride(d) == 0 && t.size(d) > 1) return InternalOverlap::yes;
  return InternalOverlap::too_hard;
}

Overlap overlap(const Tensor& a, const Tensor& b) {
  if (a.impl() == b.impl()) return Overlap::full;
  if (a.numel() == 0 || b.numel() == 0) return Overlap::no;
  if (!is_non_overlapping_and_dense(a) || !is_non_overlapping_and_dense(b))
    return Overlap::too_hard;
  if (!a.is_alias_of(b)) return Overlap::no;
  // Dense tensors: their memory is one byte range each.
  const int64_t a0 = a.offset() * a.element_size(), a1 = a0 + a.numel() * a.element_size();
  const int64_t b0 = b.offset() * b.element_size(), b1 = b0 + b.numel() * b.element_size();
  if (a0 == b0 && a1 == b1) return a.strides() == b.strides() ? Overlap::full : Overlap::partial;
  return a0 < b1 && b0 < a1 ? Overlap::partial : Overlap::no;
}

void check_inplace(const Tensor& self, std::initializer_list<const Tensor*> operands,
                   const char* op, bool allow_expanded) {
  if (!allow_expanded && internal_overlap(self) == InternalOverlap::yes)
    EMBER_FAIL(op,
               "unsupported operation: more than one element of the written-to tensor refers to "
               "a single memory location. Please clone() the tensor before performing the "
               "operation (written-to ",
               describe(self), ", strides ", shape_str(self.strides()), ")");
  for (const Tensor* o : operands)
    if (o && o->defined() && overlap(self, *o) == Overlap::partial)
      EMBER_FAIL(op,
                 "unsupported operation: some elements of the input tensor and the written-to "
                 "tensor refer to a single memory location. Please clone() the tensor before "
                 "performing the operation (written-to ",
                 describe(self), " strides ", shape_str(self.strides()), " offset ", self.offset(),
                 "; input ", describe(*o), " strides ", shape_str(o->strides()), " offset ",
                 o->offset(), ")");
}

namespace {
// No two elements of dims [from, rank) of (s, st) share memory, by a sufficient test: with the
// dims sorted by stride, each stride passes the reach of the smaller ones.
bool disjoint(const Shape& s, const Strides& st, size_t from) {
  // Row-major dims (sizes of 1 with any stride) are disjoint: the common case, without sorting.
  int64_t step = 1;
  bool row_major = true;
  for (size_t d = s.size(); d-- > from && row_major;) {
    if (s[d] == 0) return true;
    row_major = s[d] == 1 || st[d] == step;
    step *= s[d];
  }
  if (row_major) return true;
  std::vector<std::pair<int64_t, int64_t>> dims;  // (|stride|, size)
  for (size_t d = from; d < s.size(); ++d) {
    if (s[d] == 0) return true;
    if (s[d] > 1) dims.emplace_back(std::llabs(st[d]), s[d]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t reach = 0;
  for (const auto& [stride, size] : dims) {
    if (stride <= reach) return false;
    reach += (size - 1) * stride;
  }
  return true;
}

// The dims of self outermost first in the order torch's TensorIterator loops over them
// (reorder_dimensions: by the operands' strides in turn, ties to the smaller size inside).
std::vector<int64_t> loop_order(const Tensor& self, const std::vector<Tensor>& operands) {
  const int64_t r = self.dim();
  std::vector<const Tensor*> ts{&self};
  for (const Tensor& o : operands)
    if (o.defined()) ts.push_back(&o);
  auto should_swap = [&](int64_t d0, int64_t d1) {
    for (const Tensor* t : ts) {
      const int64_t s0 = t->stride(d0), s1 = t->stride(d1);
      if (s0 == 0 || s1 == 0) continue;
      if (s0 < s1) return -1;
      if (s0 > s1) return 1;
      if (self.size(d0) > self.size(d1)) return 1;
    }
    return 0;
  };
  std::vector<int64_t> perm(static_cast<size_t>(r));  // innermost first, as TensorIterator's perm_
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
  std::reverse(perm.begin(), perm.end());
  return perm;
}
}  // namespace

bool overlaps_itself(const Shape& shape, const Strides& strides) {
  return !disjoint(shape, strides, 0);
}
bool overlaps_itself(const Tensor& t) { return overlaps_itself(t.shape(), t.strides()); }

bool write_in_parts(const Tensor& self, const std::vector<Tensor>& operands,
                    const std::function<void(Tensor&, const std::vector<Tensor>&)>& fn) {
  if (!overlaps_itself(self)) return false;
  std::vector<Tensor> ops;
  for (const Tensor& o : operands) ops.push_back(o.defined() ? o.expand(self.shape()) : o);
  const std::vector<int64_t> perm = loop_order(self, ops);
  Tensor s = self.permute(perm);
  for (Tensor& o : ops)
    if (o.defined()) o = o.permute(perm);
  // The fewest leading dims to loop over so that each part is free of shared memory.
  size_t lead = 0;
  while (lead < size_t(s.dim()) && !disjoint(s.shape(), s.strides(), lead)) ++lead;
  std::vector<int64_t> idx(lead, 0);
  for (size_t d = 0; d < lead; ++d)
    if (s.size(int64_t(d)) == 0) return true;
  while (true) {
    Tensor part = s;
    std::vector<Tensor> parts = ops;
    for (size_t d = 0; d < lead; ++d) {
      part = part.select(0, idx[d]);
      for (Tensor& p : parts)
        if (p.defined()) p = p.select(0, idx[d]);
    }
    fn(part, parts);
    size_t d = lead;
    while (d > 0 && ++idx[d - 1] == s.size(int64_t(d - 1))) idx[--d] = 0;
    if (d == 0) return true;
  }
}

void add_into(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  const TensorOptions i64(DType::i64, dst.device());
  // Each element's place in the storage, as a flat index.
  Tensor pos = full({}, dst.offset(), i64);
  for (int64_t d = 0; d < dst.dim(); ++d) {
    Shape s(size_t(dst.dim()), 1);
    s[size_t(d)] = dst.size(d);
    pos = pos + arange(dst.size(d), i64).reshape(s) * dst.stride(d);
  }
  const int64_t elems = dst.impl()->storage->nbytes / dst.element_size();
  const Tensor flat = make_view(dst, {elems}, {1}, 0);
  run(ir::IndexAdd{flat, 0, pos.expand(dst.shape()).reshape({-1}),
                   cast(src, dst.dtype()).expand(dst.shape()).reshape({-1}), 1});
}

}  // namespace ember::detail
