// Backward rules of the spatial primitives: im2col and col2im (each the other's adjoint),
// adaptive pooling and interpolation. Every rule is differentiable again (a create_graph
// backward records it): the im2col and col2im adjoints record each other's rule, and pooling and
// interpolation gradients are matmuls of the gradient with constant matrices.
//
// Adaptive avg pooling and interpolation are separable: out = W_1 x_1 W_2 x_2 ... x applied
// along each spatial dim k with a [O_k, I_k] matrix W_k. Their adjoint applies W_k^T along each
// dim, which is one matmul per dim. The avg windows' W_k is built on the host from the window
// bounds; interpolation's W_k is read from the backend's own kernel by resampling the rows of
// an identity matrix (1 spatial dim, same mode/scale/align_corners), so the backward is the exact
// transpose of whatever index and weight arithmetic the forward used, on every backend. Cost:
// O(numel(grad) * I_k) per dim, dense; fine at the sizes these ops see.
#include <algorithm>

#include "autodiff/rules.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/indexing.h"
#include "ember/ops/linalg.h"
#include "ops/spatial.h"
#include "tensor/internal.h"

namespace ember::autograd::rules {

namespace {

// Half types accumulate in f32 (their kernels do too).
DType compute_dtype(DType dt) { return dt == DType::f64 ? DType::f64 : DType::f32; }

// g [N, C, *O] -> [N, C, *I]: applies mats[k]^T ([O_k, I_k]) along spatial dim k.
Tensor apply_transposed(Tensor g, const std::vector<Tensor>& mats) {
  for (size_t k = 0; k < mats.size(); ++k) {
    const int64_t d = int64_t(2 + k);
    g = ember::matmul(g.transpose(d, -1), mats[k]).transpose(d, -1);
  }
  return g;
}

}  // namespace

void im2col(const ir::Im2col& op) {
  if (!needs_grad({&op.src}) || !is_floating(op.dst.dtype())) return;
  const ir::Col2im adj{Tensor(),     Tensor(),    op.kernel,  op.stride,
                       op.pad_begin, op.dilation, op.out_size};
  const Shape xs = op.src.shape();
  record1("Im2colBackward", {op.src}, op.dst, [adj, xs](const Tensor& g) {
    // Each tap's gradient goes back to the pixel it read; padding taps read no pixel. The
    // col2im records its own rule (an im2col), so this gradient is differentiable again.
    const std::vector<int64_t> size(xs.begin() + 2, xs.end());
    return std::vector<Tensor>{ops::col2im(g.contiguous(), xs[1], size, adj.kernel, adj.stride,
                                           adj.pad_begin, adj.dilation, adj.out_size)};
  });
}

void col2im(const ir::Col2im& op) {
  if (!needs_grad({&op.src}) || !is_floating(op.dst.dtype())) return;
  // Padding taps are constants (their gradient is dropped), so the adjoint pads with 0.
  const ir::Im2col adj{Tensor(),     Tensor(),    op.kernel, op.stride,
                       op.pad_begin, op.dilation, Scalar(0), op.out_size};
  record1("Col2imBackward", {op.src}, op.dst, [adj](const Tensor& g) {
    return std::vector<Tensor>{ops::im2col(g.contiguous(), adj.kernel, adj.stride, adj.pad_begin,
                                           adj.dilation, adj.out_size, adj.pad_value)};
  });
}

void adaptive_pool(const ir::AdaptivePool& op) {
  const Tensor& x = op.src;
  if (!needs_grad({&x}) || !is_floating(op.dst.dtype())) return;
  const Shape xs = x.shape(), ys = op.dst.shape();
  const int64_t n = xs[0], c = xs[1];
  if (op.max) {
    EMBER_CHECK(op.indices.defined(), "adaptive_max_pool", "internal: indices needed for backward");
    SavedTensor si(op.indices);
    record1("AdaptiveMaxPoolBackward", {x}, op.dst, [si, xs, n, c](const Tensor& g) {
      const Tensor idx = si.get("adaptive_max_pool").reshape({n, c, -1});
      Tensor gx =
          zeros({n, c, numel_of(xs) / std::max<int64_t>(n * c, 1)}, {g.dtype(), g.device()});
      if (gx.numel() > 0 && g.numel() > 0) gx = scatter_add(gx, 2, idx, g.reshape({n, c, -1}));
      return std::vector<Tensor>{gx.reshape(xs)};
    });
    return;
  }
  record1("AdaptiveAvgPoolBackward", {x}, op.dst, [xs, ys](const Tensor& g) {
    // W_k[i, j] = 1 / |window i| for j in window i = [floor(i S / O), ceil((i + 1) S / O)).
    const DType ct = compute_dtype(g.dtype());
    std::vector<Tensor> mats;
    for (size_t k = 2; k < xs.size(); ++k) {
      const int64_t S = xs[k], O = ys[k];
      std::vector<double> w(size_t(O * S), 0.0);
      for (int64_t i = 0; i < O; ++i) {
        const int64_t lo = i * S / O, hi = ((i + 1) * S + O - 1) / O;
        for (int64_t j = lo; j < hi; ++j) w[size_t(i * S + j)] = 1.0 / double(hi - lo);
      }
      mats.push_back(from_vector<double>(w, {O, S}, g.device()).to(ct));
    }
    return std::vector<Tensor>{apply_transposed(g.to(ct), mats).to(g.dtype())};
  });
}

void interpolate(const ir::Interpolate& op) {
  if (!needs_grad({&op.src}) || !is_floating(op.dst.dtype())) return;
  const Shape xs = op.src.shape(), ys = op.dst.shape();
  const ir::InterpMode mode = op.mode;
  const bool align = op.align_corners;
  const std::vector<double> scales = op.scales;
  record1("InterpolateBackward", {op.src}, op.dst, [=](const Tensor& g) {
    const DType ct = compute_dtype(g.dtype());
    std::vector<Tensor> mats;
    for (size_t k = 2; k < xs.size(); ++k) {
      // Resample each row of eye(I) to O samples: row j holds input j's weight in every output,
      // i.e. W_k^T.
      const int64_t I = xs[k], O = ys[k];
      const double sc = k - 2 < scales.size() ? scales[k - 2] : 0.0;
      Tensor probe = eye(I, -1, {ct, g.device()}).reshape({I, 1, I});
      Tensor wt = ops::interpolate(probe, {O}, mode, align, {sc});  // constant: records nothing
      mats.push_back(wt.reshape({I, O}).t());
    }
    return std::vector<Tensor>{apply_transposed(g.to(ct), mats).to(g.dtype())};
  });
}

}  // namespace ember::autograd::rules
