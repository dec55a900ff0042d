// The reduction that ends a cpu fused graph: partial results and their folds (fused_fold.h).
#include "backends/cpu/fused_fold.h"

#include <algorithm>
#include <limits>

#include "backends/cpu/kernels.h"
#include "core/merge_dims.h"

namespace ember::cpu::fold {

namespace {
bool is_half(DType t) { return t == DType::f16 || t == DType::bf16; }
}  // namespace

bool foldable(ir::ReduceOp op, DType src_dtype, const Shape& shape,
              const std::vector<int64_t>& dims, const Tensor& dst) {
  using ir::ReduceOp;
  if (op != ReduceOp::sum && op != ReduceOp::prod && op != ReduceOp::max && op != ReduceOp::min)
    return false;
  if (src_dtype != DType::f32 && src_dtype != DType::f64 && !is_half(src_dtype)) return false;
  if (!dst.defined() || dst.dtype() != src_dtype || dst.device() != Device::cpu() ||
      !dst.is_contiguous() || shape.size() > kMaxMergedDims || numel_of(shape) == 0)
    return false;
  Shape kept = shape;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || size_t(dims[i]) >= shape.size() || (i > 0 && dims[i] <= dims[i - 1]))
      return false;
    kept[size_t(dims[i])] = 1;
  }
  return dst.shape() == kept;
}

Acc identity(ir::ReduceOp op) {
  Acc a;
  if (op == ir::ReduceOp::prod) a.v = 1;
  if (op == ir::ReduceOp::max) a.v = -std::numeric_limits<double>::infinity();
  if (op == ir::ReduceOp::min) a.v = std::numeric_limits<double>::infinity();
  return a;
}

// Folds x[0, n) (compute dtype C: float or double) into a.
template <typename C>
void fold_run(ir::ReduceOp op, const C* x, int64_t n, Acc& a) {
  using ir::ReduceOp;
  if (op == ReduceOp::sum) {
    a.v += sum_lanes(x, n);  // the eager reduce's lanes and order
    return;
  }
  if (op == ReduceOp::prod) {
    for (int64_t i = 0; i < n; ++i) a.v *= double(x[i]);
    return;
  }
  if (a.nan) return;
  const bool is_max = op == ReduceOp::max;
  C m[8];
  bool nan[8] = {false, false, false, false, false, false, false, false};
  for (int j = 0; j < 8; ++j) m[j] = C(a.v);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) {
      const C v = x[i + j];
      m[j] = (is_max ? v > m[j] : v < m[j]) ? v : m[j];
      nan[j] = nan[j] || v != v;
    }
  for (; i < n; ++i) {
    const C v = x[i];
    m[0] = (is_max ? v > m[0] : v < m[0]) ? v : m[0];
    nan[0] = nan[0] || v != v;
  }
  for (int j = 0; j < 8; ++j) {
    a.v = (is_max ? double(m[j]) > a.v : double(m[j]) < a.v) ? double(m[j]) : a.v;
    a.nan = a.nan || nan[j];
  }
  if (a.nan) a.v = std::numeric_limits<double>::quiet_NaN();  // NaN propagates, as eager
}

void combine(ir::ReduceOp op, Acc& a, const Acc& b) {
  using ir::ReduceOp;
  if (op == ReduceOp::sum) {
    a.v += b.v;
  } else if (op == ReduceOp::prod) {
    a.v *= b.v;
  } else if (!a.nan) {
    if (b.nan || (op == ReduceOp::max ? b.v > a.v : b.v < a.v)) a = b;
  }
}

// Folds x[0, n) into n accumulators a[0, n), one element each (a column fold: sum and prod in
// double, max/min NaN-propagating, as fold_run on one element at a time).
template <typename C>
void fold_columns(ir::ReduceOp op, const C* x, int64_t n, Acc* a) {
  using ir::ReduceOp;
  if (op == ReduceOp::sum) {
    for (int64_t j = 0; j < n; ++j) a[j].v += double(x[j]);
  } else if (op == ReduceOp::prod) {
    for (int64_t j = 0; j < n; ++j) a[j].v *= double(x[j]);
  } else {
    const bool is_max = op == ReduceOp::max;
    for (int64_t j = 0; j < n; ++j) {
      const double v = double(x[j]);
      if (a[j].nan) continue;
      if (v != v) {
        a[j].nan = true;
        a[j].v = v;
      } else if (is_max ? v > a[j].v : v < a[j].v) {
        a[j].v = v;
      }
    }
  }
}

constexpr int64_t kMinColumns = 16;  // column_reduction
bool column_reduction(const ir::FusedGraph& g) {
  if (g.reductions.empty()) return false;
  const auto& dims = g.reductions[0].dims;
  int64_t kept = 1;
  bool seen_kept = false;
  for (size_t d = 0; d < g.shape.size(); ++d) {
    if (g.shape[d] == 1) continue;
    const bool red = std::find(dims.begin(), dims.end(), int64_t(d)) != dims.end();
    if (red && seen_kept) return false;
    if (!red) {
      seen_kept = true;
      kept *= g.shape[d];
    }
  }
  return kept >= kMinColumns && kept < numel_of(g.shape);
}

void Folder::fold(int64_t pos, int64_t m, const void* v) {
  auto part_of = [&](int64_t i) { return (i / len) * chunks + (i % len) / kChunk; };
  auto part_end = [&](int64_t i) {
    const int64_t row = i / len;
    return std::min((row + 1) * len, row * len + ((i % len) / kChunk + 1) * kChunk);
  };
  for (int64_t j = 0; j < m;) {
    const int64_t i = pos + j;
    if (columns) {
      const int64_t col = i % rows, n = std::min(m - j, rows - col);
      Acc* a = &parts[size_t((i / rows / chunk_rows) * rows + col)];
      if (f64)
        fold_columns(op, static_cast<const double*>(v) + j, n, a);
      else
        fold_columns(op, static_cast<const float*>(v) + j, n, a);
      j += n;
      continue;
    }
    const int64_t n = std::min(m - j, part_end(i) - i);
    Acc& a = parts[size_t(part_of(i))];
    if (f64)
      fold_run(op, static_cast<const double*>(v) + j, n, a);
    else
      fold_run(op, static_cast<const float*>(v) + j, n, a);
    j += n;
  }
}

}  // namespace ember::cpu::fold
