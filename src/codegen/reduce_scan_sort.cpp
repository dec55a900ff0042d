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
using red::vload;
using red::vstore;
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

std::string w(uint32_t k) { return std::to_string(k); }

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
  std::string head = "const uint n_lines = P_U(" + w(ob) + ");\n";
  head += "const uint n = P_U(" + w(lw) + ");\nconst int ss = P_I(" + w(lw + 1) +
          ");\nconst int ds = P_I(" + w(lw + 2) + ");\nconst int is = P_I(" + w(lw + 3) +
          ");\nconst uint C = P_U(" + w(lw + 4) + ");\nconst uint nc = P_U(" + w(lw + 5) + ");\n";
  const std::string A = compute_type(acc);
  const std::string V = vtype(st);
  const DType sd = extreme_scratch_dtype(st);  // chunk extremes (cummax/cummin)
  // `<a> = <a> (op) <b>` for cumsum/cumprod in A.
  auto accumulate = [&](const std::string& a, const std::string& b) {
    return a + " = " + a + (sum ? " + " : " * ") + b + ";\n";
  };
  // Whether value `c` replaces the running extreme `best` (the latest >= / <=; NaN sticks).
  auto take = [&](const std::string& c, const std::string& best) {
    const std::string ge = c + (op.op == ScanOp::cummax ? " >= " : " <= ") + best;
    if (red::is_float_dtype(st)) return "isnan(" + c + ") || (!isnan(" + best + ") && " + ge + ")";
    return ge;
  };
  // The loop over elements [k0, k1) of a line writing dst (and idx), from `acc` / `best, bk`.
  auto scan_loop = [&](const std::string& k0, const std::string& k1) {
    std::string b = "for (uint k = " + k0 + "; k < " + k1 + "; ++k) {\n";
    if (!extreme) {
      b += "  " + std::string(compute_type(st)) + " v = " + load(st, "src[sb + int(k) * ss]") +
           ";\n";
      b += "  " + accumulate("acc", convert(st, acc, "v"));
      b += "  dst[db + int(k) * ds] = " + store(dt, convert(acc, dt, "acc")) + ";\n}\n";
    } else {
      b += "  " + V + " c = " + vload(st, "src[sb + int(k) * ss]") + ";\n";
      b += "  if (" + take("c", "best") + ") { best = c; bk = k; }\n";
      b += "  dst[db + int(k) * ds] = " + vstore(dt, "best") + ";\n";
      if (with_idx) b += "  idx[ib + int(k) * is] = i64(bk);\n";
      b += "}\n";
    }
    return b;
  };
  const std::vector<std::string> out_vars =
      with_idx ? std::vector<std::string>{"sb", "db", "ib"} : std::vector<std::string>{"sb", "db"};
  const std::string ident = A + (sum ? "(0)" : "(1)");
  std::vector<Binding> bind = {{op.src}, {op.dst}};
  if (with_idx) bind.push_back({op.indices});
  Lowering l;
  if (!chunked) {
    auto kernel = cached_kernel(key, d, caps, [&] {
      KernelDef def;
      def.name = key;
      def.buffers = {{"src", st, false}, {"dst", dt, true}};
      if (with_idx) def.buffers.push_back({"idx", DType::i64, true});
      std::string b = head + grid_loop("l", "n_lines") + " {\n";
      b += iter_code(out_vars, "l", it.rank(), ob);
      if (!extreme)
        b += A + " acc = " + ident + ";\n";
      else
        b += V + " best = " + vload(st, "src[sb]") + ";\nuint bk = 0u;\n";
      def.body = b + scan_loop("0u", "n") + "}\n";
      return def;
    });
    l.launches.push_back(launch_1d(kernel, std::move(bind), pw, it.numel, caps));
    return l;
  }
  // Chunked: (1) each chunk's total (or extreme and its index) into scratch, (2) per line, the
  // totals replaced by exclusive prefixes, (3) each chunk scanned from its prefix.
  const DType tvd = extreme ? sd : acc;
  const std::vector<BufferDecl> tbufs =
      extreme ? std::vector<BufferDecl>{{"tv", tvd, true}, {"ti", DType::u32, true}}
              : std::vector<BufferDecl>{{"tv", tvd, true}};
  const std::string chunk_head = "uint l = t / nc, ch = t - l * nc;\n";
  const std::string range = "uint k0 = ch * C, k1 = min(n, k0 + C);\n";
  auto totals = cached_kernel(key + "_ctot", d, caps, [&] {
    KernelDef def;
    def.name = key + "_ctot";
    def.buffers = {{"src", st, false}};
    def.buffers.insert(def.buffers.end(), tbufs.begin(), tbufs.end());
    std::string b = head + grid_loop("t", "n_lines * nc") + " {\n" + chunk_head;
    b += iter_code({"sb"}, "l", it.rank(), ob) + range;
    if (!extreme) {
      b += A + " acc = " + ident + ";\nfor (uint k = k0; k < k1; ++k) {\n";
      b += "  " + std::string(compute_type(st)) + " v = " + load(st, "src[sb + int(k) * ss]") +
           ";\n  " + accumulate("acc", convert(st, acc, "v")) + "}\n";
      b += "tv[t] = " + store(tvd, "acc") + ";\n";
    } else {
      b += V + " best = " + vload(st, "src[sb + int(k0) * ss]") + ";\nuint bk = k0;\n";
      b += "for (uint k = k0 + 1u; k < k1; ++k) {\n";
      b += "  " + V + " c = " + vload(st, "src[sb + int(k) * ss]") + ";\n";
      b += "  if (" + take("c", "best") + ") { best = c; bk = k; }\n}\n";
      b += "tv[t] = " + store(tvd, "best") + ";\nti[t] = bk;\n";
    }
    def.body = b + "}\n";
    return def;
  });
  auto prefixes = cached_kernel(key + "_cpre", d, caps, [&] {
    KernelDef def;
    def.name = key + "_cpre";
    def.buffers = tbufs;
    std::string b = head + grid_loop("l", "n_lines") + " {\nuint base = l * nc;\n";
    if (!extreme) {
      b += A + " run = " + ident + ";\nfor (uint ch = 0u; ch < nc; ++ch) {\n";
      b += "  " + A + " x = " + load(tvd, "tv[base + ch]") + ";\n";
      b += "  tv[base + ch] = " + store(tvd, "run") + ";\n  " + accumulate("run", "x") + "}\n";
    } else {
      b += V + " best = " + load(tvd, "tv[base]") + ";\nuint bk = ti[base];\n";
      b += "for (uint ch = 1u; ch < nc; ++ch) {\n";
      b += "  " + V + " c = " + load(tvd, "tv[base + ch]") + ";\n  uint ck = ti[base + ch];\n";
      b += "  tv[base + ch] = " + store(tvd, "best") + ";\n  ti[base + ch] = bk;\n";
      b += "  if (" + take("c", "best") + ") { best = c; bk = ck; }\n}\n";
    }
    def.body = b + "}\n";
    return def;
  });
  auto chunks = cached_kernel(key + "_cout", d, caps, [&] {
    KernelDef def;
    def.name = key + "_cout";
    def.buffers = {{"src", st, false}, {"dst", dt, true}};
    if (with_idx) def.buffers.push_back({"idx", DType::i64, true});
    def.buffers.insert(def.buffers.end(), tbufs.begin(), tbufs.end());
    std::string b = head + grid_loop("t", "n_lines * nc") + " {\n" + chunk_head;
    b += iter_code(out_vars, "l", it.rank(), ob) + range;
    if (!extreme) {
      b += A + " acc = " + load(tvd, "tv[t]") + ";\n";
    } else {
      b += V + " best = " + load(tvd, "tv[t]") + ";\nuint bk = ti[t];\n";
      b += "if (ch == 0u) { best = " + vload(st, "src[sb]") + "; bk = 0u; }\n";
    }
    def.body = b + scan_loop("k0", "k1") + "}\n";
    return def;
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

// `bool srt_before(V a, uint ia, V b, uint ib, uint n)`: (a, ia) goes strictly before (b, ib);
// indices >= n are padding, after everything.
std::string before_function(DType t, bool descending) {
  const std::string V = vtype(t);
  std::string s = red::lt_function("srt", t);
  s += "bool srt_before(" + V + " a, uint ia, " + V + " b, uint ib, uint n) {\n";
  s += "  if (ib >= n) return ia < n || ia < ib;\n  if (ia >= n) return false;\n";
  if (descending)
    s += "  return srt_lt(b, a) || (!srt_lt(a, b) && ia < ib);\n}\n";
  else
    s += "  return srt_lt(a, b) || (!srt_lt(b, a) && ia < ib);\n}\n";
  return s;
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
  const std::string V = vtype(st);
  const uint32_t vbytes = (V == "f64" || V == "i64" || V == "u64") ? 8 : 4;
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
  std::string head = "const uint n_lines = P_U(" + w(ob) + ");\n";
  head += "const uint n = P_U(" + w(lw) + ");\nconst int ss = P_I(" + w(lw + 1) +
          ");\nconst int vs = P_I(" + w(lw + 2) + ");\nconst int is = P_I(" + w(lw + 3) +
          ");\nconst uint n2 = P_U(" + w(lw + 4) + ");\nconst uint nb = P_U(" + w(lw + 5) +
          ");\nconst uint wd = P_U(" + w(wd_word) + ");\n";
  // The bitonic kernel: block g (of nb per line) of line g / nb, m <= n2 elements from `off`,
  // sorted in shared memory as (value, index) pairs; written to the outputs (shared) or as line
  // indices to scratch `ma` at the line's l * n (blocks of the merge sort).
  const std::string bkey = "sort_" + tag + "_wg" + std::to_string(local) + "_c" +
                           std::to_string(cap) + (shared ? "" : "_blk");
  auto block = cached_kernel(bkey, d, caps, [&] {
    KernelDef def;
    def.name = bkey;
    def.local_size = local;
    def.buffers = {{"src", st, false}};
    if (shared) {
      def.buffers.push_back({"vals", st, true});
      def.buffers.push_back({"inds", DType::i64, true});
    } else {
      def.buffers.push_back({"ma", DType::u32, true});
    }
    def.functions = before_function(st, op.descending);
    def.shared = {{V, "s_v", cap}, {"uint", "s_i", cap}};
    std::string b = head + "for (uint g = GROUP_ID; g < n_lines * nb; g += NUM_GROUPS) {\n";
    b += "uint l = g / nb, off = (g - l * nb) * n2, m = min(n - off, n2);\n";
    b += iter_code(
        shared ? std::vector<std::string>{"sb", "vb", "ib"} : std::vector<std::string>{"sb"}, "l",
        it.rank(), ob);
    b += "for (uint i = LOCAL_ID; i < n2; i += LOCAL_SIZE) {\n";
    b += "  s_v[i] = i < m ? " + vload(st, "src[sb + int(off + i) * ss]") + " : " + V + "(0);\n";
    b += "  s_i[i] = i;\n}\nBARRIER();\n";
    b += "for (uint k = 2u; k <= n2; k <<= 1u) {\n";
    b += "  for (uint h = k >> 1u; h > 0u; h >>= 1u) {\n";
    b += "    for (uint i = LOCAL_ID; i < n2; i += LOCAL_SIZE) {\n";
    b += "      uint p = i ^ h;\n      if (p > i) {\n";
    b += "        " + V + " a = s_v[i], c = s_v[p];\n        uint ia = s_i[i], ic = s_i[p];\n";
    b += "        bool sw = (i & k) == 0u ? srt_before(c, ic, a, ia, m) : ";
    b += "srt_before(a, ia, c, ic, m);\n";
    b += "        if (sw) { s_v[i] = c; s_v[p] = a; s_i[i] = ic; s_i[p] = ia; }\n";
    b += "      }\n    }\n    BARRIER();\n  }\n}\n";
    b += "for (uint i = LOCAL_ID; i < m; i += LOCAL_SIZE) {\n  uint j = s_i[i];\n";
    if (shared)
      b += "  vals[vb + int(i) * vs] = src[sb + int(j) * ss];\n  inds[ib + int(i) * is] = "
           "i64(j);\n";
    else
      b += "  ma[l * n + off + i] = off + j;\n";
    b += "}\nBARRIER();\n}\n";
    def.body = b;
    return def;
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
      KernelDef def;
      def.name = key;
      def.buffers = {{"src", st, false}, {"from", DType::u32, false}};
      if (last) {
        def.buffers.push_back({"vals", st, true});
        def.buffers.push_back({"inds", DType::i64, true});
      } else {
        def.buffers.push_back({"to", DType::u32, true});
      }
      def.functions = before_function(st, op.descending);
      std::string b = head + grid_loop("e", "n_lines * n") + " {\n";
      b += "uint l = e / n, p = e - l * n, base = l * n;\n";
      b += iter_code(
          last ? std::vector<std::string>{"sb", "vb", "ib"} : std::vector<std::string>{"sb"}, "l",
          it.rank(), ob);
      b += "uint lo = p - p % (2u * wd), mid = min(lo + wd, n), hi = min(lo + 2u * wd, n);\n";
      b += "uint x = from[base + p];\n" + V + " xv = " + vload(st, "src[sb + int(x) * ss]") +
           ";\nuint q = p;\n";
      b += "if (mid < hi) {\n  bool left = p < mid;\n";
      b += "  uint a = left ? mid : lo, z = left ? hi : mid, a0 = a;\n";
      b += "  while (a < z) {\n    uint c = (a + z) >> 1u, y = from[base + c];\n";
      b += "    if (srt_before(" + vload(st, "src[sb + int(y) * ss]") +
           ", y, xv, x, n)) a = c + 1u; else z = c;\n  }\n";
      b += "  q = (left ? p : lo + p - mid) + (a - a0);\n}\n";
      if (last)
        b += "vals[vb + int(q) * vs] = src[sb + int(x) * ss];\ninds[ib + int(q) * is] = i64(x);\n";
      else
        b += "to[base + q] = x;\n";
      def.body = b + "}\n";
      return def;
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
  const std::string head = "const uint N = P_U(" + w(nw) + ");\nconst uint C = P_U(" + w(nw + 1) +
                           ");\nconst uint T = P_U(" + w(nw + 2) + ");\n";
  const std::string nz = "(" + convert(st, DType::b8, load(st, "src[so]")) + ")";
  const std::string rk = std::to_string(rank);
  auto count =
      cached_kernel(std::string("nonzero_count_") + dtype_tag(st) + "_r" + rk, d, caps, [&] {
        KernelDef def;
        def.name = std::string("nonzero_count_") + dtype_tag(st) + "_r" + rk;
        def.buffers = {{"src", st, false}, {"counts", DType::u32, true}};
        std::string b = head + grid_loop("t", "T") + " {\n";
        b += "uint c = 0u;\nuint end = min(N, (t + 1u) * C);\n";
        b += "for (uint i = t * C; i < end; ++i) {\n" + offset_code("so", "i", rank, tb);
        b += "  if " + nz + " ++c;\n}\ncounts[t] = c;\n}\n";
        def.body = b;
        return def;
      });
  // One workgroup: each thread scans a slice of the counts, the slices' sums scanned in shared.
  // head reads params words that follow the source's view, so the scan depends on the rank too
  auto scan = cached_kernel("nonzero_scan_r" + rk, d, caps, [&] {
    KernelDef def;
    def.name = "nonzero_scan_r" + rk;
    def.buffers = {{"counts", DType::u32, true}};
    def.local_size = 64;
    def.shared = {{"uint", "s_sum", 64}};
    std::string b = head;
    b += "uint per = (T + LOCAL_SIZE - 1u) / LOCAL_SIZE;\n";
    b += "uint lo = min(T, LOCAL_ID * per), hi = min(T, lo + per);\nuint s = 0u;\n";
    b += "for (uint i = lo; i < hi; ++i) s += counts[i];\ns_sum[LOCAL_ID] = s;\nBARRIER();\n";
    b += "if (LOCAL_ID == 0u) {\n  uint run = 0u;\n";
    b += "  for (uint i = 0u; i < LOCAL_SIZE; ++i) { uint x = s_sum[i]; s_sum[i] = run; run += x; "
         "}\n";
    b += "}\nBARRIER();\nuint run = s_sum[LOCAL_ID];\n";
    b += "for (uint i = lo; i < hi; ++i) { uint x = counts[i]; counts[i] = run; run += x; }\n";
    def.body = b;
    return def;
  });
  auto write =
      cached_kernel(std::string("nonzero_write_") + dtype_tag(st) + "_r" + rk, d, caps, [&] {
        KernelDef def;
        def.name = std::string("nonzero_write_") + dtype_tag(st) + "_r" + rk;
        def.buffers = {
            {"src", st, false}, {"counts", DType::u32, false}, {"dst", DType::i64, true}};
        std::string b = head;
        b += "const int doff = P_I(" + w(nw + 3) + ");\nconst int r0 = P_I(" + w(nw + 4) +
             ");\nconst int r1 = P_I(" + w(nw + 5) + ");\nconst uint rows = P_U(" + w(nw + 6) +
             ");\n";
        b += grid_loop("t", "T") + " {\n";
        b += "uint row = counts[t];\nuint end = min(N, (t + 1u) * C);\n";
        b += "for (uint i = t * C; i < end && row < rows; ++i) {\n" +
             offset_code("so", "i", rank, tb);
        b += "  if " + nz + " {\n    uint rem = i;\n";
        // Row-major coordinates from the sizes at words tb + 1 ...
        for (int k = rank - 1; k >= 0; --k) {
          const std::string sz = "P_U(" + w(tb + 1 + uint32_t(k)) + ")";
          b += "    dst[doff + int(row) * r0 + " + std::to_string(k) + " * r1] = i64(" +
               (k > 0 ? "rem % " + sz : std::string("rem")) + ");\n";
          if (k > 0) b += "    rem /= " + sz + ";\n";
        }
        b += "    ++row;\n  }\n}\n}\n";
        def.body = b;
        return def;
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
