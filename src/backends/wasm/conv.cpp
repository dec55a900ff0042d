// 2-d f32 im2col (ir::Im2col), the forward convolution it feeds (ir::Conv: im2col of each image
// into a buffer, then the SIMD GEMM weight [C_out, C_in K] @ columns [C_in K, L], bias added
// as the composite adds it: the composite's bits) and max pooling (ir::Pool), with a SIMD path
// for 2x2 windows of stride 2 (MNIST's CNN). Images are split across threads, or a lone
// image's GEMM is.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/ref/dispatch.h"
#include "backends/wasm/kernels.h"
#include "backends/wasm/thread_pool.h"

#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

namespace ember::wasm {

#ifdef __wasm_simd128__

namespace {

// One image's geometry: src planes [C, H, W] at element strides cs, hs, ws.
struct Geo {
  int64_t C, H, W, cs, hs, ws;
  int64_t KH, KW, SH, SW, PH, PW, DH, DW, OH, OW;
};

// The window positions ow in [lo, hi) whose tap ow * sw + off lies in [0, n).
inline void valid_range(int64_t off, int64_t sw, int64_t n, int64_t out, int64_t& lo, int64_t& hi) {
  lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
  hi = n - 1 - off < 0 ? 0 : (n - 1 - off) / sw + 1;
  lo = std::min(lo, out);
  hi = std::clamp(hi, lo, out);
}

// cols rows (c, kh, kw) for channels [c0, c1), each row OH * OW long, rows `ld` apart.
void im2col_image(const float* src, const Geo& g, int64_t c0, int64_t c1, float pad, float* cols,
                  int64_t ld) {
  for (int64_t c = c0; c < c1; ++c)
    for (int64_t kh = 0; kh < g.KH; ++kh)
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        float* row = cols + ((c * g.KH + kh) * g.KW + kw) * ld;
        const int64_t off = kw * g.DW - g.PW;
        int64_t lo, hi;
        valid_range(off, g.SW, g.W, g.OW, lo, hi);
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          float* d = row + oh * g.OW;
          const int64_t ih = oh * g.SH - g.PH + kh * g.DH;
          if (ih < 0 || ih >= g.H) {
            std::fill(d, d + g.OW, pad);
            continue;
          }
          const float* s = src + c * g.cs + ih * g.hs;
          std::fill(d, d + lo, pad);
          if (g.SW == 1 && g.ws == 1)
            std::copy(s + lo + off, s + hi + off, d + lo);
          else
            for (int64_t ow = lo; ow < hi; ++ow) d[ow] = s[(ow * g.SW + off) * g.ws];
          std::fill(d + hi, d + g.OW, pad);
        }
      }
}

Geo geometry(const Tensor& src, const std::vector<int64_t>& kernel,
             const std::vector<int64_t>& stride, const std::vector<int64_t>& pad,
             const std::vector<int64_t>& dilation, int64_t oh, int64_t ow) {
  return {src.size(1),   src.size(2),   src.size(3), src.stride(1),
          src.stride(2), src.stride(3), kernel[0],   kernel[1],
          stride[0],     stride[1],     pad[0],      pad[1],
          dilation[0],   dilation[1],   oh,          ow};
}

// dst[o] = max over the window's in-bounds taps (window order, the first of equal ones), NaN
// when one is NaN: 2x2 windows of stride 2 without padding, four outputs at a time.
void pool_row_k2s2(const float* r0, const float* r1, float* d, int64_t OW) {
  int64_t ow = 0;
  for (; ow + 4 <= OW; ow += 4) {
    const v128_t a0 = wasm_v128_load(r0 + 2 * ow), a1 = wasm_v128_load(r0 + 2 * ow + 4);
    const v128_t b0 = wasm_v128_load(r1 + 2 * ow), b1 = wasm_v128_load(r1 + 2 * ow + 4);
    const v128_t t[4] = {
        wasm_i32x4_shuffle(a0, a1, 0, 2, 4, 6), wasm_i32x4_shuffle(a0, a1, 1, 3, 5, 7),
        wasm_i32x4_shuffle(b0, b1, 0, 2, 4, 6), wasm_i32x4_shuffle(b0, b1, 1, 3, 5, 7)};
    v128_t best = t[0], nan = wasm_f32x4_ne(t[0], t[0]), any = t[0];
    for (int k = 1; k < 4; ++k) {
      best = wasm_v128_bitselect(t[k], best, wasm_f32x4_gt(t[k], best));
      nan = wasm_v128_or(nan, wasm_f32x4_ne(t[k], t[k]));
      any = wasm_f32x4_add(any, t[k]);
    }
    wasm_v128_store(d + ow, wasm_v128_bitselect(any, best, nan));
  }
  for (; ow < OW; ++ow) {
    const float t[4] = {r0[2 * ow], r0[2 * ow + 1], r1[2 * ow], r1[2 * ow + 1]};
    float best = t[0];
    for (int k = 1; k < 4 && !std::isnan(best); ++k)
      if (std::isnan(t[k]) || t[k] > best) best = t[k];
    d[ow] = best;
  }
}

thread_local std::vector<float> t_cols;

}  // namespace

bool im2col(const ir::Im2col& op) {
  const Tensor &s = op.src, &d = op.dst;
  if (s.dtype() != DType::f32 || op.kernel.size() != 2 || d.is_alias_of(s) || d.stride(2) != 1)
    return false;
  const int64_t N = s.size(0), C = s.size(1), L = d.size(2);
  std::vector<int64_t> out(2);
  for (size_t i = 0; i < 2; ++i)
    out[i] = op.out_size.empty() ? (s.size(int64_t(2 + i)) + 2 * op.pad_begin[i] -
                                    op.dilation[i] * (op.kernel[i] - 1) - 1) /
                                           op.stride[i] +
                                       1
                                 : op.out_size[i];
  if (out[0] < 0 || out[1] < 0 || out[0] * out[1] != L) return false;
  if (N == 0 || C == 0 || L == 0 || d.numel() == 0) return true;
  const Geo g = geometry(s, op.kernel, op.stride, op.pad_begin, op.dilation, out[0], out[1]);
  const float pad = op.pad_value.is_float() ? scalar_cast<float>(op.pad_value.to_double())
                                            : scalar_cast<float>(op.pad_value.to_int());
  const float* sp = ref::ptr<float>(s);
  float* dp = ref::ptr<float>(d);
  const int64_t K = g.KH * g.KW;
  parallel_for(
      N * C, std::max<int64_t>(1, 16384 / std::max<int64_t>(K * L, 1)), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const int64_t n = i / C, c = i % C;
          im2col_image(sp + n * s.stride(0), g, c, c + 1, pad, dp + n * d.stride(0), d.stride(1));
        }
      });
  return true;
}

bool conv(const ir::Conv& op) {
  const Tensor &x = op.src, &w = op.weight, &y = op.dst;
  if (x.dtype() != DType::f32 || w.dtype() != DType::f32 || y.dtype() != DType::f32 ||
      x.dim() != 4 || op.groups != 1 || !y.is_contiguous() || y.is_alias_of(x))
    return false;
  const int64_t N = x.size(0), Ci = x.size(1), Co = w.size(0), KH = w.size(2), KW = w.size(3);
  const int64_t OH = y.size(2), OW = y.size(3), L = OH * OW, CK = Ci * KH * KW;
  // The weight as a [C_out, C_in K] matrix: its last three dims one unit-stride run.
  if (!(w.stride(3) == 1 || KW == 1) || !(w.stride(2) == KW || KH == 1) ||
      !(w.stride(1) == KH * KW || Ci == 1))
    return false;
  if (y.numel() == 0) return true;
  std::vector<float> bias;
  if (op.bias.defined()) {
    const float* bp = ref::ptr<float>(op.bias);
    for (int64_t i = 0; i < Co; ++i) bias.push_back(bp[i * op.bias.stride(0)]);
  }
  const Geo g = geometry(x, {KH, KW}, op.stride, op.pad_begin, op.dilation, OH, OW);
  const float* xp = ref::ptr<float>(x);
  const float* wp = ref::ptr<float>(w);
  float* yp = ref::ptr<float>(y);
  auto image = [&](int64_t n, bool threaded) {
    std::vector<float>& cols = t_cols;
    cols.resize(size_t(CK * L));
    im2col_image(xp + n * x.stride(0), g, 0, Ci, 0.f, cols.data(), L);
    sgemm(Co, L, CK, wp, w.stride(0), 1, cols.data(), L, 1, yp + n * Co * L, L,
          bias.empty() ? nullptr : bias.data(), threaded);
  };
  if (N >= num_threads()) {
    parallel_for(N, 1, [&](int64_t b, int64_t e) {
      for (int64_t n = b; n < e; ++n) image(n, false);
    });
  } else {
    for (int64_t n = 0; n < N; ++n) image(n, true);
  }
  return true;
}

bool pool(const ir::Pool& op) {
  const Tensor &x = op.src, &y = op.dst;
  if (!op.is_max || x.dtype() != DType::f32 || y.dtype() != DType::f32 || x.dim() != 4 ||
      y.is_alias_of(x))
    return false;
  if (y.numel() == 0) return true;
  const int64_t N = x.size(0), C = x.size(1), OH = y.size(2), OW = y.size(3);
  const Geo g = geometry(x, op.kernel, op.stride, op.pad_begin, op.dilation, OH, OW);
  const bool k2s2 = g.KH == 2 && g.KW == 2 && g.SH == 2 && g.SW == 2 && g.PH == 0 && g.PW == 0 &&
                    g.DH == 1 && g.DW == 1 && g.ws == 1 && y.stride(3) == 1;
  const float* xp = ref::ptr<float>(x);
  float* yp = ref::ptr<float>(y);
  parallel_for(N * C, std::max<int64_t>(1, 16384 / std::max<int64_t>(OH * OW * g.KH * g.KW, 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t i = b; i < e; ++i) {
                   const int64_t n = i / C, c = i % C;
                   const float* s = xp + n * x.stride(0) + c * g.cs;
                   float* d = yp + n * y.stride(0) + c * y.stride(1);
                   for (int64_t oh = 0; oh < OH; ++oh) {
                     float* drow = d + oh * y.stride(2);
                     if (k2s2) {
                       pool_row_k2s2(s + 2 * oh * g.hs, s + (2 * oh + 1) * g.hs, drow, OW);
                       continue;
                     }
                     for (int64_t ow = 0; ow < OW; ++ow) {
                       bool first = true;
                       float best = 0.f;
                       for (int64_t kh = 0; kh < g.KH; ++kh) {
                         const int64_t ih = oh * g.SH - g.PH + kh * g.DH;
                         if (ih < 0 || ih >= g.H) continue;
                         for (int64_t kw = 0; kw < g.KW; ++kw) {
                           const int64_t iw = ow * g.SW - g.PW + kw * g.DW;
                           if (iw < 0 || iw >= g.W) continue;
                           const float v = s[ih * g.hs + iw * g.ws];
                           if (first || std::isnan(v) || (v > best && !std::isnan(best))) best = v;
                           first = false;
                         }
                       }
                       drow[ow * y.stride(3)] = best;
                     }
                   }
                 }
               });
  return true;
}

#else

bool im2col(const ir::Im2col&) { return false; }
bool conv(const ir::Conv&) { return false; }
bool pool(const ir::Pool&) { return false; }

#endif

}  // namespace ember::wasm
