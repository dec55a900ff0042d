// One kernel per fused element-wise graph (ir/graph.h): per element, each load reads its input
// through the graph's merged iteration (the elementwise kernels' index math), the nodes are
// evaluated in order with the eager elementwise kernels' own expression builders
// (elementwise_internal.h), each value rounded as its eager op stored it (so the results are the
// eager bits), and each output is stored. Constants and unary parameters go in params, never in
// the source: the kernel key is the graph's structure (FusedGraph::key) and the iteration's rank
// and access variant, so x * 2 and x * 3, or two shapes of one graph, share one kernel.
#include <string>
#include <vector>

#include "codegen/elementwise_internal.h"
#include "codegen/graph_nodes.h"
#include "codegen/lower.h"
#include "ember/error.h"

namespace ember::codegen {

using kir::Expr;
using K = ir::FusedGraph::Kind;

namespace {

constexpr const char* kOp = "fused graph";

}  // namespace

void check_graph_nodes(const ir::FusedGraph& g, const Caps& caps) {
  auto need = [&](DType t) { check_dtype(kOp, t, caps); };
  for (const Tensor& t : g.inputs) need(t.dtype());
  for (const auto& o : g.outputs) {
    need(o.dst.dtype());
    EMBER_CHECK(o.node >= 0 && size_t(o.node) < g.nodes.size(), kOp, "output of node ", o.node,
                " of ", g.nodes.size());
    EMBER_CHECK(o.dst.dtype() == g.nodes[size_t(o.node)].dtype, kOp, "output ",
                dtype_name(o.dst.dtype()), " of a ", dtype_name(g.nodes[size_t(o.node)].dtype),
                " node");
    EMBER_CHECK(o.dst.shape() == g.shape, kOp, "an output of another shape than the graph's");
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::FusedGraph::Node& n = g.nodes[i];
    need(n.dtype);
    for (int32_t o : {n.a, n.b, n.c})
      EMBER_CHECK(o < int32_t(i), kOp, "node ", i, " reads node ", o, ", not an earlier one");
    auto dt = [&](int32_t o) {
      EMBER_CHECK(o >= 0, kOp, "node ", i, " lacks an operand");
      return g.nodes[size_t(o)].dtype;
    };
    switch (n.kind) {
      case K::load:
        EMBER_CHECK(n.input >= 0 && size_t(n.input) < g.inputs.size(), kOp, "load of input ",
                    n.input, " of ", g.inputs.size());
        EMBER_CHECK(g.inputs[size_t(n.input)].dtype() == n.dtype, kOp, "load of a ",
                    dtype_name(g.inputs[size_t(n.input)].dtype()), " input as ",
                    dtype_name(n.dtype));
        EMBER_CHECK(g.inputs[size_t(n.input)].shape() == g.shape, kOp,
                    "an input of another shape than the graph's");
        break;
      case K::binary:
        EMBER_CHECK(dt(n.a) == dt(n.b), kOp, "binary operands of different dtypes");
        break;
      case K::where:
        EMBER_CHECK(dt(n.a) == DType::b8 && dt(n.b) == n.dtype && dt(n.c) == n.dtype, kOp,
                    "where of a non-bool condition or other dtypes than its result");
        break;
      case K::unary:
      case K::cast:
        dt(n.a);
        break;
      case K::constant:
        break;
    }
  }
}

std::vector<uint32_t> graph_params(Params& p, const ir::FusedGraph& g, const Caps& caps) {
  std::vector<uint32_t> word(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::FusedGraph::Node& n = g.nodes[i];
    if (n.kind == K::constant) word[i] = p.u64(fill_bits(n.dtype, n.value));
    if (n.kind == K::unary)
      word[i] = unary_params(p, g.nodes[size_t(n.a)].dtype, n.p0, n.p1, n.p2, caps);
  }
  return word;
}

std::vector<Expr> graph_values(kir::Kernel& k, const ir::FusedGraph& g,
                               const std::vector<uint32_t>& word,
                               const std::function<Expr(int32_t)>& load, const Caps& caps) {
  std::vector<Expr> v(g.nodes.size());
  auto at = [&](int32_t n) { return v[size_t(n)]; };
  auto dt = [&](int32_t n) { return g.nodes[size_t(n)].dtype; };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::FusedGraph::Node& n = g.nodes[i];
    Expr e;
    switch (n.kind) {
      case K::load:
        e = load(int32_t(i));
        break;
      case K::constant:
        // narrow integers: the low bits wrapped (a fill's store wraps them)
        e = convert(k, n.dtype, n.dtype, fill_value(n.dtype, word[i]));
        break;
      case K::unary:
        e = stored_value(k, n.dtype,
                         unary_value(k, n.unary, dt(n.a), n.dtype, at(n.a), word[i], caps));
        break;
      case K::binary:
        e = stored_value(k, n.dtype,
                         binary_value(k, n.binary, dt(n.a), n.dtype, at(n.a), at(n.b), caps));
        break;
      case K::where:
        e = select(at(n.a), at(n.b), at(n.c));
        break;
      case K::cast:
        e = stored_value(k, n.dtype, convert(k, dt(n.a), n.dtype, at(n.a)));
        break;
    }
    // One local per node: each value is computed once, and (iter_kernel renders float locals
    // `precise` in GLSL) no contraction (a * b + c into an fma) crosses two ops, as it cannot
    // between two eager kernels.
    v[i] = k.let("v" + std::to_string(i), e);
  }
  return v;
}

Lowering lower_graph(const ir::FusedGraph& g, Dialect d, const Caps& caps,
                     const ReduceVariant* reduce) {
  if (!g.reductions.empty()) {
    // The reduction's kernel(s), then `after` on its result (the launches run in order).
    Lowering l = lower_graph_reduce(g, d, caps, reduce);
    for (const ir::FusedGraph& a : g.after) {
      EMBER_CHECK(a.reductions.empty() && a.after.empty(), kOp,
                  "an epilogue with reductions of its own");
      Lowering la = lower_graph(a, d, caps);
      for (Launch& x : la.launches) l.launches.push_back(std::move(x));
    }
    return l;
  }
  EMBER_CHECK(g.inputs.size() + g.outputs.size() <= caps.max_buffers, kOp, g.inputs.size(),
              " inputs and ", g.outputs.size(), " outputs exceed the ", caps.max_buffers,
              " buffers a kernel may bind on this device");
  check_graph_nodes(g, caps);
  Lowering l;
  if (g.outputs.empty() || numel_of(g.shape) == 0) return l;
  const size_t nout = g.outputs.size(), nin = g.inputs.size();
  // Operands: the outputs, then the inputs (dims merged where all of them allow).
  std::vector<int64_t> offsets;
  std::vector<Strides> strides;
  std::vector<Binding> bindings;
  std::vector<BufferDecl> decls;
  for (size_t o = 0; o < nout; ++o) {
    const Tensor& t = g.outputs[o].dst;
    offsets.push_back(t.offset());
    strides.push_back(t.strides());
    bindings.push_back(Binding{t, -1});
    decls.push_back({"out" + std::to_string(o), t.dtype(), true});
  }
  for (size_t i = 0; i < nin; ++i) {
    const Tensor& t = g.inputs[i];
    offsets.push_back(t.offset());
    strides.push_back(t.strides());
    bindings.push_back(Binding{t, -1});
    decls.push_back({"in" + std::to_string(i), t.dtype(), false});
  }
  const Iter it = merged_iter(g.shape, std::move(offsets), strides);
  Params p;
  add_iter(p, it, kOp);
  // Each node's params (the same layout for every graph of one key): constants, unary p0..p2.
  const std::vector<uint32_t> word = graph_params(p, g, caps);
  EMBER_CHECK(p.words().size() * 4 <= kParamsBytes, kOp, "a graph of ", g.nodes.size(),
              " nodes needs ", p.words().size() * 4, " bytes of params; at most ", kParamsBytes,
              " are supported");
  const std::string key = "graph_" + g.key() + rank_tag(it);
  auto k = cached_kernel(key, d, caps, [&] {
    return iter_kernel(
        "fused_graph", decls, it, caps,
        [&](kir::Kernel& k, const std::vector<kir::Buf>& b, const std::vector<Expr>& o, Expr) {
          const std::vector<Expr> v = graph_values(
              k, g, word,
              [&](int32_t n) {
                const size_t in = nout + size_t(g.nodes[size_t(n)].input);
                return k.load(b[in], o[in]);
              },
              caps);
          for (size_t j = 0; j < nout; ++j) k.store(b[j], o[j], v[size_t(g.outputs[j].node)]);
        });
  });
  l.launches.push_back(launch_1d(k, std::move(bindings), p.take(), it.numel, caps));
  return l;
}

}  // namespace ember::codegen
