// Ops without a dedicated cpu kernel (sort, gather/scatter, index_*, scans, most reductions,
// adaptive pooling, interpolation, nonzero) run the reference kernel on independent slices in
// parallel: every one of them is independent along some dims (the ones it does not sort, scan,
// reduce or index along, or N and C for the spatial ops), so slicing all operands along such a
// dim gives sub-ops whose results are exactly the reference's.
#include <algorithm>
#include <atomic>
#include <initializer_list>
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "backends/ref/dispatch.h"
#include "backends/ref/kernels.h"
#include "tensor/internal.h"

namespace ember::cpu {

namespace {

std::atomic<int64_t> g_sliced_runs{0};

// Picks the dim of `shape` to split (not in `fixed`): the outermost one with at least
// num_threads() entries, else the longest; -1 when none has 2 or more.
int64_t split_dim(const Shape& shape, const std::vector<int64_t>& fixed) {
  const int nt = num_threads();
  auto free = [&](size_t d) {
    return std::find(fixed.begin(), fixed.end(), int64_t(d)) == fixed.end();
  };
  for (size_t d = 0; d < shape.size(); ++d)
    if (free(d) && shape[d] >= nt) return int64_t(d);
  int64_t best = -1;
  for (size_t d = 0; d < shape.size(); ++d)
    if (free(d) && shape[d] >= 2 && (best < 0 || shape[d] > shape[size_t(best)])) best = int64_t(d);
  return best;
}

// Runs run(dim, b, e) over slices [b, e) of a free dim of `shape` in parallel. `work` estimates
// the op's cost in elementwise-op units; false (nothing run) when it is too small to split,
// nothing can be split or an output overlaps an input (a slice could then read another slice's
// result, which the reference's own alias handling would not see).
template <typename Run>
bool run_sliced(const Shape& shape, const std::vector<int64_t>& fixed, int64_t work,
                std::initializer_list<const Tensor*> outs, std::initializer_list<const Tensor*> ins,
                Run&& run) {
  if (num_threads() == 1 || work <= kGrainElementwise) return false;
  for (const Tensor* o : outs)
    for (const Tensor* i : ins)
      if (o->defined() && i->defined() && o->is_alias_of(*i)) return false;
  const int64_t dim = split_dim(shape, fixed);
  if (dim < 0) return false;
  const int64_t len = shape[size_t(dim)];
  const int64_t grain = std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(1, work / len));
  parallel_for(0, len, grain, [&](int64_t b, int64_t e) { run(dim, b, e); });
  g_sliced_runs.fetch_add(1, std::memory_order_relaxed);
  return true;
}

int64_t log2_ceil(int64_t n) {
  int64_t r = 1;
  while ((int64_t(1) << r) < n && r < 62) ++r;
  return r;
}

std::vector<int64_t> spatial_dims(const Tensor& t) {
  std::vector<int64_t> d;
  for (int64_t i = 2; i < t.dim(); ++i) d.push_back(i);
  return d;
}

// Non-zero elements of `src` (any dtype, strided), as ref::nonzero decides them.
int64_t count_nonzero(const Tensor& src) {
  int64_t n = 0;
  dispatch_dtype(src.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = ref::ptr<T>(src);
    ref::strided_loop<1>(src.shape(), {&src.strides()}, [&](const std::array<int64_t, 1>& o) {
      n += scalar_cast<bool>(p[o[0]]) ? 1 : 0;
    });
  });
  return n;
}

// t viewed with a leading dim of size 1 (rank + 1).
Tensor with_leading_one(const Tensor& t) {
  if (!t.defined()) return t;
  auto impl = std::make_shared<TensorImpl>(*t.impl());
  impl->shape.insert(impl->shape.begin(), 1);
  impl->strides.insert(impl->strides.begin(), 0);
  impl->view_base = nullptr;
  impl->autograd = nullptr;
  return Tensor(std::move(impl));
}

// A reduction of every long dim of an integer or bool tensor (sum, prod, any, all, max, min;
// no indices) into an integer or bool dst: partial results over slices of the longest reduced
// dim, then the same reduction over the partials. Wrapping integer sums and products and
// any/all/max/min do not depend on the order of combination, so the bits are the reference's.
bool split_reduced(const ir::Reduce& op) {
  if (op.indices.defined() || is_floating(op.src.dtype()) || is_floating(op.dst.dtype()) ||
      num_threads() == 1 || op.src.numel() <= 2 * kGrainElementwise)
    return false;
  if (op.dst.is_alias_of(op.src)) return false;
  int64_t dim = -1;
  for (int64_t d : op.dims)
    if (dim < 0 || op.src.size(d) > op.src.size(dim)) dim = d;
  if (dim < 0) return false;
  const int64_t len = op.src.size(dim);
  const int64_t parts = std::min<int64_t>(len, 4 * int64_t(num_threads()));
  if (parts < 2) return false;
  Shape pshape = op.dst.shape();
  pshape.insert(pshape.begin(), parts);
  const Tensor partial = detail::make_tensor(pshape, op.dst.dtype(), op.dst.device());
  std::vector<int64_t> dims1;
  for (int64_t d : op.dims) dims1.push_back(d + 1);
  parallel_for(0, parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p)
      ref::reduce(ir::Reduce{
          op.op,
          with_leading_one(slice_view(op.src, dim, len * p / parts, len * (p + 1) / parts)),
          dims1,
          slice_view(partial, 0, p, p + 1),
          {}});
  });
  ref::reduce(ir::Reduce{op.op, partial, {0}, with_leading_one(op.dst), {}});
  g_sliced_runs.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace

bool sliced(const ir::Reduce& op) {
  // Too few results to share out: split the reduced elements instead.
  int64_t kept = op.src.numel();
  for (int64_t d : op.dims) kept /= std::max<int64_t>(1, op.src.size(d));
  if (kept < num_threads() && split_reduced(op)) return true;
  return run_sliced(
      op.src.shape(), op.dims, op.src.numel(), {&op.dst, &op.indices}, {&op.src},
      [&](int64_t d, int64_t b, int64_t e) {
        ref::reduce(ir::Reduce{op.op, slice_view(op.src, d, b, e), op.dims,
                               slice_view(op.dst, d, b, e), slice_view(op.indices, d, b, e)});
      });
}

bool sliced(const ir::Scan& op) {
  return run_sliced(
      op.src.shape(), {op.dim}, op.src.numel(), {&op.dst, &op.indices}, {&op.src},
      [&](int64_t d, int64_t b, int64_t e) {
        ref::scan(ir::Scan{op.op, slice_view(op.src, d, b, e), op.dim, slice_view(op.dst, d, b, e),
                           slice_view(op.indices, d, b, e)});
      });
}

bool sliced(const ir::Sort& op) {
  const int64_t n = op.src.dim() ? op.src.size(op.dim) : 1;
  return run_sliced(
      op.src.shape(), {op.dim}, op.src.numel() * log2_ceil(n), {&op.values, &op.indices}, {&op.src},
      [&](int64_t d, int64_t b, int64_t e) {
        ref::sort(ir::Sort{slice_view(op.src, d, b, e), op.dim, op.descending,
                           slice_view(op.values, d, b, e), slice_view(op.indices, d, b, e)});
      });
}

// index has dst's shape and, off `dim`, at most src's sizes: the same slice of all three.
bool sliced(const ir::Gather& op) {
  return run_sliced(
      op.index.shape(), {op.dim}, op.index.numel(), {&op.dst}, {&op.src, &op.index},
      [&](int64_t d, int64_t b, int64_t e) {
        ref::gather(ir::Gather{slice_view(op.src, d, b, e), op.dim, slice_view(op.index, d, b, e),
                               slice_view(op.dst, d, b, e)});
      });
}

// Writes stay within the slice of dst that index's slice addresses (only `dim` is indexed).
bool sliced(const ir::Scatter& op) {
  return run_sliced(
      op.index.shape(), {op.dim}, op.index.numel(), {&op.dst}, {&op.src, &op.index},
      [&](int64_t d, int64_t b, int64_t e) {
        ref::scatter(ir::Scatter{slice_view(op.dst, d, b, e), op.dim, slice_view(op.index, d, b, e),
                                 slice_view(op.src, d, b, e), op.reduce, op.include_self});
      });
}

bool sliced(const ir::IndexSelect& op) {
  return run_sliced(op.dst.shape(), {op.dim}, op.dst.numel(), {&op.dst}, {&op.src, &op.index},
                    [&](int64_t d, int64_t b, int64_t e) {
                      ref::index_select(ir::IndexSelect{slice_view(op.src, d, b, e), op.dim,
                                                        op.index, slice_view(op.dst, d, b, e)});
                    });
}

bool sliced(const ir::IndexAdd& op) {
  return run_sliced(op.src.shape(), {op.dim}, op.src.numel(), {&op.dst}, {&op.src, &op.index},
                    [&](int64_t d, int64_t b, int64_t e) {
                      ref::index_add(ir::IndexAdd{slice_view(op.dst, d, b, e), op.dim, op.index,
                                                  slice_view(op.src, d, b, e), op.alpha});
                    });
}

// Work: every output reads a window of about src/dst inputs.
bool sliced(const ir::AdaptivePool& op) {
  return run_sliced(op.dst.shape(), spatial_dims(op.dst), std::max(op.src.numel(), op.dst.numel()),
                    {&op.dst, &op.indices}, {&op.src}, [&](int64_t d, int64_t b, int64_t e) {
                      ref::adaptive_pool(ir::AdaptivePool{op.max, slice_view(op.src, d, b, e),
                                                          slice_view(op.dst, d, b, e),
                                                          slice_view(op.indices, d, b, e)});
                    });
}

bool sliced(const ir::Interpolate& op) {
  return run_sliced(
      op.dst.shape(), spatial_dims(op.dst), op.dst.numel() * 4, {&op.dst}, {&op.src},
      [&](int64_t d, int64_t b, int64_t e) {
        ref::interpolate(ir::Interpolate{op.mode, op.align_corners, op.scales,
                                         slice_view(op.src, d, b, e), slice_view(op.dst, d, b, e)});
      });
}

// Two passes over slices of dim 0: count each slice's non-zeros, then let ref::nonzero write
// each slice's rows at its offset and shift their first coordinate by the slice's start.
bool sliced(const ir::Nonzero& op) {
  const Tensor& s = op.src;
  if (s.dim() == 0 || op.dst.dim() != 2 || num_threads() == 1 || s.numel() <= kGrainElementwise)
    return false;
  const int64_t len = s.size(0);
  if (len < 2) return false;
  const int64_t parts = std::min<int64_t>(len, 4 * num_threads());
  std::vector<int64_t> counts(size_t(parts) + 1, 0);
  auto bounds = [&](int64_t p) { return len * p / parts; };
  parallel_for(0, parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p)
      counts[size_t(p) + 1] = count_nonzero(slice_view(s, 0, bounds(p), bounds(p + 1)));
  });
  for (int64_t p = 0; p < parts; ++p) counts[size_t(p) + 1] += counts[size_t(p)];
  const int64_t rows = op.dst.size(0);
  int64_t* out = ref::ptr<int64_t>(op.dst);
  const int64_t r0 = op.dst.stride(0);
  parallel_for(0, parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const int64_t lo = std::min(rows, counts[size_t(p)]);
      const int64_t hi = std::min(rows, counts[size_t(p) + 1]);
      if (hi == lo) continue;
      ref::nonzero(
          ir::Nonzero{slice_view(s, 0, bounds(p), bounds(p + 1)), slice_view(op.dst, 0, lo, hi)});
      for (int64_t r = lo; r < hi; ++r) out[r * r0] += bounds(p);
    }
  });
  g_sliced_runs.fetch_add(1, std::memory_order_relaxed);
  return true;
}

int64_t sliced_runs() { return g_sliced_runs.load(std::memory_order_relaxed); }

}  // namespace ember::cpu
