// Per-family lowering functions behind codegen::lower (internal to src/codegen).
#pragma once
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "ir/graph.h"

namespace ember::codegen {

// elementwise.cpp
Lowering lower_copy(const ir::Copy& op, Dialect d, const Caps& caps);
Lowering lower_fill(const ir::Fill& op, Dialect d, const Caps& caps);
Lowering lower_unary(const ir::Unary& op, Dialect d, const Caps& caps);
Lowering lower_binary(const ir::Binary& op, Dialect d, const Caps& caps);
Lowering lower_where(const ir::Where& op, Dialect d, const Caps& caps);
Lowering lower_random(const ir::Random& op, Dialect d, const Caps& caps);
// reduce.cpp: a reduction's variant, autotuned by runtime/kernel_backend.cpp: the single pass's
// workgroup size ("thread", group == 0: a thread per output; "group<L>": a workgroup of L threads
// per output, combining in shared memory), or "split<S>" (split_steps S: each output's elements
// in chunks of S strides of a workgroup, partials then a final launch). Past the loop budget
// every variant splits. The results agree within rounding (the summation order differs).
struct ReduceVariant {
  std::string name;
  uint32_t group = 0;
  uint32_t split_steps = 0;
};
// The variants for `outputs` outputs of `reduced` elements each; the first is the default (what
// lower_reduce runs without one: a split for 64 outputs or fewer of more than 32,768 elements,
// else by extent). The list depends on the two counts' power-of-two classes only.
std::vector<ReduceVariant> reduce_variants(int64_t outputs, int64_t reduced, const Caps& caps);
// A bound on the loop iterations one element of g's nodes may run inside helper functions (0
// for most graphs; erf and exact gelu run a series loop in f64). Fused reductions count it
// against the loop budget (lavapipe's limit counts called functions' loops too), and the
// autotuner keys such graphs apart.
int64_t graph_element_loops(const ir::FusedGraph& g, const Caps& caps);
// fused_graph.cpp: one kernel for a fused element-wise graph (the stream's planner makes them),
// bit-identical to running its ops one by one. Keyed by the graph's structure, rank and access
// variant only (constants and unary parameters are params). Throws ember::Error when the device
// lacks a dtype or a function the graph needs (the backend then runs the ops one by one). A
// graph ending in a reduction lowers through lower_graph_reduce (below), its `after` as
// a plain graph launched next; `reduce` picks the reduction's variant (null: the default).
Lowering lower_graph(const ir::FusedGraph& g, Dialect d, const Caps& caps,
                     const ReduceVariant* reduce = nullptr);
// reduce.cpp, with variant v (null: the default).
Lowering lower_reduce(const ir::Reduce& op, Dialect d, const Caps& caps,
                      const ReduceVariant* v = nullptr);
// The reduction a fused graph ends in (g.reductions, exactly one: sum, prod, max or min of a
// non-bool node into a dst of its dtype and keepdim shape), its node evaluated from the graph's
// inputs as the reduce kernels read each element, and the graph's outputs stored on the way
// (fuse-on-read). Not g.after. Throws ember::Error for
// anything else, or when the kernel would bind more buffers or params than the device allows.
Lowering lower_graph_reduce(const ir::FusedGraph& g, Dialect d, const Caps& caps,
                            const ReduceVariant* v = nullptr);
Lowering lower_scan(const ir::Scan& op, Dialect d, const Caps& caps);
Lowering lower_sort(const ir::Sort& op, Dialect d, const Caps& caps);
Lowering lower_nonzero(const ir::Nonzero& op, Dialect d, const Caps& caps);
// indexing.cpp
Lowering lower_gather(const ir::Gather& op, Dialect d, const Caps& caps);
Lowering lower_scatter(const ir::Scatter& op, Dialect d, const Caps& caps);
Lowering lower_index_select(const ir::IndexSelect& op, Dialect d, const Caps& caps);
Lowering lower_index_add(const ir::IndexAdd& op, Dialect d, const Caps& caps);
// spatial.cpp
Lowering lower_matmul(const ir::Matmul& op, Dialect d, const Caps& caps);
// matmul.cpp: a generated matmul's variant, autotuned by runtime/kernel_backend.cpp: "simple"
// (bm == 0: a thread per output) or "tiled<bm>x<bk>t<tm>" (a bm x bn tile staged bk deep, tm x tn
// outputs per thread). Every variant sums in k order: the results are the same.
struct MatmulVariant {
  std::string name;
  int bm = 0, bn = 0, bk = 0, tm = 0, tn = 0;
};
// The variants that fit the device for this product; the first is the default (what
// lower_matmul(op, d, caps) runs). Requires a non-empty product.
std::vector<MatmulVariant> matmul_variants(const ir::Matmul& op, const Caps& caps);
Lowering lower_matmul(const ir::Matmul& op, Dialect d, const Caps& caps, const MatmulVariant& v);
// matmul.cpp + matmul_epilogue.cpp: the matmul with variant v and the element-wise epilogue `g`
// the stream joined to it (g.inputs[anchor_input] reads op.dst), as one kernel per launch that
// stores g's outputs instead of the product (Backend::execute_anchored). Keyed by the variant,
// dtype and g's structure (FusedGraph::key), never shapes. _applies: whether this instance fits
// (float dtypes the device has, every operand viewable as the product's [B, M, N], within the
// device's buffers); lower_ throws ember::Error when it does not, or when the device lacks
// something the graph needs.
bool matmul_epilogue_applies(const ir::Matmul& op, const ir::FusedGraph& g, int32_t anchor_input,
                             const Caps& caps);
Lowering lower_matmul_epilogue(const ir::Matmul& op, const ir::FusedGraph& g, int32_t anchor_input,
                               Dialect d, const Caps& caps, const MatmulVariant& v);
Lowering lower_im2col(const ir::Im2col& op, Dialect d, const Caps& caps);
Lowering lower_col2im(const ir::Col2im& op, Dialect d, const Caps& caps);
Lowering lower_adaptive_pool(const ir::AdaptivePool& op, Dialect d, const Caps& caps);
Lowering lower_interpolate(const ir::Interpolate& op, Dialect d, const Caps& caps);

}  // namespace ember::codegen
