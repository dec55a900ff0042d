// Pooling (as torch.nn.functional.{max,avg,adaptive_avg,adaptive_max}_pool{1,2,3}d, torch 1.13).
//
// Shapes (d = 1, 2 or 3 spatial dims): input [N, C, *S] or unbatched [C, *S] (the result is then
// unbatched too). Spatial options (kernel_size, stride, padding, dilation, output_size) take one
// value, used for every spatial dim, or one value per spatial dim. `stride` empty (the default)
// means stride = kernel_size, as torch's stride=None.
// Output size per dim (torch's pooling_output_shape):
//   out = floor_or_ceil((S + 2 * padding - dilation * (K - 1) - 1) / stride) + 1, and with
//   ceil_mode a last window that would start in the right padding is dropped
//   ((out - 1) * stride >= S + padding  ->  out - 1).
// Padding is implicit: -inf for max (never selected), excluded or counted as 0 for avg.
//
// Dtypes: max pools accept floating and integer dtypes (torch 1.13 CPU accepts floating only;
// integers are an extension, see docs/ops.md); avg pools accept floating dtypes only. The result
// has the input's dtype; indices are i64.
// Indices (the *_with_indices forms) are as torch: the flat index of the selected element in
// the input's spatial plane (h * W + w for 2-d), ignoring padding; the first maximum on ties; a
// NaN is selected (NaN propagates).
// Throws ember::Error (tag = the op name, message naming the shapes) for: undefined input, a
// wrong rank ("[max_pool2d] expected a 3-d (unbatched) or 4-d (batched) input, got [2, 3]"), an
// unsupported dtype, an option list of the wrong length, kernel_size/stride/dilation < 1,
// padding < 0 or > kernel_size / 2 ("pad should be at most half of kernel size"), an empty
// non-batch dim, an output size < 1 ("... output size is too small"), divisor_override == 0.
#pragma once
#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include "ember/tensor.h"

namespace ember::nn::functional {

// ---- max pooling: input [N, C, *S] -> [N, C, *O] ----
/// As torch.nn.functional.max_pool1d: input [N, C, L].
Tensor max_pool1d(const Tensor& input, std::vector<int64_t> kernel_size,
                  std::vector<int64_t> stride = {}, std::vector<int64_t> padding = {0},
                  std::vector<int64_t> dilation = {1}, bool ceil_mode = false);
/// As max_pool1d(..., return_indices=True): (values, indices i64 into L).
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input,
                                                   std::vector<int64_t> kernel_size,
                                                   std::vector<int64_t> stride = {},
                                                   std::vector<int64_t> padding = {0},
                                                   std::vector<int64_t> dilation = {1},
                                                   bool ceil_mode = false);
/// As torch.nn.functional.max_pool2d: input [N, C, H, W].
Tensor max_pool2d(const Tensor& input, std::vector<int64_t> kernel_size,
                  std::vector<int64_t> stride = {}, std::vector<int64_t> padding = {0},
                  std::vector<int64_t> dilation = {1}, bool ceil_mode = false);
/// As max_pool2d(..., return_indices=True): (values, indices i64 = h * W + w).
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input,
                                                   std::vector<int64_t> kernel_size,
                                                   std::vector<int64_t> stride = {},
                                                   std::vector<int64_t> padding = {0},
                                                   std::vector<int64_t> dilation = {1},
                                                   bool ceil_mode = false);
/// As torch.nn.functional.max_pool3d: input [N, C, D, H, W].
Tensor max_pool3d(const Tensor& input, std::vector<int64_t> kernel_size,
                  std::vector<int64_t> stride = {}, std::vector<int64_t> padding = {0},
                  std::vector<int64_t> dilation = {1}, bool ceil_mode = false);
/// As max_pool3d(..., return_indices=True): (values, indices i64 = (d * H + h) * W + w).
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input,
                                                   std::vector<int64_t> kernel_size,
                                                   std::vector<int64_t> stride = {},
                                                   std::vector<int64_t> padding = {0},
                                                   std::vector<int64_t> dilation = {1},
                                                   bool ceil_mode = false);

// ---- average pooling ----
// Divisor of each window: divisor_override when given; else with count_include_pad the window
// size clipped to the padded input (S + padding on the right, as torch), else the number of
// in-bounds elements. A window with no in-bounds element yields 0.
/// As torch.nn.functional.avg_pool1d: input [N, C, L]. Floating dtypes.
Tensor avg_pool1d(const Tensor& input, std::vector<int64_t> kernel_size,
                  std::vector<int64_t> stride = {}, std::vector<int64_t> padding = {0},
                  bool ceil_mode = false, bool count_include_pad = true);
/// As torch.nn.functional.avg_pool2d: input [N, C, H, W].
Tensor avg_pool2d(const Tensor& input, std::vector<int64_t> kernel_size,
                  std::vector<int64_t> stride = {}, std::vector<int64_t> padding = {0},
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
/// As torch.nn.functional.avg_pool3d: input [N, C, D, H, W].
Tensor avg_pool3d(const Tensor& input, std::vector<int64_t> kernel_size,
                  std::vector<int64_t> stride = {}, std::vector<int64_t> padding = {0},
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);

// ---- adaptive pooling ----
// Output cell i of a dim covers input [floor(i * S / O), ceil((i + 1) * S / O)), as torch.
// output_size: one value or one per spatial dim, each >= 0; every non-batch input dim must be
// non-empty (as torch).
/// As torch.nn.functional.adaptive_avg_pool1d: [N, C, L] -> [N, C, O]. Floating dtypes.
Tensor adaptive_avg_pool1d(const Tensor& input, std::vector<int64_t> output_size);
/// As torch.nn.functional.adaptive_avg_pool2d: [N, C, H, W] -> [N, C, oH, oW].
Tensor adaptive_avg_pool2d(const Tensor& input, std::vector<int64_t> output_size);
/// As torch.nn.functional.adaptive_avg_pool3d: [N, C, D, H, W] -> [N, C, oD, oH, oW].
Tensor adaptive_avg_pool3d(const Tensor& input, std::vector<int64_t> output_size);
/// As torch.nn.functional.adaptive_max_pool1d. Floating and integer dtypes.
Tensor adaptive_max_pool1d(const Tensor& input, std::vector<int64_t> output_size);
std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input,
                                                            std::vector<int64_t> output_size);
/// As torch.nn.functional.adaptive_max_pool2d; indices (i64) = h * W + w.
Tensor adaptive_max_pool2d(const Tensor& input, std::vector<int64_t> output_size);
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input,
                                                            std::vector<int64_t> output_size);
/// As torch.nn.functional.adaptive_max_pool3d; indices (i64) = (d * H + h) * W + w.
Tensor adaptive_max_pool3d(const Tensor& input, std::vector<int64_t> output_size);
std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& input,
                                                            std::vector<int64_t> output_size);

}  // namespace ember::nn::functional
