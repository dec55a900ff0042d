// Generated batched matmul (ir::Matmul): dst[b] = a[b] @ b[b] with any strides of a, b and dst.
// Two kernels, keyed by dtype and variant only (sizes and strides are params):
// - "simple": one thread per output element looping over K; for tiny or thin matrices.
// - "tiled": a workgroup computes a BM x BN tile of one batch, staging BK-deep slices of A and B
//   in shared memory; each thread accumulates a TM x TN block in registers (64 x 64 tiles with
//   8 x 8 per thread, or 32 x 32 with 4 x 4 for thin products).
// Sums run in k order in float (f32/f16/bf16) or double (f64), integers in a wrapping unsigned
// type of at least 32 bits and bool as (sum != 0): the ref's semantics (backends/ref/matmul.cpp).
//
// Split K: lavapipe ends a shader invocation after 65,535 loop iterations in all (nested loops
// count together) and the results are then garbage. Each kernel's iteration count per invocation
// is computed from its loop structure (loop_iterations below); when K would pass kLoopBudget, the
// op is lowered to one launch of a "_kc" variant per K-chunk. A chunk starts its accumulators
// from the previous chunk's (kept in dst, or for f16/bf16 in an f32 scratch buffer so that the
// accumulation stays in float) and continues in k order, so the result is bit for bit the
// single-pass kernel's. The same rule applies on every device (a real GPU has no such limit, but
// a chunk launch per ~30,000 k costs little next to the product itself).
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

// Loop iterations one invocation may run, well under lavapipe's 65,535. The estimates count each
// loop's trip count plus one, as lavapipe does (loops a driver unrolls count 0: an upper bound).
constexpr int64_t kLoopBudget = 49152;

// Whether the chunk variant carries its accumulators in an f32 scratch buffer (dst cannot hold
// the float accumulator exactly) rather than in dst: f16 and bf16. Integer dtypes carry in dst:
// the low bits of a wrapping sum do not depend on where it is truncated; bool carries (sum != 0),
// which stays right because every product is 0 or 1.
bool carry_in_scratch(DType t) { return t == DType::f16 || t == DType::bf16; }

struct Layout {
  size_t batch, m, n, k, tiles_m, tiles_n, a, b, d;  // param word indices (a/b/d: offset + 3)
  size_t kb = 0, ke = 0, flags = 0;  // chunk variant: k range [kb, ke), bit 0 first, bit 1 last
};

// Appends the chunk words (k range and flags) after params(); the plain variant has none.
void chunk_params(ParamBuilder& p, Layout& l, int64_t kb, int64_t ke, bool first, bool last) {
  l.kb = p.u(kb);
  l.ke = p.u(ke);
  l.flags = p.u((first ? 1 : 0) | (last ? 2 : 0));
}

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

// The chunk variant's accumulator of output (bt, r, c) as carried by the previous chunk.
std::string carried(DType t, const Layout& l, const std::string& bt, const std::string& r,
                    const std::string& c) {
  if (carry_in_scratch(t))
    return "part[(" + bt + " * " + pu(l.m) + " + " + r + ") * " + pu(l.n) + " + " + c + "]";
  return to_acc(t, elem("dst", l.d, bt, r, c));
}

// Statement(s) storing accumulator `v` of output (bt, r, c): into dst, or in the chunk variant
// with a scratch carrier into the scratch unless this is the last chunk.
std::string store_acc(DType t, const Layout& l, bool kc, const std::string& bt,
                      const std::string& r, const std::string& c, const std::string& v) {
  const std::string to_dst = elem("dst", l.d, bt, r, c) + " = " + from_acc(t, v) + ";";
  if (!kc || !carry_in_scratch(t)) return to_dst;
  return "if ((" + pu(l.flags) + " & 2u) != 0u) " + to_dst + " else part[(" + bt + " * " + pu(l.m) +
         " + " + r + ") * " + pu(l.n) + " + " + c + "] = " + v + ";";
}

std::vector<BufferDecl> buffers(DType t, bool kc) {
  std::vector<BufferDecl> b = {{"a", t, false}, {"b", t, false}, {"dst", t, true}};
  if (kc && carry_in_scratch(t)) b.push_back({"part", DType::f32, true});
  return b;
}

// kc: the chunk variant (k range and flags from chunk_params).
KernelDef simple_kernel(const std::string& name, DType t, const Layout& l, bool kc) {
  KernelDef k;
  k.name = name;
  k.buffers = buffers(t, kc);
  const std::string acc = acc_type(t);
  std::string b = "uint total = " + pu(l.batch) + " * " + pu(l.m) + " * " + pu(l.n) + ";\n";
  b += "for (uint i = GLOBAL_ID; i < total; i += GLOBAL_SIZE) {\n";
  b += "  uint col = i % " + pu(l.n) + ";\n";
  b += "  uint row = (i / " + pu(l.n) + ") % " + pu(l.m) + ";\n";
  b += "  uint bt = i / (" + pu(l.n) + " * " + pu(l.m) + ");\n";
  b += "  " + acc + " s = " + acc + "(0);\n";
  if (kc)
    b += "  if ((" + pu(l.flags) + " & 1u) == 0u) s = " + carried(t, l, "bt", "row", "col") + ";\n";
  b += "  for (uint kk = " + (kc ? pu(l.kb) : std::string("0u")) + "; kk < " + pu(kc ? l.ke : l.k) +
       "; ++kk)\n";
  b += "    s += " + to_acc(t, elem("a", l.a, "bt", "row", "kk")) + " * " +
       to_acc(t, elem("b", l.b, "bt", "kk", "col")) + ";\n";
  b += "  " + store_acc(t, l, kc, "bt", "row", "col", "s") + "\n}\n";
  k.body = b;
  return k;
}

// Tile shape: a (BM / TM) x (BN / TN) thread grid, each thread a TM x TN block.
struct Tile {
  int bm, bn, bk, tm, tn;
  int tx() const { return bn / tn; }
  int threads() const { return (bm / tm) * (bn / tn); }
};

// Staging-loop unroll factors: each staging loop runs twice (or once).
int unroll_of(int elems, int threads) { return std::max(1, elems / threads / 2); }

KernelDef tiled_kernel(const std::string& name, DType t, const Layout& l, const Tile& g, bool kc) {
  KernelDef k;
  k.name = name;
  k.local_size = uint32_t(g.threads());
  const std::string NT = std::to_string(g.threads()) + "u", TX = std::to_string(g.tx()) + "u";
  k.buffers = buffers(t, kc);
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
  // K: the end of this launch's k range (the chunk variant's k range is [KB, K)).
  b += "uint M = " + pu(l.m) + ", N = " + pu(l.n) + ", K = " + pu(kc ? l.ke : l.k) + ";\n";
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
  // Block element (i, j) of this thread: row and column expressions.
  const auto row_of = [&](int i) { return "tm0 + ty * " + TM + "u + " + std::to_string(i) + "u"; };
  const auto col_of = [&](int j) { return "tn0 + tx * " + TN + "u + " + std::to_string(j) + "u"; };
  if (kc) {  // continue from the previous chunk's accumulators
    b += "  if ((" + pu(l.flags) + " & 1u) == 0u) {\n";
    for (int i = 0; i < g.tm; ++i) {
      b += "    if (" + row_of(i) + " < M) {\n";
      for (int j = 0; j < g.tn; ++j)
        b += "      if (" + col_of(j) + " < N) " + c_(i, j) + " = " +
             carried(t, l, "bt", row_of(i), col_of(j)) + ";\n";
      b += "    }\n";
    }
    b += "  }\n";
  }
  b += "  for (uint k0 = " + (kc ? pu(l.kb) : std::string("0u")) + "; k0 < K; k0 += " + BK +
       "u) {\n";
  // Stage A[tm0.., k0..] as As[kk * BM + r] and B[k0.., tn0..] as Bs[kk * BN + c]; zero
  // outside the matrices (both operands are zero past K, so padded products are 0 * 0).
  // Each loop runs twice, its body unrolled: lavapipe ends a shader after 65535 loop
  // iterations in all (nested loops count together), so loops per k step bound K.
  const int unroll_a = unroll_of(g.bm * g.bk, g.threads());
  const int unroll_b = unroll_of(g.bn * g.bk, g.threads());
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
    b += "  if (" + row_of(i) + " < M) {\n";
    b += "    uint gr = " + row_of(i) + ";\n";
    for (int j = 0; j < g.tn; ++j) {
      const std::string gc = col_of(j);
      b += "    if (" + gc + " < N) " + store_acc(t, l, kc, "bt", "gr", gc, c_(i, j)) + "\n";
    }
    b += "  }\n";
  }
  b += "}\n";
  k.body = b;
  return k;
}

// The K-chunk length that keeps one invocation of a kernel within kLoopBudget loop iterations,
// given `per` outputs (grid-stride iterations) per invocation, `step` k per outer k iteration
// and `per_step` loop iterations per outer k iteration (the step's own and its inner loops').
// A multiple of `step`, at least one step.
int64_t chunk_k(int64_t per, int64_t step, int64_t per_step) {
  const int64_t steps = (kLoopBudget / std::max<int64_t>(per, 1) - 2) / per_step;
  return std::max<int64_t>(steps, 1) * step;
}

// The launches of one matmul: one plain launch when K fits in `kc_len`, else one launch of the
// chunk variant per K-chunk. `make(kc, key, layout)` builds a kernel definition.
template <class Make>
Lowering launches(const ir::Matmul& op, Dialect d, const Caps& caps, const std::string& key,
                  int64_t tiles_m, int64_t tiles_n, int64_t kc_len, uint32_t groups,
                  const Make& make) {
  const DType t = op.dst.dtype();
  const int64_t K = op.a.size(2);
  Lowering lw;
  if (K <= kc_len) {
    ParamBuilder p("matmul");
    const Layout l = params(p, op, tiles_m, tiles_n);
    auto k = cached_kernel(key, d, caps, [&] { return make(false, key, l); });
    Launch ln;
    ln.kernel = k;
    ln.bindings = {{op.a}, {op.b}, {op.dst}};
    ln.params = p.take();
    ln.groups = groups;
    lw.launches.push_back(std::move(ln));
    return lw;
  }
  const std::string kkey = key + "_kc";
  const bool scratch = carry_in_scratch(t);
  if (scratch) lw.scratch_bytes.push_back(op.dst.numel() * 4);
  for (int64_t kb = 0; kb < K; kb += kc_len) {
    const int64_t ke = std::min(K, kb + kc_len);
    ParamBuilder p("matmul");
    Layout l = params(p, op, tiles_m, tiles_n);
    chunk_params(p, l, kb, ke, kb == 0, ke == K);
    auto k = cached_kernel(kkey, d, caps, [&] { return make(true, kkey, l); });
    Launch ln;
    ln.kernel = k;
    ln.bindings = {{op.a}, {op.b}, {op.dst}};
    if (scratch) {
      Binding part;
      part.scratch = 0;
      ln.bindings.push_back(part);
    }
    ln.params = p.take();
    ln.groups = groups;
    lw.launches.push_back(std::move(ln));
  }
  return lw;
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
  const std::string dt = dtype_tag(t);
  if (!tiled) {
    // Per invocation: ceil(outputs / threads) grid iterations, each one k loop of K iterations.
    const std::string key = "matmul_simple_" + dt;
    const uint32_t groups = groups_1d(B * M * N, 256, caps);
    const int64_t per = (B * M * N + int64_t(groups) * 256 - 1) / (int64_t(groups) * 256);
    return launches(op, d, caps, key, 1, 1, chunk_k(per, 1, 1), groups,
                    [&](bool kc, const std::string& name, const Layout& l) {
                      return simple_kernel(name, t, l, kc);
                    });
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
  const std::string key = "matmul_tiled" + std::to_string(g.bm) + "x" + std::to_string(g.bk) + "t" +
                          std::to_string(g.tm) + "_" + dt;
  const int64_t tiles = B * tiles_m * tiles_n;
  const uint32_t groups = uint32_t(std::min<int64_t>(tiles, int64_t(caps.max_groups_x)));
  // Per invocation: ceil(tiles / groups) tiles, each K / BK steps of two staging loops (their
  // trip counts as generated) and the BK-long product loop; lavapipe counts a loop's trip count
  // plus one (measured: 24 per step of the CPU-device tiles, K = 70,000 stopped at k ~43,700).
  const int64_t T = g.threads(), ua = unroll_of(g.bm * g.bk, g.threads()),
                ub = unroll_of(g.bn * g.bk, g.threads());
  const int64_t per_step = 1 + (g.bm * g.bk + T * ua - 1) / (T * ua) + 1 +
                           (g.bn * g.bk + T * ub - 1) / (T * ub) + 1 + g.bk + 1;
  const int64_t per = (tiles + groups - 1) / groups;
  return launches(op, d, caps, key, tiles_m, tiles_n, chunk_k(per, g.bk, per_step), groups,
                  [&](bool kc, const std::string& name, const Layout& l) {
                    return tiled_kernel(name, t, l, g, kc);
                  });
}

}  // namespace ember::codegen
