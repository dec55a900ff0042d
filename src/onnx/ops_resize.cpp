// ONNX ops that resample through tables of taps: Resize / Upsample (every mode and coordinate
// transformation), GridSample and RoiAlign (ONNX operators spec, onnx.ai/onnx/operators). The
// source positions and weights are computed on the host in double, following the spec's formulas
// (and, where the spec leaves a detail open, ONNX's reference implementation that made the
// backend tests); the values are gathered and summed with Ember ops on the input's device.
#include <algorithm>
#include <array>
#include <cmath>
#include <memory>

#include "onnx/ops.h"

namespace ember::onnx::detail {
namespace {

// Weighted sums run in f32 (f64 for f64 input); results return to the input's dtype (integers
// truncate, as the reference's astype).
DType compute_dtype(DType t) { return t == DType::f64 ? DType::f64 : DType::f32; }

Tensor weights_tensor(const std::vector<double>& w, Shape shape, DType ct, Device dev) {
  if (ct == DType::f64) return from_vector<double>(w, std::move(shape), dev);
  return from_vector<float>(std::vector<float>(w.begin(), w.end()), std::move(shape), dev);
}

Tensor index_tensor(const std::vector<int64_t>& v, Device dev) {
  return from_vector<int64_t>(v, {int64_t(v.size())}, dev);
}

// out[g] = sum (or max) over t < taps of w[g * taps + t] * rows[idx[g * taps + t]]:
// rows [M, C] -> [G, C], in the rows' dtype.
Tensor weighted_rows(const Tensor& rows, const std::vector<int64_t>& idx,
                     const std::vector<double>& w, int64_t taps, bool max) {
  const DType ct = compute_dtype(rows.dtype());
  const int64_t g = int64_t(idx.size()) / taps, c = rows.size(1);
  Tensor v = index_select(rows, 0, index_tensor(idx, rows.device())).to(ct).reshape({g, taps, c});
  Tensor p = mul(v, weights_tensor(w, {g, taps, 1}, ct, rows.device()));
  return (max ? amax(p, {1}) : sum(p, {1})).to(rows.dtype());
}

// Weights of the cubic convolution (Keys) taps at -1, 0, 1, 2 around position t in [0, 1].
std::array<double, 4> cubic_weights(double t, double a) {
  auto inner = [a](double x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };        // |x| <= 1
  auto outer = [a](double x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };  // 1..2
  return {outer(t + 1), inner(t), inner(1 - t), outer(2 - t)};
}

// ---- Resize / Upsample ----

struct ResizeMode {
  std::string mode, ctm, nearest;
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false;
};

// Upsample (7, 9) and Resize-10: asymmetric coordinates, nearest rounds down.
bool legacy(const Node& n) { return n.proto.op_type() == "Upsample" || n.opset < 11; }

ResizeMode resize_mode(const Node& n) {
  ResizeMode m;
  m.mode = n.s("mode", "nearest");
  if (m.mode == "bilinear") m.mode = "linear";
  if (legacy(n)) {
    m.ctm = "asymmetric";
    m.nearest = "floor";
    return m;
  }
  m.ctm = n.s("coordinate_transformation_mode", "half_pixel");
  m.nearest = n.s("nearest_mode", "round_prefer_floor");
  m.cubic_a = n.f("cubic_coeff_a", -0.75);
  m.extrapolation = n.f("extrapolation_value", 0.0);
  m.exclude_outside = n.i("exclude_outside", 0) != 0;
  return m;
}

std::string resize_check(const Node& n) {
  const ResizeMode m = resize_mode(n);
  if (m.mode != "nearest" && m.mode != "linear" && m.mode != "cubic") return "mode " + m.mode;
  if (legacy(n)) {
    if (m.mode == "cubic") return "mode cubic before opset 11";
    return n.only_attrs({"mode", "scales"});
  }
  static const char* ctms[] = {"half_pixel", "pytorch_half_pixel",   "align_corners",
                               "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  if (std::find(std::begin(ctms), std::end(ctms), m.ctm) == std::end(ctms))
    return "coordinate_transformation_mode " + m.ctm;
  static const char* nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  if (std::find(std::begin(nms), std::end(nms), m.nearest) == std::end(nms))
    return "nearest_mode " + m.nearest;
  return n.only_attrs({"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a",
                       "exclude_outside", "extrapolation_value"});
}

// One resized axis: out[o] = sum_t w[o * taps + t] * in[idx[o * taps + t]], or the extrapolation
// value where outside[o] (tf_crop_and_resize).
struct AxisTaps {
  int64_t taps = 1;
  std::vector<int64_t> idx;
  std::vector<double> w;
  std::vector<char> outside;
  bool any_outside = false;

  // Whether every output takes the input at its own index.
  bool identity(int64_t in) const {
    if (any_outside || int64_t(outside.size()) != in) return false;
    for (size_t k = 0; k < idx.size(); ++k)
      if (w[k] != 0 && (w[k] != 1 || idx[k] != int64_t(k) / taps)) return false;
    return true;
  }
};

// Source coordinate of output index x (spec: coordinate_transformation_mode). len_out is the
// resized length before flooring (in * scale with scales, the size with sizes), as in ONNX's
// reference; roi0/roi1 are the axis' roi start and end (tf_crop_and_resize).
double source_coord(const ResizeMode& m, double x, int64_t in, double len_out, double scale,
                    double roi0, double roi1) {
  const double last = double(in - 1);
  if (m.ctm == "asymmetric") return x / scale;
  if (m.ctm == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (m.ctm == "align_corners") return len_out == 1 ? 0 : x * last / (len_out - 1);
  if (m.ctm == "pytorch_half_pixel") return len_out > 1 ? (x + 0.5) / scale - 0.5 : 0;
  if (m.ctm == "tf_crop_and_resize")
    return len_out > 1 ? roi0 * last + x * (roi1 - roi0) * last / (len_out - 1)
                       : 0.5 * (roi0 + roi1) * last;
  return (x + 0.5) / scale - 0.5;  // half_pixel
}

AxisTaps resize_axis(const ResizeMode& m, int64_t in, int64_t out, double scale, double len_out,
                     double roi0, double roi1) {
  AxisTaps a;
  // The spec's neighbourhood: 2 taps (nearest chooses one of them), 4 for cubic.
  const int64_t n = m.mode == "cubic" ? 4 : 2;
  a.taps = m.mode == "nearest" ? 1 : n;
  a.outside.assign(size_t(out), 0);
  for (int64_t o = 0; o < out; ++o) {
    const double xs = source_coord(m, double(o), in, len_out, scale, roi0, roi1);
    if (m.ctm == "tf_crop_and_resize" && !(xs >= 0 && xs <= double(in - 1))) {
      a.outside[size_t(o)] = a.any_outside = true;
      a.idx.insert(a.idx.end(), size_t(a.taps), 0);
      a.w.insert(a.w.end(), size_t(a.taps), 0.0);
      continue;
    }
    // ratio in (0, 1]: an integral position is the right tap of its pair.
    // (Far outside, the window is clamped below anyway: keep the integers small.)
    const double xc = std::isfinite(xs) ? std::clamp(xs, -double(in) - 8, 2.0 * double(in) + 8) : 0;
    const double fl = std::floor(xc);
    double r = xc - fl;
    int64_t base = int64_t(fl);
    if (r == 0) {
      r = 1;
      base -= 1;
    }
    // The window starts at base (base - 1 for cubic) and stays within an edge padding of n / 2.
    const int64_t start = std::clamp<int64_t>(base - (n == 4 ? 1 : 0), -n / 2, in + n / 2 - n);
    std::array<double, 4> c{};
    if (m.mode == "nearest") {
      bool right = r == 1;
      if (!right) {
        if (m.nearest == "round_prefer_floor")
          right = r > 0.5;
        else if (m.nearest == "round_prefer_ceil")
          right = r >= 0.5;
        else
          right = m.nearest == "ceil";
      }
      a.idx.push_back(std::clamp<int64_t>(start + (right ? 1 : 0), 0, in - 1));
      a.w.push_back(1.0);
      continue;
    }
    if (n == 2)
      c = {1 - r, r, 0, 0};
    else
      c = cubic_weights(r, m.cubic_a);
    if (m.exclude_outside) {  // taps outside the input weigh 0, the rest renormalised
      double total = 0;
      for (int64_t t = 0; t < n; ++t) {
        if (start + t < 0 || start + t >= in) c[size_t(t)] = 0;
        total += c[size_t(t)];
      }
      for (int64_t t = 0; t < n; ++t) c[size_t(t)] /= total;
    }
    for (int64_t t = 0; t < n; ++t) {
      a.idx.push_back(std::clamp<int64_t>(start + t, 0, in - 1));  // edge padding
      a.w.push_back(c[size_t(t)]);
    }
  }
  return a;
}

// Applies the taps of one axis `dim` of x.
Tensor resize_dim(const Tensor& x, int64_t dim, const AxisTaps& a, double extrapolation) {
  const Device dev = x.device();
  const int64_t out = int64_t(a.outside.size());
  Tensor y = index_select(x, dim, index_tensor(a.idx, dev));
  Shape ws = {out, a.taps};
  ws.resize(size_t(x.dim() - dim + 1), 1);  // [out, taps, 1...] against [..., out, taps, ...]
  if (a.taps > 1) {
    Shape s = x.shape();
    s[size_t(dim)] = out;
    s.insert(s.begin() + dim + 1, a.taps);
    y = sum(mul(y.reshape(s), weights_tensor(a.w, ws, x.dtype(), dev)), {dim + 1});
  }
  if (a.any_outside) {
    ws.erase(ws.begin() + 1);
    std::unique_ptr<bool[]> mask(new bool[size_t(out)]);
    for (int64_t o = 0; o < out; ++o) mask[size_t(o)] = a.outside[size_t(o)] != 0;
    Tensor m = from_vector<bool>(std::span<const bool>(mask.get(), size_t(out)), ws, dev);
    y = where(m, Scalar(extrapolation), y);
  }
  return y;
}

// Resize (10, 11, 13) and Upsample (7, 9): the output size of each axis from sizes or from
// floor(in * scale), then the axes that change, one after the other (the spec's interpolation is
// separable).
Tensors resize(const Node& n, const Tensors& in) {
  const Tensor& x = in[0];
  const ResizeMode m = resize_mode(n);
  const int64_t rank = x.dim();
  auto given = [&](size_t k) { return in.size() > k && in[k].defined() && in[k].numel() > 0; };
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  if (legacy(n)) {
    scales = n.has("scales") ? n.floats("scales") : to_doubles(in.at(1));
  } else {
    if (given(1)) roi = to_doubles(in[1]);
    if (given(2)) scales = to_doubles(in[2]);
    if (given(3)) sizes = to_ints(in[3]);
  }
  const char* tag = "onnx.Resize";
  EMBER_CHECK(scales.empty() != sizes.empty(), tag, "exactly one of scales and sizes is needed");
  EMBER_CHECK(int64_t(scales.size() + sizes.size()) == rank, tag, "scales/sizes of length ",
              scales.size() + sizes.size(), " for an input of rank ", rank);
  const bool crop = m.ctm == "tf_crop_and_resize";
  EMBER_CHECK(!crop || int64_t(roi.size()) == 2 * rank, tag, "tf_crop_and_resize needs a roi of ",
              2 * rank, " values, got ", roi.size());
  // The output's size, checked before any work: huge or non-finite scales (1e9, inf) would
  // overflow the lengths or exhaust memory instead of failing.
  double total = 1;
  for (int64_t d = 0; d < rank; ++d) {
    const double o = sizes.empty() ? std::floor(scales[size_t(d)] * double(x.size(d)))
                                   : double(sizes[size_t(d)]);
    EMBER_CHECK(std::isfinite(o), tag, "scale ", scales[size_t(d)], " of axis ", d,
                " gives no finite size");
    total *= std::max(o, 0.0);
  }
  constexpr double kMaxElements = double(int64_t(1) << 36);
  EMBER_CHECK(total <= kMaxElements, tag, "the output of ", shape_str(x.shape()), " would hold ",
              total, " elements (more than 2^36): check the scales or sizes");
  const bool weighted = m.mode != "nearest";
  Tensor y = weighted ? x.to(compute_dtype(x.dtype())) : x;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t len = x.size(d);
    double scale, len_out;
    int64_t out;
    if (sizes.empty()) {
      scale = scales[size_t(d)];
      EMBER_CHECK(scale > 0, tag, "scale ", scale, " of axis ", d, " is not positive");
      len_out = scale * double(len);
      out = int64_t(std::floor(len_out));
    } else {
      out = sizes[size_t(d)];
      EMBER_CHECK(out >= 0, tag, "size ", out, " of axis ", d, " is negative");
      scale = double(out) / double(len);
      len_out = double(out);
    }
    EMBER_CHECK(len > 0 || out == 0, tag, "cannot resize an empty axis ", d, " to ", out);
    const AxisTaps a = resize_axis(m, len, out, scale, len_out, crop ? roi[size_t(d)] : 0,
                                   crop ? roi[size_t(d + rank)] : 1);
    if (!a.identity(len)) y = resize_dim(y, d, a, m.extrapolation);
  }
  return {y.to(x.dtype())};
}

// ---- GridSample (opset 16, as torch.nn.functional.grid_sample; opset 20's names too) ----

struct GridMode {
  enum { nearest, linear, cubic } kind = linear;
  enum { zeros, border, reflection } pad = zeros;
  bool align = false;
};

std::string grid_check(const Node& n) {
  const std::string mode = n.s("mode", "bilinear"), pad = n.s("padding_mode", "zeros");
  if (mode != "bilinear" && mode != "linear" && mode != "nearest" && mode != "bicubic" &&
      mode != "cubic")
    return "mode " + mode;
  if (pad != "zeros" && pad != "border" && pad != "reflection") return "padding_mode " + pad;
  return n.only_attrs({"align_corners", "mode", "padding_mode"});
}

// Reflects x into [twice_lo / 2, twice_hi / 2] (torch's reflect_coordinates).
double reflect(double x, double twice_lo, double twice_hi) {
  if (twice_lo == twice_hi) return 0;
  const double lo = twice_lo / 2, span = (twice_hi - twice_lo) / 2;
  x = std::fabs(x - lo);
  const double extra = std::fmod(x, span);
  return std::fmod(std::floor(x / span), 2.0) == 0 ? extra + lo : span - extra + lo;
}

// padding_mode border / reflection: a coordinate moved into [0, len - 1].
double pad_coord(double x, int64_t len, const GridMode& m) {
  if (m.pad == GridMode::zeros) return x;
  if (m.pad == GridMode::reflection)
    x = m.align ? reflect(x, 0, 2.0 * double(len - 1)) : reflect(x, -1, 2.0 * double(len) - 1);
  return std::clamp(x, 0.0, double(len - 1));
}

// The taps (index, weight) of normalised coordinate g in [-1, 1] over a dim of length len, a
// fixed number per mode; a tap outside [0, len) weighs 0 (padding_mode zeros).
void grid_taps(double g, int64_t len, const GridMode& m,
               std::vector<std::pair<int64_t, double>>& t) {
  t.clear();
  const double n = double(len);
  double x = m.align ? (g + 1) / 2 * (n - 1) : ((g + 1) * n - 1) / 2;
  const int count = m.kind == GridMode::nearest ? 1 : m.kind == GridMode::linear ? 2 : 4;
  if (!std::isfinite(x)) {
    t.assign(size_t(count), {0, 0.0});
    return;
  }
  x = std::clamp(x, -1e12, 1e12);
  auto put = [&](double i, double w) {
    const bool in = i >= 0 && i < n;
    t.push_back({in ? int64_t(i) : 0, in ? w : 0.0});
  };
  if (m.kind == GridMode::nearest) {
    put(std::nearbyint(pad_coord(x, len, m)), 1);  // ties to even, as torch
  } else if (m.kind == GridMode::linear) {
    x = pad_coord(x, len, m);
    const double fl = std::floor(x);
    put(fl, 1 - (x - fl));
    put(fl + 1, x - fl);
  } else {  // the padding moves each of the 4 taps, not the coordinate
    const double fl = std::floor(x);
    const auto c = cubic_weights(x - fl, -0.75);
    for (int k = 0; k < 4; ++k) put(std::trunc(pad_coord(fl - 1 + k, len, m)), c[size_t(k)]);
  }
}

// X [N, C, D1..Dk], grid [N, O1..Ok, k] (x, y, z: the last spatial dim first) -> [N, C, O1..Ok].
Tensors grid_sample(const Node& n, const Tensors& in) {
  const Tensor& x = in[0];
  const std::string mode = n.s("mode", "bilinear"), pad = n.s("padding_mode", "zeros");
  GridMode m;
  m.kind = mode == "nearest"                      ? GridMode::nearest
           : mode == "bicubic" || mode == "cubic" ? GridMode::cubic
                                                  : GridMode::linear;
  m.pad = pad == "border"       ? GridMode::border
          : pad == "reflection" ? GridMode::reflection
                                : GridMode::zeros;
  m.align = n.i("align_corners", 0) != 0;
  const int64_t k = x.dim() - 2, batch = x.size(0), ch = x.size(1);
  const Tensor& grid = in[1];
  EMBER_CHECK(k >= 1 && grid.dim() == k + 2 && grid.size(0) == batch && grid.size(-1) == k,
              "onnx.GridSample", "grid ", shape_str(grid.shape()), " does not fit input ",
              shape_str(x.shape()));
  int64_t plane = 1, points = 1;
  for (int64_t d = 0; d < k; ++d) {
    plane *= x.size(d + 2);
    points *= grid.size(d + 1);
  }
  const std::vector<double> g = to_doubles(grid);
  // Per point, the cartesian product of the dims' taps.
  auto per = std::vector<std::vector<std::pair<int64_t, double>>>(size_t(k));
  std::vector<int64_t> idx;
  std::vector<double> w;
  int64_t taps = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t p = 0; p < points; ++p) {
      const double* gp = &g[size_t((b * points + p) * k)];
      for (int64_t d = 0; d < k; ++d) grid_taps(gp[k - 1 - d], x.size(d + 2), m, per[size_t(d)]);
      taps = 1;
      for (const auto& t : per) taps *= int64_t(t.size());
      for (int64_t c = 0; c < taps; ++c) {
        int64_t pos = 0, rest = c;
        double wt = 1;
        for (int64_t d = 0; d < k; ++d) {
          const auto& td = per[size_t(d)];
          const auto& [i, wi] = td[size_t(rest % int64_t(td.size()))];
          rest /= int64_t(td.size());
          pos = pos * x.size(d + 2) + i;
          wt *= wi;
        }
        idx.push_back(b * plane + pos);
        w.push_back(wt);
      }
    }
  Shape out_shape = {batch, ch};
  for (int64_t d = 0; d < k; ++d) out_shape.push_back(grid.size(d + 1));
  if (idx.empty()) return {zeros(out_shape, {x.dtype(), x.device()})};
  Tensor rows = x.reshape({batch, ch, plane}).permute({0, 2, 1}).reshape({batch * plane, ch});
  Tensor y = weighted_rows(rows, idx, w, taps, false);
  return {y.reshape({batch, points, ch}).permute({0, 2, 1}).reshape(out_shape)};
}

// ---- RoiAlign (opsets 10, 16) ----

std::string roi_align_check(const Node& n) {
  const std::string mode = n.s("mode", "avg");
  const std::string ctm = n.s("coordinate_transformation_mode", "half_pixel");
  if (mode != "avg" && mode != "max") return "mode " + mode;
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    return "coordinate_transformation_mode " + ctm;
  return n.only_attrs({"coordinate_transformation_mode", "mode", "output_height", "output_width",
                       "sampling_ratio", "spatial_scale"});
}

// X [N, C, H, W], rois [R, 4] (x1, y1, x2, y2), batch_indices [R] -> [R, C, out_h, out_w]: each
// bin averages (or maxes) bilinear samples on a regular grid, as the spec's reference. Max mode
// takes the max of the weighted corner values of every sample, as ONNX's reference and ORT.
Tensors roi_align(const Node& n, const Tensors& in) {
  const Tensor& x = in[0];
  const char* tag = "onnx.RoiAlign";
  EMBER_CHECK(x.dim() == 4, tag, "input must be [N, C, H, W], got ", shape_str(x.shape()));
  const int64_t batch = x.size(0), ch = x.size(1), h = x.size(2), wd = x.size(3);
  const std::vector<double> rois = to_doubles(in[1]);
  const std::vector<int64_t> bi = to_ints(in[2]);
  const int64_t nr = int64_t(bi.size());
  EMBER_CHECK(int64_t(rois.size()) == 4 * nr, tag, "rois ", shape_str(in[1].shape()), " for ", nr,
              " batch indices");
  const int64_t oh = n.i("output_height", 1), ow = n.i("output_width", 1);
  const int64_t ratio = n.i("sampling_ratio", 0);
  const double scale = n.f("spatial_scale", 1.0);
  const bool half =
      n.opset >= 16 && n.s("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  const bool max = n.s("mode", "avg") == "max";
  // Per bin, its taps (flat position in [N * H * W], weight); padded to the longest below.
  std::vector<std::vector<std::pair<int64_t, double>>> bins;
  bins.reserve(size_t(nr * oh * ow));
  size_t taps = 1;
  for (int64_t r = 0; r < nr; ++r) {
    EMBER_CHECK(bi[size_t(r)] >= 0 && bi[size_t(r)] < batch, tag, "batch index ", bi[size_t(r)],
                " out of [0, ", batch, ")");
    const double off = half ? 0.5 : 0.0, *roi = &rois[size_t(4 * r)];
    const double x0 = roi[0] * scale - off, y0 = roi[1] * scale - off;
    double rw = roi[2] * scale - off - x0, rh = roi[3] * scale - off - y0;
    if (!half) {  // malformed rois forced to 1x1
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bh = rh / double(oh), bw = rw / double(ow);
    const int64_t gh = ratio > 0 ? ratio : int64_t(std::ceil(bh));
    const int64_t gw = ratio > 0 ? ratio : int64_t(std::ceil(bw));
    const double count = double(std::max<int64_t>(gh * gw, 1));
    const int64_t base = bi[size_t(r)] * h * wd;
    for (int64_t ph = 0; ph < oh; ++ph)
      for (int64_t pw = 0; pw < ow; ++pw) {
        auto& t = bins.emplace_back();
        for (int64_t iy = 0; iy < gh; ++iy) {
          double y = y0 + double(ph) * bh + (double(iy) + 0.5) * bh / double(gh);
          for (int64_t ix = 0; ix < gw; ++ix) {
            double xx = x0 + double(pw) * bw + (double(ix) + 0.5) * bw / double(gw);
            if (y < -1.0 || y > double(h) || xx < -1.0 || xx > double(wd)) {
              t.insert(t.end(), 4, {base, 0.0});  // an empty sample: 0
              continue;
            }
            double yy = std::max(y, 0.0);
            xx = std::max(xx, 0.0);
            int64_t ylo = int64_t(yy), xlo = int64_t(xx), yhi = ylo + 1, xhi = xlo + 1;
            if (ylo >= h - 1) yy = double(yhi = ylo = h - 1);
            if (xlo >= wd - 1) xx = double(xhi = xlo = wd - 1);
            const double ly = yy - double(ylo), lx = xx - double(xlo);
            const double hy = 1 - ly, hx = 1 - lx, k = max ? 1.0 : 1.0 / count;
            t.push_back({base + ylo * wd + xlo, hy * hx * k});
            t.push_back({base + ylo * wd + xhi, hy * lx * k});
            t.push_back({base + yhi * wd + xlo, ly * hx * k});
            t.push_back({base + yhi * wd + xhi, ly * lx * k});
          }
        }
        if (t.empty()) t.push_back({base, 0.0});  // no samples: 0
        if (!max) {  // merge the taps of one position (a sum; fewer rows to gather)
          std::sort(t.begin(), t.end());
          size_t j = 0;
          for (size_t i = 1; i < t.size(); ++i)
            if (t[i].first == t[j].first)
              t[j].second += t[i].second;
            else
              t[++j] = t[i];
          t.resize(j + 1);
        }
        taps = std::max(taps, t.size());
      }
  }
  std::vector<int64_t> idx;
  std::vector<double> w;
  idx.reserve(bins.size() * taps);
  w.reserve(bins.size() * taps);
  for (const auto& t : bins)
    for (size_t k = 0; k < taps; ++k) {
      // Padding: a tap of weight 0 for the sum, a repeat of the first for the max.
      const auto& [i, wi] = k < t.size() ? t[k] : t[0];
      idx.push_back(i);
      w.push_back(k < t.size() || max ? wi : 0.0);
    }
  const Shape out_shape = {nr, ch, oh, ow};
  if (idx.empty()) return {zeros(out_shape, {x.dtype(), x.device()})};
  Tensor rows = x.permute({0, 2, 3, 1}).reshape({batch * h * wd, ch});
  Tensor y = weighted_rows(rows, idx, w, int64_t(taps), max);
  return {y.reshape({nr, oh, ow, ch}).permute({0, 3, 1, 2}).contiguous()};
}

}  // namespace

void register_resize_ops(std::map<std::string, OpImpl>& r) {
  r["Resize"] = {resize_check, resize};
  r["Upsample"] = {resize_check, resize};
  r["GridSample"] = {grid_check, grid_sample};
  r["RoiAlign"] = {roi_align_check, roi_align};
}

}  // namespace ember::onnx::detail
