// Frontends of the spatial primitives (ir::Im2col, ir::Col2im, ir::AdaptivePool,
// ir::Interpolate): each allocates its result, issues the primitive and records its backward
// rule (src/autodiff/rules/spatial.cpp). They are the building blocks of nn's convolutions,
// pooling, unfold/fold and interpolate, and of those rules' own adjoints, so that nn and autodiff
// never issue IR. Internal: the caller has validated the arguments (shapes, dtypes, geometry);
// these functions check nothing and throw only what the backend throws (an unsupported dtype on
// a GPU device, out of memory). Implementation: src/ops/spatial.cpp.
#pragma once
#include <cstdint>
#include <tuple>
#include <vector>

#include "ember/tensor.h"
#include "ir/ops.h"

namespace ember::ops {

/// Interpolation modes of interpolate(): nearest (torch's legacy 'nearest'), nearest_exact
/// ('nearest-exact'), linear (linear / bilinear / trilinear by rank), cubic ('bicubic').
using InterpMode = ir::InterpMode;

/// The columns of x [N, C, *S] (1 to 3 spatial dims): [N, C * prod(kernel), prod(out)], where
/// column l of row (c, k) is the tap k of window l, x[n, c, o * stride - pad_begin + k *
/// dilation] (`pad_value` where that lies outside S; for integer dtypes it is cast, -inf giving
/// the lowest value). `out` is the number of windows per spatial dim; kernel, stride, pad_begin,
/// dilation and out have one value per spatial dim. Any dtype; the result has x's dtype and
/// device and is contiguous. Records Im2colBackward (a col2im) when x needs grad.
Tensor im2col(const Tensor& x, const std::vector<int64_t>& kernel,
              const std::vector<int64_t>& stride, const std::vector<int64_t>& pad_begin,
              const std::vector<int64_t>& dilation, const std::vector<int64_t>& out,
              const Scalar& pad_value);

/// The adjoint of im2col: cols [N, channels * prod(kernel), prod(out)] summed into a zeroed
/// [N, channels, *size] (every tap adds its value to the pixel it reads; padding taps are
/// dropped). Any non-bool dtype; the result has cols' dtype and device and is contiguous.
/// Records Col2imBackward (an im2col) when cols needs grad.
Tensor col2im(const Tensor& cols, int64_t channels, const std::vector<int64_t>& size,
              const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
              const std::vector<int64_t>& pad_begin, const std::vector<int64_t>& dilation,
              const std::vector<int64_t>& out);

/// Adaptive max or average pooling of x [N, C, *S] (1 to 3 spatial dims, non-empty) into
/// [N, C, *out] as torch.nn.functional.adaptive_{max,avg}_pool{1,2,3}d: output i of dim d pools
/// the window [floor(i S_d / out_d), ceil((i + 1) S_d / out_d)). Returns (values, indices):
/// values contiguous with x's dtype (avg: floating; max: any non-bool dtype); indices (i64, the
/// flat index into S of each maximum) when is_max and with_indices, else undefined. Records
/// AdaptiveMaxPoolBackward / AdaptiveAvgPoolBackward when x needs grad.
std::tuple<Tensor, Tensor> adaptive_pool(const Tensor& x, const std::vector<int64_t>& out,
                                         bool is_max, bool with_indices);

/// Resamples the spatial dims of x [N, C, *S] (1 to 3, non-empty) to [N, C, *out] (out > 0) as
/// torch.nn.functional.interpolate in `mode`; `scales` (one per spatial dim, 0 = from the
/// sizes) as torch's scale_factor without recompute_scale_factor; align_corners for linear and
/// cubic. nearest modes take any non-bool dtype, the others floating dtypes. The result has x's
/// dtype and, as torch's upsample kernels, x's suggested memory format (contiguous for cubic).
/// Records InterpolateBackward when x needs grad.
Tensor interpolate(const Tensor& x, const std::vector<int64_t>& out, InterpMode mode,
                   bool align_corners, const std::vector<double>& scales);

}  // namespace ember::ops
