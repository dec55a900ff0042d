// Generated batched matmul (ir::Matmul): dst[b] = a[b] @ b[b] with any strides of a, b and dst.
// Two kernels, keyed by dtype and variant only (sizes and strides are params):
// - "simple": one thread per output element looping over K; for tiny or thin matrices.
// - "tiled": a workgroup computes a BM x BN tile of one batch, staging BK-deep slices of A and B
//   in shared memory; each thread accumulates a TM x TN block in registers (by default 64 x 64
//   tiles with 8 x 8 per thread, or 32 x 32 with 4 x 4 for thin products). The tile and the
//   block are autotuned per shape class among matmul_variants() (runtime/kernel_backend.cpp).
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
//
// Epilogue (matmul_epilogue.h; KernelBackend::execute_anchored): the same kernels, keyed also by
// the epilogue graph's structure, store each output through the graph instead of into dst (which
// is not bound); a split-K launch then carries its accumulators in a scratch buffer of the
// accumulation type and the last chunk runs the epilogue.
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "codegen/elementwise_internal.h"
#include "codegen/family.h"
#include "codegen/graph_nodes.h"
#include "codegen/lower.h"
#include "codegen/matmul_epilogue.h"
#include "ember/error.h"

namespace ember::codegen {

using kir::Expr;
using kir::Type;

namespace {

// The accumulation type of a dtype's products.
Type acc_type(DType t) {
  const Type c = kir::compute_of(t);
  if (kir::is_float(c)) return c;
  return (t == DType::i64 || t == DType::u64) ? Type::u64 : Type::u32;
}

int acc_bytes(DType t) { return (t == DType::f64 || t == DType::i64 || t == DType::u64) ? 8 : 4; }

// A loaded element of `t` (its compute type; bool loads as 0/1) as the accumulation type.
Expr to_acc(DType t, Expr v) { return cast(acc_type(t), v); }

// The accumulator `v` as the value stored to `t` (integers keep the low bits; bool is v != 0).
Expr from_acc(DType t, Expr v) {
  if (t == DType::b8) return v != 0;
  return cast(kir::compute_of(t), v);
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
  MatmulEpilogue* epi = nullptr;     // the epilogue (its params after the words above), or none
};

// Whether a chunk variant carries its accumulators in scratch: f16/bf16, and any epilogue (dst,
// the product, is not bound then).
bool scratch_carrier(DType t, const Layout& l) { return l.epi || carry_in_scratch(t); }
// The carrier's dtype: the accumulation type's.
DType carrier_dtype(DType t) { return acc_type(t) == Type::f64 ? DType::f64 : DType::f32; }

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

// Params word w as u32 / i32.
Expr wu(size_t w) { return kir::param_u32(uint32_t(w)); }
Expr wi(size_t w) { return kir::param_i32(uint32_t(w)); }
Expr u32(int64_t v) { return kir::lit_int(Type::u32, v); }

// The offset of element (r, c) of batch `bt` (u32) of the operand whose offset and strides start
// at word `at`.
Expr elem(size_t at, Expr bt, Expr r, Expr c) {
  return wi(at) + cast(Type::i32, bt) * wi(at + 1) + cast(Type::i32, r) * wi(at + 2) +
         cast(Type::i32, c) * wi(at + 3);
}

// The kernel's buffers: a, b, dst (none with an epilogue), part (the carrier) only in a chunk
// variant carrying in scratch, then the epilogue's.
struct Bufs {
  kir::Buf a, b, dst, part;
  std::vector<kir::Buf> epi;
};
Bufs buffers(kir::Kernel& k, DType t, const Layout& l, bool kc) {
  Bufs b;
  b.a = k.buffer("a", t, false);
  b.b = k.buffer("b", t, false);
  if (!l.epi) b.dst = k.buffer("dst", t, true);
  if (kc && scratch_carrier(t, l)) b.part = k.buffer("part", carrier_dtype(t), true);
  if (l.epi) b.epi = epilogue_buffers(k, *l.epi);
  return b;
}

// The scratch carrier's index of output (bt, r, c).
Expr part_index(const Layout& l, Expr bt, Expr r, Expr c) {
  return (bt * wu(l.m) + r) * wu(l.n) + c;
}

// The chunk variant's accumulator of output (bt, r, c) as carried by the previous chunk.
Expr carried(kir::Kernel& k, DType t, const Layout& l, const Bufs& bf, Expr bt, Expr r, Expr c) {
  if (scratch_carrier(t, l)) return k.load(bf.part, part_index(l, bt, r, c));
  return to_acc(t, k.load(bf.dst, elem(l.d, bt, r, c)));
}

// Stores accumulator `v` of output (bt, r, c): into dst (or through the epilogue, given the
// value dst would have held), or in the chunk variant with a scratch carrier into the scratch
// unless this is the last chunk.
void store_acc(kir::Kernel& k, DType t, const Layout& l, bool kc, const Bufs& bf, Expr bt, Expr r,
               Expr c, Expr v, const Caps& caps) {
  const auto to_dst = [&] {
    if (l.epi)
      epilogue_store(k, *l.epi, bf.epi, bt, r, c, stored_value(k, t, from_acc(t, v)), caps);
    else
      k.store(bf.dst, elem(l.d, bt, r, c), from_acc(t, v));
  };
  if (!kc || !scratch_carrier(t, l)) return to_dst();
  k.if_((wu(l.flags) & 2) != 0, to_dst, [&] { k.store(bf.part, part_index(l, bt, r, c), v); });
}

// kc: the chunk variant (k range and flags from chunk_params).
kir::Kernel simple_kernel(const std::string& name, DType t, const Layout& l, bool kc,
                          const Caps& caps) {
  kir::Kernel k(name, 256);
  const Bufs bf = buffers(k, t, l, kc);
  const Type acc = acc_type(t);
  const Expr total = k.let("total", wu(l.batch) * wu(l.m) * wu(l.n));
  k.grid_loop("i", total, [&](Expr i) {
    const Expr col = k.let("col", i % wu(l.n));
    const Expr row = k.let("row", (i / wu(l.n)) % wu(l.m));
    const Expr bt = k.let("bt", i / (wu(l.n) * wu(l.m)));
    const Expr s = k.let("s", kir::lit(acc, 0));
    if (kc) k.if_((wu(l.flags) & 1) == 0, [&] { k.assign(s, carried(k, t, l, bf, bt, row, col)); });
    k.for_range("kk", kc ? wu(l.kb) : u32(0), wu(kc ? l.ke : l.k), u32(1), [&](Expr kk) {
      k.assign(s, s + to_acc(t, k.load(bf.a, elem(l.a, bt, row, kk))) *
                          to_acc(t, k.load(bf.b, elem(l.b, bt, kk, col))));
    });
    store_acc(k, t, l, kc, bf, bt, row, col, s, caps);
  });
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

// Whether float operands are staged as vec4 (tm, tn are multiples of 4): a thread's TM + TN
// operands per k are TM / 4 + TN / 4 loads (lavapipe loads shared memory lane by lane, so fewer
// and wider loads are faster).
bool staged_v4(DType t, const Tile& g) {
  return acc_type(t) == Type::f32 && g.tm % 4 == 0 && g.tn % 4 == 0;
}

// The staging loop over `elems` shared slots: each thread's slots e0 + u * threads for u <
// unroll_of(elems, threads), the body `slot(e)` unrolled here. Each loop runs twice (or once):
// lavapipe ends a shader after 65535 loop iterations in all (nested loops count together), so
// loops per k step bound K.
void staging_loop(kir::Kernel& k, int elems, int threads, const std::function<void(Expr)>& slot) {
  const int unroll = unroll_of(elems, threads);
  k.for_range("e0", kir::local_id(), u32(elems), u32(int64_t(threads) * unroll), [&](Expr e0) {
    for (int u = 0; u < unroll; ++u) slot(k.let("e", e0 + u32(int64_t(u) * threads)));
  });
}

kir::Kernel tiled_kernel(const std::string& name, DType t, const Layout& l, const Tile& g, bool kc,
                         const Caps& caps) {
  kir::Kernel k(name, uint32_t(g.threads()));
  const Bufs bf = buffers(k, t, l, kc);
  const Type acc = acc_type(t);
  const Expr zero = kir::lit(acc, 0);
  const bool v4 = staged_v4(t, g);
  const kir::Shared As = v4 ? k.shared("As", Type::f32x4, uint32_t(g.bk * g.bm / 4))
                            : k.shared("As", acc, uint32_t(g.bk * g.bm));
  const kir::Shared Bs = v4 ? k.shared("Bs", Type::f32x4, uint32_t(g.bk * g.bn / 4))
                            : k.shared("Bs", acc, uint32_t(g.bk * g.bn));
  // An epilogue's staging of one accumulator row per thread row.
  const kir::Shared Cs = l.epi ? k.shared("Cs", acc, uint32_t(g.bm / g.tm * g.bn)) : kir::Shared{};
  // K: the end of this launch's k range (the chunk variant's k range is [KB, K)).
  const Expr M = k.let("M", wu(l.m)), N = k.let("N", wu(l.n)), K = k.let("K", wu(kc ? l.ke : l.k));
  const Expr tiles = k.let("tiles", wu(l.batch) * wu(l.tiles_m) * wu(l.tiles_n));
  const Expr tx = k.let("tx", kir::local_id() % u32(g.tx())),
             ty = k.let("ty", kir::local_id() / u32(g.tx()));
  const Expr BM = u32(g.bm), BN = u32(g.bn), BK = u32(g.bk), TM = u32(g.tm), TN = u32(g.tn);
  // Workgroup-uniform loop over output tiles, so the barriers inside are uniform.
  k.for_range("tile", kir::group_id(), tiles, kir::num_groups(), [&](Expr tile) {
    const Expr tn0 = k.let("tn0", (tile % wu(l.tiles_n)) * BN);
    const Expr tm0 = k.let("tm0", ((tile / wu(l.tiles_n)) % wu(l.tiles_m)) * BM);
    const Expr bt = k.let("bt", tile / (wu(l.tiles_n) * wu(l.tiles_m)));
    // Accumulators and operands as scalars, the loops over them unrolled here: a driver keeps
    // them in registers (an indexed array may live in memory).
    std::vector<Expr> c(size_t(g.tm * g.tn));
    const auto c_ = [&](int i, int j) -> Expr& { return c[size_t(i * g.tn + j)]; };
    for (int i = 0; i < g.tm; ++i)
      for (int j = 0; j < g.tn; ++j)
        c_(i, j) = k.let("c" + std::to_string(i) + "_" + std::to_string(j), zero);
    // Block element (i, j) of this thread: row and column expressions.
    const auto row_of = [&](int i) { return tm0 + ty * TM + u32(i); };
    const auto col_of = [&](int j) { return tn0 + tx * TN + u32(j); };
    if (kc) {  // continue from the previous chunk's accumulators
      k.if_((wu(l.flags) & 1) == 0, [&] {
        for (int i = 0; i < g.tm; ++i)
          k.if_(row_of(i) < M, [&] {
            for (int j = 0; j < g.tn; ++j)
              k.if_(col_of(j) < N,
                    [&] { k.assign(c_(i, j), carried(k, t, l, bf, bt, row_of(i), col_of(j))); });
          });
      });
    }
    k.for_range("k0", kc ? wu(l.kb) : u32(0), K, BK, [&](Expr k0) {
      // Stage A[tm0.., k0..] as As[kk * BM + r] and B[k0.., tn0..] as Bs[kk * BN + c]; zero
      // outside the matrices (both operands are zero past K, so padded products are 0 * 0).
      // A of row gr, column gk (zero outside), as the accumulation type.
      const auto a_at = [&](Expr gr, Expr gk) {
        return select(gr < M && gk < K, to_acc(t, k.load(bf.a, elem(l.a, bt, gr, gk))), zero);
      };
      const auto b_at = [&](Expr gk, Expr gc) {
        return select(gk < K && gc < N, to_acc(t, k.load(bf.b, elem(l.b, bt, gk, gc))), zero);
      };
      if (v4) {
        // A vec4 slot holds 4 consecutive rows (As) or columns (Bs) of one k: each thread
        // stores whole slots (a vec4 component cannot be stored by a runtime index).
        staging_loop(k, g.bm * g.bk / 4, g.threads(), [&](Expr e) {
          const Expr r4 = k.let("r4", e / BK), kk = k.let("kk", e % BK);
          const Expr gr = k.let("gr", tm0 + r4 * 4u), gk = k.let("gk", k0 + kk);
          k.store(As, kk * u32(g.bm / 4) + r4,
                  kir::vec4(a_at(gr, gk), a_at(gr + 1u, gk), a_at(gr + 2u, gk), a_at(gr + 3u, gk)));
        });
        staging_loop(k, g.bk * g.bn / 4, g.threads(), [&](Expr e) {
          const Expr kk = k.let("kk", e / u32(g.bn / 4)), cc = k.let("c", (e % u32(g.bn / 4)) * 4u);
          const Expr gk = k.let("gk", k0 + kk), gc = k.let("gc", tn0 + cc);
          k.store(Bs, e,
                  kir::vec4(b_at(gk, gc), b_at(gk, gc + 1u), b_at(gk, gc + 2u), b_at(gk, gc + 3u)));
        });
      } else {
        staging_loop(k, g.bm * g.bk, g.threads(), [&](Expr e) {
          const Expr r = k.let("r", e / BK), kk = k.let("kk", e % BK);
          const Expr gr = k.let("gr", tm0 + r), gk = k.let("gk", k0 + kk);
          k.store(As, kk * BM + r, a_at(gr, gk));
        });
        staging_loop(k, g.bk * g.bn, g.threads(), [&](Expr e) {
          const Expr kk = k.let("kk", e / BN), cc = k.let("c", e % BN);
          const Expr gk = k.let("gk", k0 + kk), gc = k.let("gc", tn0 + cc);
          k.store(Bs, e, b_at(gk, gc));
        });
      }
      k.barrier();
      k.for_range("kk", u32(0), BK, u32(1), [&](Expr kk) {
        // Operand i of this thread: xa<i> (scalar), or component i % 4 of the vec4 xa<i / 4>
        // (not a<i>/b<i>: b8 is a type name).
        const int wa = v4 ? 4 : 1;
        std::vector<Expr> xa, xb;
        for (int i = 0; i < g.tm / wa; ++i)
          xa.push_back(
              k.let("xa" + std::to_string(i), k.load(As, (kk * BM + ty * TM) / u32(wa) + u32(i))));
        for (int j = 0; j < g.tn / wa; ++j)
          xb.push_back(
              k.let("xb" + std::to_string(j), k.load(Bs, (kk * BN + tx * TN) / u32(wa) + u32(j))));
        const auto opnd = [&](const std::vector<Expr>& x, int i) {
          return v4 ? x[size_t(i / 4)][i % 4] : x[size_t(i)];
        };
        for (int i = 0; i < g.tm; ++i)
          for (int j = 0; j < g.tn; ++j) k.assign(c_(i, j), c_(i, j) + opnd(xa, i) * opnd(xb, j));
      });
      k.barrier();
    });
    if (l.epi) {
      // The epilogue's code once, not per accumulator (TM x TN copies compile for minutes on
      // lavapipe): row i of every thread's block goes through Cs (one row of BN per thread
      // row), then the workgroup runs the epilogue over those outputs, TN per thread.
      const int rows = g.bm / g.tm;
      k.for_range("ei", u32(0), TM, u32(1), [&](Expr ei) {
        for (int i = 0; i < g.tm; ++i)
          k.if_(ei == u32(i), [&] {
            for (int j = 0; j < g.tn; ++j) k.store(Cs, ty * BN + tx * TN + u32(j), c_(i, j));
          });
        k.barrier();
        k.for_range("e", kir::local_id(), u32(int64_t(rows) * g.bn), u32(g.threads()), [&](Expr e) {
          const Expr gr = k.let("gr", tm0 + (e / BN) * TM + ei);
          const Expr gc = k.let("gc", tn0 + e % BN);
          k.if_(gr < M && gc < N,
                [&] { store_acc(k, t, l, kc, bf, bt, gr, gc, k.load(Cs, e), caps); });
        });
        k.barrier();
      });
      return;
    }
    for (int i = 0; i < g.tm; ++i)
      k.if_(row_of(i) < M, [&] {
        const Expr gr = k.let("gr", row_of(i));
        for (int j = 0; j < g.tn; ++j) {
          const Expr gc = col_of(j);
          k.if_(gc < N, [&] { store_acc(k, t, l, kc, bf, bt, gr, gc, c_(i, j), caps); });
        }
      });
  });
  return k;
}

// Loop iterations per tile that the epilogue's store adds (the row loop and, per row, the
// workgroup's loop over BN outputs of each thread row), as loop_iterations counts them.
int64_t epilogue_iterations(const Tile& g) { return 1 + int64_t(g.tm) * (1 + g.tn + 1); }

// The K-chunk length that keeps one invocation of a kernel within kLoopBudget loop iterations,
// given `per` outputs (grid-stride iterations) per invocation, `step` k per outer k iteration
// and `per_step` loop iterations per outer k iteration (the step's own and its inner loops').
// A multiple of `step`, at least one step.
// `extra`: loop iterations per output (or tile) besides the k loop's.
int64_t chunk_k(int64_t per, int64_t step, int64_t per_step, int64_t extra = 0) {
  const int64_t steps = (kLoopBudget / std::max<int64_t>(per, 1) - 2 - extra) / per_step;
  return std::max<int64_t>(steps, 1) * step;
}

// The launches of one matmul: one plain launch when K fits in `kc_len`, else one launch of the
// chunk variant per K-chunk. `make(kc, key, layout)` builds a kernel definition.
// `epi`: the epilogue (its key part is in `key`), or none.
template <class Make>
Lowering launches(const ir::Matmul& op, Dialect d, const Caps& caps, const std::string& key,
                  int64_t tiles_m, int64_t tiles_n, int64_t kc_len, uint32_t groups,
                  MatmulEpilogue* epi, const Make& make) {
  const DType t = op.dst.dtype();
  const int64_t K = op.a.size(2);
  Lowering lw;
  // a, b, then dst or the epilogue's operands (the carrier goes between them).
  auto bind = [&](Launch& ln, bool carrier) {
    ln.bindings = {{op.a}, {op.b}};
    if (!epi) ln.bindings.push_back({op.dst});
    if (carrier) {
      Binding part;
      part.scratch = 0;
      ln.bindings.push_back(part);
    }
    if (epi)
      for (Binding& b : epilogue_bindings(*epi)) ln.bindings.push_back(std::move(b));
  };
  if (K <= kc_len) {
    ParamBuilder p("matmul");
    Layout l = params(p, op, tiles_m, tiles_n);
    l.epi = epi;
    if (epi) epilogue_params(p, *epi, caps);
    auto k = cached_kernel(key, d, caps, [&] { return make(false, key, l); });
    Launch ln;
    ln.kernel = k;
    bind(ln, false);
    ln.params = p.take();
    ln.groups = groups;
    lw.launches.push_back(std::move(ln));
    return lw;
  }
  const std::string kkey = key + "_kc";
  const bool scratch = epi || carry_in_scratch(t);
  if (scratch) lw.scratch_bytes.push_back(op.dst.numel() * acc_bytes(t));
  for (int64_t kb = 0; kb < K; kb += kc_len) {
    const int64_t ke = std::min(K, kb + kc_len);
    ParamBuilder p("matmul");
    Layout l = params(p, op, tiles_m, tiles_n);
    chunk_params(p, l, kb, ke, kb == 0, ke == K);
    l.epi = epi;
    if (epi) epilogue_params(p, *epi, caps);
    auto k = cached_kernel(kkey, d, caps, [&] { return make(true, kkey, l); });
    Launch ln;
    ln.kernel = k;
    bind(ln, scratch);
    ln.params = p.take();
    ln.groups = groups;
    lw.launches.push_back(std::move(ln));
  }
  return lw;
}

}  // namespace

std::vector<MatmulVariant> matmul_variants(const ir::Matmul& op, const Caps& caps) {
  const DType t = op.dst.dtype();
  const int64_t M = op.dst.size(1), N = op.dst.size(2), K = op.a.size(2);
  const MatmulVariant simple{"simple"};
  // Tiny or thin products (matrix-vector) gain nothing from tiles.
  if (!(caps.max_workgroup_size >= 64 && M >= 8 && N >= 8 && M * N * K >= 32768)) return {simple};
  // The default: 64 x 64 tiles, 8 x 8 per thread (64 threads); 32 x 32 tiles (4 x 4 per thread)
  // for thin products, so that a few rows or columns do not waste most of a tile. On a CPU
  // device (lavapipe loads shared and storage memory lane by lane) 16 x 16 per thread (16
  // threads): the most products per load (measured in docs/vulkan.md: 1.6x the 8 x 8 blocks).
  // The others are what the autotuner also tries: each tile with each block, and "simple".
  const bool thin = M <= 32 || N <= 32;
  std::vector<Tile> tiles;
  if (caps.cpu)
    tiles = thin ? std::vector<Tile>{{32, 32, 16, 8, 8}, {64, 64, 16, 16, 16}, {64, 64, 16, 8, 8}}
                 : std::vector<Tile>{{64, 64, 16, 16, 16}, {64, 64, 16, 8, 8}, {32, 32, 16, 8, 8}};
  else
    tiles = thin ? std::vector<Tile>{{32, 32, 16, 4, 4}, {64, 64, 16, 8, 8}, {32, 32, 16, 8, 8}}
                 : std::vector<Tile>{{64, 64, 16, 8, 8}, {32, 32, 16, 4, 4}, {64, 64, 16, 16, 16}};
  const auto fits = [&](const Tile& x) {
    return int64_t(x.bk) * (x.bm + x.bn) * acc_bytes(t) <= int64_t(caps.max_shared_bytes) &&
           x.threads() <= int64_t(caps.max_workgroup_size);
  };
  std::vector<MatmulVariant> out;
  for (size_t i = 0; i < tiles.size(); ++i) {
    Tile g = tiles[i];
    if (!fits(g)) g.bk = 8;
    if (!fits(g)) {
      if (i > 0) continue;
      g = {32, 32, 8, 4, 4};  // the default always has a tile
    }
    MatmulVariant v{
        "tiled" + std::to_string(g.bm) + "x" + std::to_string(g.bk) + "t" + std::to_string(g.tm),
        g.bm,
        g.bn,
        g.bk,
        g.tm,
        g.tn};
    bool dup = false;
    for (const auto& o : out) dup = dup || o.name == v.name;
    if (!dup) out.push_back(v);
  }
  out.push_back(simple);
  return out;
}

Lowering lower_matmul(const ir::Matmul& op, Dialect d, const Caps& caps) {
  check_dtype("matmul", op.dst.dtype(), caps);
  check_fits("matmul", {op.a, op.b, op.dst});
  if (op.dst.size(0) == 0 || op.dst.size(1) == 0 || op.dst.size(2) == 0) return {};
  return lower_matmul(op, d, caps, matmul_variants(op, caps)[0]);
}

namespace {

// lower_matmul with an epilogue (or none).
Lowering lower_tiles(const ir::Matmul& op, Dialect d, const Caps& caps, const MatmulVariant& v,
                     MatmulEpilogue* epi) {
  const DType t = op.dst.dtype();
  check_dtype("matmul", t, caps);
  check_fits("matmul", {op.a, op.b, op.dst});
  const int64_t B = op.dst.size(0), M = op.dst.size(1), N = op.dst.size(2);
  if (B == 0 || M == 0 || N == 0) return {};
  const std::string dt = dtype_tag(t), ek = epi ? epilogue_key(*epi) : "";
  if (v.bm == 0) {
    // Per invocation: ceil(outputs / threads) grid iterations, each one k loop of K iterations.
    const std::string key = "matmul_simple_" + dt + ek;
    const uint32_t groups = groups_1d(B * M * N, 256, caps);
    const int64_t per = (B * M * N + int64_t(groups) * 256 - 1) / (int64_t(groups) * 256);
    return launches(op, d, caps, key, 1, 1, chunk_k(per, 1, 1), groups, epi,
                    [&](bool kc, const std::string& name, const Layout& l) {
                      return simple_kernel(name, t, l, kc, caps);
                    });
  }
  const Tile g{v.bm, v.bn, v.bk, v.tm, v.tn};
  if (epi)
    EMBER_CHECK((int64_t(g.bk) * (g.bm + g.bn) + g.bm / g.tm * g.bn) * acc_bytes(t) <=
                    int64_t(caps.max_shared_bytes),
                "matmul", "tile ", v.name, " with an epilogue exceeds the device's shared memory");
  const int64_t tiles_m = (M + g.bm - 1) / g.bm, tiles_n = (N + g.bn - 1) / g.bn;
  const std::string key = "matmul_" + v.name + "_" + dt + ek;
  const int64_t tiles = B * tiles_m * tiles_n;
  const uint32_t groups = uint32_t(std::min<int64_t>(tiles, int64_t(caps.max_groups_x)));
  // Per invocation: ceil(tiles / groups) tiles, each K / BK steps of two staging loops (their
  // trip counts as generated) and the BK-long product loop; lavapipe counts a loop's trip count
  // plus one (measured: 24 per step of the CPU-device tiles, K = 70,000 stopped at k ~43,700).
  // Counted per element: vec4 staging runs the same trips, but once for twice in 32x8 t4 (an
  // upper bound there).
  const int64_t T = g.threads(), ua = unroll_of(g.bm * g.bk, g.threads()),
                ub = unroll_of(g.bn * g.bk, g.threads());
  const int64_t per_step = 1 + (g.bm * g.bk + T * ua - 1) / (T * ua) + 1 +
                           (g.bn * g.bk + T * ub - 1) / (T * ub) + 1 + g.bk + 1;
  const int64_t per = (tiles + groups - 1) / groups;
  const int64_t extra = epi ? epilogue_iterations(g) : 0;
  return launches(op, d, caps, key, tiles_m, tiles_n, chunk_k(per, g.bk, per_step, extra), groups,
                  epi, [&](bool kc, const std::string& name, const Layout& l) {
                    return tiled_kernel(name, t, l, g, kc, caps);
                  });
}

}  // namespace

Lowering lower_matmul(const ir::Matmul& op, Dialect d, const Caps& caps, const MatmulVariant& v) {
  return lower_tiles(op, d, caps, v, nullptr);
}

bool matmul_epilogue_applies(const ir::Matmul& op, const ir::FusedGraph& g, int32_t anchor_input,
                             const Caps& caps) {
  MatmulEpilogue e;
  return supports(op.dst.dtype(), caps) && op.dst.numel() > 0 &&
         plan_matmul_epilogue(op, g, anchor_input, caps, e);
}

Lowering lower_matmul_epilogue(const ir::Matmul& op, const ir::FusedGraph& g, int32_t anchor_input,
                               Dialect d, const Caps& caps, const MatmulVariant& v) {
  MatmulEpilogue e;
  EMBER_CHECK(plan_matmul_epilogue(op, g, anchor_input, caps, e), "matmul",
              "the epilogue graph cannot be evaluated by the matmul kernel:\n", g.describe());
  check_graph_nodes(g, caps);
  return lower_tiles(op, d, caps, v, &e);
}

}  // namespace ember::codegen
