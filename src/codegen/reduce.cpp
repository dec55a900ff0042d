// Generated reductions (ir::Reduce): sum prod max min any all over any set of dims of a strided
// src into a strided keepdim-shaped dst, with the first index of the extreme for max/min.
//
// Two variants, keyed by (op, dtypes, accumulator, ranks after merging dims, variant), never by
// shape (sizes, strides and offsets are params):
// - thread: one thread per output element loops over the reduced elements (small extents);
// - group: one workgroup per output element, threads stride over the reduced elements and
//   combine in a shared-memory tree (large extents; 1024 threads past 32768 * 256 elements).
// - split (two launches, "_p" then "_f"): when one invocation of the single-pass kernel would run
//   more loop iterations than kLoopBudget (lavapipe ends a shader invocation after 65,535 loop
//   iterations in all, nested loops counted together, and the results are then garbage), the
//   reduced range of each output is cut into chunks of kChunkSteps * L elements; a workgroup per
//   (output, chunk) writes a partial (sum/product in the accumulator type, any/all as 0/1, the
//   extreme with its index) into a scratch buffer and a thread per output combines the partials
//   in chunk order. The same rule applies on every device.
// Accumulation follows the ref backend: sums/products of floats in f64 where the device has
// shaderFloat64 (else in float: an f32 sum of many elements then rounds like torch's float
// accumulation, not like ref), integers and bool in i64/u64 (without shaderInt64 the i64 dst
// the frontend allocates is itself unsupported, so the op is an error). max/min compare in the
// element's compute type, NaN wins (the first NaN), ties keep the first index.
#include <algorithm>

#include "codegen/lower.h"
#include "codegen/reduce_util.h"
#include "ember/error.h"

namespace ember::codegen {

namespace {

using ir::ReduceOp;
using red::vload;
using red::vstore;
using red::vtype;

const char* op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::prod:
      return "prod";
    case ReduceOp::max:
      return "max";
    case ReduceOp::min:
      return "min";
    case ReduceOp::any:
      return "any";
    case ReduceOp::all:
      return "all";
  }
  return "reduce";
}

// The accumulator dtype of sum/prod (any/all use bool, max/min the element's value type).
DType acc_dtype(DType src, const Caps& caps) {
  if (red::is_float_dtype(src)) return caps.f64 ? DType::f64 : DType::f32;
  const bool uns = src == DType::u8 || src == DType::u16 || src == DType::u32 || src == DType::u64;
  if (caps.i64) return uns ? DType::u64 : DType::i64;
  return uns ? DType::u32 : DType::i32;
}

// `bool red_take(V a, uint ka, V b, uint kb)`: whether (b, kb) replaces the extreme so far
// (a, ka). k = 0xFFFFFFFF marks an empty slot. NaN wins, the first NaN among NaNs; strictly
// better wins; ties keep the smaller index (threads see interleaved indices).
std::string take_function(DType t, bool is_max) {
  const std::string v = vtype(t);
  std::string s = "bool red_take(" + v + " a, uint ka, " + v + " b, uint kb) {\n";
  s += "  if (kb == 0xFFFFFFFFu) return false;\n  if (ka == 0xFFFFFFFFu) return true;\n";
  if (red::is_float_dtype(t))
    s += "  bool na = isnan(a), nb = isnan(b);\n"
         "  if (na || nb) return nb && (!na || kb < ka);\n";
  s += std::string("  if (b ") + (is_max ? ">" : "<") + " a) return true;\n";
  s += "  return b == a && kb < ka;\n}\n";
  return s;
}

// Loop iterations one invocation may run, well under lavapipe's 65,535. The estimates count each
// loop's trip count plus one, as lavapipe does (loops a driver unrolls count 0: an upper bound).
constexpr int64_t kLoopBudget = 49152;
// Strided-loop iterations per thread for one chunk of the split variant.
constexpr int64_t kChunkSteps = 4096;

struct Plan {
  ReduceOp op;
  DType src, dst, acc;
  bool with_idx;
  int ro, ri;      // outer / inner ranks after merging
  uint32_t group;  // 0: thread variant, else the workgroup size
  int split = 0;   // 0: single pass; 1: the split's partials kernel; 2: its final kernel
};

std::string key_of(const Plan& p) {
  std::string k = std::string("reduce_") + op_name(p.op) + "_" + dtype_tag(p.src) + "_" +
                  dtype_tag(p.dst) + "_a" + dtype_tag(p.acc) + (p.with_idx ? "_idx" : "") + "_o" +
                  std::to_string(p.ro) + "_i" + std::to_string(p.ri);
  if (p.split == 2) return k + "_f";
  return k + (p.group ? "_g" + std::to_string(p.group) : "_t") + (p.split == 1 ? "_p" : "");
}

bool is_extreme(ReduceOp op) { return op == ReduceOp::max || op == ReduceOp::min; }
bool is_logical(ReduceOp op) { return op == ReduceOp::any || op == ReduceOp::all; }

// Statements storing the final accumulator `a` (and index `ka`) of output `o` (offsets db, ib).
std::string finish_code(const Plan& p, const std::string& a, const std::string& ka) {
  std::string s;
  if (is_extreme(p.op)) {
    s += "dst[db] = " + vstore(p.dst, a) + ";\n";
    if (p.with_idx) s += "idx[ib] = i64(" + ka + ");\n";
  } else {
    const DType from = is_logical(p.op) ? DType::b8 : p.acc;
    s += "dst[db] = " + store(p.dst, convert(from, p.dst, a)) + ";\n";
  }
  return s;
}

// The split's scratch buffers: partial values (the accumulator type; any/all as u32 0/1; the
// extreme as the element dtype, which holds it exactly) and, for max/min, their indices (u32).
std::vector<BufferDecl> partial_buffers(const Plan& p, bool writable) {
  if (is_extreme(p.op)) return {{"pv", p.src, writable}, {"pk", DType::u32, writable}};
  return {{"pv", is_logical(p.op) ? DType::u32 : p.acc, writable}};
}

// cw: the split's params word of C (chunks per output), followed by CH (elements per chunk).
KernelDef make_def(const Plan& p, uint32_t ob, uint32_t ib, uint32_t cw) {
  KernelDef def;
  def.name = key_of(p);
  def.buffers = {{"src", p.src, false}, {"dst", p.dst, true}};
  if (p.with_idx) def.buffers.push_back({"idx", DType::i64, true});
  if (p.split == 1) {  // the partials kernel writes scratch, not dst
    def.buffers = {{"src", p.src, false}};
    for (const BufferDecl& b : partial_buffers(p, true)) def.buffers.push_back(b);
  }
  def.local_size = p.group ? p.group : 256;
  const bool extreme = p.op == ReduceOp::max || p.op == ReduceOp::min;
  const bool logical = p.op == ReduceOp::any || p.op == ReduceOp::all;
  // max/min order elements as vtype (bool as uint); the others read the compute type.
  const std::string V = extreme ? vtype(p.src) : std::string(compute_type(p.src));
  // The accumulator's type, initial value, step with element `v` and combine of two partials.
  std::string A, init, step, comb, shared_t;
  if (extreme) {
    def.functions = take_function(p.src, p.op == ReduceOp::max);
  } else if (logical) {
    const bool any = p.op == ReduceOp::any;
    A = "bool";
    shared_t = "uint";
    init = any ? "false" : "true";
    step = std::string("acc = acc ") + (any ? "||" : "&&") + " " + convert(p.src, DType::b8, "v") +
           ";";
    comb = any ? "|" : "&";
  } else {
    const bool sum = p.op == ReduceOp::sum;
    A = compute_type(p.acc);
    shared_t = A;
    init = A + (sum ? "(0)" : "(1)");
    step = std::string("acc = acc ") + (sum ? "+" : "*") + " " + convert(p.src, p.acc, "v") + ";";
    comb = sum ? "+" : "*";
  }
  const std::string outer_vars = iter_code(p.with_idx ? std::vector<std::string>{"sb", "db", "ib"}
                                                      : std::vector<std::string>{"sb", "db"},
                                           "o", p.ro, ob);
  const std::string inner_vars = iter_code({"so"}, "k", p.ri, ib);
  const std::string load_v =
      "    " + V +
      " v = " + (extreme ? vload(p.src, "src[sb + so]") : load(p.src, "src[sb + so]")) + ";\n";
  // Stores the final accumulator `a` (and index `ka`): into dst, or the split's partial w.
  auto finish = [&](const std::string& a, const std::string& ka) {
    if (p.split != 1) return finish_code(p, a, ka);
    if (extreme) return "pv[w] = " + vstore(p.src, a) + ";\npk[w] = " + ka + ";\n";
    if (logical) return "pv[w] = " + a + " ? 1u : 0u;\n";
    return "pv[w] = " + store(p.acc, a) + ";\n";
  };
  std::string b;
  b += "const uint n_out = P_U(" + std::to_string(ob) + ");\n";
  b += "const uint R = P_U(" + std::to_string(ib) + ");\n";
  if (!p.group) {
    b += grid_loop("o", "n_out") + " {\n" + outer_vars;
    if (extreme) {
      b += V + " best = " + V + "(0);\nuint bk = 0xFFFFFFFFu;\n";
      b += "for (uint k = 0u; k < R; ++k) {\n" + inner_vars + load_v;
      b += "    if (red_take(best, bk, v, k)) { best = v; bk = k; }\n}\n";
      b += finish("best", "bk");
    } else {
      b += A + " acc = " + init + ";\n";
      b += "for (uint k = 0u; k < R; ++k) {\n" + inner_vars + load_v + "    " + step + "\n}\n";
      b += finish("acc", "");
    }
    b += "}\n";
  } else {
    const uint32_t L = p.group;
    if (p.split == 1) {  // a workgroup per (output o, chunk c) pair w; chunks of CH elements
      b += "const uint C = P_U(" + std::to_string(cw) + "), CH = P_U(" + std::to_string(cw + 1) +
           ");\n";
      b += "for (uint w = GROUP_ID; w < n_out * C; w += NUM_GROUPS) {\n";
      b += "uint o = w / C, k0 = (w % C) * CH;\n" + outer_vars;
      b += "uint k1 = R - k0 > CH ? k0 + CH : R;\n";
    } else {
      b += "for (uint o = GROUP_ID; o < n_out; o += NUM_GROUPS) {\n" + outer_vars;
    }
    const std::string kloop = p.split == 1
                                  ? "for (uint k = k0 + LOCAL_ID; k < k1; k += LOCAL_SIZE) {\n"
                                  : "for (uint k = LOCAL_ID; k < R; k += LOCAL_SIZE) {\n";
    if (extreme) {
      def.shared = {{V, "s_v", L}, {"uint", "s_k", L}};
      b += V + " best = " + V + "(0);\nuint bk = 0xFFFFFFFFu;\n";
      b += kloop + inner_vars + load_v;
      b += "    if (red_take(best, bk, v, k)) { best = v; bk = k; }\n}\n";
      b += "s_v[LOCAL_ID] = best;\ns_k[LOCAL_ID] = bk;\nBARRIER();\n";
      b += "for (uint h = LOCAL_SIZE / 2u; h > 0u; h >>= 1u) {\n";
      b += "  if (LOCAL_ID < h && red_take(s_v[LOCAL_ID], s_k[LOCAL_ID], s_v[LOCAL_ID + h], ";
      b += "s_k[LOCAL_ID + h])) {\n";
      b += "    s_v[LOCAL_ID] = s_v[LOCAL_ID + h];\n    s_k[LOCAL_ID] = s_k[LOCAL_ID + h];\n  }\n";
      b += "  BARRIER();\n}\n";
      b += "if (LOCAL_ID == 0u) {\n" + finish("s_v[0]", "s_k[0]") + "}\n";
    } else {
      def.shared = {{shared_t, "s_a", L}};
      b += A + " acc = " + init + ";\n";
      b += kloop + inner_vars + load_v + "    " + step + "\n}\n";
      b += logical ? "s_a[LOCAL_ID] = acc ? 1u : 0u;\n" : "s_a[LOCAL_ID] = acc;\n";
      b += "BARRIER();\n";
      b += "for (uint h = LOCAL_SIZE / 2u; h > 0u; h >>= 1u) {\n";
      b += "  if (LOCAL_ID < h) s_a[LOCAL_ID] = s_a[LOCAL_ID] " + comb + " s_a[LOCAL_ID + h];\n";
      b += "  BARRIER();\n}\n";
      b += "if (LOCAL_ID == 0u) {\n";
      b += logical ? "  bool r = s_a[0] != 0u;\n" + finish("r", "") : finish("s_a[0]", "");
      b += "}\n";
    }
    b += "BARRIER();\n}\n";
  }
  def.body = b;
  return def;
}

// The split's second kernel: a thread per output combines its C partials in chunk order.
KernelDef make_final_def(const Plan& p, uint32_t ob, uint32_t cw) {
  KernelDef def;
  def.name = key_of(p);
  def.buffers = {{"dst", p.dst, true}};
  if (p.with_idx) def.buffers.push_back({"idx", DType::i64, true});
  for (const BufferDecl& b : partial_buffers(p, false)) def.buffers.push_back(b);
  const std::string outer_vars = iter_code(p.with_idx ? std::vector<std::string>{"sb", "db", "ib"}
                                                      : std::vector<std::string>{"sb", "db"},
                                           "o", p.ro, ob);
  std::string b = "const uint n_out = P_U(" + std::to_string(ob) + ");\n";
  b += "const uint C = P_U(" + std::to_string(cw) + ");\n";
  b += grid_loop("o", "n_out") + " {\n" + outer_vars;
  if (is_extreme(p.op)) {
    def.functions = take_function(p.src, p.op == ReduceOp::max);
    const std::string V = vtype(p.src);
    b += V + " best = " + V + "(0);\nuint bk = 0xFFFFFFFFu;\n";
    b += "for (uint c = 0u; c < C; ++c) {\n";
    b += "  " + V + " v = " + vload(p.src, "pv[o * C + c]") + ";\n";
    b += "  uint k = pk[o * C + c];\n";
    b += "  if (red_take(best, bk, v, k)) { best = v; bk = k; }\n}\n";
    b += finish_code(p, "best", "bk");
  } else if (is_logical(p.op)) {
    const bool any = p.op == ReduceOp::any;
    b += std::string("bool acc = ") + (any ? "false" : "true") + ";\n";
    b += "for (uint c = 0u; c < C; ++c) acc = acc " + std::string(any ? "||" : "&&") +
         " pv[o * C + c] != 0u;\n";
    b += finish_code(p, "acc", "");
  } else {
    const bool sum = p.op == ReduceOp::sum;
    const std::string A = compute_type(p.acc);
    b += A + " acc = " + A + (sum ? "(0)" : "(1)") + ";\n";
    b += "for (uint c = 0u; c < C; ++c) acc = acc " + std::string(sum ? "+" : "*") + " " +
         load(p.acc, "pv[o * C + c]") + ";\n";
    b += finish_code(p, "acc", "");
  }
  b += "}\n";
  def.body = b;
  return def;
}

// log2 of a power of two.
int64_t log2_of(uint32_t v) {
  int64_t n = 0;
  while (v > 1u) v >>= 1, ++n;
  return n;
}

// Largest power of two <= v (v >= 1).
uint32_t floor_pow2(uint32_t v) {
  uint32_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

}  // namespace

Lowering lower_reduce(const ir::Reduce& op, Dialect d, const Caps& caps) {
  const char* name = op_name(op.op);
  const Tensor& src = op.src;
  const Tensor& dst = op.dst;
  Plan p;
  p.op = op.op;
  p.src = src.dtype();
  p.dst = dst.dtype();
  p.with_idx = op.indices.defined();
  p.acc = acc_dtype(p.src, caps);
  red::check_dtypes(name, {p.src, p.dst}, caps);
  if (p.with_idx) check_dtype(name, DType::i64, caps);
  if (dst.numel() == 0) return {};
  const size_t rank = size_t(src.dim());
  std::vector<bool> reduced(rank, false);
  for (int64_t dd : op.dims) reduced[size_t(dd)] = true;
  // Outer: dst's shape (1 on reduced dims) over src, dst and idx; inner: the reduced dims of src.
  std::vector<int64_t> osz(rank), isz(rank);
  std::vector<std::vector<int64_t>> ost(p.with_idx ? 3 : 2, std::vector<int64_t>(rank));
  std::vector<std::vector<int64_t>> ist(1, std::vector<int64_t>(rank));
  for (size_t k = 0; k < rank; ++k) {
    osz[k] = reduced[k] ? 1 : src.shape()[k];
    isz[k] = reduced[k] ? src.shape()[k] : 1;
    ost[0][k] = src.strides()[k];
    ost[1][k] = dst.strides()[k];
    if (p.with_idx) ost[2][k] = op.indices.strides()[k];
    ist[0][k] = src.strides()[k];
  }
  std::vector<int64_t> offs = {src.offset(), dst.offset()};
  if (p.with_idx) offs.push_back(op.indices.offset());
  const Iter outer = merged_iter(osz, offs, ost);
  const Iter inner = merged_iter(isz, {0}, ist);
  p.ro = outer.rank();
  p.ri = inner.rank();
  const int64_t R = inner.numel;
  // Large extents get a workgroup each; the tree needs a power-of-two size.
  const uint32_t maxg = floor_pow2(std::min<uint32_t>(caps.max_workgroup_size, 256));
  p.group = 0;
  if (R >= 128 && maxg >= 32) p.group = std::min<uint32_t>(R >= 1024 ? 256 : 64, maxg);
  // lavapipe ends any shader loop at 65535 iterations (also nested loops, which share its
  // counter) and the result is garbage: past 32768 * 256 elements a workgroup of up to 1024
  // threads keeps each thread's loop under it (to 67M elements; docs/vulkan.md).
  if (R > int64_t(32768) * 256)
    p.group = floor_pow2(std::min<uint32_t>(caps.max_workgroup_size, 1024));
  Params params;
  const uint32_t ob = add_iter(params, outer, name);
  const uint32_t ib = add_iter(params, inner, name);
  std::vector<Binding> bind = {{src}, {dst}};
  if (p.with_idx) bind.push_back({op.indices});
  Lowering l;
  // Loop iterations per invocation of the single pass: outputs per workgroup (thread) times the
  // strided loop over R plus the tree's log2(group) steps.
  const int64_t n_out = dst.numel();
  int64_t iters;
  if (p.group) {
    const int64_t g = std::min<int64_t>(n_out, caps.max_groups_x);
    iters = (n_out + g - 1) / g * ((R + p.group - 1) / p.group + log2_of(p.group) + 3);
  } else {
    const int64_t g = groups_1d(n_out, 256, caps);
    iters = (n_out + g * 256 - 1) / (g * 256) * (R + 2);
  }
  if (iters > kLoopBudget) {
    // Split: chunks of kChunkSteps strides of a workgroup of L (<= 256) threads.
    Plan p1 = p;
    p1.split = 1;
    p1.group = floor_pow2(std::min<uint32_t>(caps.max_workgroup_size, 256));
    const int64_t CH = kChunkSteps * p1.group, C = (R + CH - 1) / CH;
    const uint32_t cw = params.u32(uint32_t(C));
    params.u32(uint32_t(CH));
    Plan p2 = p;
    p2.split = 2;
    p2.group = 0;
    auto k1 = cached_kernel(key_of(p1), d, caps, [&] { return make_def(p1, ob, ib, cw); });
    auto k2 = cached_kernel(key_of(p2), d, caps, [&] { return make_final_def(p2, ob, cw); });
    const int64_t pairs = n_out * C;
    for (const BufferDecl& b : partial_buffers(p, true))
      l.scratch_bytes.push_back(pairs * dtype_size(b.dtype));
    std::vector<Binding> part(l.scratch_bytes.size());
    for (size_t k = 0; k < part.size(); ++k) part[k].scratch = int(k);
    const std::vector<uint32_t> words = params.take();
    Launch first;
    first.kernel = k1;
    first.bindings = {{src}};
    first.bindings.insert(first.bindings.end(), part.begin(), part.end());
    first.params = words;
    first.groups = uint32_t(std::min<int64_t>(pairs, caps.max_groups_x));
    l.launches.push_back(std::move(first));
    bind.erase(bind.begin());  // the final kernel reads the partials, not src
    bind.insert(bind.end(), part.begin(), part.end());
    l.launches.push_back(launch_1d(k2, std::move(bind), words, n_out, caps));
    return l;
  }
  auto kernel = cached_kernel(key_of(p), d, caps, [&] { return make_def(p, ob, ib, 0); });
  if (p.group) {
    Launch launch;
    launch.kernel = kernel;
    launch.bindings = std::move(bind);
    launch.params = params.take();
    launch.groups = uint32_t(std::min<int64_t>(dst.numel(), caps.max_groups_x));
    l.launches.push_back(std::move(launch));
  } else {
    l.launches.push_back(launch_1d(kernel, std::move(bind), params.take(), dst.numel(), caps));
  }
  return l;
}

}  // namespace ember::codegen
