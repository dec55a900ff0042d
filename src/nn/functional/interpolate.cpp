// interpolate: argument handling of torch.nn.functional.interpolate (torch 1.13), then the
// interpolate op (src/ops/spatial.h; "area" is adaptive_avg_pool).
#include "ember/nn/functional/interpolate.h"

#include <cmath>
#include <string>

#include "ember/nn/functional/pool.h"
#include "nn/functional/spatial.h"
#include "ops/spatial.h"

namespace ember::nn::functional {

Tensor interpolate(const Tensor& input, std::vector<int64_t> size, std::vector<double> scale_factor,
                   std::string_view mode, std::optional<bool> align_corners,
                   std::optional<bool> recompute_scale_factor) {
  const char* op = "interpolate";
  ember::detail::check_defined(input, op);
  const std::string m(mode);
  const bool nearest = m == "nearest" || m == "nearest-exact";
  EMBER_CHECK(nearest || m == "area" || m == "linear" || m == "bilinear" || m == "bicubic" ||
                  m == "trilinear",
              op, "unknown mode '", m,
              "', expected nearest | linear | bilinear | bicubic | trilinear | area | "
              "nearest-exact");
  const int64_t r = input.dim();
  EMBER_CHECK(r >= 3 && r <= 5, op, "only 3-d, 4-d and 5-d inputs [N, C, *S] are supported, got ",
              shape_str(input.shape()), " (mode ", m, ")");
  const int64_t nd = r - 2;
  const int64_t need = m == "linear"                       ? 3
                       : m == "bilinear" || m == "bicubic" ? 4
                       : m == "trilinear"                  ? 5
                                                           : r;
  EMBER_CHECK(need == r, op, "Got ", r, "D input, but ", m, " mode needs ", need, "D input");
  EMBER_CHECK(!align_corners || !(nearest || m == "area"), op,
              "align_corners option can only be set with the interpolating modes: linear | "
              "bilinear | bicubic | trilinear");
  if (nearest) {
    EMBER_CHECK(!is_bool(input.dtype()), op, "bool input is not supported, got ",
                ember::detail::describe(input));
  } else {
    EMBER_CHECK(is_floating(input.dtype()), op, "mode ", m,
                " expects a floating-point input (f32, f64, f16, bf16), got ",
                ember::detail::describe(input));
  }
  for (int64_t d = 2; d < r; ++d)
    EMBER_CHECK(input.size(d) > 0, op, "input spatial sizes must be > 0, got ",
                shape_str(input.shape()));
  EMBER_CHECK(size.empty() != scale_factor.empty(), op,
              size.empty() ? "either size or scale_factor should be defined"
                           : "only one of size or scale_factor should be defined");
  const std::vector<int64_t> in = detail::spatial(input);
  std::vector<int64_t> out;
  std::vector<double> scales(static_cast<size_t>(nd), 0.0);
  if (!size.empty()) {
    EMBER_CHECK(!recompute_scale_factor.value_or(false), op,
                "recompute_scale_factor is not meaningful with an explicit size");
    EMBER_CHECK(size.size() == 1 || int64_t(size.size()) == nd, op,
                "input and output must have the same number of spatial dimensions, got input ",
                shape_str(input.shape()), " and size ", detail::list_str(size));
    out = detail::expand_param(size, nd, op, "size");
  } else {
    EMBER_CHECK(scale_factor.size() == 1 || int64_t(scale_factor.size()) == nd, op,
                "scale_factor must have 1 or ", nd, " values, got ", scale_factor.size());
    // A copy: assign(n, v) with v inside the vector reads it after the reallocation (libc++ 13
    // gave 0, so the WebAssembly build computed an empty output).
    if (scale_factor.size() == 1) scale_factor = std::vector<double>(size_t(nd), scale_factor[0]);
    for (size_t i = 0; i < size_t(nd); ++i) {
      EMBER_CHECK(scale_factor[i] > 0 && std::isfinite(scale_factor[i]), op,
                  "scale_factor must be positive and finite, got ", scale_factor[i]);
      out.push_back(int64_t(std::floor(double(in[i]) * scale_factor[i])));
    }
    // torch passes the scales to the kernel unless they are recomputed from the sizes.
    if (!recompute_scale_factor.value_or(false) && m != "area") scales = scale_factor;
  }
  for (int64_t o : out)
    EMBER_CHECK(o > 0, op, "input and output sizes should be greater than 0, got input ",
                shape_str(input.shape()), " and output size ", detail::list_str(out));
  if (m == "area") {
    // torch's adaptive_avg_pool3d gives a contiguous result for a channels_last_3d input.
    return nd == 1   ? adaptive_avg_pool1d(input, out)
           : nd == 2 ? adaptive_avg_pool2d(input, out)
                     : adaptive_avg_pool3d(input, out).contiguous();
  }
  const ops::InterpMode im = m == "nearest"         ? ops::InterpMode::nearest
                             : m == "nearest-exact" ? ops::InterpMode::nearest_exact
                             : m == "bicubic"       ? ops::InterpMode::cubic
                                                    : ops::InterpMode::linear;
  return ops::interpolate(input, out, im, align_corners.value_or(false), scales);
}

}  // namespace ember::nn::functional
