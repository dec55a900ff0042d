// Convolutions as im2col + matmul (per group), transposed convolutions as matmul + col2im, and
// unfold/fold. Composite: only ir::Im2col / ir::Col2im are primitives (src/ir/ops.h).
#include "ember/nn/functional/conv.h"

#include <algorithm>
#include <sstream>
#include <string>

#include "autodiff/rules.h"
#include "ember/ops/layout.h"
#include "ember/ops/linalg.h"
#include "ember/ops/reduce.h"
#include "nn/functional/spatial.h"
#include "runtime/backend.h"

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

Tensor im2col(const Tensor& x, const std::vector<int64_t>& kernel,
              const std::vector<int64_t>& stride, const std::vector<int64_t>& pad_begin,
              const std::vector<int64_t>& dilation, const std::vector<int64_t>& out,
              const Scalar& pad_value) {
  int64_t k = 1, l = 1;
  for (size_t d = 0; d < kernel.size(); ++d) {
    k *= kernel[d];
    l *= out[d];
  }
  Tensor cols = ember::detail::make_tensor({x.size(0), x.size(1) * k, l}, x.dtype(), x.device());
  const ir::Im2col op{x, cols, kernel, stride, pad_begin, dilation, pad_value, out};
  if (cols.numel() > 0) run(op);
  autograd::rules::im2col(op);
  return cols;
}

Tensor col2im(const Tensor& cols, int64_t channels, const std::vector<int64_t>& size,
              const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
              const std::vector<int64_t>& pad_begin, const std::vector<int64_t>& dilation,
              const std::vector<int64_t>& out) {
  Shape s{cols.size(0), channels};
  s.insert(s.end(), size.begin(), size.end());
  Tensor img = zeros(s, TensorOptions(cols.dtype(), cols.device()));
  const ir::Col2im op{cols, img, kernel, stride, pad_begin, dilation, out};
  if (img.numel() > 0 && cols.numel() > 0) run(op);
  autograd::rules::col2im(op);
  return img;
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

// Composite gradients of a convolution (geometry `op`, kernel and output sizes) written with
// tensor ops: the adjoints of the im2col + matmul forward below. g: [N, C_out, *O].
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
  return detail::col2im(cols.reshape({n, c_in * k, l}), c_in,
                        std::vector<int64_t>(xs.begin() + 2, xs.end()), kernel, op.stride,
                        op.pad_begin, op.dilation, out);
}

Tensor conv_grad_weight(const Tensor& g, const Tensor& x, const Shape& ws, const ir::Conv& op,
                        const std::vector<int64_t>& kernel, const std::vector<int64_t>& out) {
  const int64_t n = x.size(0), grp = op.groups, cog = ws[0] / grp;
  Tensor cols = detail::im2col(x, kernel, op.stride, op.pad_begin, op.dilation, out, 0);
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
// ir::ConvBackwardWeights (oneDNN on cpu), else the composite gradients above. In a
// create_graph backward (grad mode on) a gradient whose operands carry history is computed with
// the composite, whose ops record, so it can be differentiated again.
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
            dx = ember::detail::make_tensor(xs, g.dtype(), g.device(), xf);
            if (!be.execute_fused(ir::ConvBackwardData{g, w, dx, geo.stride, geo.pad_begin,
                                                       geo.pad_end, geo.dilation, geo.groups}))
              dx = Tensor();
          }
          r[0] = dx.defined() ? dx : conv_grad_input(g, w, xs, geo, kernel, out);
        }
        if (need_w) {
          const Tensor x = sx.get("conv");
          Tensor dw = ember::detail::make_tensor(ws, g.dtype(), g.device(), wf);
          Tensor db =
              need_b ? ember::detail::make_tensor({ws[0]}, g.dtype(), g.device()) : Tensor();
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
  {
    // The backend's fused convolution when it takes it (ir/fused.h); with grad, it records its
    // own backward (record_conv_backward). Else the composite below.
    Shape ds{n, c_out};
    ds.insert(ds.end(), out.begin(), out.end());
    Tensor y = ember::detail::make_tensor(ds, x.dtype(), x.device(), fmt);
    const ir::Conv fop{x, weight, bias, y, stride, pad_begin, pad_end, dilation, groups};
    if (backend_for(x.device()).execute_fused(fop)) {
      if (autograd::needs_grad({&x, &weight, &bias})) record_conv_backward(fop, kernel, out);
      return unbatched ? y.squeeze(0) : y;
    }
  }
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
  Tensor cols = detail::im2col(x, kernel, stride, pad_begin, dilation, out, 0);
  Tensor w = weight.reshape({1, groups, c_out / groups, (c_in / groups) * k});
  Tensor y = matmul(w, cols.view({n, groups, (c_in / groups) * k, l}));  // [N, g, Co/g, L]
  Shape os{n, c_out};
  os.insert(os.end(), out.begin(), out.end());
  return finish(add_bias(y.reshape(os), bias, nd));
}

Tensor conv_sym(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t nd,
                const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                const std::vector<int64_t>& dilation, int64_t groups) {
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
  if (!autograd::needs_grad({&x, &weight, &bias})) {
    // A transposed convolution is the input gradient of the convolution it transposes (weight
    // [C_in, C_out / g, *K] is that convolution's [C_out', C_in' / g, *K]; its padding at the end
    // is padding - output_padding): offered as ir::ConvBackwardData when that is >= 0.
    std::vector<int64_t> pe(static_cast<size_t>(nd));
    bool ok = true;
    for (size_t i = 0; i < size_t(nd); ++i) {
      pe[i] = p[i] - op_[i];
      ok = ok && pe[i] >= 0;
    }
    if (ok) {
      Shape ys{n, c_out};
      ys.insert(ys.end(), out.begin(), out.end());
      Tensor y = ember::detail::make_tensor(ys, x.dtype(), x.device());
      if (backend_for(x.device())
              .execute_fused(ir::ConvBackwardData{x, weight, y, s, p, pe, d, groups})) {
        y = add_bias(y, bias, nd);
        return unbatched ? y.squeeze(0) : y;
      }
    }
  }
  Tensor wt = weight.reshape({1, groups, cig, cog * k}).transpose(-1, -2);  // [1, g, Co/g*K, Ci/g]
  Tensor cols = matmul(wt, x.reshape({n, groups, cig, l}));                 // [N, g, Co/g*K, L]
  Tensor y = detail::col2im(cols.reshape({n, c_out * k, l}), c_out, out, kernel, s, p, d, in);
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
  Tensor cols = detail::im2col(x, k, s, p, d, out, 0);
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
  Tensor y = detail::col2im(x, x.size(1) / kk, o, k, s, p, d, blocks);
  return unbatched ? y.squeeze(0) : y;
}

}  // namespace ember::nn::functional
