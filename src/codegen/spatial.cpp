// Generated kernels for the spatial primitives over 1..3 spatial dims: im2col, col2im (race-free:
// one thread per image element gathering its taps), adaptive avg/max pooling and interpolation
// (nearest, nearest_exact, linear, cubic). One thread per output element; kernels are keyed by
// (op, dtype, spatial rank, variant) and every size, stride and offset is a param. The formulas
// are the ref's (backends/ref/{im2col,pool,interpolate}.cpp), accumulation types included.
#include <cmath>

#include "codegen/family.h"
#include "codegen/lower.h"
#include "ember/error.h"

namespace ember::codegen {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

// The ref's acc_t: the type sums over many taps are kept in (f64 for floats when the device has
// it; integers wrap in 32 bits when the dtype fits, which keeps the same low bits).
std::string sum_type(DType t, const Caps& caps) {
  if (is_float_dtype(t)) return caps.f64 ? "f64" : "float";
  if (t == DType::i64 || t == DType::u64) return ctype(t);
  if (t == DType::b8 || is_unsigned_dtype(t)) return "uint";
  return "int";
}

// The ref's scalar_cast<T>(acc): floats go through float (f64 stays), integers keep the low bits.
std::string store_sum(DType t, const std::string& e) {
  if (t == DType::f64) return st(t, "f64(" + e + ")");
  if (is_float_dtype(t)) return st(t, "float(" + e + ")");
  return st(t, ccast(t, e));
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
const char* const kFdiv =
    "uint fdiv_(uint x, uint d) {\n"
    "  uint q = uint(float(x) / float(d));\n"
    "  int r = int(x) - int(q * d);\n"
    "  return q - uint(r < 0) + uint(r >= int(d));\n}\n";

// x / d and x % d as code: plain, or through fdiv_ when `fast`.
std::string div_(bool fast, const std::string& x, const std::string& d) {
  return fast ? "fdiv_(" + x + ", " + d + ")" : "(" + x + " / " + d + ")";
}
std::string mod_(bool fast, const std::string& x, const std::string& d) {
  return fast ? "(" + x + " - fdiv_(" + x + ", " + d + ") * " + d + ")" : "(" + x + " % " + d + ")";
}

// Code splitting uint `v` row-major over nd sizes at `sizes` into int `<prefix>0..`.
std::string split(const std::string& v, int nd, size_t sizes, const std::string& prefix,
                  bool fast = false) {
  std::string s = "  uint " + prefix + "r_ = " + v + ";\n";
  for (int d = nd - 1; d >= 0; --d) {
    const std::string sz = pu(sizes + size_t(d)), r = prefix + "r_";
    s += "  int " + prefix + str(d) + " = int(" + mod_(fast, r, sz) + ");\n";
    if (d > 0) s += "  " + r + " = " + div_(fast, r, sz) + ";\n";
  }
  return s;
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
    KernelDef def;
    def.name = key;
    def.buffers = {{"src", t, false}, {"dst", t, true}};
    if (fast) def.functions = kFdiv;
    std::string b = "for (uint i = GLOBAL_ID; i < " + pu(kTotal) + "; i += GLOBAL_SIZE) {\n";
    b += "  uint li = " + mod_(fast, "i", pu(w.l)) + ";\n  uint r = " + div_(fast, "i", pu(w.l)) +
         ";\n";
    b += "  uint ki = " + mod_(fast, "r", pu(w.kprod)) +
         ";\n  r = " + div_(fast, "r", pu(w.kprod)) + ";\n";
    b += "  uint c = " + mod_(fast, "r", pu(g.c)) + ";\n  uint n = " + div_(fast, "r", pu(g.c)) +
         ";\n";
    b += split("ki", nd, w.kernel, "k", fast) + split("li", nd, w.out, "o", fast);
    b += "  bool inside = true;\n  int so = " + pi(g.off) + " + int(n) * " + pi(g.strides) +
         " + int(c) * " + pi(g.strides + 1) + ";\n";
    for (int q = 0; q < nd; ++q) {
      const std::string Q = str(q), pos = "p" + Q;
      b += "  int " + pos + " = o" + Q + " * " + pi(w.stride + size_t(q)) + " - " +
           pi(w.pad + size_t(q)) + " + k" + Q + " * " + pi(w.dil + size_t(q)) + ";\n";
      b += "  inside = inside && " + pos + " >= 0 && " + pos + " < " + pi(g.in + size_t(q)) + ";\n";
      b += "  so += " + pos + " * " + pi(g.strides + 2 + size_t(q)) + ";\n";
    }
    b += "  int od = " + pi(kDst) + " + int(n) * " + pi(kDst + 1) + " + int(c * " + pu(w.kprod) +
         " + ki) * " + pi(kDst + 2) + " + int(li) * " + pi(kDst + 3) + ";\n";
    b += "  if (inside) dst[od] = src[so];\n  else dst[od] = " + st(t, scalar_param(t, kPad)) +
         ";\n}\n";
    def.body = b;
    return def;
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
  const std::string acc = sum_type(t, caps);
  // Quotients are of image indices and window positions (below the image's numel plus padding).
  const bool fast = caps.cpu && total + int64_t(pad_sum(op.pad_begin)) < (int64_t(1) << 24) &&
                    op.src.numel() < (int64_t(1) << 24);
  const std::string key =
      std::string("col2im_") + dtype_tag(t) + "_s" + str(nd) + "_" + acc + (fast ? "_fdiv" : "");
  auto k = cached_kernel(key, d, caps, [&] {
    KernelDef def;
    def.name = key;
    def.buffers = {{"src", t, false}, {"dst", t, true}};
    if (fast) def.functions = kFdiv;
    // One thread per image element: it sums the column entries of every kernel offset whose
    // window covers it, in the ref's order (kernel offsets row-major), then adds once.
    std::string b = "for (uint i = GLOBAL_ID; i < " + pu(kTotal) + "; i += GLOBAL_SIZE) {\n";
    b += split("i", nd, g.in, "p", fast);
    b += "  uint r = i;\n";
    for (int q = 0; q < nd; ++q) b += "  r = " + div_(fast, "r", pu(g.in + size_t(q))) + ";\n";
    b += "  uint c = " + mod_(fast, "r", pu(g.c)) + ";\n  uint n = " + div_(fast, "r", pu(g.c)) +
         ";\n";
    b += "  " + acc + " s = " + acc + "(0);\n";
    b += "  for (uint ki = 0u; ki < " + pu(w.kprod) + "; ++ki) {\n";
    b += split("ki", nd, w.kernel, "k", fast);
    b += "    bool hit = true;\n    int li = 0;\n";
    for (int q = 0; q < nd; ++q) {
      const std::string Q = str(q);
      b += "    int e" + Q + " = p" + Q + " + " + pi(w.pad + size_t(q)) + " - k" + Q + " * " +
           pi(w.dil + size_t(q)) + ";\n";
      const std::string quot =
          fast ? "int(fdiv_(uint(e" + Q + "), " + pu(w.stride + size_t(q)) + "))"
               : "e" + Q + " / " + pi(w.stride + size_t(q));
      b += "    int o" + Q + " = e" + Q + " >= 0 ? " + quot + " : -1;\n";
      b += "    hit = hit && e" + Q + " >= 0 && o" + Q + " * " + pi(w.stride + size_t(q)) +
           " == e" + Q + " && o" + Q + " < " + pi(w.out + size_t(q)) + ";\n";
      b += "    li = li * " + pi(w.out + size_t(q)) + " + o" + Q + ";\n";
    }
    b += "    if (hit) s += " + acc + "(" +
         ld(t, "src[" + pi(kSrc) + " + int(n) * " + pi(kSrc + 1) + " + int(c * " + pu(w.kprod) +
                   " + ki) * " + pi(kSrc + 2) + " + li * " + pi(kSrc + 3) + "]") +
         ");\n  }\n";
    b += "  int od = " + pi(g.off) + " + int(n) * " + pi(g.strides) + " + int(c) * " +
         pi(g.strides + 1);
    for (int q = 0; q < nd; ++q) b += " + p" + str(q) + " * " + pi(g.strides + 2 + size_t(q));
    b += ";\n  dst[od] = " + store_sum(t, acc + "(" + ld(t, "dst[od]") + ") + s") + ";\n}\n";
    def.body = b;
    return def;
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
  const std::string acc = op.max ? ctype(t) : sum_type(t, caps);
  const std::string key = std::string(name) + "_" + dtype_tag(t) + "_s" + str(nd) +
                          (with_idx ? "_idx" : "") + "_" + acc;
  auto k = cached_kernel(key, d, caps, [&] {
    KernelDef def;
    def.name = key;
    def.buffers = {{"src", t, false}, {"dst", t, true}};
    if (with_idx) def.buffers.push_back({"indices", DType::i64, true});
    std::string b = "for (uint i = GLOBAL_ID; i < " + pu(kTotal) + "; i += GLOBAL_SIZE) {\n";
    b += split("i", nd, kOut, "o");
    b += "  uint r = i;\n";
    for (int q = 0; q < nd; ++q) b += "  r /= " + pu(kOut + size_t(q)) + ";\n";
    b += "  uint c = r % " + pu(g.c) + ";\n  uint n = r / " + pu(g.c) + ";\n";
    b += "  int base = " + pi(g.off) + " + int(n) * " + pi(g.strides) + " + int(c) * " +
         pi(g.strides + 1) + ";\n";
    // Window [floor(o * S / O), ceil((o + 1) * S / O)) per dim.
    for (int q = 0; q < nd; ++q) {
      const std::string Q = str(q), S = pi(g.in + size_t(q)), O = pi(kOut + size_t(q));
      b += "  int lo" + Q + " = (o" + Q + " * " + S + ") / " + O + ";\n";
      b += "  int hi" + Q + " = ((o" + Q + " + 1) * " + S + " + " + O + " - 1) / " + O + ";\n";
    }
    if (op.max) {
      const std::string init =
          is_float_dtype(t) ? ccast(t, "-(1.0 / 0.0)") : ccast(t, lowest_literal(t));
      b += "  " + acc + " best = " + init + ";\n  int best_idx = 0";
      for (int q = 0; q < nd; ++q) b += " * " + pi(g.in + size_t(q)) + " + lo" + str(q);
      b += ";\n";
    } else {
      b += "  " + acc + " s = " + acc + "(0);\n  int count = 1";
      for (int q = 0; q < nd; ++q) b += " * (hi" + str(q) + " - lo" + str(q) + ")";
      b += ";\n";
    }
    // Row-major walk over the window, innermost dim fastest (as torch).
    std::string ind = "  ";
    for (int q = 0; q < nd; ++q) {
      const std::string Q = str(q);
      b += ind + "for (int w" + Q + " = lo" + Q + "; w" + Q + " < hi" + Q + "; ++w" + Q + ") {\n";
      ind += "  ";
    }
    std::string off = "base", flat = "0";
    for (int q = 0; q < nd; ++q) {
      off += " + w" + str(q) + " * " + pi(g.strides + 2 + size_t(q));
      flat = "(" + flat + ") * " + pi(g.in + size_t(q)) + " + w" + str(q);
    }
    b += ind + acc + " v = " +
         (op.max ? ld(t, "src[" + off + "]") : acc + "(" + ld(t, "src[" + off + "]") + ")") + ";\n";
    if (op.max) {
      b += ind + "if (v > best" + std::string(is_float_dtype(t) ? " || isnan(v)" : "") + ") {\n" +
           ind + "  best = v;\n" + ind + "  best_idx = " + flat + ";\n" + ind + "}\n";
    } else {
      b += ind + "s += v;\n";
    }
    for (int q = 0; q < nd; ++q) {
      ind.resize(ind.size() - 2);
      b += ind + "}\n";
    }
    std::string od = pi(kDst) + " + int(n) * " + pi(kDst + 1) + " + int(c) * " + pi(kDst + 2);
    std::string oi = pi(kIdx) + " + int(n) * " + pi(kIdx + 1) + " + int(c) * " + pi(kIdx + 2);
    for (int q = 0; q < nd; ++q) {
      od += " + o" + str(q) + " * " + pi(kDst + 3 + size_t(q));
      oi += " + o" + str(q) + " * " + pi(kIdx + 3 + size_t(q));
    }
    if (op.max) {
      b += "  dst[" + od + "] = " + st(t, "best") + ";\n";
      if (with_idx) b += "  indices[" + oi + "] = i64(best_idx);\n";
    } else {
      b += "  dst[" + od + "] = " + store_sum(t, "s / " + acc + "(count)") + ";\n";
    }
    def.body = b + "}\n";
    return def;
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
  const std::string W = dbl ? "f64" : "float";
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
    return dbl ? pd(kScale + 2 * size_t(q)) : pf(kScale + size_t(q));
  };
  const char* mname[] = {"nearest", "linear", "cubic", "nearest_exact"};
  const std::string key = std::string("interpolate_") + mname[int(op.mode)] +
                          (weighted && op.align_corners ? "_align" : "") + "_" + dtype_tag(t) +
                          "_s" + str(nd);
  auto k = cached_kernel(key, d, caps, [&] {
    KernelDef def;
    def.name = key;
    def.buffers = {{"src", t, false}, {"dst", t, true}};
    if (op.mode == ir::InterpMode::cubic)
      def.functions = W + " cubic1(" + W + " x) {\n  " + W + " A = " + W + "(-0.75);\n" +
                      "  return ((A + " + W + "(2)) * x - (A + " + W + "(3))) * x * x + " + W +
                      "(1);\n}\n" + W + " cubic2(" + W + " x) {\n  " + W + " A = " + W +
                      "(-0.75);\n" + "  return ((A * x - " + W + "(5) * A) * x + " + W +
                      "(8) * A) * x - " + W + "(4) * A;\n}\n";
    std::string b = "for (uint i = GLOBAL_ID; i < " + pu(kTotal) + "; i += GLOBAL_SIZE) {\n";
    b += split("i", nd, kOut, "o");
    b += "  uint r = i;\n";
    for (int q = 0; q < nd; ++q) b += "  r /= " + pu(kOut + size_t(q)) + ";\n";
    b += "  uint c = r % " + pu(g.c) + ";\n  uint n = r / " + pu(g.c) + ";\n";
    b += "  int base = " + pi(g.off) + " + int(n) * " + pi(g.strides) + " + int(c) * " +
         pi(g.strides + 1) + ";\n";
    std::string od = pi(kDst) + " + int(n) * " + pi(kDst + 1) + " + int(c) * " + pi(kDst + 2);
    for (int q = 0; q < nd; ++q) od += " + o" + str(q) + " * " + pi(kDst + 3 + size_t(q));
    const int taps = op.mode == ir::InterpMode::linear  ? 2
                     : op.mode == ir::InterpMode::cubic ? 4
                                                        : 1;
    for (int q = 0; q < nd; ++q) {
      const std::string Q = str(q), S = pi(g.in + size_t(q)), O = pi(kOut + size_t(q));
      const std::string o = "o" + Q, x = "x" + Q, w = "w" + Q, sc = scale(q);
      if (op.mode == ir::InterpMode::nearest) {
        b += "  int " + x + " = " + O + " == " + S + " ? " + o + " : " + O + " == 2 * " + S +
             " ? (" + o + " >> 1) : min(int(floor(float(" + o + ") * " + sc + ")), " + S +
             " - 1);\n";
      } else if (op.mode == ir::InterpMode::nearest_exact) {
        b += "  int " + x + " = min(int(floor((float(" + o + ") + 0.5) * " + sc + ")), " + S +
             " - 1);\n";
      } else {
        b += "  int " + x + "[" + str(taps) + "];\n  " + W + " " + w + "[" + str(taps) + "];\n";
        const std::string real =
            op.align_corners ? sc + " * " + W + "(" + o + ")"
                             : sc + " * (" + W + "(" + o + ") + " + W + "(0.5)) - " + W + "(0.5)";
        if (op.mode == ir::InterpMode::linear) {
          b += "  if (" + O + " == " + S + ") {\n    " + x + "[0] = " + o + ";\n    " + x +
               "[1] = " + o + ";\n    " + w + "[0] = " + W + "(1);\n    " + w + "[1] = " + W +
               "(0);\n  } else {\n";
          b += "    " + W + " real = " + real + ";\n";
          if (!op.align_corners) b += "    if (real < " + W + "(0)) real = " + W + "(0);\n";
          b += "    int i0 = int(real);\n    " + W + " l1 = real - " + W + "(i0);\n";
          b += "    " + x + "[0] = i0;\n    " + x + "[1] = i0 + (i0 < " + S +
               " - 1 ? 1 : 0);\n    " + w + "[0] = " + W + "(1) - l1;\n    " + w +
               "[1] = l1;\n  }\n";
        } else {
          b += "  {\n    " + W + " real = " + real + ";\n";
          b += "    int i0 = int(floor(real));\n    " + W + " tt = real - " + W + "(i0);\n";
          b += "    " + w + "[0] = cubic2(tt + " + W + "(1));\n    " + w +
               "[1] = cubic1(tt);\n    " + w + "[2] = cubic1(" + W + "(1) - tt);\n    " + w +
               "[3] = cubic2(" + W + "(1) - tt + " + W + "(1));\n";
          b += "    for (int j = 0; j < 4; ++j) " + x + "[j] = clamp(i0 - 1 + j, 0, " + S +
               " - 1);\n  }\n";
        }
      }
    }
    if (!weighted) {
      std::string off = "base";
      for (int q = 0; q < nd; ++q) off += " + x" + str(q) + " * " + pi(g.strides + 2 + size_t(q));
      b += "  dst[" + od + "] = src[" + off + "];\n";  // nearest copies exactly
    } else {
      // Sum over the taps of dims q.., outermost first: acc = w_0 v_0 + w_1 v_1 + ..., as the ref.
      std::string ind = "  ";
      std::string prev = "base";
      for (int q = 0; q < nd; ++q) {
        const std::string Q = str(q);
        b += ind + W + " a" + Q + " = " + W + "(0);\n";
        b += ind + "for (int j" + Q + " = 0; j" + Q + " < " + str(taps) + "; ++j" + Q + ") {\n";
        ind += "  ";
        b += ind + "int p" + Q + " = " + prev + " + x" + Q + "[j" + Q + "] * " +
             pi(g.strides + 2 + size_t(q)) + ";\n";
        prev = "p" + Q;
      }
      b += ind + W + " v = " + W + "(" + ld(t, "src[" + prev + "]") + ");\n";
      for (int q = nd - 1; q >= 0; --q) {
        const std::string Q = str(q), wq = "w" + Q + "[j" + Q + "]";
        const std::string v = q == nd - 1 ? "v" : "a" + str(q + 1);
        b += ind + "a" + Q + " = j" + Q + " == 0 ? " + v + " * " + wq + " : a" + Q + " + " + v +
             " * " + wq + ";\n";
        ind.resize(ind.size() - 2);
        b += ind + "}\n";
      }
      b += "  dst[" + od + "] = " + st(t, t == DType::f64 ? "a0" : "float(a0)") + ";\n";
    }
    def.body = b + "}\n";
    return def;
  });
  Lowering l;
  l.launches.push_back(launch_1d(k, {{src}, {dst}}, p.take(), total, caps));
  return l;
}

}  // namespace ember::codegen
