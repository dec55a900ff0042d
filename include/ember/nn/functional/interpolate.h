// Resampling (as torch.nn.functional.interpolate, torch 1.13, antialias=False).
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ember/tensor.h"

namespace ember::nn::functional {

/// Resizes the spatial dims of input [N, C, *S] (S = 1, 2 or 3 dims; batched only, as torch)
/// to [N, C, *O], as torch.nn.functional.interpolate.
/// Exactly one of `size` (O; one value or one per spatial dim) and `scale_factor` (one value or
/// one per spatial dim, > 0; O = floor(S * scale_factor)) must be given. With scale_factor and
/// recompute_scale_factor not true, the index mapping uses 1 / scale_factor (torch's default);
/// with recompute_scale_factor = true it uses S / O.
/// mode:
///   "nearest"        torch's legacy nearest: src = min(floor(dst * scale), S - 1) (float math)
///   "nearest-exact"  src = min(floor((dst + 0.5) * scale), S - 1)
///   "linear" (3-d input), "bilinear" (4-d), "trilinear" (5-d): align_corners true maps
///     src = dst * (S - 1) / (O - 1); false maps src = max(0, (dst + 0.5) * scale - 0.5)
///   "bicubic" (4-d): cubic convolution with A = -0.75 (Keys), taps clamped at the border,
///     no clamping of src (may be negative)
///   "area" = adaptive_avg_pool{1,2,3}d to O.
/// align_corners (default false) may only be given for linear/bilinear/trilinear/bicubic.
/// Dtypes: nearest modes accept every dtype but bool; the other modes floating dtypes only
/// (f32 f64 f16 bf16; weights computed in f32, f64 for f64 input). Result: the input's dtype.
/// Throws ember::Error tagged [interpolate] for: undefined input, rank not 3..5, an unknown mode,
/// a mode/rank mismatch ("Got 4D input, but linear mode needs 3D input"), both or neither of
/// size/scale_factor, a list of the wrong length, size < 1 or a computed size < 1, scale <= 0,
/// align_corners with a nearest/area mode, an unsupported dtype, an empty non-batch input dim.
Tensor interpolate(const Tensor& input, std::vector<int64_t> size = {},
                   std::vector<double> scale_factor = {}, std::string_view mode = "nearest",
                   std::optional<bool> align_corners = std::nullopt,
                   std::optional<bool> recompute_scale_factor = std::nullopt);

}  // namespace ember::nn::functional
