// Generated scans (ir::Scan), stable sorts (ir::Sort) and nonzero (ir::Nonzero).
// - Scan: one thread per line along dim, accumulating as the ref backend (f64 for floats where
//   the device has shaderFloat64, else float; i64/u64 for integers and bool); cummax/cummin move
//   the index to the latest element >= (<=) the running extreme, and a NaN sticks. Lines longer
//   than 4096 are chunked (chunks of ~sqrt(n)): each chunk's total (or extreme and its index), a
//   per-line exclusive scan of the totals, then each chunk scanned from its prefix.
// - Sort: lines that fit in shared memory are sorted by one workgroup each with a bitonic network
//   over (value, original index) pairs, the index breaking ties so the result is stable. Longer
//   lines: the same kernel sorts blocks of the shared size into scratch (as line indices), then
//   one launch per merge pass merges runs of w into 2w with a thread per element placed by a
//   binary search in the other run; the last pass writes values and indices. NaN is the largest.
// - Nonzero: per-chunk counts, one workgroup's exclusive scan of the counts, then each chunk
//   writes its coordinates in row-major order from its start.
// Kernels are keyed by (op, dtypes, ranks after merging dims, variant); shapes go in params.
// lavapipe (llvmpipe) stops an invocation's loops after 65535 iterations in all, so no kernel
// here loops over a whole long line in one invocation: the longest loops are a scan chunk and a
// line's chunk totals (~sqrt(n) each), a bitonic block (~600 steps) and a binary search (log n).
#include <algorithm>

#include "codegen/lower.h"
#include "codegen/reduce_util.h"
#include "ember/error.h"

namespace ember::codegen {

namespace {

using ir::ScanOp;
using kir::Expr;
using kir::Fn;
using kir::Type;
using red::vtype;

const char* scan_name(ScanOp op) {
  switch (op) {
    case ScanOp::cumsum:
      return "cumsum";
    case ScanOp::cumprod:
      return "cumprod";
    case ScanOp::cummax:
      return "cummax";
    case ScanOp::cummin:
      return "cummin";
  }
  return "scan";
}

// The lines along `dim` of same-shape operands: an Iter over the shape with dim = 1.
Iter lines_iter(const std::vector<Tensor>& ts, int64_t dim) {
  const Shape& shape = ts[0].shape();
  std::vector<int64_t> sizes(shape.begin(), shape.end());
  sizes[size_t(dim)] = 1;
  std::vector<int64_t> offs;
  std::vector<std::vector<int64_t>> st;
  for (const Tensor& t : ts) {
    offs.push_back(t.offset());
    st.emplace_back(t.strides().begin(), t.strides().end());
  }
  return merged_iter(sizes, offs, st);
}

uint32_t pow2_at_least(int64_t v) {
  uint32_t p = 1;
  while (int64_t(p) < v) p *= 2;
  return p;
}

}  // namespace

// ---- scan ----

namespace {

// Scans of lines longer than this run chunked (totals, a scan of the totals, then each chunk
// from its prefix) so that no invocation loops over a whole long line.
constexpr int64_t kChunkedScanFrom = 4096;

// Chunk length of a chunked scan of lines of n: about sqrt(n), at least 1024, so the per-chunk
// loops (C steps) and the scan of a line's chunk totals (n / C steps) both stay near sqrt(n).
int64_t scan_chunk(int64_t n) {
  int64_t c = 1024;
  while (c * c < n) c += 1024;
  return c;
}

// The dtype a chunked cummax/cummin keeps chunk extremes in: vtype(t) as a 32/64-bit buffer.
DType extreme_scratch_dtype(DType t) {
  switch (t) {
    case DType::f16:
    case DType::bf16:
    case DType::f32:
      return DType::f32;
    case DType::i8:
    case DType::i16:
    case DType::i32:
      return DType::i32;
    case DType::u8:
    case DType::u16:
    case DType::u32:
    case DType::b8:
      return DType::u32;
    default:
      return t;  // f64, i64, u64
  }
}

}  // namespace
Lowering lower_scan(const ir::Scan& op, Dialect d, const Caps& caps) {
  const char* name = scan_name(op.op);
  const DType st = op.src.dtype(), dt = op.dst.dtype();
  const bool with_idx = op.indices.defined();
  red::check_dtypes(name, {st, dt}, caps);
  if (with_idx) check_dtype(name, DType::i64, caps);
  const int64_t n = op.src.shape()[size_t(op.dim)];
  if (op.dst.numel() == 0 || n == 0) return {};
  const bool extreme = op.op == ScanOp::cummax || op.op == ScanOp::cummin;
  const bool sum = op.op == ScanOp::cumsum;
  DType acc = DType::f64;
  if (!extreme) {
    const bool uns = st == DType::u8 || st == DType::u16 || st == DType::u32 || st == DType::u64;
    if (red::is_float_dtype(st))
      acc = caps.f64 ? DType::f64 : DType::f32;
    else
      acc = caps.i64 ? (uns ? DType::u64 : DType::i64) : (uns ? DType::u32 : DType::i32);
  }
  std::vector<Tensor> ts = {op.src, op.dst};
  if (with_idx) ts.push_back(op.indices);
  const Iter it = lines_iter(ts, op.dim);
  const bool chunked = n > kChunkedScanFrom;
  const int64_t C = chunked ? scan_chunk(n) : n, nc = (n + C - 1) / C;
  Params params;
  const uint32_t ob = add_iter(params, it, name);
  const uint32_t lw = params.i32(n, name);
  params.i32(op.src.strides()[size_t(op.dim)], name);
  params.i32(op.dst.strides()[size_t(op.dim)], name);
  params.i32(with_idx ? op.indices.strides()[size_t(op.dim)] : 0, name);
  params.i32(C, name);
  params.i32(nc, name);
  const std::vector<uint32_t> pw = params.take();
  const std::string key = std::string("scan_") + name + "_" + dtype_tag(st) + "_" + dtype_tag(dt) +
                          (extreme ? "" : std::string("_a") + dtype_tag(acc)) +
                          (with_idx ? "_idx" : "") + "_r" + std::to_string(it.rank());
  const Type A = kir::compute_of(acc);
  const DType sd = extreme_scratch_dtype(st);  // chunk extremes (cummax/cummin)
  const Expr zero = kir::lit(Type::u32, 0), one = kir::lit(Type::u32, 1);
  // The params every scan kernel reads.
  struct Head {
    Expr n_lines, n, ss, ds, is, C, nc;
  };
  auto head = [&](kir::Kernel& k) {
    Head h;
    h.n_lines = k.let("n_lines", kir::param_u32(ob));
    h.n = k.let("n", kir::param_u32(lw));
    h.ss = k.let("ss", kir::param_i32(lw + 1));
    h.ds = k.let("ds", kir::param_i32(lw + 2));
    h.is = k.let("is", kir::param_i32(lw + 3));
    h.C = k.let("C", kir::param_u32(lw + 4));
    h.nc = k.let("nc", kir::param_u32(lw + 5));
    return h;
  };
  // `a = a (op) b` for cumsum/cumprod in A.
  auto accumulate = [&](kir::Kernel& k, Expr a, Expr b) { k.assign(a, sum ? a + b : a * b); };
  // Whether value `c` replaces the running extreme `best` (the latest >= / <=; NaN sticks).
  auto take = [&](Expr c, Expr best) {
    const Expr ge = op.op == ScanOp::cummax ? c >= best : c <= best;
    if (red::is_float_dtype(st))
      return kir::call(Fn::isnan, {c}) || (!kir::call(Fn::isnan, {best}) && ge);
    return ge;
  };
  // The buffers of a kernel: src, then dst and idx (when `out`), then the chunk totals.
  struct Bufs {
    kir::Buf src, dst, idx, tv, ti;
  };
  auto buffers = [&](kir::Kernel& k, bool src, bool out, bool totals) {
    Bufs b;
    if (src) b.src = k.buffer("src", st, false);
    if (out) {
      b.dst = k.buffer("dst", dt, true);
      if (with_idx) b.idx = k.buffer("idx", DType::i64, true);
    }
    if (totals) {
      b.tv = k.buffer("tv", extreme ? sd : acc, true);
      if (extreme) b.ti = k.buffer("ti", DType::u32, true);
    }
    return b;
  };
  // The loop over elements [k0, k1) of a line writing dst (and idx), from `acc` / `best, bk`.
  auto scan_loop = [&](kir::Kernel& k, const Bufs& b, const Head& h, const std::vector<Expr>& o,
                       Expr k0, Expr k1, Expr a, Expr bk) {
    k.for_range("k", k0, k1, one, [&](Expr kk) {
      const Expr ki = cast(Type::i32, kk);
      if (!extreme) {
        const Expr v = k.let("v", k.load(b.src, o[0] + ki * h.ss));
        accumulate(k, a, convert(k, st, acc, v));
        k.store(b.dst, o[1] + ki * h.ds, convert(k, acc, dt, a));
      } else {
        const Expr c = k.let("c", red::vload(k, b.src, st, o[0] + ki * h.ss));
        k.if_(take(c, a), [&] {
          k.assign(a, c);
          k.assign(bk, kk);
        });
        k.store(b.dst, o[1] + ki * h.ds, red::vstore(k, st, dt, a));
        if (with_idx) k.store(b.idx, o[2] + ki * h.is, cast(Type::i64, bk));
      }
    });
  };
  const std::vector<std::string> out_vars =
      with_idx ? std::vector<std::string>{"sb", "db", "ib"} : std::vector<std::string>{"sb", "db"};
  const Expr ident = kir::lit(A, sum ? 0 : 1);
  std::vector<Binding> bind = {{op.src}, {op.dst}};
  if (with_idx) bind.push_back({op.indices});
  Lowering l;
  if (!chunked) {
    auto kernel = cached_kernel(key, d, caps, [&] {
      kir::Kernel k(key, 256);
      const Bufs b = buffers(k, true, true, false);
      const Head h = head(k);
      k.grid_loop("l", h.n_lines, [&](Expr ln) {
        const std::vector<Expr> o = iter_offsets(k, out_vars, ln, it.rank(), ob);
        if (!extreme) {
          scan_loop(k, b, h, o, zero, h.n, k.let("acc", ident), Expr());
        } else {
          const Expr best = k.let("best", red::vload(k, b.src, st, o[0]));
          scan_loop(k, b, h, o, zero, h.n, best, k.let("bk", zero));
        }
      });
      return k;
    });
    l.launches.push_back(launch_1d(kernel, std::move(bind), pw, it.numel, caps));
    return l;
  }
  // Chunked: (1) each chunk's total (or extreme and its index) into scratch, (2) per line, the
  // totals replaced by exclusive prefixes, (3) each chunk scanned from its prefix.
  const DType tvd = extreme ? sd : acc;
  // Line l and chunk ch of slot t, then the chunk's range [k0, k1).
  struct Chunk {
    Expr l, ch, k0, k1;
  };
  auto chunk = [&](kir::Kernel& k, const Head& h, Expr t, const std::vector<std::string>& vars,
                   std::vector<Expr>& o) {
    Chunk c;
    c.l = k.let("l", t / h.nc);
    c.ch = k.let("ch", t - c.l * h.nc);
    o = iter_offsets(k, vars, c.l, it.rank(), ob);
    c.k0 = k.let("k0", c.ch * h.C);
    c.k1 = k.let("k1", kir::call(Fn::min, {h.n, c.k0 + h.C}));
    return c;
  };
  auto totals = cached_kernel(key + "_ctot", d, caps, [&] {
    kir::Kernel k(key + "_ctot", 256);
    const Bufs b = buffers(k, true, false, true);
    const Head h = head(k);
    k.grid_loop("t", h.n_lines * h.nc, [&](Expr t) {
      std::vector<Expr> o;
      const Chunk c = chunk(k, h, t, {"sb"}, o);
      if (!extreme) {
        const Expr a = k.let("acc", ident);
        k.for_range("k", c.k0, c.k1, one, [&](Expr kk) {
          const Expr v = k.let("v", k.load(b.src, o[0] + cast(Type::i32, kk) * h.ss));
          accumulate(k, a, convert(k, st, acc, v));
        });
        k.store(b.tv, t, a);
      } else {
        const Expr best =
            k.let("best", red::vload(k, b.src, st, o[0] + cast(Type::i32, c.k0) * h.ss));
        const Expr bk = k.let("bk", c.k0);
        k.for_range("k", c.k0 + 1, c.k1, one, [&](Expr kk) {
          const Expr v = k.let("c", red::vload(k, b.src, st, o[0] + cast(Type::i32, kk) * h.ss));
          k.if_(take(v, best), [&] {
            k.assign(best, v);
            k.assign(bk, kk);
          });
        });
        k.store(b.tv, t, best);
        k.store(b.ti, t, bk);
      }
    });
    return k;
  });
  auto prefixes = cached_kernel(key + "_cpre", d, caps, [&] {
    kir::Kernel k(key + "_cpre", 256);
    const Bufs b = buffers(k, false, false, true);
    const Head h = head(k);
    k.grid_loop("l", h.n_lines, [&](Expr ln) {
      const Expr base = k.let("base", ln * h.nc);
      if (!extreme) {
        const Expr run = k.let("run", ident);
        k.for_range("ch", zero, h.nc, one, [&](Expr ch) {
          const Expr x = k.let("x", k.load(b.tv, base + ch));
          k.store(b.tv, base + ch, run);
          accumulate(k, run, x);
        });
      } else {
        const Expr best = k.let("best", k.load(b.tv, base));
        const Expr bk = k.let("bk", k.load(b.ti, base));
        k.for_range("ch", one, h.nc, one, [&](Expr ch) {
          const Expr c = k.let("c", k.load(b.tv, base + ch));
          const Expr ck = k.let("ck", k.load(b.ti, base + ch));
          k.store(b.tv, base + ch, best);
          k.store(b.ti, base + ch, bk);
          k.if_(take(c, best), [&] {
            k.assign(best, c);
            k.assign(bk, ck);
          });
        });
      }
    });
    return k;
  });
  auto chunks = cached_kernel(key + "_cout", d, caps, [&] {
    kir::Kernel k(key + "_cout", 256);
    const Bufs b = buffers(k, true, true, true);
    const Head h = head(k);
    k.grid_loop("t", h.n_lines * h.nc, [&](Expr t) {
      std::vector<Expr> o;
      const Chunk c = chunk(k, h, t, out_vars, o);
      if (!extreme) {
        scan_loop(k, b, h, o, c.k0, c.k1, k.let("acc", k.load(b.tv, t)), Expr());
      } else {
        const Expr best = k.let("best", k.load(b.tv, t));
        const Expr bk = k.let("bk", k.load(b.ti, t));
        k.if_(c.ch == 0, [&] {
          k.assign(best, red::vload(k, b.src, st, o[0]));
          k.assign(bk, zero);
        });
        scan_loop(k, b, h, o, c.k0, c.k1, best, bk);
      }
    });
    return k;
  });
  const int64_t slots = it.numel * nc;
  EMBER_CHECK(slots < (int64_t(1) << 31), name, "too many chunks (", slots, ")");
  l.scratch_bytes.push_back((slots * dtype_size(tvd) + 3) / 4 * 4);
  std::vector<Binding> tb = {{Tensor(), 0}};
  if (extreme) {
    l.scratch_bytes.push_back(slots * 4);
    tb.push_back({Tensor(), 1});
  }
  std::vector<Binding> b1 = {{op.src}};
  b1.insert(b1.end(), tb.begin(), tb.end());
  l.launches.push_back(launch_1d(totals, std::move(b1), pw, slots, caps));
  l.launches.push_back(launch_1d(prefixes, tb, pw, it.numel, caps));
  bind.insert(bind.end(), tb.begin(), tb.end());
  l.launches.push_back(launch_1d(chunks, std::move(bind), pw, slots, caps));
  return l;
}

// ---- sort ----

namespace {

// `bool srt_before(V a, u32 ia, V b, u32 ib, u32 n)`: (a, ia) goes strictly before (b, ib);
// indices >= n are padding, after everything.
kir::Function before_function(kir::Kernel& k, DType t, bool descending) {
  const Type V = vtype(t);
  const kir::Function lt = red::lt_function(k, "srt", t);
  return k.function("srt_before", Type::boolean, {V, Type::u32, V, Type::u32, Type::u32},
                    [&](const std::vector<Expr>& p) {
                      const Expr a = p[0], ia = p[1], b = p[2], ib = p[3], n = p[4];
                      k.if_(ib >= n, [&] { k.ret(ia < n || ia < ib); });
                      k.if_(ia >= n, [&] { k.ret(kir::lit_bool(false)); });
                      if (descending)
                        k.ret(k.call(lt, {b, a}) || (!k.call(lt, {a, b}) && ia < ib));
                      else
                        k.ret(k.call(lt, {a, b}) || (!k.call(lt, {b, a}) && ia < ib));
                    });
}

}  // namespace

Lowering lower_sort(const ir::Sort& op, Dialect d, const Caps& caps) {
  const char* name = "sort";
  const DType st = op.src.dtype();
  red::check_dtypes(name, {st, op.values.dtype(), DType::i64}, caps);
  EMBER_CHECK(op.values.dtype() == st, name, "values dtype must be the source's");
  const int64_t n = op.src.shape()[size_t(op.dim)];
  if (op.values.numel() == 0 || n == 0) return {};
  const Iter it = lines_iter({op.src, op.values, op.indices}, op.dim);
  const Type V = vtype(st);
  const uint32_t vbytes = (V == Type::f64 || V == Type::i64 || V == Type::u64) ? 8 : 4;
  // Lines up to `cap` elements sort in shared memory; longer ones as blocks of cap, then merged.
  uint32_t cap = 2048;
  while (cap > 2 && cap * (vbytes + 4) > caps.max_shared_bytes) cap /= 2;
  const bool shared = n <= int64_t(cap);
  const int64_t nb = shared ? 1 : (n + cap - 1) / cap;  // blocks per line
  Params params;
  const uint32_t ob = add_iter(params, it, name);
  const uint32_t lw = params.i32(n, name);
  params.i32(op.src.strides()[size_t(op.dim)], name);
  params.i32(op.values.strides()[size_t(op.dim)], name);
  params.i32(op.indices.strides()[size_t(op.dim)], name);
  const uint32_t n2 = shared ? pow2_at_least(n) : cap;  // the bitonic network's width
  params.u32(n2);
  params.i32(nb, name);
  const uint32_t wd_word = params.u32(0);  // merge passes: the width of the runs merged
  std::vector<uint32_t> pw = params.take();
  const uint32_t local = std::min<uint32_t>(shared && n2 <= 128 ? 64 : 256,
                                            std::max<uint32_t>(1, caps.max_workgroup_size));
  const std::string tag = std::string(dtype_tag(st)) + (op.descending ? "_desc" : "") + "_r" +
                          std::to_string(it.rank());
  const Expr zero = kir::lit(Type::u32, 0), one = kir::lit(Type::u32, 1);
  // The params every sort kernel reads.
  struct Head {
    Expr n_lines, n, ss, vs, is, n2, nb, wd;
  };
  auto head = [&](kir::Kernel& k) {
    Head h;
    h.n_lines = k.let("n_lines", kir::param_u32(ob));
    h.n = k.let("n", kir::param_u32(lw));
    h.ss = k.let("ss", kir::param_i32(lw + 1));
    h.vs = k.let("vs", kir::param_i32(lw + 2));
    h.is = k.let("is", kir::param_i32(lw + 3));
    h.n2 = k.let("n2", kir::param_u32(lw + 4));
    h.nb = k.let("nb", kir::param_u32(lw + 5));
    h.wd = k.let("wd", kir::param_u32(wd_word));
    return h;
  };
  // Writes element x of the line (offsets o: sb, vb, ib) to the outputs at position q.
  auto write_out = [&](kir::Kernel& k, kir::Buf src, kir::Buf vals, kir::Buf inds, const Head& h,
                       const std::vector<Expr>& o, Expr q, Expr x) {
    k.store(vals, o[1] + cast(Type::i32, q) * h.vs, k.load(src, o[0] + cast(Type::i32, x) * h.ss));
    k.store(inds, o[2] + cast(Type::i32, q) * h.is, cast(Type::i64, x));
  };
  // The bitonic kernel: block g (of nb per line) of line g / nb, m <= n2 elements from `off`,
  // sorted in shared memory as (value, index) pairs; written to the outputs (shared) or as line
  // indices to scratch `ma` at the line's l * n (blocks of the merge sort).
  const std::string bkey = "sort_" + tag + "_wg" + std::to_string(local) + "_c" +
                           std::to_string(cap) + (shared ? "" : "_blk");
  auto block = cached_kernel(bkey, d, caps, [&] {
    kir::Kernel k(bkey, local);
    const kir::Buf src = k.buffer("src", st, false);
    kir::Buf vals, inds, ma;
    if (shared) {
      vals = k.buffer("vals", st, true);
      inds = k.buffer("inds", DType::i64, true);
    } else {
      ma = k.buffer("ma", DType::u32, true);
    }
    const kir::Function before = before_function(k, st, op.descending);
    const kir::Shared s_v = k.shared("s_v", V, cap), s_i = k.shared("s_i", Type::u32, cap);
    const Head h = head(k);
    const Expr lid = kir::local_id(), ls = kir::local_size();
    k.for_(
        "g", kir::group_id(), [&](Expr g) { return g < h.n_lines * h.nb; },
        [](Expr g) { return g + kir::num_groups(); },
        [&](Expr g) {
          const Expr ln = k.let("l", g / h.nb);
          const Expr off = k.let("off", (g - ln * h.nb) * h.n2);
          const Expr m = k.let("m", kir::call(Fn::min, {h.n - off, h.n2}));
          const std::vector<Expr> o = iter_offsets(
              k,
              shared ? std::vector<std::string>{"sb", "vb", "ib"} : std::vector<std::string>{"sb"},
              ln, it.rank(), ob);
          k.for_range("i", lid, h.n2, ls, [&](Expr i) {
            k.store(s_v, i,
                    select(i < m, red::vload(k, src, st, o[0] + cast(Type::i32, off + i) * h.ss),
                           kir::lit(V, 0)));
            k.store(s_i, i, i);
          });
          k.barrier();
          k.for_(
              "k", kir::lit(Type::u32, 2), [&](Expr kk) { return kk <= h.n2; },
              [](Expr kk) { return kk << 1; },
              [&](Expr kk) {
                k.for_(
                    "h", kk >> 1, [](Expr hh) { return hh > 0; }, [](Expr hh) { return hh >> 1; },
                    [&](Expr hh) {
                      k.for_range("i", lid, h.n2, ls, [&](Expr i) {
                        const Expr p = k.let("p", i ^ hh);
                        k.if_(p > i, [&] {
                          const Expr a = k.let("a", k.load(s_v, i));
                          const Expr c = k.let("c", k.load(s_v, p));
                          const Expr ia = k.let("ia", k.load(s_i, i));
                          const Expr ic = k.let("ic", k.load(s_i, p));
                          const Expr sw =
                              k.let("sw", select((i & kk) == 0, k.call(before, {c, ic, a, ia, m}),
                                                 k.call(before, {a, ia, c, ic, m})));
                          k.if_(sw, [&] {
                            k.store(s_v, i, c);
                            k.store(s_v, p, a);
                            k.store(s_i, i, ic);
                            k.store(s_i, p, ia);
                          });
                        });
                      });
                      k.barrier();
                    });
              });
          k.for_range("i", lid, m, ls, [&](Expr i) {
            const Expr j = k.let("j", k.load(s_i, i));
            if (shared)
              write_out(k, src, vals, inds, h, o, i, j);
            else
              k.store(ma, ln * h.n + off + i, off + j);
          });
          k.barrier();
        });
    return k;
  });
  Lowering l;
  Launch first;
  first.kernel = block;
  first.bindings = {{op.src}};
  if (shared) {
    first.bindings.push_back({op.values});
    first.bindings.push_back({op.indices});
  } else {
    first.bindings.push_back({Tensor(), 0});
  }
  first.params = pw;
  first.groups = uint32_t(std::min<int64_t>(it.numel * nb, caps.max_groups_x));
  l.launches.push_back(std::move(first));
  if (shared) return l;
  // Merge passes: runs of wd (sorted indices of consecutive elements, line l at l * n in
  // scratch) merged pairwise into runs of 2 wd, one thread per element: its place is its rank
  // in its own run plus the number of elements of the other run before it (binary search; the
  // order is total since indices break ties, so equal values keep their original order). The
  // last pass writes the values and indices.
  const int64_t words = it.numel * n;
  EMBER_CHECK(words < (int64_t(1) << 31), name, "too many elements (", words,
              ") for 32-bit indexing of the merge sort's scratch");
  auto merge_kernel = [&](bool last) {
    const std::string key = "sort_merge_" + tag + (last ? "_out" : "");
    return cached_kernel(key, d, caps, [&] {
      kir::Kernel k(key, 256);
      const kir::Buf src = k.buffer("src", st, false), from = k.buffer("from", DType::u32, false);
      kir::Buf vals, inds, to;
      if (last) {
        vals = k.buffer("vals", st, true);
        inds = k.buffer("inds", DType::i64, true);
      } else {
        to = k.buffer("to", DType::u32, true);
      }
      const kir::Function before = before_function(k, st, op.descending);
      const Head h = head(k);
      k.grid_loop("e", h.n_lines * h.n, [&](Expr e) {
        const Expr ln = k.let("l", e / h.n);
        const Expr p = k.let("p", e - ln * h.n);
        const Expr base = k.let("base", ln * h.n);
        const std::vector<Expr> o = iter_offsets(
            k, last ? std::vector<std::string>{"sb", "vb", "ib"} : std::vector<std::string>{"sb"},
            ln, it.rank(), ob);
        const Expr lo = k.let("lo", p - p % (2 * h.wd));
        const Expr mid = k.let("mid", kir::call(Fn::min, {lo + h.wd, h.n}));
        const Expr hi = k.let("hi", kir::call(Fn::min, {lo + 2 * h.wd, h.n}));
        const Expr x = k.let("x", k.load(from, base + p));
        const Expr xv = k.let("xv", red::vload(k, src, st, o[0] + cast(Type::i32, x) * h.ss));
        const Expr q = k.let("q", p);
        k.if_(mid < hi, [&] {
          const Expr left = k.let("left", p < mid);
          const Expr a = k.let("a", select(left, mid, lo));
          const Expr z = k.let("z", select(left, hi, mid));
          const Expr a0 = k.let("a0", a);
          k.while_(a < z, [&] {
            const Expr c = k.let("c", (a + z) >> 1);
            const Expr y = k.let("y", k.load(from, base + c));
            const Expr yv = red::vload(k, src, st, o[0] + cast(Type::i32, y) * h.ss);
            k.if_(
                k.call(before, {yv, y, xv, x, h.n}), [&] { k.assign(a, c + 1); },
                [&] { k.assign(z, c); });
          });
          k.assign(q, select(left, p, lo + p - mid) + (a - a0));
        });
        if (last)
          write_out(k, src, vals, inds, h, o, q, x);
        else
          k.store(to, base + q, x);
      });
      return k;
    });
  };
  int passes = 0;
  for (int64_t wd = cap; wd < n; wd *= 2) ++passes;
  l.scratch_bytes.assign(passes > 1 ? 2 : 1, words * 4);
  int from = 0;
  for (int64_t wd = cap; wd < n; wd *= 2, from = 1 - from) {
    const bool last = 2 * wd >= n;
    std::vector<Binding> bind = {{op.src}, {Tensor(), from}};
    if (last) {
      bind.push_back({op.values});
      bind.push_back({op.indices});
    } else {
      bind.push_back({Tensor(), 1 - from});
    }
    pw[wd_word] = uint32_t(wd);
    l.launches.push_back(launch_1d(merge_kernel(last), std::move(bind), pw, words, caps));
  }
  return l;
}

// ---- nonzero ----

Lowering lower_nonzero(const ir::Nonzero& op, Dialect d, const Caps& caps) {
  const char* name = "nonzero";
  const Tensor& src = op.src;
  const DType st = src.dtype();
  red::check_dtypes(name, {st, DType::i64}, caps);
  const int64_t N = src.numel();
  const int rank = int(src.dim());
  const int64_t rows = op.dst.dim() > 0 ? op.dst.shape()[0] : 0;
  if (N == 0 || rows == 0 || rank == 0) return {};
  // Chunks of C consecutive row-major elements, at most 65536 of them.
  const int64_t C = std::max<int64_t>(32, (N + 65535) / 65536);
  const int64_t T = (N + C - 1) / C;
  Params params;
  const uint32_t tb = params.tensor(src, name);
  const uint32_t nw = params.i32(N, name);
  params.i32(C, name);
  params.i32(T, name);
  params.i32(op.dst.offset(), name);
  params.i32(op.dst.strides()[0], name);
  params.i32(op.dst.dim() > 1 ? op.dst.strides()[1] : 0, name);
  params.i32(rows, name);
  const std::vector<uint32_t> pw = params.take();
  const Expr zero = kir::lit(Type::u32, 0), one = kir::lit(Type::u32, 1);
  // The params every nonzero kernel reads: N, C, T.
  struct Head {
    Expr N, C, T;
  };
  auto head = [&](kir::Kernel& k) {
    return Head{k.let("N", kir::param_u32(nw)), k.let("C", kir::param_u32(nw + 1)),
                k.let("T", kir::param_u32(nw + 2))};
  };
  // Whether the element at offset so of src is nonzero.
  auto nz = [&](kir::Kernel& k, kir::Buf b, Expr so) {
    return convert(k, st, DType::b8, k.load(b, so));
  };
  const std::string rk = std::to_string(rank);
  const std::string count_key = std::string("nonzero_count_") + dtype_tag(st) + "_r" + rk;
  auto count = cached_kernel(count_key, d, caps, [&] {
    kir::Kernel k(count_key, 256);
    const kir::Buf b = k.buffer("src", st, false), counts = k.buffer("counts", DType::u32, true);
    const Head h = head(k);
    k.grid_loop("t", h.T, [&](Expr t) {
      const Expr c = k.let("c", zero);
      const Expr end = k.let("end", kir::call(Fn::min, {h.N, (t + 1) * h.C}));
      k.for_range("i", t * h.C, end, one, [&](Expr i) {
        const Expr so = offset_of(k, "so", i, rank, tb);
        k.if_(nz(k, b, so), [&] { k.assign(c, c + 1); });
      });
      k.store(counts, t, c);
    });
    return k;
  });
  // One workgroup: each thread scans a slice of the counts, the slices' sums scanned in shared.
  // head reads params words that follow the source's view, so the scan depends on the rank too
  auto scan = cached_kernel("nonzero_scan_r" + rk, d, caps, [&] {
    kir::Kernel k("nonzero_scan_r" + rk, 64);
    const kir::Buf counts = k.buffer("counts", DType::u32, true);
    const kir::Shared s_sum = k.shared("s_sum", Type::u32, 64);
    const Head h = head(k);
    const Expr lid = kir::local_id(), ls = kir::local_size();
    const Expr per = k.let("per", (h.T + ls - 1) / ls);
    const Expr lo = k.let("lo", kir::call(Fn::min, {h.T, lid * per}));
    const Expr hi = k.let("hi", kir::call(Fn::min, {h.T, lo + per}));
    const Expr s = k.let("s", zero);
    k.for_range("i", lo, hi, one, [&](Expr i) { k.assign(s, s + k.load(counts, i)); });
    k.store(s_sum, lid, s);
    k.barrier();
    k.if_(lid == 0, [&] {
      const Expr run = k.let("run", zero);
      k.for_range("i", zero, ls, one, [&](Expr i) {
        const Expr x = k.let("x", k.load(s_sum, i));
        k.store(s_sum, i, run);
        k.assign(run, run + x);
      });
    });
    k.barrier();
    const Expr run = k.let("run", k.load(s_sum, lid));
    k.for_range("i", lo, hi, one, [&](Expr i) {
      const Expr x = k.let("x", k.load(counts, i));
      k.store(counts, i, run);
      k.assign(run, run + x);
    });
    return k;
  });
  const std::string write_key = std::string("nonzero_write_") + dtype_tag(st) + "_r" + rk;
  auto write = cached_kernel(write_key, d, caps, [&] {
    kir::Kernel k(write_key, 256);
    const kir::Buf b = k.buffer("src", st, false);
    const kir::Buf counts = k.buffer("counts", DType::u32, false);
    const kir::Buf dst = k.buffer("dst", DType::i64, true);
    const Head h = head(k);
    const Expr doff = k.let("doff", kir::param_i32(nw + 3));
    const Expr r0 = k.let("r0", kir::param_i32(nw + 4));
    const Expr r1 = k.let("r1", kir::param_i32(nw + 5));
    const Expr nrows = k.let("rows", kir::param_u32(nw + 6));
    k.grid_loop("t", h.T, [&](Expr t) {
      const Expr row = k.let("row", k.load(counts, t));
      const Expr end = k.let("end", kir::call(Fn::min, {h.N, (t + 1) * h.C}));
      k.for_(
          "i", t * h.C, [&](Expr i) { return i < end && row < nrows; },
          [](Expr i) { return i + 1; },
          [&](Expr i) {
            const Expr so = offset_of(k, "so", i, rank, tb);
            k.if_(nz(k, b, so), [&] {
              const Expr rem = k.let("rem", i);
              // Row-major coordinates from the sizes at words tb + 1 ...
              for (int c = rank - 1; c >= 0; --c) {
                const Expr sz = kir::param_u32(tb + 1 + uint32_t(c));
                k.store(dst, doff + cast(Type::i32, row) * r0 + kir::lit(Type::i32, c) * r1,
                        cast(Type::i64, c > 0 ? rem % sz : rem));
                if (c > 0) k.assign(rem, rem / sz);
              }
              k.assign(row, row + 1);
            });
          });
    });
    return k;
  });
  Lowering l;
  l.scratch_bytes = {T * 4};
  const Binding counts{Tensor(), 0};
  l.launches.push_back(launch_1d(count, {{src}, counts}, pw, T, caps));
  Launch s;
  s.kernel = scan;
  s.bindings = {counts};
  s.params = pw;
  s.groups = 1;
  l.launches.push_back(std::move(s));
  l.launches.push_back(launch_1d(write, {{src}, counts, {op.dst}}, pw, T, caps));
  return l;
}

}  // namespace ember::codegen
