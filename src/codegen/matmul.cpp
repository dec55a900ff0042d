// Generated batched matmul (ir::Matmul): dst[b] = a[b] @ b[b] with any strides of a, b and dst.
// Two kernels, keyed by dtype and variant only (sizes and strides are params):
// - "simple": one thread per output element looping over K; for tiny or thin matrices.
// - "tiled": a workgroup computes a BM x BN tile of one batch, staging BK-deep slices of A and B
//   in shared memory; each thread accumulates a TM x TN block in registers (64 x 64 tiles with
//   8 x 8 per thread, or 32 x 32 with 4 x 4 for thin products).
// Sums run in k order in float (f32/f16/bf16) or double (f64), integers in a wrapping unsigned
// type of at least 32 bits and bool as (sum != 0): the ref's semantics (backends/ref/matmul.cpp).
#include <algorithm>

#include "codegen/family.h"
#include "codegen/lower.h"
#include "ember/error.h"

namespace ember::codegen {

namespace {

// The accumulation type of a dtype's products.
std::string acc_type(DType t) {
  if (is_float_dtype(t)) return ctype(t);
  return (t == DType::i64 || t == DType::u64) ? "u64" : "uint";
}

int acc_bytes(DType t) { return (t == DType::f64 || t == DType::i64 || t == DType::u64) ? 8 : 4; }

// A loaded element of `t` as the accumulation type.
std::string to_acc(DType t, const std::string& e) {
  if (is_float_dtype(t)) return ld(t, e);
  return acc_type(t) + "(" + ld(t, e) + ")";
}

// The accumulator `e` stored as `t` (integers keep the low bits; bool is sum != 0).
std::string from_acc(DType t, const std::string& e) {
  if (is_float_dtype(t) || t == DType::b8) return st(t, e);
  return st(t, ccast(t, e));
}

struct Layout {
  size_t batch, m, n, k, tiles_m, tiles_n, a, b, d;  // param word indices (a/b/d: offset + 3)
};

Layout params(ParamBuilder& p, const ir::Matmul& op, int64_t tiles_m, int64_t tiles_n) {
  const Tensor &a = op.a, &b = op.b, &d = op.dst;
  Layout l{};
  l.batch = p.u(d.size(0));
  l.m = p.u(d.size(1));
  l.n = p.u(d.size(2));
  l.k = p.u(a.size(2));
  l.tiles_m = p.u(tiles_m);
  l.tiles_n = p.u(tiles_n);
  l.a = p.i(a.offset());
  p.ints({a.stride(0), a.stride(1), a.stride(2)});
  l.b = p.i(b.offset());
  p.ints({b.stride(0), b.stride(1), b.stride(2)});
  l.d = p.i(d.offset());
  p.ints({d.stride(0), d.stride(1), d.stride(2)});
  return l;
}

// Element (r, c) of batch `bt` of the operand whose offset and strides start at word `at`.
std::string elem(const std::string& buf, size_t at, const std::string& bt, const std::string& r,
                 const std::string& c) {
  return buf + "[" + pi(at) + " + int(" + bt + ") * " + pi(at + 1) + " + int(" + r + ") * " +
         pi(at + 2) + " + int(" + c + ") * " + pi(at + 3) + "]";
}

KernelDef simple_kernel(const std::string& name, DType t, const Layout& l) {
  KernelDef k;
  k.name = name;
  k.buffers = {{"a", t, false}, {"b", t, false}, {"dst", t, true}};
  const std::string acc = acc_type(t);
  k.body = "uint total = " + pu(l.batch) + " * " + pu(l.m) + " * " + pu(l.n) + ";\n" +
           "for (uint i = GLOBAL_ID; i < total; i += GLOBAL_SIZE) {\n" + "  uint col = i % " +
           pu(l.n) + ";\n" + "  uint row = (i / " + pu(l.n) + ") % " + pu(l.m) + ";\n" +
           "  uint bt = i / (" + pu(l.n) + " * " + pu(l.m) + ");\n" + "  " + acc + " s = " + acc +
           "(0);\n" + "  for (uint kk = 0u; kk < " + pu(l.k) + "; ++kk)\n" +
           "    s += " + to_acc(t, elem("a", l.a, "bt", "row", "kk")) + " * " +
           to_acc(t, elem("b", l.b, "bt", "kk", "col")) + ";\n" + "  " +
           elem("dst", l.d, "bt", "row", "col") + " = " + from_acc(t, "s") + ";\n}\n";
  return k;
}

// Tile shape: a (BM / TM) x (BN / TN) thread grid, each thread a TM x TN block.
struct Tile {
  int bm, bn, bk, tm, tn;
  int tx() const { return bn / tn; }
  int threads() const { return (bm / tm) * (bn / tn); }
};

KernelDef tiled_kernel(const std::string& name, DType t, const Layout& l, const Tile& g) {
  KernelDef k;
  k.name = name;
  k.local_size = uint32_t(g.threads());
  const std::string NT = std::to_string(g.threads()) + "u", TX = std::to_string(g.tx()) + "u";
  k.buffers = {{"a", t, false}, {"b", t, false}, {"dst", t, true}};
  const std::string acc = acc_type(t);
  // float operands are staged as vec4 (tm, tn are multiples of 4): a thread's TM + TN operands
  // per k are TM / 4 + TN / 4 loads (lavapipe loads shared memory lane by lane, so fewer and
  // wider loads are faster).
  const bool v4 = acc == "float" && g.tm % 4 == 0 && g.tn % 4 == 0;
  if (v4)
    k.shared = {{"vec4", "As", uint32_t(g.bk * g.bm / 4)},
                {"vec4", "Bs", uint32_t(g.bk * g.bn / 4)}};
  else
    k.shared = {{acc, "As", uint32_t(g.bk * g.bm)}, {acc, "Bs", uint32_t(g.bk * g.bn)}};
  // Shared element `i` (a uint expression) of array `arr`.
  const auto sh = [&](const std::string& arr, const std::string& i) {
    return v4 ? arr + "[(" + i + ") >> 2u][(" + i + ") & 3u]" : arr + "[" + i + "]";
  };
  static const char* const kComp[4] = {".x", ".y", ".z", ".w"};
  const std::string BM = std::to_string(g.bm), BN = std::to_string(g.bn), BK = std::to_string(g.bk),
                    TM = std::to_string(g.tm), TN = std::to_string(g.tn);
  std::string b;
  b += "uint M = " + pu(l.m) + ", N = " + pu(l.n) + ", K = " + pu(l.k) + ";\n";
  b += "uint tiles = " + pu(l.batch) + " * " + pu(l.tiles_m) + " * " + pu(l.tiles_n) + ";\n";
  b += "uint tx = LOCAL_ID % " + TX + ", ty = LOCAL_ID / " + TX + ";\n";
  // Workgroup-uniform loop over output tiles, so the barriers inside are uniform.
  b += "for (uint tile = GROUP_ID; tile < tiles; tile += NUM_GROUPS) {\n";
  b += "  uint tn0 = (tile % " + pu(l.tiles_n) + ") * " + BN + "u;\n";
  b += "  uint tm0 = ((tile / " + pu(l.tiles_n) + ") % " + pu(l.tiles_m) + ") * " + BM + "u;\n";
  b += "  uint bt = tile / (" + pu(l.tiles_n) + " * " + pu(l.tiles_m) + ");\n";
  // Accumulators and operands as scalars, the loops over them unrolled here: a driver keeps
  // them in registers (an indexed array may live in memory).
  const auto c_ = [](int i, int j) {
    std::string r = "c";
    return r.append(std::to_string(i)).append("_").append(std::to_string(j));
  };
  for (int i = 0; i < g.tm; ++i)
    for (int j = 0; j < g.tn; ++j) b += "  " + acc + " " + c_(i, j) + " = " + acc + "(0);\n";
  b += "  for (uint k0 = 0u; k0 < K; k0 += " + BK + "u) {\n";
  // Stage A[tm0.., k0..] as As[kk * BM + r] and B[k0.., tn0..] as Bs[kk * BN + c]; zero
  // outside the matrices (both operands are zero past K, so padded products are 0 * 0).
  // Each loop runs twice, its body unrolled: lavapipe ends a shader after 65535 loop
  // iterations in all (nested loops count together), so loops per k step bound K.
  const int unroll_a = std::max(1, g.bm * g.bk / g.threads() / 2);
  const int unroll_b = std::max(1, g.bn * g.bk / g.threads() / 2);
  b += "    for (uint e0 = LOCAL_ID; e0 < " + std::to_string(g.bm * g.bk) +
       "u; e0 += " + std::to_string(g.threads() * unroll_a) + "u) {\n";
  for (int u = 0; u < unroll_a; ++u) {
    b += "    {\n      uint e = e0 + " + std::to_string(u * g.threads()) + "u;\n";
    b += "      uint r = e / " + BK + "u, kk = e % " + BK + "u;\n";
    b += "      uint gr = tm0 + r, gk = k0 + kk;\n";
    b += "      " + sh("As", "kk * " + BM + "u + r") + " = (gr < M && gk < K) ? " +
         to_acc(t, elem("a", l.a, "bt", "gr", "gk")) + " : " + acc + "(0);\n    }\n";
  }
  b += "    }\n";
  b += "    for (uint e0 = LOCAL_ID; e0 < " + std::to_string(g.bk * g.bn) +
       "u; e0 += " + std::to_string(g.threads() * unroll_b) + "u) {\n";
  for (int u = 0; u < unroll_b; ++u) {
    b += "    {\n      uint e = e0 + " + std::to_string(u * g.threads()) + "u;\n";
    b += "      uint kk = e / " + BN + "u, c = e % " + BN + "u;\n";
    b += "      uint gk = k0 + kk, gc = tn0 + c;\n";
    b += "      " + sh("Bs", "e") + " = (gk < K && gc < N) ? " +
         to_acc(t, elem("b", l.b, "bt", "gk", "gc")) + " : " + acc + "(0);\n    }\n";
  }
  b += "    }\n";
  b += "    BARRIER();\n";
  b += "    for (uint kk = 0u; kk < " + BK + "u; ++kk) {\n";
  // Operand i of this thread: xa<i> (scalar), or component i % 4 of the vec4 xa<i / 4> (not
  // a<i>/b<i>: b8 is a type name).
  const auto opnd = [&](const std::string& x, int i) {
    std::string r = x;
    r += v4 ? std::to_string(i / 4) + kComp[i % 4] : std::to_string(i);
    return r;
  };
  const int wa = v4 ? 4 : 1;
  for (int i = 0; i < g.tm / wa; ++i)
    b += "      " + (v4 ? std::string("vec4") : acc) + " xa" + std::to_string(i) + " = As[(kk * " +
         BM + "u + ty * " + TM + "u) / " + std::to_string(wa) + "u + " + std::to_string(i) +
         "u];\n";
  for (int j = 0; j < g.tn / wa; ++j)
    b += "      " + (v4 ? std::string("vec4") : acc) + " xb" + std::to_string(j) + " = Bs[(kk * " +
         BN + "u + tx * " + TN + "u) / " + std::to_string(wa) + "u + " + std::to_string(j) +
         "u];\n";
  for (int i = 0; i < g.tm; ++i)
    for (int j = 0; j < g.tn; ++j)
      b += "      " + c_(i, j) + " += " + opnd("xa", i) + " * " + opnd("xb", j) + ";\n";
  b += "    }\n    BARRIER();\n  }\n";
  for (int i = 0; i < g.tm; ++i) {
    b += "  if (tm0 + ty * " + TM + "u + " + std::to_string(i) + "u < M) {\n";
    b += "    uint gr = tm0 + ty * " + TM + "u + " + std::to_string(i) + "u;\n";
    for (int j = 0; j < g.tn; ++j) {
      const std::string gc = "tn0 + tx * " + TN + "u + " + std::to_string(j) + "u";
      b += "    if (" + gc + " < N) " + elem("dst", l.d, "bt", "gr", gc) + " = " +
           from_acc(t, c_(i, j)) + ";\n";
    }
    b += "  }\n";
  }
  b += "}\n";
  k.body = b;
  return k;
}

}  // namespace

Lowering lower_matmul(const ir::Matmul& op, Dialect d, const Caps& caps) {
  const DType t = op.dst.dtype();
  check_dtype("matmul", t, caps);
  check_fits("matmul", {op.a, op.b, op.dst});
  const int64_t B = op.dst.size(0), M = op.dst.size(1), N = op.dst.size(2), K = op.a.size(2);
  if (B == 0 || M == 0 || N == 0) return {};
  // Tiny or thin products (matrix-vector) gain nothing from tiles.
  const bool tiled = caps.max_workgroup_size >= 64 && M >= 8 && N >= 8 && M * N * K >= 32768;
  ParamBuilder p("matmul");
  const std::string dt = dtype_tag(t);
  Lowering lw;
  if (!tiled) {
    const Layout l = params(p, op, 1, 1);
    const std::string key = "matmul_simple_" + dt;
    auto k = cached_kernel(key, d, caps, [&] { return simple_kernel(key, t, l); });
    lw.launches.push_back(launch_1d(k, {{op.a}, {op.b}, {op.dst}}, p.take(), B * M * N, caps));
    return lw;
  }
  // 64 x 64 tiles, 8 x 8 per thread (64 threads); 32 x 32 tiles (4 x 4 per thread) for thin
  // products, so that a few rows or columns do not waste most of a tile. On a CPU device
  // (lavapipe loads shared and storage memory lane by lane) 16 x 16 per thread (16 threads):
  // the most products per load (measured in docs/vulkan.md: 1.6x the 8 x 8 blocks).
  Tile g{64, 64, 16, 8, 8};
  if (M <= 32 || N <= 32) g = {32, 32, 16, 4, 4};
  if (caps.cpu) g = (M <= 32 || N <= 32) ? Tile{32, 32, 16, 8, 8} : Tile{64, 64, 16, 16, 16};
  const auto fits = [&](const Tile& x) {
    return int64_t(x.bk) * (x.bm + x.bn) * acc_bytes(t) <= int64_t(caps.max_shared_bytes);
  };
  if (!fits(g)) g.bk = 8;
  if (!fits(g)) g = {32, 32, 8, 4, 4};
  const int64_t tiles_m = (M + g.bm - 1) / g.bm, tiles_n = (N + g.bn - 1) / g.bn;
  const Layout l = params(p, op, tiles_m, tiles_n);
  const std::string key = "matmul_tiled" + std::to_string(g.bm) + "x" + std::to_string(g.bk) + "t" +
                          std::to_string(g.tm) + "_" + dt;
  auto k = cached_kernel(key, d, caps, [&] { return tiled_kernel(key, t, l, g); });
  Launch ln;
  ln.kernel = k;
  ln.bindings = {{op.a}, {op.b}, {op.dst}};
  ln.params = p.take();
  const int64_t tiles = B * tiles_m * tiles_n;
  ln.groups = uint32_t(std::min<int64_t>(tiles, int64_t(caps.max_groups_x)));
  lw.launches.push_back(std::move(ln));
  return lw;
}

}  // namespace ember::codegen
