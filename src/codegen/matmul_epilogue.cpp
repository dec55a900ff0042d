// The epilogue a generated matmul kernel evaluates at store time (matmul_epilogue.h): which
// graph inputs read the product, the other operands' [B, M, N] views and their params, and the
// per-output evaluation through the fused graph kernels' node lowering (graph_nodes.h).
#include "codegen/matmul_epilogue.h"

#include <limits>
#include <string>
#include <vector>

#include "codegen/graph_nodes.h"
#include "core/view_strides.h"

namespace ember::codegen {

using kir::Expr;
using kir::Type;

namespace {

bool float_dtype(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64;
}

// Whether every element of `t` lies at a 31-bit offset (the kernels index with int).
bool fits(const Tensor& t) {
  int64_t lo = t.offset(), hi = t.offset();
  for (int64_t k = 0; k < t.dim(); ++k) {
    const int64_t span = (t.size(k) - 1) * t.stride(k);
    (span < 0 ? lo : hi) += span;
  }
  return lo >= 0 && hi <= int64_t(std::numeric_limits<int32_t>::max());
}

// `t` (of the graph's shape) as an operand seen as the product's dims, or false.
bool operand(const Tensor& t, const Shape& dims, bool output, MatmulEpilogue::Operand& o) {
  Strides st;
  if (!fits(t) || !detail::view_strides(t.shape(), t.strides(), dims, st)) return false;
  o.t = t;
  o.offset = t.offset();
  for (size_t i = 0; i < 3; ++i) o.strides[i] = st[i];
  o.output = output;
  return true;
}

}  // namespace

bool plan_matmul_epilogue(const ir::Matmul& op, const ir::FusedGraph& g, int32_t anchor_input,
                          const Caps& caps, MatmulEpilogue& e) {
  const Tensor& d = op.dst;
  if (!float_dtype(d.dtype()) || anchor_input < 0 || size_t(anchor_input) >= g.inputs.size() ||
      g.outputs.empty() || numel_of(g.shape) != d.numel())
    return false;
  const Shape dims{d.size(0), d.size(1), d.size(2)};
  e = MatmulEpilogue{};
  e.g = &g;
  // Every input on the anchor's storage is the product (the planner admits it only as the whole
  // result in row-major order), so none loads the dead product from memory.
  const Storage* ps = g.inputs[size_t(anchor_input)].impl()->storage.get();
  for (const Tensor& t : g.inputs) {
    const bool p = t.impl()->storage.get() == ps;
    e.product.push_back(p);
    e.operand_of.push_back(p ? -1 : int(e.operands.size()));
    if (p) {
      if (t.dtype() != d.dtype()) return false;
      continue;
    }
    e.operands.emplace_back();
    if (!operand(t, dims, false, e.operands.back())) return false;
  }
  for (const ir::FusedGraph::Output& o : g.outputs) {
    e.operands.emplace_back();
    if (!operand(o.dst, dims, true, e.operands.back())) return false;
  }
  // a, b and (split K) the accumulator carrier, then the epilogue's operands.
  return 3 + e.operands.size() <= caps.max_buffers;
}

std::string epilogue_key(const MatmulEpilogue& e) {
  std::string k = "_epi";
  for (size_t i = 0; i < e.product.size(); ++i)
    if (e.product[i]) k += "p" + std::to_string(i);
  return k + "_" + e.g->key();
}

void epilogue_params(ParamBuilder& p, MatmulEpilogue& e, const Caps& caps) {
  e.at.clear();
  for (const MatmulEpilogue::Operand& o : e.operands) {
    e.at.push_back(p.i(o.offset));
    p.ints({o.strides[0], o.strides[1], o.strides[2]});
  }
  e.word = graph_params(p, *e.g, caps);
}

std::vector<kir::Buf> epilogue_buffers(kir::Kernel& k, const MatmulEpilogue& e) {
  std::vector<kir::Buf> b;
  for (size_t i = 0; i < e.operands.size(); ++i) {
    const MatmulEpilogue::Operand& o = e.operands[i];
    b.push_back(k.buffer((o.output ? "out" : "in") + std::to_string(i), o.t.dtype(), o.output));
  }
  return b;
}

std::vector<Binding> epilogue_bindings(const MatmulEpilogue& e) {
  std::vector<Binding> b;
  for (const MatmulEpilogue::Operand& o : e.operands) b.push_back(Binding{o.t, -1});
  return b;
}

void epilogue_store(kir::Kernel& k, const MatmulEpilogue& e, const std::vector<kir::Buf>& bufs,
                    Expr bt, Expr r, Expr c, Expr value, const Caps& caps) {
  const ir::FusedGraph& g = *e.g;
  const auto offset = [&](size_t o) {
    const uint32_t w = uint32_t(e.at[o]);
    return kir::param_i32(w) + cast(Type::i32, bt) * kir::param_i32(w + 1) +
           cast(Type::i32, r) * kir::param_i32(w + 2) + cast(Type::i32, c) * kir::param_i32(w + 3);
  };
  const std::vector<Expr> v = graph_values(
      k, g, e.word,
      [&](int32_t n) {
        const size_t in = size_t(g.nodes[size_t(n)].input);
        if (e.product[in]) return value;
        const size_t o = size_t(e.operand_of[in]);
        return k.load(bufs[o], offset(o));
      },
      caps);
  const size_t first_out = e.operands.size() - g.outputs.size();
  for (size_t j = 0; j < g.outputs.size(); ++j)
    k.store(bufs[first_out + j], offset(first_out + j), v[size_t(g.outputs[j].node)]);
}

}  // namespace ember::codegen
