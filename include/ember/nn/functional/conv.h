// Convolutions (as torch.nn.functional.conv{1,2,3}d and conv_transpose{1,2,3}d, torch 1.13).
//
// Shapes (d = 1, 2 or 3 spatial dims, S = the spatial sizes):
//   input  [N, C_in, *S] or unbatched [C_in, *S] (the result is then unbatched too)
//   conv weight            [C_out, C_in / groups, *K]
//   conv_transpose weight  [C_in, C_out / groups, *K]
//   bias   [C_out] (optional: pass Tensor() / {})
// Spatial options (stride, padding, dilation, output_padding) take either one value, used for
// every spatial dim, or one value per spatial dim: `conv2d(x, w, b, {2}, {1, 0})`.
// Output size of conv:  floor((S + 2 * padding - dilation * (K - 1) - 1) / stride) + 1.
// Output size of conv_transpose:
//   (S - 1) * stride - 2 * padding + dilation * (K - 1) + output_padding + 1.
//
// Dtypes: floating only (f32, f64, f16, bf16), input and weight (and bias) of one dtype, as torch
// CPU (which rejects integer convolution); the result has that dtype. Accumulation follows matmul.
// Throws ember::Error (tag = the op name, message naming the shapes) for: undefined tensors,
// mixed devices or dtypes, a non-floating dtype, wrong rank ("[conv2d] expected a 3-d
// (unbatched) or 4-d (batched) input, got input [2, 3]"), channel mismatch ("[conv2d] input
// channels 3 do not match weight's in_channels 4 (input [1, 3, 8, 8], weight [8, 4, 3, 3])"),
// groups < 1 or not dividing C_in / C_out, a bias of the wrong shape, an option list of the wrong
// length, stride/dilation < 1, padding < 0, a kernel larger than the padded (dilated) input,
// output_padding not smaller than stride or dilation, padding="same" with a stride > 1.
// Composite: im2col (ir::Im2col) + matmul per group; conv_transpose is matmul + col2im.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ember/tensor.h"

namespace ember::nn::functional {

/// A padding string for conv: "same" or "valid" (checked by the op). Converts from anything
/// string-like (literal, std::string, std::string_view) but never from a number, so that `{0}`
/// in a call always means a padding list.
struct PaddingMode {
  template <typename S,
            typename = std::enable_if_t<!std::is_arithmetic_v<S> &&
                                        std::is_convertible_v<const S&, std::string_view>>>
  PaddingMode(const S& s) : value(std::string_view(s)) {}  // NOLINT(google-explicit-constructor)
  static PaddingMode from_string(std::string_view s) { return PaddingMode(s); }
  std::string value;
};

/// 1-d convolution (cross-correlation, as torch.nn.functional.conv1d): input [N, C_in, L].
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              std::vector<int64_t> stride = {1}, std::vector<int64_t> padding = {0},
              std::vector<int64_t> dilation = {1}, int64_t groups = 1);
/// padding "valid" (no padding) or "same" (output size = input size; stride must be 1; when
/// dilation * (K - 1) is odd the extra zero goes on the right/bottom, as torch).
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              std::vector<int64_t> stride, PaddingMode padding, std::vector<int64_t> dilation = {1},
              int64_t groups = 1);

/// 2-d convolution (as torch.nn.functional.conv2d): input [N, C_in, H, W].
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              std::vector<int64_t> stride = {1}, std::vector<int64_t> padding = {0},
              std::vector<int64_t> dilation = {1}, int64_t groups = 1);
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              std::vector<int64_t> stride, PaddingMode padding, std::vector<int64_t> dilation = {1},
              int64_t groups = 1);

/// 3-d convolution (as torch.nn.functional.conv3d): input [N, C_in, D, H, W].
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              std::vector<int64_t> stride = {1}, std::vector<int64_t> padding = {0},
              std::vector<int64_t> dilation = {1}, int64_t groups = 1);
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              std::vector<int64_t> stride, PaddingMode padding, std::vector<int64_t> dilation = {1},
              int64_t groups = 1);

/// Transposed convolution (the adjoint of conv; as torch.nn.functional.conv_transpose1d).
/// Note torch's argument order: output_padding, then groups, then dilation.
/// weight [C_in, C_out / groups, K]; output [N, C_out, L_out].
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        std::vector<int64_t> stride = {1}, std::vector<int64_t> padding = {0},
                        std::vector<int64_t> output_padding = {0}, int64_t groups = 1,
                        std::vector<int64_t> dilation = {1});
/// As torch.nn.functional.conv_transpose2d: weight [C_in, C_out / groups, kH, kW].
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        std::vector<int64_t> stride = {1}, std::vector<int64_t> padding = {0},
                        std::vector<int64_t> output_padding = {0}, int64_t groups = 1,
                        std::vector<int64_t> dilation = {1});
/// As torch.nn.functional.conv_transpose3d: weight [C_in, C_out / groups, kD, kH, kW].
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        std::vector<int64_t> stride = {1}, std::vector<int64_t> padding = {0},
                        std::vector<int64_t> output_padding = {0}, int64_t groups = 1,
                        std::vector<int64_t> dilation = {1});

/// As torch.nn.functional.unfold (im2col): input [N, C, H, W] (or [C, H, W]) ->
/// [N, C * kH * kW, L], L = number of windows; zero padding. Any dtype except bool.
Tensor unfold(const Tensor& input, std::vector<int64_t> kernel_size,
              std::vector<int64_t> dilation = {1}, std::vector<int64_t> padding = {0},
              std::vector<int64_t> stride = {1});
/// As torch.nn.functional.fold (col2im, overlapping taps summed): input [N, C * kH * kW, L]
/// (or unbatched [C * kH * kW, L]) -> [N, C, output_size...]. Throws when L does not equal the
/// number of windows of output_size.
Tensor fold(const Tensor& input, std::vector<int64_t> output_size, std::vector<int64_t> kernel_size,
            std::vector<int64_t> dilation = {1}, std::vector<int64_t> padding = {0},
            std::vector<int64_t> stride = {1});

}  // namespace ember::nn::functional
