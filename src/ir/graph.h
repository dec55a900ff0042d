// A fused element-wise graph: what the stream's fusion planner (src/runtime/stream.cpp) hands a
// backend's execute_graph() in place of a chain of Copy/Fill/Unary/Binary/Where ops.
//
// Every load and every output has the graph's shape and its own strides (inputs are broadcast
// views, as in ops.h). Element i of each output is a function of element i of the loads only, so
// a kernel may evaluate the nodes per element (or per tile) in any order of elements. Each node's
// value is what the eager op stored: rounded (or wrapped) to the node's dtype, so a fused kernel
// gives the eager bits when it keeps that rule for intermediates too.
//
// A graph may end in reductions (`reductions`, today at most one: Backend::reducible):
// each is an ir::Reduce whose src is the whole value of `node` (the graph's shape, element i of
// the graph), so a kernel folds the node's values as it computes them instead of storing them.
// Such a graph may carry `after` ("fuse-on-write"): a plain graph of the reduced shape whose
// loads include the reductions' dsts, run in the same kernel once the fold has written them
// (the element-wise ops that consume the result: mean's scale, sqrt(var + eps), ...).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/ops.h"

namespace ember::ir {

struct FusedGraph {
  enum class Kind : uint8_t {
    load,      // inputs[input], read at element i
    constant,  // value (a Fill), cast to dtype as fill_ does
    unary,     // unary(a) with p0..p2, as ir::Unary (dtype: its dst's, bool for predicates)
    binary,    // binary(a, b), as ir::Binary (a and b share a dtype; dtype: that or bool)
    where,     // a ? b : c, as ir::Where (a bool)
    cast,      // a converted to dtype, as ir::Copy
  };
  struct Node {
    Kind kind = Kind::load;
    DType dtype = DType::f32;        // the value's dtype
    int32_t a = -1, b = -1, c = -1;  // operand nodes (earlier in `nodes`)
    int32_t input = -1;              // load: index into inputs
    UnaryOp unary = UnaryOp::neg;
    BinaryOp binary = BinaryOp::add;
    double p0 = 0, p1 = 0, p2 = 0;  // unary parameters
    Scalar value;                   // constant
  };
  struct Output {
    int32_t node = -1;
    Tensor dst;  // the node's dtype, the graph's shape, never a broadcast (no stride-0 dim of size
                 // > 1)
  };

  /// dst = what ir::Reduce{op, value of node, dims, dst} computes: dims sorted, unique, of
  /// `shape`; dst has `shape` with those dims 1 (keepdim) and the node's dtype; op is sum, prod,
  /// max or min (no indices). Accumulation and NaN rules are ir::Reduce's; the summation order may
  /// differ from the eager kernel's (results agree within a tolerance, not bit for bit).
  struct Reduction {
    ReduceOp op = ReduceOp::sum;
    int32_t node = -1;
    std::vector<int64_t> dims;
    Tensor dst;
  };

  Shape shape;
  std::vector<Tensor> inputs;  // read from memory; each has `shape`
  std::vector<Node> nodes;     // in evaluation order
  std::vector<Output> outputs;
  std::vector<Reduction> reductions;  // empty: a plain element-wise graph
  /// At most one plain graph (no reductions, no `after` of its own), only when `reductions` is
  /// not empty: run after them; it reads their dsts as any input. Empty: none.
  std::vector<FusedGraph> after;
  /// The ops the graph replaces (with `after`'s), in stream order: a backend may run them one by
  /// one instead.
  int64_t ops = 0;

  /// Structure and dtypes (nodes, ops, parameters' presence, input and output dtypes, each
  /// reduction's op, node, dims pattern and dtype), never shapes, strides or constant values: a
  /// kernel cache key.
  std::string key() const;
  /// One line per node and output, for EMBER_FUSION_LOG and check-mode reports.
  std::string describe() const;
};

}  // namespace ember::ir
