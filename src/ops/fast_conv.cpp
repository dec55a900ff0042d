// Fused convolutions (fast.h): offered to the backend as ir::Conv / ir::ConvBackwardData
// (oneDNN on cpu). The forward's backward rule uses ir::ConvBackwardData /
// ir::ConvBackwardWeights where the backend takes them, else the adjoints of the composite
// convolution (im2col + matmul per group) written with tensor ops.
#include "autodiff/graph.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/linalg.h"
#include "ember/ops/reduce.h"
#include "ops/fast.h"
#include "ops/spatial.h"
#include "runtime/backend.h"
#include "tensor/internal.h"

namespace ember::ops::fast {

namespace {

Tensor add_bias(Tensor out, const Tensor& bias, int64_t nd) {
  if (!bias.defined()) return out;
  Shape s(size_t(nd + 2), 1);
  s[1] = bias.size(0);
  return out + bias.reshape(s);
}

// Composite gradients of a convolution (geometry `op`, kernel and output sizes) written with
// tensor ops: the adjoints of nn's im2col + matmul forward. g: [N, C_out, *O].
Tensor conv_grad_input(const Tensor& g, const Tensor& w, const Shape& xs, const ir::Conv& op,
                       const std::vector<int64_t>& kernel, const std::vector<int64_t>& out) {
  const int64_t n = xs[0], c_in = xs[1], grp = op.groups, cog = w.size(0) / grp;
  int64_t k = 1, l = 1;
  for (size_t d = 0; d < kernel.size(); ++d) {
    k *= kernel[d];
    l *= out[d];
  }
  Tensor wt = w.reshape({1, grp, cog, (c_in / grp) * k}).transpose(-1, -2);
  Tensor cols = matmul(wt, g.reshape({n, grp, cog, l}));  // [N, g, Ci/g*K, L]
  return ops::col2im(cols.reshape({n, c_in * k, l}), c_in,
                     std::vector<int64_t>(xs.begin() + 2, xs.end()), kernel, op.stride,
                     op.pad_begin, op.dilation, out);
}

Tensor conv_grad_weight(const Tensor& g, const Tensor& x, const Shape& ws, const ir::Conv& op,
                        const std::vector<int64_t>& kernel, const std::vector<int64_t>& out) {
  const int64_t n = x.size(0), grp = op.groups, cog = ws[0] / grp;
  Tensor cols = ops::im2col(x, kernel, op.stride, op.pad_begin, op.dilation, out, 0);
  const int64_t l = cols.size(2);
  Tensor gw = matmul(g.reshape({n, grp, cog, l}),
                     cols.view({n, grp, cols.size(1) / grp, l}).transpose(-1, -2));
  return sum(gw, {0}).reshape(ws);
}

Tensor conv_grad_bias(const Tensor& g) {
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < g.dim(); ++d) dims.push_back(d);
  return sum(g, dims);
}

// The backward of a fused convolution: offered to the backend as ir::ConvBackwardData /
// ir::ConvBackwardWeights, else the composite gradients above. In a create_graph backward
// (grad mode on) a gradient whose operands carry history is computed with the composite, whose
// ops record, so it can be differentiated again.
void record_conv_backward(const ir::Conv& fop, const std::vector<int64_t>& kernel,
                          const std::vector<int64_t>& out) {
  const bool need_x = autograd::needs_grad({&fop.src});
  const bool need_w = autograd::needs_grad({&fop.weight});
  const bool need_b = autograd::needs_grad({&fop.bias});
  const autograd::SavedTensor sx =
      need_w ? autograd::SavedTensor(fop.src) : autograd::SavedTensor();
  const autograd::SavedTensor sw =
      need_x ? autograd::SavedTensor(fop.weight) : autograd::SavedTensor();
  const Shape xs = fop.src.shape(), ws = fop.weight.shape();
  const MemoryFormat xf = fop.src.memory_format(), wf = fop.weight.memory_format();
  ir::Conv geo = fop;
  geo.src = geo.weight = geo.bias = geo.dst = Tensor();
  autograd::record1(
      "ConvolutionBackward", {fop.src, fop.weight, fop.bias}, fop.dst, [=](const Tensor& g) {
        Backend& be = backend_for(g.device());
        std::vector<Tensor> r(3);
        if (need_x) {
          const Tensor w = sw.get("conv");
          Tensor dx;
          if (!autograd::needs_grad({&g, &w})) {
            dx = detail::make_tensor(xs, g.dtype(), g.device(), xf);
            if (!be.execute_fused(ir::ConvBackwardData{g, w, dx, geo.stride, geo.pad_begin,
                                                       geo.pad_end, geo.dilation, geo.groups}))
              dx = Tensor();
          }
          r[0] = dx.defined() ? dx : conv_grad_input(g, w, xs, geo, kernel, out);
        }
        if (need_w) {
          const Tensor x = sx.get("conv");
          Tensor dw = detail::make_tensor(ws, g.dtype(), g.device(), wf);
          Tensor db = need_b ? detail::make_tensor({ws[0]}, g.dtype(), g.device()) : Tensor();
          if (!autograd::needs_grad({&g, &x}) &&
              be.execute_fused(ir::ConvBackwardWeights{x, g, dw, db, geo.stride, geo.pad_begin,
                                                       geo.pad_end, geo.dilation, geo.groups})) {
            r[1] = dw;
            r[2] = db;
          } else {
            r[1] = conv_grad_weight(g, x, ws, geo, kernel, out);
          }
        }
        if (need_b && !r[2].defined()) r[2] = conv_grad_bias(g);
        return r;
      });
}

}  // namespace

Tensor conv(const Tensor& x, const Tensor& weight, const Tensor& bias,
            const std::vector<int64_t>& stride, const std::vector<int64_t>& pad_begin,
            const std::vector<int64_t>& pad_end, const std::vector<int64_t>& dilation,
            int64_t groups, MemoryFormat format) {
  const std::vector<int64_t> kernel(weight.shape().begin() + 2, weight.shape().end());
  std::vector<int64_t> out(kernel.size());
  Shape ds{x.size(0), weight.size(0)};
  for (size_t d = 0; d < kernel.size(); ++d) {
    const int64_t padded = x.size(int64_t(2 + d)) + pad_begin[d] + pad_end[d];
    out[d] = (padded - dilation[d] * (kernel[d] - 1) - 1) / stride[d] + 1;
    ds.push_back(out[d]);
  }
  Tensor y = detail::make_tensor(ds, x.dtype(), x.device(), format, /*lazy=*/true);
  const ir::Conv fop{x,       weight,
                     bias,    y,
                     stride,  pad_begin,
                     pad_end, dilation,
                     groups,  weight.impl()->storage->writes.load(std::memory_order_relaxed)};
  if (!backend_for(x.device()).execute_fused(fop)) return Tensor();
  if (autograd::needs_grad({&x, &weight, &bias})) record_conv_backward(fop, kernel, out);
  return y;
}

Tensor conv_transpose(const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                      const std::vector<int64_t>& output_padding,
                      const std::vector<int64_t>& dilation, int64_t groups) {
  if (autograd::needs_grad({&x, &weight, &bias})) return Tensor();
  const int64_t nd = weight.dim() - 2;
  // weight [C_in, C_out / g, *K] is the transposed convolution's [C_out', C_in' / g, *K].
  std::vector<int64_t> pad_end(static_cast<size_t>(nd));
  Shape ys{x.size(0), weight.size(1) * groups};
  for (size_t i = 0; i < size_t(nd); ++i) {
    pad_end[i] = padding[i] - output_padding[i];
    if (pad_end[i] < 0) return Tensor();
    ys.push_back((x.size(int64_t(2 + i)) - 1) * stride[i] - 2 * padding[i] +
                 dilation[i] * (weight.size(int64_t(2 + i)) - 1) + output_padding[i] + 1);
  }
  Tensor y = detail::make_tensor(ys, x.dtype(), x.device());
  if (!backend_for(x.device())
           .execute_fused(
               ir::ConvBackwardData{x, weight, y, stride, padding, pad_end, dilation, groups}))
    return Tensor();
  return add_bias(y, bias, nd);
}

}  // namespace ember::ops::fast
