// The cpu backend's anchored groups (Backend::execute_anchored): an f32 ir::Matmul and the
// element-wise epilogue the stream's planner joined to it, run as one oneDNN matmul primitive
// with post-ops, so the product never makes a pass through memory of its own.
//
// The epilogue maps when it is a chain from the product to the one output: each node applies one
// step to the value before it - an activation (relu, leaky_relu, gelu, gelu_tanh, silu, sigmoid,
// tanh, neg, square, exp: eltwise post-ops), a scalar add/sub/mul/div (eltwise_linear), or a
// tensor add/sub/mul/max/min with a load (a binary post-op; the load viewed as [B, M, N] with
// broadcast dims of size 1: a bias, a residual). Anything else (casts, branches, f16/bf16, a
// layout oneDNN rejects) returns false and the stream runs the matmul, then the graph.
// The result differs from the eager ops by oneDNN's summation order and its eltwise
// approximations (within 1e-4 relative for f32: EMBER_CHECK's tolerance).
#include <dnnl.hpp>

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernels.h"
#include "backends/ref/dispatch.h"

namespace ember::cpu {

namespace {

using dnnl::algorithm;
using dnnl::memory;
using Dims = memory::dims;
using Kind = ir::FusedGraph::Kind;

// The strides of `t`'s elements seen as `shape` (the same elements in row-major order, as
// torch's view), or false when no strides do it (torch's computeStride).
bool view_strides(const Tensor& t, const Dims& shape, Dims& out) {
  const Shape& os = t.shape();
  const Strides& st = t.strides();
  out.assign(shape.size(), 1);
  if (t.numel() == 1 || os.empty()) return t.numel() == 1;
  int64_t view_d = int64_t(shape.size()) - 1;
  int64_t base = st.back(), tensor_numel = 1, view_numel = 1;
  for (int64_t d = int64_t(os.size()) - 1; d >= 0; --d) {
    tensor_numel *= os[size_t(d)];
    if (d == 0 || (os[size_t(d) - 1] != 1 && st[size_t(d) - 1] != tensor_numel * base)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[size_t(view_d)] == 1)) {
        out[size_t(view_d)] = view_numel * base;
        view_numel *= shape[size_t(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        base = st[size_t(d) - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

// A strided f32 descriptor of dims/strides where a stride of 0 becomes a broadcast dim of 1
// (size-1 dims get the stride of a dense layout, which oneDNN checks).
memory::desc broadcast_desc(Dims dims, Dims strides) {
  for (size_t i = 0; i < dims.size(); ++i)
    if (strides[i] == 0) dims[i] = 1;
  for (size_t i = dims.size(); i-- > 0;)
    if (dims[i] == 1) {
      int64_t s = 1;
      for (size_t j = i + 1; j < dims.size(); ++j) s = std::max(s, strides[j] * dims[j]);
      strides[i] = s;
    }
  return memory::desc(dims, memory::data_type::f32, strides);
}

// Whether the dims that are not 1 are dense and row-major: the only post-op operand and dst
// layouts taken: with a strided src1 (the op table's linear/bias "permuted" case, a bias [5] of
// stride 2) oneDNN 2.6 gave wrong values.
bool dense(const memory::desc& md) {
  const Dims dims = md.dims();
  int64_t expect = 1;
  const dnnl_memory_desc_t& c = md.data;
  for (size_t i = dims.size(); i-- > 0;) {
    if (dims[i] == 1) continue;
    if (c.format_desc.blocking.strides[i] != expect) return false;
    expect *= dims[i];
  }
  return true;
}

memory::desc operand_desc(const Tensor& t) {
  return broadcast_desc(Dims(t.shape().begin(), t.shape().end()),
                        Dims(t.strides().begin(), t.strides().end()));
}

bool eltwise_of(const ir::FusedGraph::Node& n, algorithm& alg, float& alpha, float& beta) {
  alpha = 0;
  beta = 0;
  switch (n.unary) {
    case ir::UnaryOp::relu:
      alg = algorithm::eltwise_relu;
      return true;
    case ir::UnaryOp::leaky_relu:
      alg = algorithm::eltwise_relu;
      alpha = float(n.p0);
      return true;
    case ir::UnaryOp::gelu:
      alg = algorithm::eltwise_gelu_erf;
      return true;
    case ir::UnaryOp::gelu_tanh:
      alg = algorithm::eltwise_gelu_tanh;
      return true;
    case ir::UnaryOp::silu:
      alg = algorithm::eltwise_swish;
      alpha = 1;
      return true;
    case ir::UnaryOp::sigmoid:
      alg = algorithm::eltwise_logistic;
      return true;
    case ir::UnaryOp::tanh:
      alg = algorithm::eltwise_tanh;
      return true;
    case ir::UnaryOp::square:
      alg = algorithm::eltwise_square;
      return true;
    case ir::UnaryOp::exp:
      alg = algorithm::eltwise_exp;
      return true;
    case ir::UnaryOp::neg:
      alg = algorithm::eltwise_linear;
      alpha = -1;
      return true;
    default:
      return false;
  }
}

struct Plan {
  dnnl::post_ops po;
  struct Binary {
    int index;  // in po
    Tensor src;
    memory::desc md;
  };
  std::vector<Binary> binary;
};

// The epilogue as post-ops on the [B, M, N] product, or false.
bool plan_epilogue(const ir::FusedGraph& g, int32_t anchor_input, const Dims& dims, Plan& p) {
  if (g.outputs.size() != 1) return false;
  int32_t chain = -1;
  int steps = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::FusedGraph::Node& n = g.nodes[i];
    if (n.dtype != DType::f32) return false;
    if (n.kind == Kind::load) {
      if (n.input == anchor_input) {
        if (chain >= 0) return false;
        chain = int32_t(i);
      }
      continue;
    }
    if (n.kind == Kind::constant) continue;
    if (chain < 0) return false;
    if (n.kind == Kind::unary) {
      algorithm alg;
      float alpha, beta;
      if (n.a != chain || !eltwise_of(n, alg, alpha, beta)) return false;
      p.po.append_eltwise(1.f, alg, alpha, beta);
    } else if (n.kind == Kind::binary) {
      const bool left = n.a == chain;
      if (left == (n.b == chain)) return false;  // the chain on exactly one side
      const ir::FusedGraph::Node& o = g.nodes[size_t(left ? n.b : n.a)];
      if (o.kind == Kind::constant) {
        const float c = float(o.value.to_double());
        float alpha = 1, beta = 0;
        switch (n.binary) {
          case ir::BinaryOp::add:
            beta = c;
            break;
          case ir::BinaryOp::mul:
            alpha = c;
            break;
          case ir::BinaryOp::sub:
            alpha = left ? 1.f : -1.f;
            beta = left ? -c : c;
            break;
          case ir::BinaryOp::div:
            if (!left || c == 0) return false;
            alpha = 1.f / c;
            break;
          default:
            return false;
        }
        p.po.append_eltwise(1.f, algorithm::eltwise_linear, alpha, beta);
      } else if (o.kind == Kind::load && o.input != anchor_input) {
        algorithm alg;
        switch (n.binary) {
          case ir::BinaryOp::add:
            alg = algorithm::binary_add;
            break;
          case ir::BinaryOp::mul:
            alg = algorithm::binary_mul;
            break;
          case ir::BinaryOp::maximum:
            alg = algorithm::binary_max;
            break;
          case ir::BinaryOp::minimum:
            alg = algorithm::binary_min;
            break;
          case ir::BinaryOp::sub:
            if (!left) return false;
            alg = algorithm::binary_sub;
            break;
          default:
            return false;
        }
        const Tensor& t = g.inputs[size_t(o.input)];
        Dims strides;
        if (t.dtype() != DType::f32 || !view_strides(t, dims, strides)) return false;
        const memory::desc md = broadcast_desc(dims, strides);
        if (!dense(md)) return false;
        p.binary.push_back({p.po.len(), t, md});
        p.po.append_binary(alg, md);
      } else {
        return false;
      }
    } else {
      return false;  // where, cast
    }
    chain = int32_t(i);
    ++steps;
  }
  return steps > 0 && g.outputs[0].node == chain;
}

}  // namespace

bool matmul_epilogue(const ir::Matmul& mm, const ir::FusedGraph& g, int32_t anchor_input) {
  const Tensor& a = mm.a;
  const Tensor& b = mm.b;
  const Tensor& d = mm.dst;
  if (a.dtype() != DType::f32 || b.dtype() != DType::f32 || d.dtype() != DType::f32 ||
      d.numel() == 0 || a.size(2) == 0)
    return false;
  const Dims dims{d.size(0), d.size(1), d.size(2)};
  const Tensor& out = g.outputs.empty() ? d : g.outputs[0].dst;
  Dims out_strides;
  if (g.outputs.size() != 1 || out.dtype() != DType::f32 || !view_strides(out, dims, out_strides))
    return false;
  Plan p;
  if (!plan_epilogue(g, anchor_input, dims, p)) return false;
  for (const Plan::Binary& x : p.binary)  // written while read: left to the graph
    if (x.src.impl()->storage == out.impl()->storage) return false;
  try {
    auto& eng = dnnl_util::engine();
    dnnl::primitive_attr attr;
    attr.set_post_ops(p.po);
    const memory::desc src_md = operand_desc(a), wei_md = operand_desc(b);
    const memory::desc dst_md(dims, memory::data_type::f32, out_strides);
    if (!dense(dst_md)) return false;
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, wei_md, dst_md), attr, eng);
    const dnnl::matmul prim(pd);
    std::unordered_map<int, memory> args;
    args.emplace(DNNL_ARG_SRC, memory(src_md, eng, const_cast<float*>(ref::ptr<float>(a))));
    args.emplace(DNNL_ARG_WEIGHTS, memory(wei_md, eng, const_cast<float*>(ref::ptr<float>(b))));
    args.emplace(DNNL_ARG_DST, memory(dst_md, eng, ref::ptr<float>(out)));
    for (const Plan::Binary& x : p.binary)
      args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(x.index) | DNNL_ARG_SRC_1,
                   memory(x.md, eng, const_cast<float*>(ref::ptr<float>(x.src))));
    dnnl::stream s(eng);
    prim.execute(s, args);
    s.wait();
  } catch (const dnnl::error&) {
    return false;  // a layout or post-op this oneDNN does not take: nothing was written
  }
  return true;
}

}  // namespace ember::cpu
