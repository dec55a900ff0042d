// Fused softmax, norms and pooling (fast.h): offered to the backend as ir::Softmax, ir::Norm,
// ir::Pool; with grad, each records its backward rule.
#include <algorithm>
#include <utility>

#include "autodiff/graph.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/reduce.h"
#include "ops/fast.h"
#include "runtime/backend.h"
#include "tensor/internal.h"

namespace ember::ops::fast {

Tensor softmax(const Tensor& x, int64_t dim, bool log) {
  Tensor y = detail::make_tensor(x.shape(), x.dtype(), x.device());
  if (!backend_for(x.device()).execute_fused(ir::Softmax{x, y, dim, log})) return Tensor();
  if (autograd::needs_grad({&x})) {
    autograd::SavedTensor sy(y);
    autograd::record1(
        log ? "LogSoftmaxBackward" : "SoftmaxBackward", {x}, y, [sy, dim, log](const Tensor& g) {
          const Tensor out = sy.get(log ? "log_softmax" : "softmax");
          Tensor dx =
              log ? g - exp(out) * sum(g, {dim}, true) : out * (g - sum(g * out, {dim}, true));
          return std::vector<Tensor>{dx};
        });
  }
  return y;
}

namespace {

// The backward of the fused norm (ir::Norm over the trailing k dims of x), with tensor ops from
// the saved inputs: xhat = (x - mean) * rstd (rms: x * rstd), gx = g * w;
// dx = rstd (gx - mean(gx) - xhat mean(gx xhat)) (rms: no mean(gx) term), dw = sum g xhat,
// db = sum g over the leading dims.
void record_norm_backward(ir::NormKind kind, const Tensor& x, const Tensor& w, const Tensor& b,
                          const Tensor& y, int64_t k, double eps) {
  const bool rms = kind == ir::NormKind::rms;
  const autograd::SavedTensor sx(x), sw(w);
  const Shape ws = w.defined() ? w.shape() : Shape{}, bs = b.defined() ? b.shape() : Shape{};
  const bool has_b = b.defined();
  autograd::record1(rms ? "RmsNormBackward" : "LayerNormBackward", {x, w, b}, y,
                    [=](const Tensor& g) {
                      const char* op = rms ? "rms_norm" : "layer_norm";
                      const Tensor xv = sx.get(op);
                      std::vector<int64_t> norm_dims, lead;
                      for (int64_t d = 0; d < xv.dim(); ++d)
                        (d >= xv.dim() - k ? norm_dims : lead).push_back(d);
                      const Tensor c = rms ? xv : xv - mean(xv, norm_dims, true);
                      const Tensor rstd = rsqrt(mean(c * c, norm_dims, true) + eps);
                      const Tensor xhat = c * rstd;
                      const Tensor gx = sw.defined() ? g * sw.get(op) : g;
                      Tensor inner = gx - xhat * mean(gx * xhat, norm_dims, true);
                      if (!rms) inner = inner - mean(gx, norm_dims, true);
                      const Tensor dx = rstd * inner;
                      auto lead_sum = [&](const Tensor& t, const Shape& to) {
                        return (lead.empty() ? t : sum(t, lead)).reshape(to);
                      };
                      const Tensor dw = sw.defined() ? lead_sum(g * xhat, ws) : Tensor();
                      const Tensor db = has_b ? lead_sum(g, bs) : Tensor();
                      return std::vector<Tensor>{dx, dw, db};
                    });
}

Tensor norm(ir::NormKind kind, const Tensor& x, const Tensor& w, const Tensor& b,
            const Shape& normalized_shape, double eps) {
  if ((w.defined() && w.dtype() != x.dtype()) || (b.defined() && b.dtype() != x.dtype()))
    return Tensor();
  int64_t inner = 1;
  for (int64_t s : normalized_shape) inner *= s;
  Tensor y = detail::make_tensor(x.shape(), x.dtype(), x.device());
  if (!backend_for(x.device()).execute_fused(ir::Norm{kind, x, w, b, y, inner, eps}))
    return Tensor();
  if (autograd::needs_grad({&x, &w, &b}))
    record_norm_backward(kind, x, w, b, y, int64_t(normalized_shape.size()), eps);
  return y;
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const Shape& normalized_shape, double eps) {
  return norm(ir::NormKind::layer, x, weight, bias, normalized_shape, eps);
}

Tensor rms_norm(const Tensor& x, const Tensor& weight, const Shape& normalized_shape, double eps) {
  return norm(ir::NormKind::rms, x, weight, Tensor(), normalized_shape, eps);
}

namespace {

// The backward of a fused pooling: offered to the backend as ir::PoolBackward, else the
// caller's composite gradient. In a create_graph backward a gradient with history goes through
// the composite, whose ops record (the gradient is linear in g; max's taps do not depend on x
// differentiably).
void record_pool_backward(const ir::Pool& fop, PoolGrad composite_grad) {
  const autograd::SavedTensor sx =
      fop.is_max ? autograd::SavedTensor(fop.src) : autograd::SavedTensor();
  const Shape xs = fop.src.shape();
  const MemoryFormat xf = fop.src.memory_format();
  ir::Pool geo = fop;
  geo.src = geo.dst = Tensor();
  autograd::record1(
      fop.is_max ? "MaxPoolBackward" : "AvgPoolBackward", {fop.src}, fop.dst, [=](const Tensor& g) {
        const Tensor x = geo.is_max ? sx.get("pool") : Tensor();
        Tensor dx = detail::make_tensor(xs, g.dtype(), g.device(), xf);
        if (autograd::needs_grad({&g}) ||
            !backend_for(g.device())
                 .execute_fused(ir::PoolBackward{geo.is_max, x, g, dx, geo.kernel, geo.stride,
                                                 geo.pad_begin, geo.pad_end, geo.dilation,
                                                 geo.count_include_pad}))
          dx = composite_grad(x, g);
        return std::vector<Tensor>{dx};
      });
}

}  // namespace

Tensor pool(const Tensor& x, bool is_max, const std::vector<int64_t>& kernel,
            const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
            const std::vector<int64_t>& dilation, const std::vector<int64_t>& out,
            bool count_include_pad, MemoryFormat format, PoolGrad composite_grad) {
  const size_t nd = kernel.size();
  std::vector<int64_t> pad_end(nd);
  for (size_t d = 0; d < nd; ++d) {
    const int64_t s = stride[d], p = padding[d], k = kernel[d], dil = dilation[d];
    const int64_t in = x.size(int64_t(2 + d));
    // The padding after the input that the last window reaches (ceil_mode may add one window).
    const int64_t reach = (out[d] - 1) * s + dil * (k - 1) + 1 - in - p;
    pad_end[d] = std::max<int64_t>(reach, 0);
    // torch clips an avg window's divisor to the padded input; ir::Pool counts the whole kernel.
    if (!is_max && count_include_pad && reach > p) return Tensor();
    // A max window of padding only gives -inf in torch; ir::Pool needs an in-bounds tap.
    if (is_max)
      for (int64_t o = 0; o < out[d]; ++o) {
        const int64_t start = o * s - p, k0 = start >= 0 ? 0 : (-start + dil - 1) / dil;
        if (k0 >= k || start + k0 * dil >= in) return Tensor();
      }
  }
  Shape ds{x.size(0), x.size(1)};
  ds.insert(ds.end(), out.begin(), out.end());
  Tensor y = detail::make_tensor(ds, x.dtype(), x.device(), format);
  const ir::Pool fop{is_max, x, y, kernel, stride, padding, pad_end, dilation, count_include_pad};
  if (!backend_for(x.device()).execute_fused(fop)) return Tensor();
  if (autograd::needs_grad({&x})) record_pool_backward(fop, std::move(composite_grad));
  return y;
}

}  // namespace ember::ops::fast
