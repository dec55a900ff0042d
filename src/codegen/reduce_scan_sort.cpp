// Generated scans (ir::Scan), stable sorts (ir::Sort) and nonzero (ir::Nonzero).
// - Scan: one thread per line along dim, accumulating as the ref backend (f64 for floats where
//   the device has shaderFloat64, else float; i64/u64 for integers and bool); cummax/cummin move
//   the index to the latest element >= (<=) the running extreme, and a NaN sticks.
// - Sort: lines that fit in shared memory are sorted by one workgroup each with a bitonic network
//   over (value, original index) pairs, the index breaking ties so the result is stable; longer
//   lines by one thread each with a bottom-up merge sort of indices in scratch memory. NaN is
//   the largest value.
// - Nonzero: per-chunk counts, one workgroup's exclusive scan of the counts, then each chunk
//   writes its coordinates in row-major order from its start.
// Kernels are keyed by (op, dtypes, ranks after merging dims, variant); shapes go in params.
// Known limit: lavapipe (llvmpipe) stops any invocation's loops after 65535 iterations in all,
// so on it the one-thread-per-line scan and merge sort give wrong results for lines of more than
// ~65535 (scan) and ~4000 (merge sort: ~16 loop steps an element) elements; real GPUs have no
// such limit. The fix is one launch per merge pass with a thread per pair of runs.
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
  return red::merged_iter(sizes, offs, st);
}

uint32_t pow2_at_least(int64_t v) {
  uint32_t p = 1;
  while (int64_t(p) < v) p *= 2;
  return p;
}

std::string w(uint32_t k) { return std::to_string(k); }

}  // namespace

// ---- scan ----

Lowering lower_scan(const ir::Scan& op, Dialect d, const Caps& caps) {
  const char* name = scan_name(op.op);
  const DType st = op.src.dtype(), dt = op.dst.dtype();
  const bool with_idx = op.indices.defined();
  red::check_dtypes(name, {st, dt}, caps);
  if (with_idx) check_dtype(name, DType::i64, caps);
  const int64_t n = op.src.shape()[size_t(op.dim)];
  if (op.dst.numel() == 0 || n == 0) return {};
  const bool extreme = op.op == ScanOp::cummax || op.op == ScanOp::cummin;
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
  Params params;
  const uint32_t ob = add_iter(params, it, name);
  const uint32_t lw = params.i32(n, name);
  params.i32(op.src.strides()[size_t(op.dim)], name);
  params.i32(op.dst.strides()[size_t(op.dim)], name);
  params.i32(with_idx ? op.indices.strides()[size_t(op.dim)] : 0, name);
  const std::string key = std::string("scan_") + name + "_" + dtype_tag(st) + "_" + dtype_tag(dt) +
                          (extreme ? "" : std::string("_a") + dtype_tag(acc)) +
                          (with_idx ? "_idx" : "") + "_r" + std::to_string(it.rank());
  auto make = [&] {
    KernelDef def;
    def.name = key;
    def.buffers = {{"src", st, false}, {"dst", dt, true}};
    if (with_idx) def.buffers.push_back({"idx", DType::i64, true});
    std::string b = "const uint n_lines = P_U(" + w(ob) + ");\n";
    b += "const uint n = P_U(" + w(lw) + ");\nconst int ss = P_I(" + w(lw + 1) +
         ");\nconst int ds = P_I(" + w(lw + 2) + ");\nconst int is = P_I(" + w(lw + 3) + ");\n";
    b += grid_loop("l", "n_lines") + " {\n";
    b += iter_code(with_idx ? std::vector<std::string>{"sb", "db", "ib"}
                            : std::vector<std::string>{"sb", "db"},
                   "l", it.rank(), ob);
    if (!extreme) {
      const bool sum = op.op == ScanOp::cumsum;
      const std::string A = compute_type(acc);
      b += A + " acc = " + A + (sum ? "(0)" : "(1)") + ";\n";
      b += "for (uint k = 0u; k < n; ++k) {\n";
      b += "  " + std::string(compute_type(st)) + " v = " + load(st, "src[sb + int(k) * ss]") +
           ";\n";
      b += std::string("  acc = acc ") + (sum ? "+" : "*") + " " + convert(st, acc, "v") + ";\n";
      b += "  dst[db + int(k) * ds] = " + store(dt, convert(acc, dt, "acc")) + ";\n}\n";
    } else {
      const std::string V = vtype(st);
      const bool is_max = op.op == ScanOp::cummax;
      const std::string ge = std::string("c ") + (is_max ? ">=" : "<=") + " best";
      b += V + " best = " + vload(st, "src[sb]") + ";\nuint bk = 0u;\n";
      b += "for (uint k = 0u; k < n; ++k) {\n";
      b += "  " + V + " c = " + vload(st, "src[sb + int(k) * ss]") + ";\n";
      if (red::is_float_dtype(st))
        b += "  if (isnan(c) || (!isnan(best) && " + ge + ")) { best = c; bk = k; }\n";
      else
        b += "  if (" + ge + ") { best = c; bk = k; }\n";
      b += "  dst[db + int(k) * ds] = " + vstore(dt, "best") + ";\n";
      if (with_idx) b += "  idx[ib + int(k) * is] = i64(bk);\n";
      b += "}\n";
    }
    b += "}\n";
    def.body = b;
    return def;
  };
  auto kernel = cached_kernel(key, d, caps, make);
  std::vector<Binding> bind = {{op.src}, {op.dst}};
  if (with_idx) bind.push_back({op.indices});
  Lowering l;
  l.launches.push_back(launch_1d(kernel, std::move(bind), params.take(), it.numel, caps));
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
  // Lines up to `cap` elements sort in shared memory.
  uint32_t cap = 2048;
  while (cap > 2 && cap * (vbytes + 4) > caps.max_shared_bytes) cap /= 2;
  const bool shared = n <= int64_t(cap) && caps.max_workgroup_size >= 32;
  Params params;
  const uint32_t ob = add_iter(params, it, name);
  const uint32_t lw = params.i32(n, name);
  params.i32(op.src.strides()[size_t(op.dim)], name);
  params.i32(op.values.strides()[size_t(op.dim)], name);
  params.i32(op.indices.strides()[size_t(op.dim)], name);
  const uint32_t n2 = pow2_at_least(n);
  params.u32(n2);
  uint32_t local = 1;
  if (shared) local = std::min<uint32_t>(n2 <= 128 ? 64 : 256, caps.max_workgroup_size);
  const std::string key =
      std::string("sort_") + dtype_tag(st) + (op.descending ? "_desc" : "") + "_r" +
      std::to_string(it.rank()) +
      (shared ? "_wg" + std::to_string(local) + "_c" + std::to_string(cap) : std::string("_merge"));
  auto make = [&] {
    KernelDef def;
    def.name = key;
    def.buffers = {{"src", st, false}, {"vals", st, true}, {"inds", DType::i64, true}};
    def.functions = before_function(st, op.descending);
    std::string b = "const uint n_lines = P_U(" + w(ob) + ");\n";
    b += "const uint n = P_U(" + w(lw) + ");\nconst int ss = P_I(" + w(lw + 1) +
         ");\nconst int vs = P_I(" + w(lw + 2) + ");\nconst int is = P_I(" + w(lw + 3) +
         ");\nconst uint n2 = P_U(" + w(lw + 4) + ");\n";
    const std::string outer = iter_code({"sb", "vb", "ib"}, "l", it.rank(), ob);
    // Writes position i of the sorted line from original index j.
    const std::string out =
        "vals[vb + int(i) * vs] = src[sb + int(j) * ss];\ninds[ib + int(i) * is] = i64(j);\n";
    if (shared) {
      def.local_size = local;
      def.shared = {{V, "s_v", cap}, {"uint", "s_i", cap}};
      b += "for (uint l = GROUP_ID; l < n_lines; l += NUM_GROUPS) {\n" + outer;
      b += "for (uint i = LOCAL_ID; i < n2; i += LOCAL_SIZE) {\n";
      b += "  s_v[i] = i < n ? " + vload(st, "src[sb + int(i) * ss]") + " : " + V + "(0);\n";
      b += "  s_i[i] = i;\n}\nBARRIER();\n";
      b += "for (uint k = 2u; k <= n2; k <<= 1u) {\n";
      b += "  for (uint h = k >> 1u; h > 0u; h >>= 1u) {\n";
      b += "    for (uint i = LOCAL_ID; i < n2; i += LOCAL_SIZE) {\n";
      b += "      uint p = i ^ h;\n      if (p > i) {\n";
      b += "        " + V + " a = s_v[i], c = s_v[p];\n        uint ia = s_i[i], ic = s_i[p];\n";
      b += "        bool sw = (i & k) == 0u ? srt_before(c, ic, a, ia, n) : ";
      b += "srt_before(a, ia, c, ic, n);\n";
      b += "        if (sw) { s_v[i] = c; s_v[p] = a; s_i[i] = ic; s_i[p] = ia; }\n";
      b += "      }\n    }\n    BARRIER();\n  }\n}\n";
      b += "for (uint i = LOCAL_ID; i < n; i += LOCAL_SIZE) {\n  uint j = s_i[i];\n" + out + "}\n";
      b += "BARRIER();\n}\n";
    } else {
      // Ping-pong between scratch index buffers ma and mb, line l at [l * n, (l + 1) * n).
      def.buffers.push_back({"ma", DType::u32, true});
      def.buffers.push_back({"mb", DType::u32, true});
      auto merge_pass = [&](const std::string& from, const std::string& to) {
        std::string m;
        m += "for (uint lo = 0u; lo < n; lo += 2u * wd) {\n";
        m += "  uint mid = min(lo + wd, n), hi = min(lo + 2u * wd, n), i = lo, j = mid;\n";
        m += "  for (uint o = lo; o < hi; ++o) {\n";
        m += "    bool left = i < mid;\n";
        m += "    if (left && j < hi) {\n";
        m += "      uint a = " + from + "[base + i], c = " + from + "[base + j];\n";
        m += "      left = !srt_before(" + vload(st, "src[sb + int(c) * ss]") + ", c, " +
             vload(st, "src[sb + int(a) * ss]") + ", a, n);\n";
        m += "    }\n";
        m += "    if (left) { " + to + "[base + o] = " + from + "[base + i]; ++i; }\n";
        m += "    else { " + to + "[base + o] = " + from + "[base + j]; ++j; }\n";
        m += "  }\n}\n";
        return m;
      };
      b += grid_loop("l", "n_lines") + " {\n" + outer;
      b += "uint base = l * n;\nfor (uint i = 0u; i < n; ++i) ma[base + i] = i;\n";
      b += "bool in_a = true;\n";
      b += "for (uint wd = 1u; wd < n; wd <<= 1u) {\n";
      b += "if (in_a) {\n" + merge_pass("ma", "mb") + "} else {\n" + merge_pass("mb", "ma") + "}\n";
      b += "in_a = !in_a;\n}\n";
      b += "for (uint i = 0u; i < n; ++i) {\n  uint j = in_a ? ma[base + i] : mb[base + i];\n" +
           out + "}\n";
      b += "}\n";
    }
    def.body = b;
    return def;
  };
  auto kernel = cached_kernel(key, d, caps, make);
  std::vector<Binding> bind = {{op.src}, {op.values}, {op.indices}};
  Lowering l;
  if (shared) {
    Launch launch;
    launch.kernel = kernel;
    launch.bindings = std::move(bind);
    launch.params = params.take();
    launch.groups = uint32_t(std::min<int64_t>(it.numel, caps.max_groups_x));
    l.launches.push_back(std::move(launch));
  } else {
    const int64_t words = it.numel * n;
    EMBER_CHECK(words < (int64_t(1) << 31), name, "too many elements (", words,
                ") for 32-bit indexing of the merge sort's scratch");
    l.scratch_bytes = {words * 4, words * 4};
    bind.push_back({Tensor(), 0});
    bind.push_back({Tensor(), 1});
    l.launches.push_back(launch_1d(kernel, std::move(bind), params.take(), it.numel, caps));
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
  auto scan = cached_kernel("nonzero_scan", d, caps, [&] {
    KernelDef def;
    def.name = "nonzero_scan";
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
