// Generated kernels for the spatial primitives over 1..3 spatial dims: im2col, col2im (race-free:
// one thread per image element gathering its taps), adaptive avg/max pooling and interpolation
// (nearest, nearest_exact, linear, cubic). One thread per output element; kernels are keyed by
// (op, dtype, spatial rank, variant) and every size, stride and offset is a param. The formulas
// are the ref's (backends/ref/{im2col,pool,interpolate}.cpp), accumulation types included.
#include <cmath>
#include <functional>
#include <limits>

#include "codegen/family.h"
#include "codegen/lower.h"
#include "ember/error.h"

namespace ember::codegen {

namespace {

using kir::Expr;
using kir::Type;

std::string str(int64_t v) { return std::to_string(v); }

// Local size of the spatial kernels.
constexpr uint32_t kLocal = 256;

// The ref's acc_t: the type sums over many taps are kept in (f64 for floats when the device has
// it; integers wrap in 32 bits when the dtype fits, which keeps the same low bits).
Type sum_type(DType t, const Caps& caps) {
  if (is_float_dtype(t)) return caps.f64 ? Type::f64 : Type::f32;
  if (t == DType::i64 || t == DType::u64) return ctype_of(t);
  if (t == DType::b8 || is_unsigned_dtype(t)) return Type::u32;
  return Type::i32;
}

// The name of an accumulation type in kernel keys (the string kernel language's names).
const char* type_key(Type t) {
  switch (t) {
    case Type::f64:
      return "f64";
    case Type::f32:
      return "float";
    case Type::i64:
      return "i64";
    case Type::u64:
      return "u64";
    case Type::u32:
      return "uint";
    default:
      return "int";
  }
}

// Stores the ref's scalar_cast<T>(acc): floats go through float (f64 stays), integers keep the
// low bits.
void store_sum(kir::Kernel& k, kir::Buf b, Expr index, DType t, Expr e) {
  if (t == DType::f64) return st(k, b, index, cast(Type::f64, e));
  if (is_float_dtype(t)) return st(k, b, index, cast(Type::f32, e));
  st(k, b, index, ccast(t, e));
}

// Params shared by the image side of im2col/col2im: [N, C, *S] sizes, strides and offset.
struct Img {
  size_t n, c, in, off, strides;  // in: nd sizes; strides: 2 + nd
};

Img image_params(ParamBuilder& p, const Tensor& img) {
  Img g{};
  g.n = p.u(img.size(0));
  g.c = p.u(img.size(1));
  g.in = p.ints(std::vector<int64_t>(img.shape().begin() + 2, img.shape().end()));
  g.off = p.i(img.offset());
  g.strides = p.ints(std::vector<int64_t>(img.strides().begin(), img.strides().end()));
  return g;
}

// Window geometry words: per dim out, kernel, stride, pad, dilation (5 * nd words from `at`).
struct Win {
  size_t out, kernel, stride, pad, dil, kprod, l;
};

Win window_params(ParamBuilder& p, const Tensor& img, const std::vector<int64_t>& kernel,
                  const std::vector<int64_t>& stride, const std::vector<int64_t>& pad,
                  const std::vector<int64_t>& dilation, const std::vector<int64_t>& out_size) {
  const size_t nd = kernel.size();
  std::vector<int64_t> out(nd);
  int64_t kp = 1, l = 1;
  for (size_t d = 0; d < nd; ++d) {
    const int64_t in = img.size(int64_t(2 + d));
    out[d] = out_size.empty()
                 ? (in + 2 * pad[d] - dilation[d] * (kernel[d] - 1) - 1) / stride[d] + 1
                 : out_size[d];
    if (out[d] < 0) out[d] = 0;
    kp *= kernel[d];
    l *= out[d];
  }
  Win w{};
  w.out = p.ints(out);
  w.kernel = p.ints(kernel);
  w.stride = p.ints(stride);
  w.pad = p.ints(pad);
  w.dil = p.ints(dilation);
  w.kprod = p.u(kp);
  w.l = p.u(l);
  return w;
}

// Integer division of uints below 2^24 through float division and one correction step (exact:
// the float quotient is within 1 of x / d). CPU drivers (lavapipe) divide integer vectors lane
// by lane, ~8x slower.
struct Div {
  Div(kir::Kernel& k, bool fast) : k(k), fast(fast) {
    if (!fast) return;
    f = k.function("fdiv_", Type::u32, {Type::u32, Type::u32}, [&](const std::vector<Expr>& a) {
      const Expr x = a[0], d = a[1];
      const Expr q = k.let("q", cast(Type::u32, cast(Type::f32, x) / cast(Type::f32, d)));
      const Expr r = k.let("r", cast(Type::i32, x) - cast(Type::i32, q * d));
      k.ret(q - cast(Type::u32, r < 0) + cast(Type::u32, r >= cast(Type::i32, d)));
    });
  }
  // x / d and x % d (u32): plain, or through fdiv_ when `fast`.
  Expr div(Expr x, Expr d) const { return fast ? k.call(f, {x, d}) : x / d; }
  Expr mod(Expr x, Expr d) const { return fast ? x - k.call(f, {x, d}) * d : x % d; }

  kir::Kernel& k;
  bool fast;
  kir::Function f;
};

// Splits u32 `v` row-major over nd sizes at param words `sizes` (u32) into i32 locals
// `<prefix>0..`; returns them (dim order).
std::vector<Expr> split(kir::Kernel& k, Expr v, int nd, size_t sizes, const std::string& prefix,
                        const Div& dv) {
  const Expr r = k.let(prefix + "_r", v);
  std::vector<Expr> c(static_cast<size_t>(nd));
  for (int d = nd - 1; d >= 0; --d) {
    const Expr sz = param_u(sizes + size_t(d));
    c[size_t(d)] = k.let(prefix + str(d), cast(Type::i32, dv.mod(r, sz)));
    if (d > 0) k.assign(r, dv.div(r, sz));
  }
  return c;
}

// The i32 element offset of (n, c, coords...) in a view whose offset is param word `off` and
// strides the words from `strides` (n, c, then one per spatial dim).
Expr nc_offset(Expr n, Expr c, const std::vector<Expr>& coords, size_t off, size_t strides) {
  Expr e = param_i(off) + cast(Type::i32, n) * param_i(strides) +
           cast(Type::i32, c) * param_i(strides + 1);
  for (size_t q = 0; q < coords.size(); ++q) e = e + coords[q] * param_i(strides + 2 + q);
  return e;
}

int64_t pad_sum(const std::vector<int64_t>& pad) {
  int64_t s = 0;
  for (int64_t v : pad) s += std::max<int64_t>(v, 0);
  return s;
}

void check_rank(const char* op, int64_t nd) {
  EMBER_CHECK(nd >= 1 && nd <= 3, op, "expects 1 to 3 spatial dims, got ", nd);
}

}  // namespace

Lowering lower_im2col(const ir::Im2col& op, Dialect d, const Caps& caps) {
  const DType t = op.dst.dtype();
  check_dtype("im2col", t, caps);
  const int nd = int(op.kernel.size());
  check_rank("im2col", nd);
  check_fits("im2col", {op.src, op.dst});
  const int64_t total = op.dst.numel();
  if (total == 0) return {};
  ParamBuilder p("im2col");
  const Img g = image_params(p, op.src);
  const Win w =
      window_params(p, op.src, op.kernel, op.stride, op.pad_begin, op.dilation, op.out_size);
  const size_t kTotal = p.u(total);
  const size_t kDst = p.i(op.dst.offset());
  p.ints({op.dst.stride(0), op.dst.stride(1), op.dst.stride(2)});
  const size_t kPad = p.scalar(t, op.pad_value);
  // Every quotient is of an index below `total`: float division is exact under 2^24.
  const bool fast = caps.cpu && total < (int64_t(1) << 24);
  const std::string key =
      std::string("im2col_") + dtype_tag(t) + "_s" + str(nd) + (fast ? "_fdiv" : "");
  auto k = cached_kernel(key, d, caps, [&] {
    kir::Kernel k(key, kLocal);
    const kir::Buf sb = k.buffer("src", t, false);
    const kir::Buf db = k.buffer("dst", t, true);
    const Div dv(k, fast);
    k.grid_loop("i", param_u(kTotal), [&](Expr i) {
      const Expr li = k.let("li", dv.mod(i, param_u(w.l)));
      const Expr r = k.let("r", dv.div(i, param_u(w.l)));
      const Expr ki = k.let("ki", dv.mod(r, param_u(w.kprod)));
      k.assign(r, dv.div(r, param_u(w.kprod)));
      const Expr c = k.let("c", dv.mod(r, param_u(g.c)));
      const Expr n = k.let("n", dv.div(r, param_u(g.c)));
      const std::vector<Expr> kk = split(k, ki, nd, w.kernel, "k", dv);
      const std::vector<Expr> o = split(k, li, nd, w.out, "o", dv);
      const Expr inside = k.let("inside", kir::lit_bool(true));
      std::vector<Expr> pos;
      for (int q = 0; q < nd; ++q) {
        const size_t Q = size_t(q);
        pos.push_back(k.let("p" + str(q), o[Q] * param_i(w.stride + Q) - param_i(w.pad + Q) +
                                              kk[Q] * param_i(w.dil + Q)));
        k.assign(inside, inside && pos[Q] >= 0 && pos[Q] < param_i(g.in + Q));
      }
      const Expr so = k.let("so", nc_offset(n, c, pos, g.off, g.strides));
      const Expr od =
          k.let("od", param_i(kDst) + cast(Type::i32, n) * param_i(kDst + 1) +
                          cast(Type::i32, c * param_u(w.kprod) + ki) * param_i(kDst + 2) +
                          cast(Type::i32, li) * param_i(kDst + 3));
      k.if_(
          inside, [&] { k.store(db, od, k.load(sb, so)); },
          [&] { st(k, db, od, scalar_param(t, kPad)); });
    });
    return k;
  });
  Lowering l;
  l.launches.push_back(launch_1d(k, {{op.src}, {op.dst}}, p.take(), total, caps));
  return l;
}

Lowering lower_col2im(const ir::Col2im& op, Dialect d, const Caps& caps) {
  const DType t = op.dst.dtype();
  check_dtype("col2im", t, caps);
  const int nd = int(op.kernel.size());
  check_rank("col2im", nd);
  check_fits("col2im", {op.src, op.dst});
  const int64_t total = op.dst.numel();
  if (total == 0) return {};
  ParamBuilder p("col2im");
  const Img g = image_params(p, op.dst);
  const Win w =
      window_params(p, op.dst, op.kernel, op.stride, op.pad_begin, op.dilation, op.out_size);
  const size_t kTotal = p.u(total);
  const size_t kSrc = p.i(op.src.offset());
  p.ints({op.src.stride(0), op.src.stride(1), op.src.stride(2)});
  const Type acc = sum_type(t, caps);
  // Quotients are of image indices and window positions (below the image's numel plus padding).
  const bool fast = caps.cpu && total + int64_t(pad_sum(op.pad_begin)) < (int64_t(1) << 24) &&
                    op.src.numel() < (int64_t(1) << 24);
  const std::string key = std::string("col2im_") + dtype_tag(t) + "_s" + str(nd) + "_" +
                          type_key(acc) + (fast ? "_fdiv" : "");
  auto k = cached_kernel(key, d, caps, [&] {
    kir::Kernel k(key, kLocal);
    const kir::Buf sb = k.buffer("src", t, false);
    const kir::Buf db = k.buffer("dst", t, true);
    const Div dv(k, fast);
    // One thread per image element: it sums the column entries of every kernel offset whose
    // window covers it, in the ref's order (kernel offsets row-major), then adds once.
    k.grid_loop("i", param_u(kTotal), [&](Expr i) {
      const std::vector<Expr> pp = split(k, i, nd, g.in, "p", dv);
      const Expr r = k.let("r", i);
      for (int q = 0; q < nd; ++q) k.assign(r, dv.div(r, param_u(g.in + size_t(q))));
      const Expr c = k.let("c", dv.mod(r, param_u(g.c)));
      const Expr n = k.let("n", dv.div(r, param_u(g.c)));
      const Expr s = k.let("s", kir::lit(acc, 0));
      k.for_range(
          "ki", kir::lit(Type::u32, 0), param_u(w.kprod), kir::lit(Type::u32, 1), [&](Expr ki) {
            const std::vector<Expr> kk = split(k, ki, nd, w.kernel, "k", dv);
            const Expr hit = k.let("hit", kir::lit_bool(true));
            const Expr li = k.let("li", kir::lit(Type::i32, 0));
            for (int q = 0; q < nd; ++q) {
              const size_t Q = size_t(q);
              const Expr e =
                  k.let("e" + str(q), pp[Q] + param_i(w.pad + Q) - kk[Q] * param_i(w.dil + Q));
              const Expr quot =
                  fast ? cast(Type::i32, dv.div(cast(Type::u32, e), param_u(w.stride + Q)))
                       : e / param_i(w.stride + Q);
              const Expr o = k.let("o" + str(q), select(e >= 0, quot, kir::lit(Type::i32, -1)));
              k.assign(hit,
                       hit && e >= 0 && o * param_i(w.stride + Q) == e && o < param_i(w.out + Q));
              k.assign(li, li * param_i(w.out + Q) + o);
            }
            k.if_(hit, [&] {
              const Expr at = param_i(kSrc) + cast(Type::i32, n) * param_i(kSrc + 1) +
                              cast(Type::i32, c * param_u(w.kprod) + ki) * param_i(kSrc + 2) +
                              li * param_i(kSrc + 3);
              k.assign(s, s + cast(acc, ld(k, sb, at)));
            });
          });
      const Expr od = k.let("od", nc_offset(n, c, pp, g.off, g.strides));
      store_sum(k, db, od, t, cast(acc, ld(k, db, od)) + s);
    });
    return k;
  });
  Lowering l;
  l.launches.push_back(launch_1d(k, {{op.src}, {op.dst}}, p.take(), total, caps));
  return l;
}

Lowering lower_adaptive_pool(const ir::AdaptivePool& op, Dialect d, const Caps& caps) {
  const Tensor& src = op.src;
  const Tensor& dst = op.dst;
  const DType t = dst.dtype();
  const char* name = op.max ? "adaptive_max_pool" : "adaptive_avg_pool";
  check_dtype(name, t, caps);
  const int nd = int(src.dim()) - 2;
  check_rank(name, nd);
  check_fits(name, {src, dst, op.indices});
  const bool with_idx = op.max && op.indices.defined();
  if (with_idx) require_index(name, caps);
  const int64_t total = dst.numel();
  if (total == 0) return {};
  ParamBuilder p(name);
  const Img g = image_params(p, src);
  const size_t kOut = p.ints(std::vector<int64_t>(dst.shape().begin() + 2, dst.shape().end()));
  const size_t kDst = p.i(dst.offset());
  p.ints(std::vector<int64_t>(dst.strides().begin(), dst.strides().end()));
  const size_t kIdx = p.i(with_idx ? op.indices.offset() : 0);
  p.ints(with_idx ? std::vector<int64_t>(op.indices.strides().begin(), op.indices.strides().end())
                  : std::vector<int64_t>(size_t(nd + 2), 0));
  const size_t kTotal = p.u(total);
  const Type acc = op.max ? ctype_of(t) : sum_type(t, caps);
  const std::string key = std::string(name) + "_" + dtype_tag(t) + "_s" + str(nd) +
                          (with_idx ? "_idx" : "") + "_" + type_key(acc);
  auto k = cached_kernel(key, d, caps, [&] {
    kir::Kernel k(key, kLocal);
    const kir::Buf sb = k.buffer("src", t, false);
    const kir::Buf db = k.buffer("dst", t, true);
    const kir::Buf ib = with_idx ? k.buffer("indices", DType::i64, true) : kir::Buf{};
    const Div plain(k, false);
    k.grid_loop("i", param_u(kTotal), [&](Expr i) {
      const std::vector<Expr> o = split(k, i, nd, kOut, "o", plain);
      const Expr r = k.let("r", i);
      for (int q = 0; q < nd; ++q) k.assign(r, r / param_u(kOut + size_t(q)));
      const Expr c = k.let("c", r % param_u(g.c));
      const Expr n = k.let("n", r / param_u(g.c));
      const Expr base = k.let("base", nc_offset(n, c, {}, g.off, g.strides));
      // Window [floor(o * S / O), ceil((o + 1) * S / O)) per dim.
      std::vector<Expr> lo, hi;
      for (int q = 0; q < nd; ++q) {
        const size_t Q = size_t(q);
        const Expr S = param_i(g.in + Q), O = param_i(kOut + Q);
        lo.push_back(k.let("lo" + str(q), (o[Q] * S) / O));
        hi.push_back(k.let("hi" + str(q), ((o[Q] + 1) * S + O - 1) / O));
      }
      Expr best, best_idx, s, count;
      if (op.max) {
        const double inf = std::numeric_limits<double>::infinity();
        best = k.let("best", is_float_dtype(t) ? kir::lit(acc, -inf) : ccast(t, lowest_value(t)));
        // The window's first element, (lo0 * S1 + lo1) * S2 + lo2: the index when no element
        // beats the initial value (a window of -inf or of the integer minimum), as torch.
        Expr init = lo[0];
        for (int q = 1; q < nd; ++q) init = init * param_i(g.in + size_t(q)) + lo[size_t(q)];
        best_idx = k.let("best_idx", init);
      } else {
        s = k.let("s", kir::lit(acc, 0));
        Expr cnt = kir::lit(Type::i32, 1);
        for (int q = 0; q < nd; ++q) cnt = cnt * (hi[size_t(q)] - lo[size_t(q)]);
        count = k.let("count", cnt);
      }
      // Row-major walk over the window, innermost dim fastest (as torch).
      std::vector<Expr> wv(static_cast<size_t>(nd));
      std::function<void(int)> walk = [&](int q) {
        if (q < nd) {
          k.for_range("w" + str(q), lo[size_t(q)], hi[size_t(q)], kir::lit(Type::i32, 1),
                      [&](Expr wq) {
                        wv[size_t(q)] = wq;
                        walk(q + 1);
                      });
          return;
        }
        Expr off = base, flat = kir::lit(Type::i32, 0);
        for (int d = 0; d < nd; ++d) {
          off = off + wv[size_t(d)] * param_i(g.strides + 2 + size_t(d));
          flat = flat * param_i(g.in + size_t(d)) + wv[size_t(d)];
        }
        const Expr v = k.let("v", op.max ? ld(k, sb, off) : cast(acc, ld(k, sb, off)));
        if (op.max) {
          Expr better = v > best;
          if (is_float_dtype(t)) better = better || kir::call(kir::Fn::isnan, {v});
          k.if_(better, [&] {
            k.assign(best, v);
            k.assign(best_idx, flat);
          });
        } else {
          k.assign(s, s + v);
        }
      };
      walk(0);
      const Expr od = nc_offset(n, c, o, kDst, kDst + 1);
      if (op.max) {
        st(k, db, od, best);
        if (with_idx) k.store(ib, nc_offset(n, c, o, kIdx, kIdx + 1), cast(Type::i64, best_idx));
      } else {
        store_sum(k, db, od, t, s / cast(acc, count));
      }
    });
    return k;
  });
  std::vector<Binding> bind = {{src}, {dst}};
  if (with_idx) bind.push_back({op.indices});
  Lowering l;
  l.launches.push_back(launch_1d(k, std::move(bind), p.take(), total, caps));
  return l;
}

Lowering lower_interpolate(const ir::Interpolate& op, Dialect d, const Caps& caps) {
  const Tensor& src = op.src;
  const Tensor& dst = op.dst;
  const DType t = dst.dtype();
  check_dtype("interpolate", t, caps);
  const int nd = int(src.dim()) - 2;
  check_rank("interpolate", nd);
  check_fits("interpolate", {src, dst});
  const bool weighted = op.mode == ir::InterpMode::linear || op.mode == ir::InterpMode::cubic;
  if (weighted && !is_float_dtype(t))
    EMBER_FAIL("interpolate", "linear and cubic modes need a floating-point dtype, got ",
               dtype_tag(t));
  const int64_t total = dst.numel();
  if (total == 0) return {};
  // Index arithmetic in float (double for f64 data), as torch's CPU kernels.
  const bool dbl = t == DType::f64 && weighted;
  const Type W = dbl ? Type::f64 : Type::f32;
  ParamBuilder p("interpolate");
  const Img g = image_params(p, src);
  const size_t kOut = p.ints(std::vector<int64_t>(dst.shape().begin() + 2, dst.shape().end()));
  const size_t kDst = p.i(dst.offset());
  p.ints(std::vector<int64_t>(dst.strides().begin(), dst.strides().end()));
  const size_t kTotal = p.u(total);
  const size_t kScale = p.ints({});
  for (int q = 0; q < nd; ++q) {
    const int64_t in = src.size(2 + q), out = dst.size(2 + q);
    const double sc = size_t(q) < op.scales.size() ? op.scales[size_t(q)] : 0.0;
    if (!weighted) {
      p.f(sc > 0 ? float(1.0 / sc) : float(in) / float(out));
    } else if (dbl) {
      p.d(op.align_corners ? (out > 1 ? double(in - 1) / double(out - 1) : 0.0)
                           : (sc > 0 ? 1.0 / sc : double(in) / double(out)));
    } else {
      p.f(op.align_corners ? (out > 1 ? float(in - 1) / float(out - 1) : 0.f)
                           : (sc > 0 ? float(1.0 / sc) : float(in) / float(out)));
    }
  }
  const auto scale = [&](int q) {
    return dbl ? param_d(kScale + 2 * size_t(q)) : param_f(kScale + size_t(q));
  };
  const char* mname[] = {"nearest", "linear", "cubic", "nearest_exact"};
  const std::string key = std::string("interpolate_") + mname[int(op.mode)] +
                          (weighted && op.align_corners ? "_align" : "") + "_" + dtype_tag(t) +
                          "_s" + str(nd);
  auto k = cached_kernel(key, d, caps, [&] {
    kir::Kernel k(key, kLocal);
    const kir::Buf sb = k.buffer("src", t, false);
    const kir::Buf db = k.buffer("dst", t, true);
    auto w = [&](double v) { return kir::lit(W, v); };
    kir::Function cubic1, cubic2;
    if (op.mode == ir::InterpMode::cubic) {
      cubic1 = k.function("cubic1", W, {W}, [&](const std::vector<Expr>& a) {
        const Expr x = a[0], A = k.let("A", w(-0.75));
        k.ret(((A + w(2)) * x - (A + w(3))) * x * x + w(1));
      });
      cubic2 = k.function("cubic2", W, {W}, [&](const std::vector<Expr>& a) {
        const Expr x = a[0], A = k.let("A", w(-0.75));
        k.ret(((A * x - w(5) * A) * x + w(8) * A) * x - w(4) * A);
      });
    }
    const Div plain(k, false);
    const int taps = op.mode == ir::InterpMode::linear  ? 2
                     : op.mode == ir::InterpMode::cubic ? 4
                                                        : 1;
    const Expr i32_0 = kir::lit(Type::i32, 0), i32_1 = kir::lit(Type::i32, 1);
    k.grid_loop("i", param_u(kTotal), [&](Expr i) {
      const std::vector<Expr> o = split(k, i, nd, kOut, "o", plain);
      const Expr r = k.let("r", i);
      for (int q = 0; q < nd; ++q) k.assign(r, r / param_u(kOut + size_t(q)));
      const Expr c = k.let("c", r % param_u(g.c));
      const Expr n = k.let("n", r / param_u(g.c));
      const Expr base = k.let("base", nc_offset(n, c, {}, g.off, g.strides));
      const Expr od = nc_offset(n, c, o, kDst, kDst + 1);
      // Per dim q: the source coordinates x[q][j] of the taps and (weighted) their weights.
      std::vector<std::vector<Expr>> x(static_cast<size_t>(nd)), wt(static_cast<size_t>(nd));
      for (int q = 0; q < nd; ++q) {
        const size_t Q = size_t(q);
        const Expr S = param_i(g.in + Q), O = param_i(kOut + Q), sc = scale(q), oq = o[Q];
        const std::string xn = "x" + str(q), wn = "w" + str(q);
        if (op.mode == ir::InterpMode::nearest) {
          const Expr f = cast(Type::i32, kir::call(kir::Fn::floor, {cast(Type::f32, oq) * sc}));
          x[Q] = {
              k.let(xn, select(O == S, oq,
                               select(O == 2 * S, oq >> 1, kir::call(kir::Fn::min, {f, S - 1}))))};
          continue;
        }
        if (op.mode == ir::InterpMode::nearest_exact) {
          const Expr f =
              cast(Type::i32, kir::call(kir::Fn::floor, {(cast(Type::f32, oq) + 0.5) * sc}));
          x[Q] = {k.let(xn, kir::call(kir::Fn::min, {f, S - 1}))};
          continue;
        }
        for (int j = 0; j < taps; ++j) {
          x[Q].push_back(k.var(xn + "_" + str(j), Type::i32));
          wt[Q].push_back(k.var(wn + "_" + str(j), W));
        }
        const Expr real0 =
            op.align_corners ? sc * cast(W, oq) : sc * (cast(W, oq) + w(0.5)) - w(0.5);
        if (op.mode == ir::InterpMode::linear) {
          k.if_(
              O == S,
              [&] {
                k.assign(x[Q][0], oq);
                k.assign(x[Q][1], oq);
                k.assign(wt[Q][0], w(1));
                k.assign(wt[Q][1], w(0));
              },
              [&] {
                const Expr real = k.let("real", real0);
                if (!op.align_corners) k.if_(real < w(0), [&] { k.assign(real, w(0)); });
                const Expr i0 = k.let("i0", cast(Type::i32, real));
                const Expr l1 = k.let("l1", real - cast(W, i0));
                k.assign(x[Q][0], i0);
                k.assign(x[Q][1], i0 + select(i0 < S - 1, i32_1, i32_0));
                k.assign(wt[Q][0], w(1) - l1);
                k.assign(wt[Q][1], l1);
              });
        } else {
          const Expr real = k.let("real", real0);
          const Expr i0 = k.let("i0", cast(Type::i32, kir::call(kir::Fn::floor, {real})));
          const Expr tt = k.let("tt", real - cast(W, i0));
          k.assign(wt[Q][0], k.call(cubic2, {tt + w(1)}));
          k.assign(wt[Q][1], k.call(cubic1, {tt}));
          k.assign(wt[Q][2], k.call(cubic1, {w(1) - tt}));
          k.assign(wt[Q][3], k.call(cubic2, {w(1) - tt + w(1)}));
          for (int j = 0; j < 4; ++j)
            k.assign(x[Q][size_t(j)], kir::call(kir::Fn::clamp, {i0 - 1 + j, i32_0, S - 1}));
        }
      }
      if (!weighted) {
        Expr off = base;
        for (int q = 0; q < nd; ++q)
          off = off + x[size_t(q)][0] * param_i(g.strides + 2 + size_t(q));
        k.store(db, od, k.load(sb, off));  // nearest copies exactly
        return;
      }
      // Sum over the taps of dims q.., outermost first: acc = w_0 v_0 + w_1 v_1 + ..., as the ref,
      // unrolled (at most 4 taps a dim): straight-line code CPU drivers schedule well.
      std::function<Expr(int, Expr)> level = [&](int q, Expr prev) {
        const size_t Q = size_t(q);
        Expr acc;
        for (size_t j = 0; j < size_t(taps); ++j) {
          const Expr pq = k.let("p" + str(q), prev + x[Q][j] * param_i(g.strides + 2 + Q));
          const Expr in = q + 1 < nd ? level(q + 1, pq) : k.let("v", cast(W, ld(k, sb, pq)));
          if (j == 0)
            acc = k.let("a" + str(q), in * wt[Q][j]);
          else
            k.assign(acc, acc + in * wt[Q][j]);
        }
        return acc;
      };
      const Expr sum = level(0, base);
      st(k, db, od, t == DType::f64 ? sum : cast(Type::f32, sum));
    });
    return k;
  });
  Lowering l;
  l.launches.push_back(launch_1d(k, {{src}, {dst}}, p.take(), total, caps));
  return l;
}

}  // namespace ember::codegen
