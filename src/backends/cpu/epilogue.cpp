// The cpu backend's anchored groups (Backend::execute_anchored): an f32 ir::Matmul and the
// element-wise epilogue the stream's planner joined to it, run as one oneDNN matmul primitive
// with post-ops, so the product never makes a pass through memory of its own.
//
// The epilogue maps when it is a chain from the product to the one output: each node applies one
// step to the value before it - an activation (relu, leaky_relu, gelu, gelu_tanh, silu, sigmoid,
// tanh, neg, square, exp: eltwise post-ops), a scalar add/sub/mul/div (eltwise_linear), or a
// tensor add/sub/mul/max/min with a load (a binary post-op; the load viewed as [B, M, N] with
// broadcast dims of size 1: a bias, a residual). Anything else (casts, branches, f16/bf16, a
// layout oneDNN rejects) returns false and the stream runs the matmul, then the graph; so does a
// shape class whose eager matmul the autotuner put on OpenBLAS (another summation order).
// The result can differ from the eager ops by oneDNN's eltwise approximations and where the
// matmul primitive sums in another order than dnnl_sgemm (within 1e-4 relative for f32:
// EMBER_CHECK's tolerance).
#include <dnnl.hpp>

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/post_ops.h"
#include "backends/ref/dispatch.h"

namespace ember::cpu {

using dnnl::memory;
using post_ops::Dims;
using post_ops::Plan;

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
  if (g.outputs.size() != 1 || out.dtype() != DType::f32 ||
      !post_ops::view_strides(out, dims, out_strides))
    return false;
  Plan p;
  if (!post_ops::plan_epilogue(g, anchor_input, dims, false, p)) return false;
  for (const Plan::Binary& x : p.binary)  // written while read: left to the graph
    if (x.src.impl()->storage == out.impl()->storage) return false;
  // The eager matmul's library for this shape class (autotuned): on OpenBLAS its sums run in
  // another order than oneDNN's, so fusing would change the result with EMBER_FUSION.
  if (!sgemm_runs_onednn(mm)) return false;
  try {
    auto& eng = dnnl_util::engine();
    dnnl::primitive_attr attr;
    attr.set_post_ops(p.po);
    const memory::desc src_md = post_ops::operand_desc(a), wei_md = post_ops::operand_desc(b);
    const memory::desc dst_md(dims, memory::data_type::f32, out_strides);
    if (!post_ops::dense(dst_md)) return false;
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, wei_md, dst_md), attr, eng);
    if (!post_ops::exact_post_ops(pd.impl_info_str(), p.po)) return false;
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
