// Reference im2col / col2im over 1..3 spatial dims (src/ir/ops.h).
#include <algorithm>
#include <vector>

#include "backends/ref/dispatch.h"
#include "backends/ref/kernels.h"

namespace ember::ref {
namespace {

struct Geometry {
  int64_t n = 0, c = 0, k = 1, l = 1;
  // table[kidx * l + li] = row-major position of the tap in one [*S] plane of img, or -1.
  std::vector<int64_t> table;
  // plane[i] = element offset of the i-th (row-major) element of one [*S] plane of img.
  std::vector<int64_t> plane;
};

// Shared by both directions: `img` is the [N, C, *S] tensor, `cols` the [N, C * K, L] one.
Geometry geometry(const Tensor& img, const std::vector<int64_t>& kernel,
                  const std::vector<int64_t>& stride, const std::vector<int64_t>& pad,
                  const std::vector<int64_t>& dilation, const std::vector<int64_t>& out_size) {
  const size_t nd = kernel.size();
  Geometry g;
  g.n = img.size(0);
  g.c = img.size(1);
  std::vector<int64_t> in(nd), out(nd);
  for (size_t d = 0; d < nd; ++d) {
    in[d] = img.size(int64_t(2 + d));
    out[d] = out_size.empty()
                 ? (in[d] + 2 * pad[d] - dilation[d] * (kernel[d] - 1) - 1) / stride[d] + 1
                 : out_size[d];
    if (out[d] < 0) out[d] = 0;
    g.k *= kernel[d];
    g.l *= out[d];
  }
  g.table.assign(size_t(g.k * g.l), -1);
  std::vector<int64_t> kk(nd), oo(nd);
  for (int64_t ki = 0; ki < g.k; ++ki) {
    for (int64_t r = ki, d = int64_t(nd) - 1; d >= 0; --d) {
      kk[d] = r % kernel[d];
      r /= kernel[d];
    }
    for (int64_t li = 0; li < g.l; ++li) {
      for (int64_t r = li, d = int64_t(nd) - 1; d >= 0; --d) {
        oo[d] = r % out[d];
        r /= out[d];
      }
      int64_t off = 0;
      bool inside = true;
      for (size_t d = 0; d < nd && inside; ++d) {
        const int64_t p = oo[d] * stride[d] - pad[d] + kk[d] * dilation[d];
        inside = p >= 0 && p < in[d];
        off = off * in[d] + p;
      }
      if (inside) g.table[size_t(ki * g.l + li)] = off;
    }
  }
  Shape ps(img.shape().begin() + 2, img.shape().end());
  Strides pst(img.strides().begin() + 2, img.strides().end());
  strided_loop<1>(ps, {&pst}, [&](const std::array<int64_t, 1>& o) { g.plane.push_back(o[0]); });
  return g;
}

}  // namespace

void im2col(const ir::Im2col& op) {
  const Tensor& s = op.src;
  const Tensor& d = op.dst;
  Geometry g = geometry(s, op.kernel, op.stride, op.pad_begin, op.dilation, op.out_size);
  dispatch_dtype(s.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T pad = op.pad_value.is_float() ? scalar_cast<T>(op.pad_value.to_double())
                                          : scalar_cast<T>(op.pad_value.to_int());
    const T* sp = ptr<T>(s);
    T* dp = ptr<T>(d);
    const int64_t ds0 = d.stride(0), ds1 = d.stride(1), ds2 = d.stride(2);
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t c = 0; c < g.c; ++c) {
        const T* plane = sp + n * s.stride(0) + c * s.stride(1);
        for (int64_t ki = 0; ki < g.k; ++ki) {
          T* row = dp + n * ds0 + (c * g.k + ki) * ds1;
          const int64_t* tab = g.table.data() + ki * g.l;
          for (int64_t li = 0; li < g.l; ++li)
            row[li * ds2] = tab[li] >= 0 ? plane[g.plane[size_t(tab[li])]] : pad;
        }
      }
  });
}

void col2im(const ir::Col2im& op) {
  const Tensor& s = op.src;
  const Tensor& d = op.dst;
  Geometry g = geometry(d, op.kernel, op.stride, op.pad_begin, op.dilation, op.out_size);
  // Accumulate each [*S] plane in acc_t (f64 for floats), then add it to dst once.
  dispatch_dtype(d.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* sp = ptr<T>(s);
    T* dp = ptr<T>(d);
    const int64_t ss0 = s.stride(0), ss1 = s.stride(1), ss2 = s.stride(2);
    std::vector<A> acc(g.plane.size());
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t c = 0; c < g.c; ++c) {
        std::fill(acc.begin(), acc.end(), A(0));
        for (int64_t ki = 0; ki < g.k; ++ki) {
          const T* row = sp + n * ss0 + (c * g.k + ki) * ss1;
          const int64_t* tab = g.table.data() + ki * g.l;
          for (int64_t li = 0; li < g.l; ++li)
            if (tab[li] >= 0) acc[size_t(tab[li])] += A(compute_t<T>(row[li * ss2]));
        }
        T* plane = dp + n * d.stride(0) + c * d.stride(1);
        for (size_t i = 0; i < acc.size(); ++i) {
          T& v = plane[g.plane[i]];
          v = scalar_cast<T>(A(compute_t<T>(v)) + acc[i]);
        }
      }
  });
}

}  // namespace ember::ref
