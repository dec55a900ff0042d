// Pooling: max/avg as im2col + a reduction over the kernel axis, after the fused pooling of
// src/ops/fast.h where the backend takes it; adaptive pools are the adaptive_pool op
// (src/ops/spatial.h).
#include "ember/nn/functional/pool.h"

#include <algorithm>
#include <limits>

#include "ember/autograd.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/indexing.h"
#include "ember/ops/reduce.h"
#include "nn/functional/spatial.h"
#include "ops/fast.h"
#include "ops/spatial.h"

namespace ember::nn::functional {

namespace {

using detail::expand_param;
using detail::list_str;

enum Kind { kMax, kAvg, kAdaptiveMax, kAdaptiveAvg };

const char* pool_name(Kind kind, int64_t nd) {
  static const char* names[4][3] = {
      {"max_pool1d", "max_pool2d", "max_pool3d"},
      {"avg_pool1d", "avg_pool2d", "avg_pool3d"},
      {"adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d"},
      {"adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d"}};
  return names[kind][nd - 1];
}

// Results keep a channels-last input's layout (as torch), so a channels-last model stays so.
Tensor keep_format(const Tensor& y, const Tensor& x) {
  const MemoryFormat f = x.memory_format();
  return f == MemoryFormat::contiguous || y.dim() != x.dim() ? y : y.contiguous(f);
}

// The layout keep_format gives a batched result: x's, except contiguous for unbatched input.
MemoryFormat format_of(const Tensor& x, bool unbatched) {
  return unbatched ? MemoryFormat::contiguous : x.memory_format();
}

struct Window {
  std::vector<int64_t> kernel, stride, pad, dilation, in, out;
  int64_t k = 1, l = 1;
};

// Validates the input and options; returns the batched input and the window geometry.
Tensor prepare(const Tensor& input, int64_t nd, const char* op, bool is_max,
               const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
               const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
               bool ceil_mode, Window& w, bool& unbatched) {
  Tensor x = detail::batched(input, nd, op, unbatched);
  if (is_max) {
    EMBER_CHECK(!is_bool(x.dtype()), op, "bool input is not supported, got ",
                ember::detail::describe(input));
  } else {
    EMBER_CHECK(is_floating(x.dtype()), op,
                "expected a floating-point input (f32, f64, f16, bf16), got ",
                ember::detail::describe(input));
  }
  for (int64_t d = 1; d < x.dim(); ++d)
    EMBER_CHECK(x.size(d) > 0, op, "expected non-empty non-batch dims, got input ",
                shape_str(input.shape()));
  w.kernel = expand_param(kernel_size, nd, op, "kernel_size");
  w.stride = stride.empty() ? w.kernel : expand_param(stride, nd, op, "stride");
  w.pad = expand_param(padding, nd, op, "padding");
  w.dilation = expand_param(dilation, nd, op, "dilation");
  detail::check_min(w.kernel, 1, op, "kernel_size");
  detail::check_min(w.stride, 1, op, "stride");
  detail::check_min(w.pad, 0, op, "padding");
  detail::check_min(w.dilation, 1, op, "dilation");
  // As torch, the window parameters are C ints (larger ones overflowed the output-size formula
  // or ran oneDNN for hours).
  for (const auto& [v, name] :
       {std::pair<const std::vector<int64_t>*, const char*>{&w.kernel, "kernel_size"},
        {&w.stride, "stride"},
        {&w.pad, "padding"},
        {&w.dilation, "dilation"}})
    for (int64_t x : *v)
      EMBER_CHECK(x <= std::numeric_limits<int32_t>::max(), op, name, " must be < 2^31, got ",
                  list_str(*v));
  w.in = detail::spatial(x);
  w.out.resize(static_cast<size_t>(nd));
  for (size_t i = 0; i < size_t(nd); ++i) {
    EMBER_CHECK(w.pad[i] <= w.kernel[i] / 2, op,
                "pad should be at most half of kernel size, got padding ", list_str(w.pad),
                " and kernel_size ", list_str(w.kernel));
    // torch's pooling_output_shape.
    const int64_t span = w.in[i] + 2 * w.pad[i] - w.dilation[i] * (w.kernel[i] - 1) - 1;
    const int64_t s = w.stride[i];
    int64_t o = (span + (ceil_mode ? s - 1 : 0));
    o = (o >= 0 ? o / s : -((-o + s - 1) / s)) + 1;
    if (ceil_mode && (o - 1) * s >= w.in[i] + w.pad[i]) --o;
    EMBER_CHECK(o >= 1, op, "output size is too small: input ", shape_str(input.shape()),
                " with kernel_size ", list_str(w.kernel), ", stride ", list_str(w.stride),
                ", padding ", list_str(w.pad), ", dilation ", list_str(w.dilation),
                " gives spatial size ", o, " in dim ", i);
    w.out[i] = o;
    w.k *= w.kernel[i];
    w.l *= o;
  }
  return x;
}

Shape out_shape(const Tensor& x, const Window& w, bool unbatched) {
  Shape s{x.size(0), x.size(1)};
  s.insert(s.end(), w.out.begin(), w.out.end());
  if (unbatched) s.erase(s.begin());
  return s;
}

// Divisor per window (torch's avg_pool kernels): the window clipped to the padded input, or
// to the input when !count_include_pad; separable over dims.
std::vector<double> avg_divisors(const Window& w, bool count_include_pad,
                                 std::optional<int64_t> divisor_override) {
  const size_t nd = w.kernel.size();
  std::vector<double> div(size_t(w.l));
  std::vector<int64_t> oo(nd);
  for (int64_t li = 0; li < w.l; ++li) {
    for (int64_t r = li, d = int64_t(nd) - 1; d >= 0; --d) {
      oo[size_t(d)] = r % w.out[size_t(d)];
      r /= w.out[size_t(d)];
    }
    int64_t pool = 1, count = 1;
    for (size_t d = 0; d < nd; ++d) {
      const int64_t start = oo[d] * w.stride[d] - w.pad[d];
      const int64_t end = std::min(start + w.kernel[d], w.in[d] + w.pad[d]);
      pool *= end - start;
      count *= std::max<int64_t>(std::min(end, w.in[d]) - std::max<int64_t>(start, 0), 0);
    }
    int64_t dv = divisor_override ? *divisor_override : count_include_pad ? pool : count;
    div[size_t(li)] = dv == 0 ? 1.0 : double(dv);  // empty windows give 0 (sum is 0)
  }
  return div;
}

// The tap each max window reports, as torch's max-pool loops (`v > max || isnan(v)` over the
// in-bounds taps, from the first in-bounds one): the last NaN, else the first maximal in-bounds
// tap; a window whose in-bounds values are all the lowest (-inf) reports its first in-bounds
// tap, never a padding tap. cols: [N, C, K, L] with padding taps holding the lowest value.
Tensor max_taps(const Tensor& cols, const Window& w) {
  NoGradGuard no_grad;
  Tensor taps = std::get<1>(max(cols, 2));
  const size_t nd = w.kernel.size();
  bool reaches_out = false;  // some tap lies in the padding (or past the end, ceil_mode)
  for (size_t d = 0; d < nd; ++d)
    reaches_out = reaches_out || w.pad[d] > 0 ||
                  (w.out[d] - 1) * w.stride[d] + w.dilation[d] * (w.kernel[d] - 1) >= w.in[d];
  if (reaches_out) {
    std::vector<uint8_t> pad_tap(size_t(w.k * w.l));
    std::vector<int64_t> first(size_t(w.l));
    std::vector<int64_t> kk(nd), oo(nd);
    for (int64_t li = 0; li < w.l; ++li) {
      for (int64_t r = li, d = int64_t(nd) - 1; d >= 0; --d) {
        oo[size_t(d)] = r % w.out[size_t(d)];
        r /= w.out[size_t(d)];
      }
      first[size_t(li)] = -1;
      for (int64_t ki = 0; ki < w.k; ++ki) {
        for (int64_t r = ki, d = int64_t(nd) - 1; d >= 0; --d) {
          kk[size_t(d)] = r % w.kernel[size_t(d)];
          r /= w.kernel[size_t(d)];
        }
        bool inside = true;
        for (size_t d = 0; d < nd; ++d) {
          const int64_t p = oo[d] * w.stride[d] - w.pad[d] + kk[d] * w.dilation[d];
          inside = inside && p >= 0 && p < w.in[d];
        }
        pad_tap[size_t(ki * w.l + li)] = !inside;
        if (inside && first[size_t(li)] < 0) first[size_t(li)] = ki;
      }
      if (first[size_t(li)] < 0) first[size_t(li)] = 0;  // no tap inside (dilated windows)
    }
    const Device dev = cols.device();
    const Tensor pad = from_vector<uint8_t>(pad_tap, {w.k, w.l}, dev).to(DType::b8);
    const Tensor on_pad = gather(pad.expand(cols.shape()), 2, taps.unsqueeze(2)).squeeze(2);
    taps = where(on_pad, from_vector<int64_t>(first, {w.l}, dev), taps);
  }
  if (is_floating(cols.dtype())) {
    // 1 + the last NaN tap (0 for none).
    const Tensor tap1 = arange(1, w.k + 1, 1, TensorOptions(DType::i32, cols.device()));
    const Tensor nan1 = std::get<0>(max(where(isnan(cols), tap1.view({w.k, 1}), Scalar(0)), 2));
    taps = where(gt(nan1, 0), (nan1 - 1).to(DType::i64), taps);
  }
  return taps;
}

// Host doubles as a 1-d tensor of `dtype` on `device`, cast on the host (so devices without
// f64, as WebGPU, take it).
Tensor divisor_table(const std::vector<double>& v, DType dtype, const Device& device) {
  return from_vector<double>(v, {int64_t(v.size())}, Device::ref()).to(dtype).to(device);
}

// The composite gradient of a pooling (the adjoint of im2col + max / sum over the kernel axis):
// max routes each output's gradient to its first maximal tap, avg spreads grad / divisor.
Tensor pool_grad(bool is_max, const Window& w, bool count_include_pad, const Tensor& x,
                 const Tensor& g, const Shape& xs) {
  const int64_t n = xs[0], c = xs[1];
  Tensor gl = g.reshape({n, c, 1, w.l});
  Tensor cols;
  if (is_max) {
    // Only the argmax taps are read: no history (max's gradient is piecewise constant in x).
    Tensor xc = ops::im2col(x.detach(), w.kernel, w.stride, w.pad, w.dilation, w.out,
                            -std::numeric_limits<double>::infinity());
    Tensor taps = max_taps(xc.view({n, c, w.k, w.l}), w);
    cols = scatter(zeros({n, c, w.k, w.l}, TensorOptions(g.dtype(), g.device())), 2,
                   taps.unsqueeze(2), gl);
  } else {
    const Tensor div =
        divisor_table(avg_divisors(w, count_include_pad, std::nullopt), g.dtype(), g.device());
    cols = (gl / div).expand({n, c, w.k, w.l});
  }
  return ops::col2im(cols.reshape({n, c * w.k, w.l}), c, w.in, w.kernel, w.stride, w.pad,
                     w.dilation, w.out);
}

// The backend's fused pooling (src/ops/fast.h) when it takes it, with pool_grad as the
// composite its backward falls back to; else an undefined tensor (the caller runs the
// composite). x is batched; the result [N, C, *out] is laid out in `fmt`.
Tensor fused_pool(const Tensor& x, const Window& w, bool is_max, bool count_include_pad,
                  MemoryFormat fmt) {
  const Shape xs = x.shape();
  return ops::fast::pool(x, is_max, w.kernel, w.stride, w.pad, w.dilation, w.out, count_include_pad,
                         fmt,
                         [w, is_max, count_include_pad, xs](const Tensor& xv, const Tensor& g) {
                           return pool_grad(is_max, w, count_include_pad, xv, g, xs);
                         });
}

std::tuple<Tensor, Tensor> max_pool(const Tensor& input, int64_t nd,
                                    const std::vector<int64_t>& kernel_size,
                                    const std::vector<int64_t>& stride,
                                    const std::vector<int64_t>& padding,
                                    const std::vector<int64_t>& dilation, bool ceil_mode,
                                    bool with_indices) {
  const char* op = pool_name(kMax, nd);
  Window w;
  bool unbatched = false;
  Tensor x =
      prepare(input, nd, op, true, kernel_size, stride, padding, dilation, ceil_mode, w, unbatched);
  const int64_t n = x.size(0), c = x.size(1);
  const Shape os = out_shape(x, w, unbatched);
  if (!with_indices) {
    const Tensor y = fused_pool(x, w, true, false, format_of(x, unbatched));
    if (y.defined()) return {unbatched ? y.squeeze(0) : y, Tensor()};
  }
  // -inf (cast to the dtype's lowest for integers) never beats an in-bounds value.
  Tensor cols = ops::im2col(x, w.kernel, w.stride, w.pad, w.dilation, w.out,
                            -std::numeric_limits<double>::infinity());
  // The values are gathered at torch's taps, so the gradient goes where torch sends it.
  const Tensor c4 = cols.view({n, c, w.k, w.l});
  // Without a gradient to route the value is the plain maximum (NaN when a tap is NaN, as the
  // taps' value): no index tensors, so devices without int64 (WebGPU) pool too.
  if (!with_indices && !(is_grad_enabled() && x.requires_grad()))
    return {keep_format(amax(c4, {2}).reshape(os), x), Tensor()};
  const Tensor taps = max_taps(c4, w);
  const Tensor values = gather(c4, 2, taps.unsqueeze(2)).squeeze(2);
  if (!with_indices) return {keep_format(values.reshape(os), x), Tensor()};
  // Tap -> flat input index. A padding tap wins only when every in-bounds value is the lowest;
  // torch then reports the window's first in-bounds element, so padding taps map there.
  const size_t nd_ = size_t(nd);
  std::vector<int64_t> table(size_t(w.k * w.l));
  std::vector<int64_t> kk(nd_), oo(nd_);
  for (int64_t li = 0; li < w.l; ++li) {
    for (int64_t r = li, d = nd - 1; d >= 0; --d) {
      oo[size_t(d)] = r % w.out[size_t(d)];
      r /= w.out[size_t(d)];
    }
    int64_t first = 0;
    for (size_t d = 0; d < nd_; ++d) {
      int64_t p = oo[d] * w.stride[d] - w.pad[d];
      while (p < 0) p += w.dilation[d];
      first = first * w.in[d] + p;
    }
    for (int64_t ki = 0; ki < w.k; ++ki) {
      for (int64_t r = ki, d = nd - 1; d >= 0; --d) {
        kk[size_t(d)] = r % w.kernel[size_t(d)];
        r /= w.kernel[size_t(d)];
      }
      int64_t flat = 0;
      bool inside = true;
      for (size_t d = 0; d < nd_; ++d) {
        const int64_t p = oo[d] * w.stride[d] - w.pad[d] + kk[d] * w.dilation[d];
        inside = inside && p >= 0 && p < w.in[d];
        flat = flat * w.in[d] + p;
      }
      table[size_t(ki * w.l + li)] = inside ? flat : first;
    }
  }
  Tensor tab = from_vector<int64_t>(table, {1, 1, w.k, w.l}, x.device()).expand({n, c, w.k, w.l});
  Tensor idx = gather(tab, 2, taps.unsqueeze(2)).squeeze(2);
  return {keep_format(values.reshape(os), x), keep_format(idx.reshape(os), x)};
}

Tensor avg_pool(const Tensor& input, int64_t nd, const std::vector<int64_t>& kernel_size,
                const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  const char* op = pool_name(kAvg, nd);
  Window w;
  bool unbatched = false;
  Tensor x =
      prepare(input, nd, op, false, kernel_size, stride, padding, {1}, ceil_mode, w, unbatched);
  EMBER_CHECK(!divisor_override || *divisor_override != 0, op, "divisor_override must be non-zero");
  const int64_t n = x.size(0), c = x.size(1);
  const Shape os = out_shape(x, w, unbatched);
  if (!divisor_override) {
    const Tensor y = fused_pool(x, w, false, count_include_pad, format_of(x, unbatched));
    if (y.defined()) return unbatched ? y.squeeze(0) : y;
  }
  const std::vector<double> div = avg_divisors(w, count_include_pad, divisor_override);
  // Sum and divide in f32 for f16/bf16 so the result is rounded once, as torch.
  const DType ct = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
  Tensor cols = ops::im2col(x, w.kernel, w.stride, w.pad, w.dilation, w.out, 0);
  Tensor s = sum(ember::detail::cast(cols.view({n, c, w.k, w.l}), ct), {2});
  Tensor y = s / divisor_table(div, ct, x.device());
  return keep_format(ember::detail::cast(y, x.dtype()).reshape(os), x);
}

std::tuple<Tensor, Tensor> adaptive(const Tensor& input, int64_t nd, bool is_max,
                                    const std::vector<int64_t>& output_size, bool with_indices) {
  const char* op = pool_name(is_max ? kAdaptiveMax : kAdaptiveAvg, nd);
  bool unbatched = false;
  Tensor x = detail::batched(input, nd, op, unbatched);
  if (is_max) {
    EMBER_CHECK(!is_bool(x.dtype()), op, "bool input is not supported, got ",
                ember::detail::describe(input));
  } else {
    EMBER_CHECK(is_floating(x.dtype()), op,
                "expected a floating-point input (f32, f64, f16, bf16), got ",
                ember::detail::describe(input));
  }
  for (int64_t d = 1; d < x.dim(); ++d)
    EMBER_CHECK(x.size(d) > 0, op, "expected non-empty non-batch dims, got input ",
                shape_str(input.shape()));
  auto o = expand_param(output_size, nd, op, "output_size");
  detail::check_min(o, 0, op, "output_size");
  if (!is_max && std::all_of(o.begin(), o.end(), [](int64_t v) { return v == 1; })) {
    // Global average pooling is a mean over the spatial dims (the backend's fast reduction).
    std::vector<int64_t> dims;
    for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
    Tensor y = keep_format(mean(x, dims, true), x);
    return {unbatched ? y.squeeze(0) : y, Tensor()};
  }
  auto [y, idx] = ops::adaptive_pool(x, o, is_max, with_indices);
  y = keep_format(y, x);
  if (idx.defined()) idx = keep_format(idx, x);
  if (unbatched) {
    y = y.squeeze(0);
    if (idx.defined()) idx = idx.squeeze(0);
  }
  return {y, idx};
}

}  // namespace

#define EMBER_MAX_POOL(ND)                                                                 \
  Tensor max_pool##ND##d(const Tensor& input, std::vector<int64_t> kernel_size,            \
                         std::vector<int64_t> stride, std::vector<int64_t> padding,        \
                         std::vector<int64_t> dilation, bool ceil_mode) {                  \
    return std::get<0>(                                                                    \
        max_pool(input, ND, kernel_size, stride, padding, dilation, ceil_mode, false));    \
  }                                                                                        \
  std::tuple<Tensor, Tensor> max_pool##ND##d_with_indices(                                 \
      const Tensor& input, std::vector<int64_t> kernel_size, std::vector<int64_t> stride,  \
      std::vector<int64_t> padding, std::vector<int64_t> dilation, bool ceil_mode) {       \
    return max_pool(input, ND, kernel_size, stride, padding, dilation, ceil_mode, true);   \
  }                                                                                        \
  Tensor adaptive_avg_pool##ND##d(const Tensor& input, std::vector<int64_t> output_size) { \
    return std::get<0>(adaptive(input, ND, false, output_size, false));                    \
  }                                                                                        \
  Tensor adaptive_max_pool##ND##d(const Tensor& input, std::vector<int64_t> output_size) { \
    return std::get<0>(adaptive(input, ND, true, output_size, false));                     \
  }                                                                                        \
  std::tuple<Tensor, Tensor> adaptive_max_pool##ND##d_with_indices(                        \
      const Tensor& input, std::vector<int64_t> output_size) {                             \
    return adaptive(input, ND, true, output_size, true);                                   \
  }

EMBER_MAX_POOL(1)
EMBER_MAX_POOL(2)
EMBER_MAX_POOL(3)
#undef EMBER_MAX_POOL

Tensor avg_pool1d(const Tensor& input, std::vector<int64_t> kernel_size,
                  std::vector<int64_t> stride, std::vector<int64_t> padding, bool ceil_mode,
                  bool count_include_pad) {
  return avg_pool(input, 1, kernel_size, stride, padding, ceil_mode, count_include_pad,
                  std::nullopt);
}
Tensor avg_pool2d(const Tensor& input, std::vector<int64_t> kernel_size,
                  std::vector<int64_t> stride, std::vector<int64_t> padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  return avg_pool(input, 2, kernel_size, stride, padding, ceil_mode, count_include_pad,
                  divisor_override);
}
Tensor avg_pool3d(const Tensor& input, std::vector<int64_t> kernel_size,
                  std::vector<int64_t> stride, std::vector<int64_t> padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  return avg_pool(input, 3, kernel_size, stride, padding, ceil_mode, count_include_pad,
                  divisor_override);
}

}  // namespace ember::nn::functional
