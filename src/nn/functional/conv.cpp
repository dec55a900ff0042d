// Convolutions as im2col + matmul (per group), transposed convolutions as matmul + col2im, and
// unfold/fold: composites of tensor ops and the im2col / col2im ops (src/ops/spatial.h), after
// the fused convolutions of src/ops/fast.h where the backend takes them.
#include "ember/nn/functional/conv.h"

#include <algorithm>
#include <sstream>
#include <string>

#include "ember/ops/layout.h"
#include "ember/ops/linalg.h"
#include "nn/functional/spatial.h"
#include "ops/fast.h"
#include "ops/spatial.h"
#include "tensor/autocast.h"

namespace ember::nn::functional {

namespace detail {

std::string list_str(const std::vector<int64_t>& v) { return shape_str(v); }

std::vector<int64_t> expand_param(const std::vector<int64_t>& v, int64_t nd, const char* op,
                                  const char* name, bool allow_empty) {
  if (v.empty() && allow_empty) return v;
  if (v.size() == 1) return std::vector<int64_t>(size_t(nd), v[0]);
  if (nd == 1) EMBER_FAIL(op, name, " must have 1 value, got ", list_str(v));
  EMBER_CHECK(int64_t(v.size()) == nd, op, name, " must have 1 or ", nd, " values, got ",
              list_str(v));
  return v;
}

void check_min(const std::vector<int64_t>& v, int64_t lo, const char* op, const char* name) {
  for (int64_t x : v) EMBER_CHECK(x >= lo, op, name, " must be >= ", lo, ", got ", list_str(v));
}

Tensor batched(const Tensor& input, int64_t nd, const char* op, bool& unbatched,
               bool allow_unbatched) {
  ember::detail::check_defined(input, op);
  const int64_t r = input.dim();
  if (allow_unbatched) {
    EMBER_CHECK(r == nd + 1 || r == nd + 2, op, "expected a ", nd + 1, "-d (unbatched) or ", nd + 2,
                "-d (batched) input, got ", shape_str(input.shape()));
  } else {
    EMBER_CHECK(r == nd + 2, op, "expected a ", nd + 2, "-d (batched) input, got ",
                shape_str(input.shape()));
  }
  unbatched = r == nd + 1;
  return unbatched ? input.unsqueeze(0) : input;
}

std::vector<int64_t> spatial(const Tensor& x) {
  return std::vector<int64_t>(x.shape().begin() + 2, x.shape().end());
}

}  // namespace detail

namespace {

using detail::expand_param;
using detail::list_str;

const char* conv_name(int64_t nd, bool transposed) {
  static const char* names[2][3] = {{"conv1d", "conv2d", "conv3d"},
                                    {"conv_transpose1d", "conv_transpose2d", "conv_transpose3d"}};
  return names[transposed ? 1 : 0][nd - 1];
}

// Checks shared by conv and conv_transpose; returns the batched input.
Tensor check_conv(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t nd,
                  int64_t groups, bool transposed, bool& unbatched) {
  const char* op = conv_name(nd, transposed);
  ember::detail::check_defined(weight, op);
  Tensor x = detail::batched(input, nd, op, unbatched);
  ember::detail::check_same_device(input, weight, op);
  auto ctx = [&] {
    std::ostringstream os;
    os << " (input " << input.shape() << ", weight " << weight.shape() << ")";
    return os.str();
  };
  EMBER_CHECK(weight.dim() == nd + 2, op, "expected a ", nd + 2, "-d weight",
              transposed ? " [C_in, C_out / groups, *kernel]" : " [C_out, C_in / groups, *kernel]",
              ctx());
  EMBER_CHECK(is_floating(input.dtype()), op,
              "expected a floating-point input (f32, f64, f16, bf16), got ",
              ember::detail::describe(input));
  EMBER_CHECK(input.dtype() == weight.dtype(), op, "input dtype ", dtype_name(input.dtype()),
              " and weight dtype ", dtype_name(weight.dtype()), " should be the same", ctx());
  EMBER_CHECK(groups >= 1, op, "groups must be >= 1, got ", groups);
  const int64_t c_in = x.size(1);
  if (!transposed) {
    EMBER_CHECK(weight.size(0) % groups == 0, op, "out_channels ", weight.size(0),
                " must be divisible by groups ", groups, ctx());
    EMBER_CHECK(c_in == weight.size(1) * groups, op, "input channels ", c_in,
                " do not match weight's in_channels ", weight.size(1) * groups, ctx());
  } else {
    EMBER_CHECK(c_in % groups == 0, op, "input channels ", c_in, " must be divisible by groups ",
                groups, ctx());
    EMBER_CHECK(c_in == weight.size(0), op, "input channels ", c_in,
                " do not match weight's in_channels ", weight.size(0), ctx());
  }
  const int64_t c_out = transposed ? weight.size(1) * groups : weight.size(0);
  if (bias.defined()) {
    ember::detail::check_same_device(input, bias, op);
    EMBER_CHECK(bias.dtype() == input.dtype(), op, "bias dtype ", dtype_name(bias.dtype()),
                " should be ", dtype_name(input.dtype()));
    EMBER_CHECK(bias.dim() == 1 && bias.size(0) == c_out, op, "expected bias of shape [", c_out,
                "], got ", shape_str(bias.shape()), ctx());
  }
  for (int64_t d = 0; d < nd; ++d)
    EMBER_CHECK(x.size(2 + d) > 0 || transposed, op, "spatial dims must be non-empty", ctx());
  return x;
}

Tensor add_bias(Tensor out, const Tensor& bias, int64_t nd) {
  if (!bias.defined()) return out;
  Shape s(size_t(nd + 2), 1);
  s[1] = bias.size(0);
  return out + bias.reshape(s);
}

// pad_begin and out per dim are decided by the caller (symmetric or "same").
Tensor conv_impl(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t nd,
                 std::vector<int64_t> stride, std::vector<int64_t> pad_begin,
                 std::vector<int64_t> pad_end, std::vector<int64_t> dilation, int64_t groups) {
  const char* op = conv_name(nd, false);
  bool unbatched = false;
  Tensor x = check_conv(input, weight, bias, nd, groups, false, unbatched);
  std::vector<int64_t> kernel(weight.shape().begin() + 2, weight.shape().end());
  std::vector<int64_t> out(static_cast<size_t>(nd));
  for (size_t d = 0; d < size_t(nd); ++d) {
    const int64_t padded = x.size(int64_t(2 + d)) + pad_begin[d] + pad_end[d];
    const int64_t eff = dilation[d] * (kernel[d] - 1) + 1;
    EMBER_CHECK(eff <= padded, op, "kernel size ", eff,
                " (dilated) is larger than the padded input size ", padded, " in spatial dim ", d,
                " (input ", shape_str(input.shape()), ", weight ", shape_str(weight.shape()), ")");
    out[d] = (padded - eff) / stride[d] + 1;
  }
  const int64_t n = x.size(0), c_out = weight.size(0), c_in = x.size(1);
  int64_t l = 1, k = 1;
  for (size_t d = 0; d < size_t(nd); ++d) {
    l *= out[d];
    k *= kernel[d];
  }
  // The result takes the input's channels-last layout (else the weight's), as torch.
  MemoryFormat fmt = x.memory_format();
  if (fmt == MemoryFormat::contiguous) fmt = weight.memory_format();
  auto finish = [&](Tensor y) {
    if (fmt != MemoryFormat::contiguous) y = y.contiguous(fmt);
    return unbatched ? y.squeeze(0) : y;
  };
  // The backend's fused convolution when it takes it; with grad, it records its own backward.
  // Else the composite below.
  if (Tensor y =
          ops::fast::conv(x, weight, bias, stride, pad_begin, pad_end, dilation, groups, fmt);
      y.defined())
    return unbatched ? y.squeeze(0) : y;
  // Bound the im2col buffer: a batch whose columns pass 64 MiB runs in chunks (a GPU buffer is
  // limited to maxStorageBufferRange, 128 MiB on lavapipe; host memory is spared too).
  const int64_t chunk = std::max<int64_t>(
      1, (int64_t(64) << 20) / std::max<int64_t>(1, c_in * k * l * x.element_size()));
  if (n > chunk) {
    std::vector<Tensor> parts;
    for (int64_t i = 0; i < n; i += chunk)
      parts.push_back(conv_impl(x.narrow(0, i, std::min(chunk, n - i)), weight, bias, nd, stride,
                                pad_begin, pad_end, dilation, groups));
    return finish(cat(parts, 0));
  }
  Tensor cols = ops::im2col(x, kernel, stride, pad_begin, dilation, out, 0);
  Tensor w = weight.reshape({1, groups, c_out / groups, (c_in / groups) * k});
  Tensor y = matmul(w, cols.view({n, groups, (c_in / groups) * k, l}));  // [N, g, Co/g, L]
  Shape os{n, c_out};
  os.insert(os.end(), out.begin(), out.end());
  return finish(add_bias(y.reshape(os), bias, nd));
}

Tensor conv_sym(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t nd,
                const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                const std::vector<int64_t>& dilation, int64_t groups) {
  if (ember::detail::amp::Scope c{ember::detail::amp::Policy::lower, {&input, &weight, &bias}})
    return conv_sym(c(input), c(weight), c(bias), nd, stride, padding, dilation, groups);
  const char* op = conv_name(nd, false);
  auto s = expand_param(stride, nd, op, "stride");
  auto p = expand_param(padding, nd, op, "padding");
  auto d = expand_param(dilation, nd, op, "dilation");
  detail::check_min(s, 1, op, "stride");
  detail::check_min(p, 0, op, "padding");
  detail::check_min(d, 1, op, "dilation");
  return conv_impl(input, weight, bias, nd, s, p, p, d, groups);
}

Tensor conv_str(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t nd,
                const std::vector<int64_t>& stride, std::string_view padding,
                const std::vector<int64_t>& dilation, int64_t groups) {
  if (ember::detail::amp::Scope c{ember::detail::amp::Policy::lower, {&input, &weight, &bias}})
    return conv_str(c(input), c(weight), c(bias), nd, stride, padding, dilation, groups);
  const char* op = conv_name(nd, false);
  auto s = expand_param(stride, nd, op, "stride");
  auto d = expand_param(dilation, nd, op, "dilation");
  detail::check_min(s, 1, op, "stride");
  detail::check_min(d, 1, op, "dilation");
  std::vector<int64_t> lo(size_t(nd), 0), hi(size_t(nd), 0);
  if (padding == "same") {
    for (int64_t v : s)
      EMBER_CHECK(v == 1, op, "padding='same' is not supported for strided convolutions (stride ",
                  list_str(s), ")");
    ember::detail::check_defined(weight, op);
    EMBER_CHECK(weight.dim() == nd + 2, op, "expected a ", nd + 2,
                "-d weight [C_out, C_in / groups, *kernel], got ", shape_str(weight.shape()));
    for (size_t i = 0; i < size_t(nd); ++i) {
      const int64_t total = d[i] * (weight.size(int64_t(2 + i)) - 1);
      lo[i] = total / 2;  // the odd extra goes on the right, as torch
      hi[i] = total - lo[i];
    }
  } else {
    EMBER_CHECK(padding == "valid", op, "invalid padding string '", std::string(padding),
                "', expected 'same' or 'valid'");
  }
  return conv_impl(input, weight, bias, nd, s, lo, hi, d, groups);
}

Tensor conv_transpose_impl(const Tensor& input, const Tensor& weight, const Tensor& bias,
                           int64_t nd, const std::vector<int64_t>& stride,
                           const std::vector<int64_t>& padding,
                           const std::vector<int64_t>& output_padding, int64_t groups,
                           const std::vector<int64_t>& dilation) {
  if (ember::detail::amp::Scope c{ember::detail::amp::Policy::lower_gpu_f32_host,
                                  {&input, &weight, &bias}})
    return conv_transpose_impl(c(input), c(weight), c(bias), nd, stride, padding, output_padding,
                               groups, dilation);
  const char* op = conv_name(nd, true);
  auto s = expand_param(stride, nd, op, "stride");
  auto p = expand_param(padding, nd, op, "padding");
  auto op_ = expand_param(output_padding, nd, op, "output_padding");
  auto d = expand_param(dilation, nd, op, "dilation");
  detail::check_min(s, 1, op, "stride");
  detail::check_min(p, 0, op, "padding");
  detail::check_min(op_, 0, op, "output_padding");
  detail::check_min(d, 1, op, "dilation");
  for (size_t i = 0; i < size_t(nd); ++i)
    EMBER_CHECK(op_[i] < s[i] || op_[i] < d[i], op,
                "output padding must be smaller than either stride or dilation, got "
                "output_padding ",
                list_str(op_), ", stride ", list_str(s), ", dilation ", list_str(d));
  bool unbatched = false;
  Tensor x = check_conv(input, weight, bias, nd, groups, true, unbatched);
  std::vector<int64_t> kernel(weight.shape().begin() + 2, weight.shape().end());
  std::vector<int64_t> in = detail::spatial(x), out(static_cast<size_t>(nd));
  int64_t k = 1, l = 1;
  for (size_t i = 0; i < size_t(nd); ++i) {
    out[i] = (in[i] - 1) * s[i] - 2 * p[i] + d[i] * (kernel[i] - 1) + op_[i] + 1;
    EMBER_CHECK(out[i] >= 1 && in[i] >= 1, op, "output size ", out[i], " in spatial dim ", i,
                " is too small (input ", shape_str(input.shape()), ", weight ",
                shape_str(weight.shape()), ")");
    k *= kernel[i];
    l *= in[i];
  }
  const int64_t n = x.size(0), c_in = x.size(1), c_out = weight.size(1) * groups;
  const int64_t cog = weight.size(1), cig = c_in / groups;
  // The backend's fused transposed convolution (without grad) when it takes it.
  if (Tensor y = ops::fast::conv_transpose(x, weight, bias, s, p, op_, d, groups); y.defined())
    return unbatched ? y.squeeze(0) : y;
  Tensor wt = weight.reshape({1, groups, cig, cog * k}).transpose(-1, -2);  // [1, g, Co/g*K, Ci/g]
  Tensor cols = matmul(wt, x.reshape({n, groups, cig, l}));                 // [N, g, Co/g*K, L]
  Tensor y = ops::col2im(cols.reshape({n, c_out * k, l}), c_out, out, kernel, s, p, d, in);
  y = add_bias(y, bias, nd);
  return unbatched ? y.squeeze(0) : y;
}

}  // namespace

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              std::vector<int64_t> stride, std::vector<int64_t> padding,
              std::vector<int64_t> dilation, int64_t groups) {
  return conv_sym(input, weight, bias, 1, stride, padding, dilation, groups);
}
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              std::vector<int64_t> stride, PaddingMode padding, std::vector<int64_t> dilation,
              int64_t groups) {
  return conv_str(input, weight, bias, 1, stride, padding.value, dilation, groups);
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              std::vector<int64_t> stride, std::vector<int64_t> padding,
              std::vector<int64_t> dilation, int64_t groups) {
  return conv_sym(input, weight, bias, 2, stride, padding, dilation, groups);
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              std::vector<int64_t> stride, PaddingMode padding, std::vector<int64_t> dilation,
              int64_t groups) {
  return conv_str(input, weight, bias, 2, stride, padding.value, dilation, groups);
}
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              std::vector<int64_t> stride, std::vector<int64_t> padding,
              std::vector<int64_t> dilation, int64_t groups) {
  return conv_sym(input, weight, bias, 3, stride, padding, dilation, groups);
}
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              std::vector<int64_t> stride, PaddingMode padding, std::vector<int64_t> dilation,
              int64_t groups) {
  return conv_str(input, weight, bias, 3, stride, padding.value, dilation, groups);
}

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        std::vector<int64_t> stride, std::vector<int64_t> padding,
                        std::vector<int64_t> output_padding, int64_t groups,
                        std::vector<int64_t> dilation) {
  return conv_transpose_impl(input, weight, bias, 1, stride, padding, output_padding, groups,
                             dilation);
}
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        std::vector<int64_t> stride, std::vector<int64_t> padding,
                        std::vector<int64_t> output_padding, int64_t groups,
                        std::vector<int64_t> dilation) {
  return conv_transpose_impl(input, weight, bias, 2, stride, padding, output_padding, groups,
                             dilation);
}
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        std::vector<int64_t> stride, std::vector<int64_t> padding,
                        std::vector<int64_t> output_padding, int64_t groups,
                        std::vector<int64_t> dilation) {
  return conv_transpose_impl(input, weight, bias, 3, stride, padding, output_padding, groups,
                             dilation);
}

Tensor unfold(const Tensor& input, std::vector<int64_t> kernel_size, std::vector<int64_t> dilation,
              std::vector<int64_t> padding, std::vector<int64_t> stride) {
  const char* op = "unfold";
  bool unbatched = false;
  Tensor x = detail::batched(input, 2, op, unbatched);
  EMBER_CHECK(!is_bool(x.dtype()), op, "bool input is not supported, got ",
              ember::detail::describe(input));
  auto k = expand_param(kernel_size, 2, op, "kernel_size");
  auto d = expand_param(dilation, 2, op, "dilation");
  auto p = expand_param(padding, 2, op, "padding");
  auto s = expand_param(stride, 2, op, "stride");
  detail::check_min(k, 1, op, "kernel_size");
  detail::check_min(d, 1, op, "dilation");
  detail::check_min(p, 0, op, "padding");
  detail::check_min(s, 1, op, "stride");
  std::vector<int64_t> out(2);
  for (size_t i = 0; i < 2; ++i) {
    const int64_t padded = x.size(int64_t(2 + i)) + 2 * p[i], eff = d[i] * (k[i] - 1) + 1;
    EMBER_CHECK(x.size(int64_t(2 + i)) > 0 && eff <= padded, op, "kernel size ", eff,
                " (dilated) is larger than the padded input size ", padded, " (input ",
                shape_str(input.shape()), ")");
    out[i] = (padded - eff) / s[i] + 1;
  }
  Tensor cols = ops::im2col(x, k, s, p, d, out, 0);
  return unbatched ? cols.squeeze(0) : cols;
}

Tensor fold(const Tensor& input, std::vector<int64_t> output_size, std::vector<int64_t> kernel_size,
            std::vector<int64_t> dilation, std::vector<int64_t> padding,
            std::vector<int64_t> stride) {
  const char* op = "fold";
  ember::detail::check_defined(input, op);
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3, op,
              "expected a 2-d (unbatched) or 3-d (batched) input, got ", shape_str(input.shape()));
  EMBER_CHECK(!is_bool(input.dtype()), op, "bool input is not supported, got ",
              ember::detail::describe(input));
  const bool unbatched = input.dim() == 2;
  Tensor x = unbatched ? input.unsqueeze(0) : input;
  auto o = expand_param(output_size, 2, op, "output_size");
  auto k = expand_param(kernel_size, 2, op, "kernel_size");
  auto d = expand_param(dilation, 2, op, "dilation");
  auto p = expand_param(padding, 2, op, "padding");
  auto s = expand_param(stride, 2, op, "stride");
  detail::check_min(o, 1, op, "output_size");
  detail::check_min(k, 1, op, "kernel_size");
  detail::check_min(d, 1, op, "dilation");
  detail::check_min(p, 0, op, "padding");
  detail::check_min(s, 1, op, "stride");
  const int64_t kk = k[0] * k[1];
  EMBER_CHECK(x.size(1) % kk == 0, op, "input size(", unbatched ? 0 : 1, ") = ", x.size(1),
              " must be divisible by the product of kernel_size ", kk, " (input ",
              shape_str(input.shape()), ")");
  std::vector<int64_t> blocks(2);
  for (size_t i = 0; i < 2; ++i) {
    const int64_t eff = d[i] * (k[i] - 1) + 1, padded = o[i] + 2 * p[i];
    EMBER_CHECK(eff <= padded, op, "kernel size ", eff,
                " (dilated) is larger than the padded output size ", padded);
    blocks[i] = (padded - eff) / s[i] + 1;
  }
  EMBER_CHECK(x.size(2) == blocks[0] * blocks[1], op, "input has ", x.size(2),
              " blocks, but output_size ", list_str(o), " with these options gives ",
              blocks[0] * blocks[1], " (input ", shape_str(input.shape()), ")");
  Tensor y = ops::col2im(x, x.size(1) / kk, o, k, s, p, d, blocks);
  return unbatched ? y.squeeze(0) : y;
}

}  // namespace ember::nn::functional
