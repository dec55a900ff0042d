// The reduction that ends a cpu fused graph (fused_graph.cpp): which reductions fold into a
// graph, the partial results (double; max/min propagate NaN) and the two walks that fold them,
// by rows or by columns.
#pragma once
#include <cstdint>
#include <vector>

#include "ember/tensor.h"
#include "ir/graph.h"

namespace ember::cpu::fold {

// Elements per partial result of a reduced row (as the eager cpu reduce).
constexpr int64_t kChunk = 65536;

// Whether the cpu folds ir::Reduce{op, src of `shape` and `src_dtype`, dims, dst} into a graph:
// a float sum/prod/max/min over any set of dims into a contiguous keepdim dst (the walk puts the
// reduced dims innermost, or folds by columns: column_reduction).
bool foldable(ir::ReduceOp op, DType src_dtype, const Shape& shape,
              const std::vector<int64_t>& dims, const Tensor& dst);

// One partial result: sum/prod in v; max/min the extreme in v, NaN once one was seen.
struct Acc {
  double v = 0;
  bool nan = false;
};

// The op's identity (0, 1, -inf, +inf).
Acc identity(ir::ReduceOp op);

// Folds b (a later chunk of the same row) into a.
void combine(ir::ReduceOp op, Acc& a, const Acc& b);

// The graph's reduction, in one of two walks:
//  - rows: the kept dims outer, the reduced ones inner: element i of the walk is in row i / len
//    (rows of `len` elements), `chunks` partial results per row, parts[row * chunks + chunk];
//  - columns (every reduced dim before every kept dim, e.g. a bias gradient's sum over the
//    leading dims of [N, L, C]): the walk is the graph's own order, element i is in column
//    i % rows of reduced row i / rows, and each chunk of `chunk_rows` reduced rows keeps one
//    accumulator per column, parts[chunk * rows + column]: the tiles read contiguous runs of
//    every column at once instead of gathering each column with the row stride.
struct Folder {
  ir::ReduceOp op = ir::ReduceOp::sum;
  int32_t node = -1;
  bool f64 = false;  // the node's compute dtype: double, else float
  bool columns = false;
  int64_t len = 1, rows = 1, chunks = 1;
  int64_t chunk_rows = 1;  // columns: reduced rows per chunk
  std::vector<Acc> parts;

  // Folds the node's values v[0, m) of elements [pos, pos + m). Each part is folded by one task.
  void fold(int64_t pos, int64_t m, const void* v);
};

// Whether graph g's reduction folds by columns (Folder): each reduced dim (of size > 1) comes
// before each kept one, and at least 16 elements are kept.
bool column_reduction(const ir::FusedGraph& g);

}  // namespace ember::cpu::fold
