// A fused element-wise graph: what the stream's fusion planner (src/runtime/stream.cpp) hands a
// backend's execute_graph() in place of a chain of Copy/Fill/Unary/Binary/Where ops.
//
// Every load and every output has the graph's shape and its own strides (inputs are broadcast
// views, as in ops.h). Element i of each output is a function of element i of the loads only, so
// a kernel may evaluate the nodes per element (or per tile) in any order of elements. Each node's
// value is what the eager op stored: rounded (or wrapped) to the node's dtype, so a fused kernel
// gives the eager bits when it keeps that rule for intermediates too.
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

  Shape shape;
  std::vector<Tensor> inputs;  // read from memory; each has `shape`
  std::vector<Node> nodes;     // in evaluation order
  std::vector<Output> outputs;
  /// The ops the graph replaces, in stream order: a backend may run them one by one instead.
  int64_t ops = 0;

  /// Structure and dtypes (nodes, ops, parameters' presence, input and output dtypes), never
  /// shapes, strides or constant values: a kernel cache key.
  std::string key() const;
  /// One line per node and output, for EMBER_FUSION_LOG and check-mode reports.
  std::string describe() const;
};

}  // namespace ember::ir
