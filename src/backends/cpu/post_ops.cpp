// The translation of an anchored group's epilogue (ir::FusedGraph) into oneDNN post-ops, shared
// by the cpu's matmul (epilogue.cpp) and convolution (conv.cpp) anchors: a chain from the
// anchor's result to the one output where each node is an eltwise step (relu, leaky_relu, gelu,
// gelu_tanh, silu, sigmoid, tanh, neg, square; a scalar add/sub/mul/div as eltwise_linear)
// or a tensor add/sub/mul with a load (a binary post-op with broadcast dims of 1).
//
// Every step keeps torch's NaN and infinity results (probed on oneDNN 2.6's jit and gemm/ref
// post-ops): its jit relu (a max with 0) turned NaN into 0 and its reference relu (x * alpha
// below 0) turned -inf into NaN, so relu runs as elu with alpha 0 then abs (x > 0 ? x : 0 *
// expm1(x), then |-0| = +0); its jit exp turned NaN into inf and its binary max/min returned
// the operand for a NaN result, so neither is a post-op; its reference logistic turned NaN into
// 0 (exact_post_ops keeps it off those implementations). And its brgemm kernels gave every
// eltwise post-op of one algorithm the first one's parameters ((y + 1) * 2 came out y + 2):
// exact_post_ops refuses a chain with one algorithm at two parameter sets.
#include "backends/cpu/post_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "backends/ref/dispatch.h"

namespace ember::cpu::post_ops {

using dnnl::algorithm;
using dnnl::memory;
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

bool dense_any_order(const memory::desc& md) {
  const Dims dims = md.dims();
  const dnnl_memory_desc_t& c = md.data;
  std::vector<std::pair<int64_t, int64_t>> by_stride;  // (stride, size) of the dims not 1
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != 1) by_stride.push_back({c.format_desc.blocking.strides[i], dims[i]});
  std::sort(by_stride.begin(), by_stride.end());
  int64_t expect = 1;
  for (const auto& [stride, size] : by_stride) {
    if (stride != expect) return false;
    expect *= size;
  }
  return true;
}

memory::desc operand_desc(const Tensor& t) {
  return broadcast_desc(Dims(t.shape().begin(), t.shape().end()),
                        Dims(t.strides().begin(), t.strides().end()));
}

namespace {

bool eltwise_of(const ir::FusedGraph::Node& n, algorithm& alg, float& alpha, float& beta) {
  alpha = 0;
  beta = 0;
  switch (n.unary) {
    case ir::UnaryOp::relu:
      alg = algorithm::eltwise_elu;  // then abs: plan_epilogue
      return true;
    case ir::UnaryOp::leaky_relu:  // x > 0 ? x : alpha * x (-inf * 0: NaN); alpha 0 takes a max
      alg = algorithm::eltwise_relu;
      alpha = float(n.p0);
      return alpha != 0;
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
    case ir::UnaryOp::neg:
      alg = algorithm::eltwise_linear;
      alpha = -1;
      return true;
    default:
      return false;
  }
}

}  // namespace

bool plan_epilogue(const ir::FusedGraph& g, int32_t anchor_input, const Dims& dims, bool any_order,
                   Plan& p) {
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
      if (alg == algorithm::eltwise_elu) p.po.append_eltwise(1.f, algorithm::eltwise_abs, 0, 0);
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
            if (!left || c == 0 || !std::isfinite(1.f / c)) return false;  // 1 / 1e-39: inf
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
        if (!(any_order ? dense_any_order(md) : dense(md))) return false;
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

bool exact_post_ops(const char* impl, const dnnl::post_ops& po) {
  const bool reference = std::strstr(impl, "gemm") || std::strstr(impl, "ref");
  struct Params {
    algorithm alg;
    float s, alpha, beta;
  };
  std::vector<Params> seen;
  for (int k = 0; k < po.len(); ++k) {
    if (po.kind(k) != dnnl::primitive::kind::eltwise) continue;
    Params e{};
    po.get_params_eltwise(k, e.s, e.alg, e.alpha, e.beta);
    if (reference && e.alg == algorithm::eltwise_logistic) return false;
    for (const Params& o : seen)  // bitwise: -0 and +0, NaN parameters differ too
      if (o.alg == e.alg && (std::memcmp(&o.s, &e.s, sizeof(float)) != 0 ||
                             std::memcmp(&o.alpha, &e.alpha, sizeof(float)) != 0 ||
                             std::memcmp(&o.beta, &e.beta, sizeof(float)) != 0))
        return false;
    seen.push_back(e);
  }
  return true;
}

}  // namespace ember::cpu::post_ops

namespace ember::cpu::post_ops {

int fold_per_channel(const Plan& p, int64_t channels, std::vector<float>& scale,
                     std::vector<float>& shift) {
  scale.assign(size_t(channels), 1.f);
  shift.assign(size_t(channels), 0.f);
  size_t next_binary = 0;
  int k = 0;
  for (; k < p.po.len(); ++k) {
    if (p.po.kind(k) == dnnl::primitive::kind::eltwise) {
      float s, alpha, beta;
      algorithm alg;
      p.po.get_params_eltwise(k, s, alg, alpha, beta);
      if (alg != algorithm::eltwise_linear || s != 1.f) break;
      for (int64_t c = 0; c < channels; ++c) {
        scale[size_t(c)] *= alpha;
        shift[size_t(c)] = shift[size_t(c)] * alpha + beta;
      }
      continue;
    }
    if (p.po.kind(k) != dnnl::primitive::kind::binary || next_binary >= p.binary.size() ||
        p.binary[next_binary].index != k)
      break;
    const Plan::Binary& b = p.binary[next_binary];
    algorithm alg;
    memory::desc md;
    p.po.get_params_binary(k, alg, md);
    const Dims d = b.md.dims();
    bool per_channel = d.size() >= 2 && d[1] == channels;
    for (size_t i = 0; i < d.size(); ++i) per_channel = per_channel && (i == 1 || d[i] == 1);
    if (!per_channel || (alg != algorithm::binary_mul && alg != algorithm::binary_add &&
                         alg != algorithm::binary_sub))
      break;
    const float* v = ref::ptr<float>(b.src);
    const int64_t stride = b.md.data.format_desc.blocking.strides[1];
    for (int64_t c = 0; c < channels; ++c) {
      const float x = v[c * stride];
      float& s = scale[size_t(c)];
      float& t = shift[size_t(c)];
      if (alg == algorithm::binary_mul) {
        s *= x;
        t *= x;
      } else {
        t += alg == algorithm::binary_add ? x : -x;
      }
    }
    ++next_binary;
  }
  return k;
}

Plan drop_leading(const Plan& p, int k) {
  Plan out;
  for (int i = k; i < p.po.len(); ++i) {
    if (p.po.kind(i) == dnnl::primitive::kind::eltwise) {
      float s, alpha, beta;
      algorithm alg;
      p.po.get_params_eltwise(i, s, alg, alpha, beta);
      out.po.append_eltwise(s, alg, alpha, beta);
    } else {  // binary: plan_epilogue makes no other kind
      algorithm alg;
      memory::desc md;
      p.po.get_params_binary(i, alg, md);
      out.po.append_binary(alg, md);
    }
  }
  for (const Plan::Binary& b : p.binary)
    if (b.index >= k) out.binary.push_back({b.index - k, b.src, b.md});
  return out;
}

}  // namespace ember::cpu::post_ops
