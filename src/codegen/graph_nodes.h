// The node evaluation of a fused element-wise graph (ir/graph.h), shared by the graph kernels
// (fused_graph.cpp), the fused reductions (reduce.cpp) and the matmul epilogues
// (matmul_epilogue.cpp): each node computed with the
// eager kernels' expression builders and rounded as its eager op stored it. Internal to
// src/codegen.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "codegen/common.h"
#include "ir/graph.h"

namespace ember::codegen {

/// Checks the nodes and outputs of `g` (dtypes the device has, operands of earlier nodes, loads
/// of existing inputs of the graph's shape and dtype, outputs of their node's dtype and the
/// graph's shape); throws ember::Error tagged "fused graph". Not the buffer count.
void check_graph_nodes(const ir::FusedGraph& g, const Caps& caps);

/// Appends each node's params (a constant's bits, a unary op's p0..p2) to `p`; returns the first
/// word of each node's params (0 for nodes without). The layout depends on the graph's key only.
std::vector<uint32_t> graph_params(Params& p, const ir::FusedGraph& g, const Caps& caps);

/// Evaluates the nodes of `g` in order, one local each, and returns their values; `load(node)`
/// gives the value of load node `node` (its input's element, in its compute type).
std::vector<kir::Expr> graph_values(kir::Kernel& k, const ir::FusedGraph& g,
                                    const std::vector<uint32_t>& word,
                                    const std::function<kir::Expr(int32_t)>& load,
                                    const Caps& caps);

}  // namespace ember::codegen
