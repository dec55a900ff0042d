// The cpu backend's im2col / col2im for 1-d and 2-d windows of f32/f64, threaded over the
// N * C planes. Rows of the column matrix are filled run by run (a memcpy when the stride is 1);
// col2im accumulates each plane in double in the reference kernel's order, so its results equal
// the reference's bit for bit.
#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "backends/ref/dispatch.h"

namespace ember::cpu {

namespace {

using ref::ptr;

// One window geometry in 2-d form (a 1-d op is a 2-d one with H = KH = OH = 1).
struct Geo {
  int64_t n = 0, c = 0, h = 1, w = 1, kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1,
          dw = 1, oh = 1, ow = 1;
  int64_t img_n = 0, img_c = 0, img_h = 0, img_w = 0;  // element strides of the image
};

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// [lo, hi): the output positions whose tap (offset `tap` = k * dil - pad) lands in [0, size).
void valid_range(int64_t out, int64_t size, int64_t stride, int64_t tap, int64_t& lo, int64_t& hi) {
  lo = std::clamp<int64_t>(floor_div(-tap + stride - 1, stride), 0, out);
  hi = std::clamp<int64_t>(floor_div(size - 1 - tap, stride) + 1, lo, out);
}

bool geometry(const Tensor& img, const std::vector<int64_t>& kernel,
              const std::vector<int64_t>& stride, const std::vector<int64_t>& pad,
              const std::vector<int64_t>& dil, const std::vector<int64_t>& out_size, Geo& g) {
  const size_t nd = kernel.size();
  if (nd < 1 || nd > 2 || img.dim() != int64_t(2 + nd)) return false;
  g.n = img.size(0);
  g.c = img.size(1);
  g.img_n = img.stride(0);
  g.img_c = img.stride(1);
  const size_t x = nd - 1;  // the last spatial dim is W
  g.w = img.size(int64_t(2 + x));
  g.img_w = img.stride(int64_t(2 + x));
  g.kw = kernel[x];
  g.sw = stride[x];
  g.pw = pad[x];
  g.dw = dil[x];
  if (nd == 2) {
    g.h = img.size(2);
    g.img_h = img.stride(2);
    g.kh = kernel[0];
    g.sh = stride[0];
    g.ph = pad[0];
    g.dh = dil[0];
  }
  auto out = [&](int64_t s, int64_t k, int64_t st, int64_t p, int64_t d) {
    return std::max<int64_t>(0, (s + 2 * p - d * (k - 1) - 1) / st + 1);
  };
  if (out_size.empty()) {
    g.ow = out(g.w, g.kw, g.sw, g.pw, g.dw);
    if (nd == 2) g.oh = out(g.h, g.kh, g.sh, g.ph, g.dh);
  } else {
    g.ow = out_size[x];
    if (nd == 2) g.oh = out_size[0];
  }
  return true;
}

template <typename T>
void im2col_plane(const Geo& g, const T* plane, T* dst, int64_t row_stride, T pad) {
  for (int64_t ki = 0; ki < g.kh; ++ki)
    for (int64_t kj = 0; kj < g.kw; ++kj) {
      T* row = dst + (ki * g.kw + kj) * row_stride;
      const int64_t tap_w = kj * g.dw - g.pw;
      int64_t lo, hi;
      valid_range(g.ow, g.w, g.sw, tap_w, lo, hi);
      for (int64_t oy = 0; oy < g.oh; ++oy) {
        T* out = row + oy * g.ow;
        const int64_t iy = oy * g.sh - g.ph + ki * g.dh;
        if (iy < 0 || iy >= g.h) {
          std::fill(out, out + g.ow, pad);
          continue;
        }
        const T* in = plane + iy * g.img_h;
        std::fill(out, out + lo, pad);
        if (g.sw == 1 && g.img_w == 1) {
          std::memcpy(out + lo, in + lo + tap_w, size_t(hi - lo) * sizeof(T));
        } else {
          const int64_t step = g.sw * g.img_w;
          const T* p = in + (lo * g.sw + tap_w) * g.img_w;
          for (int64_t ox = lo; ox < hi; ++ox, p += step) out[ox] = *p;
        }
        std::fill(out + hi, out + g.ow, pad);
      }
    }
}

template <typename T>
void col2im_plane(const Geo& g, const T* cols, int64_t row_stride, int64_t col_stride,
                  double* acc) {
  for (int64_t ki = 0; ki < g.kh; ++ki)
    for (int64_t kj = 0; kj < g.kw; ++kj) {
      const T* row = cols + (ki * g.kw + kj) * row_stride;
      const int64_t tap_w = kj * g.dw - g.pw;
      int64_t lo, hi;
      valid_range(g.ow, g.w, g.sw, tap_w, lo, hi);
      for (int64_t oy = 0; oy < g.oh; ++oy) {
        const int64_t iy = oy * g.sh - g.ph + ki * g.dh;
        if (iy < 0 || iy >= g.h) continue;
        double* a = acc + iy * g.w + tap_w;
        const T* in = row + oy * g.ow * col_stride;
        if (g.sw == 1 && col_stride == 1) {
          for (int64_t ox = lo; ox < hi; ++ox) a[ox] += double(in[ox]);
        } else {
          for (int64_t ox = lo; ox < hi; ++ox) a[ox * g.sw] += double(in[ox * col_stride]);
        }
      }
    }
}

int64_t plane_grain(const Geo& g) {
  return std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(1, g.kh * g.kw * g.oh * g.ow));
}

}  // namespace

bool im2col(const ir::Im2col& op) {
  const Tensor& s = op.src;
  const Tensor& d = op.dst;
  const DType t = s.dtype();
  if (t != DType::f32 && t != DType::f64) return false;
  Geo g;
  if (!geometry(s, op.kernel, op.stride, op.pad_begin, op.dilation, op.out_size, g)) return false;
  if (d.numel() == 0) return true;
  if (d.stride(2) != 1 && g.oh * g.ow > 1) return false;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      const T pad = op.pad_value.is_float() ? scalar_cast<T>(op.pad_value.to_double())
                                            : scalar_cast<T>(op.pad_value.to_int());
      const T* sp = ptr<T>(s);
      T* dp = ptr<T>(d);
      const int64_t k = g.kh * g.kw, ds0 = d.stride(0), ds1 = d.stride(1);
      parallel_for(0, g.n * g.c, plane_grain(g), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const int64_t n = i / g.c, c = i % g.c;
          im2col_plane<T>(g, sp + n * g.img_n + c * g.img_c, dp + n * ds0 + c * k * ds1, ds1, pad);
        }
      });
    }
  });
  return true;
}

bool col2im(const ir::Col2im& op) {
  const Tensor& s = op.src;
  const Tensor& d = op.dst;
  const DType t = d.dtype();
  if (t != DType::f32 && t != DType::f64) return false;
  Geo g;
  if (!geometry(d, op.kernel, op.stride, op.pad_begin, op.dilation, op.out_size, g)) return false;
  if (d.numel() == 0) return true;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      const T* sp = ptr<T>(s);
      T* dp = ptr<T>(d);
      const int64_t k = g.kh * g.kw, ss0 = s.stride(0), ss1 = s.stride(1), ss2 = s.stride(2);
      parallel_for(0, g.n * g.c, plane_grain(g), [&](int64_t b, int64_t e) {
        std::vector<double> acc(size_t(g.h * g.w));
        for (int64_t i = b; i < e; ++i) {
          const int64_t n = i / g.c, c = i % g.c;
          std::fill(acc.begin(), acc.end(), 0.0);
          col2im_plane<T>(g, sp + n * ss0 + c * k * ss1, ss1, ss2, acc.data());
          T* plane = dp + n * d.stride(0) + c * d.stride(1);
          for (int64_t y = 0; y < g.h; ++y)
            for (int64_t x = 0; x < g.w; ++x) {
              T& v = plane[y * g.img_h + x * g.img_w];
              v = T(double(v) + acc[size_t(y * g.w + x)]);
            }
        }
      });
    }
  });
  return true;
}

}  // namespace ember::cpu
