// oneDNN post-ops for an anchored group's epilogue (post_ops.cpp): shared by the cpu's matmul
// and convolution anchors. Internal to the cpu backend.
#pragma once
#include <dnnl.hpp>

#include <vector>

#include "ir/graph.h"

namespace ember::cpu::post_ops {

using Dims = dnnl::memory::dims;

/// The strides of `t`'s elements seen as `shape` (the same elements in row-major order, as
/// torch's view), or false when no strides do it (torch's computeStride).
bool view_strides(const Tensor& t, const Dims& shape, Dims& out);
/// A strided f32 descriptor where a stride of 0 becomes a broadcast dim of 1.
dnnl::memory::desc broadcast_desc(Dims dims, Dims strides);
/// Whether the dims that are not 1 are dense and row-major (oneDNN 2.6 gave wrong values for
/// a strided binary operand).
bool dense(const dnnl::memory::desc& md);
/// Whether the dims that are not 1 are dense in some order (NHWC as well as NCHW).
bool dense_any_order(const dnnl::memory::desc& md);
/// `t`'s own layout, broadcast dims (stride 0) as 1.
dnnl::memory::desc operand_desc(const Tensor& t);

struct Plan {
  dnnl::post_ops po;
  struct Binary {
    int index;  // in po
    Tensor src;
    dnnl::memory::desc md;
  };
  std::vector<Binary> binary;
};

/// The epilogue `g` (reading the anchor's result as inputs[anchor_input]) as post-ops on a
/// result of `dims`, or false when it is not a chain of steps post-ops express. Binary
/// operands must be f32, viewable as `dims` and dense (any_order: in any dim order).
bool plan_epilogue(const ir::FusedGraph& g, int32_t anchor_input, const Dims& dims, bool any_order,
                   Plan& p);

/// Whether the primitive implementation `impl` (impl_info_str) computes these post-ops right:
/// false when one eltwise algorithm comes with two parameter sets (oneDNN 2.6's brgemm kernels
/// used the first set for both), or for logistic on its gemm / reference post-ops (NaN -> 0).
bool exact_post_ops(const char* impl, const dnnl::post_ops& po);

/// Folds the plan's leading per-channel affine steps (binary mul / add / sub with an operand
/// whose dims are 1 except dim 1 == channels, and scalar eltwise_linear) into one y * scale[c] +
/// shift[c]: returns how many post-ops it folded (0: none) and fills scale / shift (channels
/// values each). Reads the operands' values: they must be computed.
int fold_per_channel(const Plan& p, int64_t channels, std::vector<float>& scale,
                     std::vector<float>& shift);
/// The plan without its first k post-ops (the binary operands renumbered).
Plan drop_leading(const Plan& p, int k);

}  // namespace ember::cpu::post_ops
