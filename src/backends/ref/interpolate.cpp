// Reference resampling (src/ir/ops.h Interpolate) with torch 1.13's CPU index arithmetic
// (aten/src/ATen/native/UpSample.h): scales and source indices in float (double for f64 input),
// legacy nearest indices in float, separable taps summed outermost dim first.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/ref/dispatch.h"
#include "backends/ref/kernels.h"

namespace ember::ref {
namespace {

template <typename W>
W area_scale(int64_t in, int64_t out, bool align_corners, double scale) {
  if (align_corners) return out > 1 ? W(in - 1) / W(out - 1) : W(0);
  return scale > 0 ? W(1.0 / scale) : W(in) / W(out);
}

template <typename W>
W source_index(W scale, int64_t dst, bool align_corners, bool cubic) {
  if (align_corners) return scale * W(dst);
  const W src = scale * (W(dst) + W(0.5)) - W(0.5);
  return (!cubic && src < W(0)) ? W(0) : src;
}

template <typename W>
void cubic_coefficients(W coeffs[4], W t) {
  const W A = W(-0.75);
  auto conv1 = [&](W x) { return ((A + W(2)) * x - (A + W(3))) * x * x + W(1); };
  auto conv2 = [&](W x) { return ((A * x - W(5) * A) * x + W(8) * A) * x - W(4) * A; };
  coeffs[0] = conv2(t + W(1));
  coeffs[1] = conv1(t);
  coeffs[2] = conv1(W(1) - t);
  coeffs[3] = conv2(W(1) - t + W(1));
}

// Per output position of one dim: `taps` input indices and weights.
template <typename W>
struct Taps {
  int64_t taps = 1;
  std::vector<int64_t> index;
  std::vector<W> weight;
};

template <typename W>
Taps<W> taps_for(ir::InterpMode mode, int64_t in, int64_t out, bool align_corners, double scale) {
  Taps<W> t;
  t.taps = mode == ir::InterpMode::linear ? 2 : mode == ir::InterpMode::cubic ? 4 : 1;
  for (int64_t i = 0; i < out; ++i) {
    if (mode == ir::InterpMode::nearest) {
      int64_t src;
      if (out == in) {
        src = i;
      } else if (out == 2 * in) {
        src = i >> 1;
      } else {
        const float s = scale > 0 ? float(1.0 / scale) : float(in) / float(out);
        src = std::min(int64_t(std::floor(float(i) * s)), in - 1);
      }
      t.index.push_back(src);
      t.weight.push_back(W(1));
    } else if (mode == ir::InterpMode::nearest_exact) {
      const float s = scale > 0 ? float(1.0 / scale) : float(in) / float(out);
      t.index.push_back(std::min(int64_t(std::floor(float((double(i) + 0.5) * s))), in - 1));
      t.weight.push_back(W(1));
    } else if (mode == ir::InterpMode::linear) {
      const W s = area_scale<W>(in, out, align_corners, scale);
      if (out == in) {
        t.index.insert(t.index.end(), {i, i});
        t.weight.insert(t.weight.end(), {W(1), W(0)});
        continue;
      }
      const W real = source_index<W>(s, i, align_corners, false);
      const int64_t i0 = int64_t(real);
      const int64_t i1 = i0 + (i0 < in - 1 ? 1 : 0);
      const W l1 = real - W(i0);
      t.index.insert(t.index.end(), {i0, i1});
      t.weight.insert(t.weight.end(), {W(1) - l1, l1});
    } else {
      const W s = area_scale<W>(in, out, align_corners, scale);
      const W real = source_index<W>(s, i, align_corners, true);
      const int64_t i0 = int64_t(std::floor(real));
      W c[4];
      cubic_coefficients<W>(c, real - W(i0));
      for (int64_t j = 0; j < 4; ++j) {
        t.index.push_back(std::clamp<int64_t>(i0 - 1 + j, 0, in - 1));
        t.weight.push_back(c[j]);
      }
    }
  }
  return t;
}

}  // namespace

void interpolate(const ir::Interpolate& op) {
  const Tensor& s = op.src;
  const Tensor& d = op.dst;
  const int64_t nd = s.dim() - 2;
  dispatch_dtype(s.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using W = std::conditional_t<std::is_same_v<T, double>, double, float>;
    std::vector<Taps<W>> taps;
    for (int64_t k = 0; k < nd; ++k) {
      const double sc = size_t(k) < op.scales.size() ? op.scales[size_t(k)] : 0.0;
      taps.push_back(taps_for<W>(op.mode, s.size(2 + k), d.size(2 + k), op.align_corners, sc));
    }
    const T* sp = ptr<T>(s);
    T* dp = ptr<T>(d);
    const bool weighted = op.mode == ir::InterpMode::linear || op.mode == ir::InterpMode::cubic;
    // Sum over the taps of dims k.., outermost first: out = sum_j w_j * inner_j, as torch.
    std::vector<int64_t> o(static_cast<size_t>(nd));
    auto eval = [&](auto& self, const T* base, int64_t k) -> W {
      const Taps<W>& t = taps[size_t(k)];
      const int64_t at = o[size_t(k)] * t.taps;
      W acc = W(0);
      for (int64_t j = 0; j < t.taps; ++j) {
        const T* p = base + t.index[size_t(at + j)] * s.stride(2 + k);
        const W v = k + 1 == nd ? W(compute_t<T>(*p)) : self(self, p, k + 1);
        acc = j == 0 ? v * t.weight[size_t(at)] : acc + v * t.weight[size_t(at + j)];
      }
      return acc;
    };
    int64_t cells = 1;
    for (int64_t k = 0; k < nd; ++k) cells *= d.size(2 + k);
    for (int64_t n = 0; n < s.size(0); ++n)
      for (int64_t c = 0; c < s.size(1); ++c) {
        const T* base = sp + n * s.stride(0) + c * s.stride(1);
        for (int64_t cell = 0; cell < cells; ++cell) {
          int64_t doff = n * d.stride(0) + c * d.stride(1);
          for (int64_t r = cell, k = nd - 1; k >= 0; --k) {
            o[size_t(k)] = r % d.size(2 + k);
            r /= d.size(2 + k);
            doff += o[size_t(k)] * d.stride(2 + k);
          }
          if (weighted) {
            dp[doff] = scalar_cast<T>(compute_t<T>(eval(eval, base, 0)));
          } else {
            int64_t off = 0;  // nearest: copy the element exactly (integers too)
            for (int64_t k = 0; k < nd; ++k)
              off += taps[size_t(k)].index[size_t(o[size_t(k)])] * s.stride(2 + k);
            dp[doff] = base[off];
          }
        }
      }
  });
}

}  // namespace ember::ref
