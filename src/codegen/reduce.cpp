// Generated reductions (ir::Reduce): sum prod max min any all over any set of dims of a strided
// src into a strided keepdim-shaped dst, with the first index of the extreme for max/min.
//
// Two variants (reduce_variants: the autotuner's candidates, the first by extent), keyed by (op,
// dtypes, accumulator, ranks after merging dims, variant), never by shape (sizes, strides and
// offsets are params):
// - thread: one thread per output element loops over the reduced elements (small extents);
// - group: one workgroup per output element, threads stride over the reduced elements and
//   combine in a shared-memory tree (large extents; 1024 threads past 32768 * 256 elements).
// - split (two launches, "_p" then "_f"): for few outputs of many elements (the "split<S>"
//   variants: chunks of S strides, so many workgroups share each output), and whenever one
//   invocation of the single-pass kernel would run
//   more loop iterations than kLoopBudget (lavapipe ends a shader invocation after 65,535 loop
//   iterations in all, nested loops counted together, and the results are then garbage), the
//   reduced range of each output is cut into chunks of kChunkSteps * L elements; a workgroup per
//   (output, chunk) writes a partial (sum/product in the accumulator type, any/all as 0/1, the
//   extreme with its index) into a scratch buffer and a thread per output combines the partials
//   in chunk order. The same rule applies on every device.
// Fuse-on-read (lower_graph_reduce, a fused graph ending in a reduction, ir/graph.h): the same
// kernels, with the graph's inputs in place of src: each reduced element is the graph's node
// evaluated from its inputs at that element (graph_nodes.h), and the graph's outputs are stored
// as the loop passes their elements (each element is visited once in every variant).
// Accumulation follows the ref backend: sums/products of floats in f64 where the device has
// shaderFloat64 (else in float: an f32 sum of many elements then rounds like torch's float
// accumulation, not like ref), integers and bool in i64/u64 (without shaderInt64 the i64 dst
// the frontend allocates is itself unsupported, so the op is an error). max/min compare in the
// element's compute type, NaN wins (the first NaN), ties keep the first index.
#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "codegen/graph_nodes.h"
#include "codegen/lower.h"
#include "codegen/reduce_util.h"
#include "ember/error.h"

namespace ember::codegen {

namespace {

using ir::ReduceOp;
using kir::Expr;
using kir::Fn;
using kir::Type;
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

// The index of an empty extreme slot.
Expr kEmpty() { return kir::lit_uint(Type::u32, 0xFFFFFFFFu); }

// A kernel's buffers (the unused ones stay invalid): src, or a fused graph's outputs and inputs.
struct Bufs {
  kir::Buf src, dst, idx, pv, pk;
  std::vector<kir::Buf> outs, ins;
};

// `bool red_take(V a, u32 ka, V b, u32 kb)`: whether (b, kb) replaces the extreme so far
// (a, ka). k = 0xFFFFFFFF marks an empty slot. NaN wins, the first NaN among NaNs; strictly
// better wins; ties keep the smaller index (threads see interleaved indices).
kir::Function take_function(kir::Kernel& k, DType t, bool is_max) {
  const Type v = vtype(t);
  return k.function("red_take", Type::boolean, {v, Type::u32, v, Type::u32},
                    [&](const std::vector<Expr>& p) {
                      const Expr a = p[0], ka = p[1], b = p[2], kb = p[3];
                      k.if_(kb == kEmpty(), [&] { k.ret(kir::lit_bool(false)); });
                      k.if_(ka == kEmpty(), [&] { k.ret(kir::lit_bool(true)); });
                      if (red::is_float_dtype(t)) {
                        const Expr na = k.let("na", kir::call(Fn::isnan, {a}));
                        const Expr nb = k.let("nb", kir::call(Fn::isnan, {b}));
                        k.if_(na || nb, [&] { k.ret(nb && (!na || kb < ka)); });
                      }
                      k.if_(is_max ? b > a : b < a, [&] { k.ret(kir::lit_bool(true)); });
                      k.ret(b == a && kb < ka);
                    });
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
  // The reduced elements are one run of stride 1 in every source (their offsets are the loop
  // index: CPU OpenCL drivers vectorise such loads, not ones through a runtime stride).
  bool contiguous = false;
  // Fuse-on-read: the graph whose reductions[0] this is (null: ir::Reduce's src), the first
  // params word of each node (graph_params) and the device's caps.
  const ir::FusedGraph* graph = nullptr;
  std::vector<uint32_t> gword;
  const Caps* caps = nullptr;
  // Loop iterations one element's evaluation may run (helper functions with loops: erf's series
  // in f64); 0 for plain loads.
  int64_t element_loops = 0;
};

// The operands iterated with the reduced elements: src, or the graph's outputs then inputs.
size_t n_src(const Plan& p) {
  return p.graph ? p.graph->outputs.size() + p.graph->inputs.size() : 1;
}
// Their offset variables: `prefix`, or prefix0, prefix1, ...
std::vector<std::string> src_vars(const Plan& p, const std::string& prefix) {
  if (!p.graph) return {prefix};
  std::vector<std::string> v;
  for (size_t i = 0; i < n_src(p); ++i) v.push_back(prefix + std::to_string(i));
  return v;
}
// The outer iteration's variables: the sources', then dst's (and idx's).
std::vector<std::string> outer_vars(const Plan& p) {
  std::vector<std::string> v = src_vars(p, "sb");
  v.push_back("db");
  if (p.with_idx) v.push_back("ib");
  return v;
}

std::string key_of(const Plan& p) {
  std::string k = std::string("reduce_") + op_name(p.op) + "_" + dtype_tag(p.src) + "_" +
                  dtype_tag(p.dst) + "_a" + dtype_tag(p.acc) + (p.with_idx ? "_idx" : "") + "_o" +
                  std::to_string(p.ro) + "_i" + std::to_string(p.ri) + (p.contiguous ? "c" : "");
  if (p.graph) k += "_G" + p.graph->key();
  if (p.split == 2) return k + "_f";
  return k + (p.group ? "_g" + std::to_string(p.group) : "_t") + (p.split == 1 ? "_p" : "");
}

// The kernel's name (an identifier): the key without the graph's structure.
std::string kernel_name(const Plan& p) {
  Plan q = p;
  q.graph = nullptr;
  return (p.graph ? "fused_" : "") + key_of(q);
}

bool is_extreme(ReduceOp op) { return op == ReduceOp::max || op == ReduceOp::min; }
bool is_logical(ReduceOp op) { return op == ReduceOp::any || op == ReduceOp::all; }

// Stores the final accumulator `a` (and index `ka`) of an output at offsets db (and ib).
void finish(kir::Kernel& k, const Plan& p, const Bufs& b, Expr db, Expr ib, Expr a, Expr ka) {
  if (is_extreme(p.op)) {
    k.store(b.dst, db, red::vstore(k, p.src, p.dst, a));
    if (p.with_idx) k.store(b.idx, ib, cast(Type::i64, ka));
  } else {
    const DType from = is_logical(p.op) ? DType::b8 : p.acc;
    k.store(b.dst, db, convert(k, from, p.dst, a));
  }
}

// The split's scratch buffers: partial values (the accumulator type; any/all as u32 0/1; the
// extreme as the element dtype, which holds it exactly) and, for max/min, their indices (u32).
std::vector<BufferDecl> partial_buffers(const Plan& p, bool writable) {
  if (is_extreme(p.op)) return {{"pv", p.src, writable}, {"pk", DType::u32, writable}};
  return {{"pv", is_logical(p.op) ? DType::u32 : p.acc, writable}};
}

// Declares the buffers of a kernel of plan p: src (unless final), dst and idx (unless the
// partials kernel), then the partials (split kernels).
Bufs declare(kir::Kernel& k, const Plan& p) {
  Bufs b;
  if (p.split != 2 && p.graph) {
    for (size_t j = 0; j < p.graph->outputs.size(); ++j)
      b.outs.push_back(k.buffer("out" + std::to_string(j), p.graph->outputs[j].dst.dtype(), true));
    for (size_t j = 0; j < p.graph->inputs.size(); ++j)
      b.ins.push_back(k.buffer("in" + std::to_string(j), p.graph->inputs[j].dtype(), false));
  } else if (p.split != 2) {
    b.src = k.buffer("src", p.src, false);
  }
  if (p.split != 1) {
    b.dst = k.buffer("dst", p.dst, true);
    if (p.with_idx) b.idx = k.buffer("idx", DType::i64, true);
  }
  if (p.split != 0) {
    const std::vector<BufferDecl> parts = partial_buffers(p, p.split == 1);
    b.pv = k.buffer(parts[0].name, parts[0].dtype, parts[0].writable);
    if (parts.size() > 1) b.pk = k.buffer(parts[1].name, parts[1].dtype, parts[1].writable);
  }
  return b;
}

// The accumulator of sum/prod/any/all: its type, initial value, step with element `v` (of
// src's compute type) and combine of two partials (as stored in shared: any/all as u32).
struct Acc {
  Type type = Type::f32, shared = Type::f32;
  Expr init;
  std::function<Expr(kir::Kernel&, Expr, Expr)> step;
  std::function<Expr(Expr, Expr)> comb;
};
Acc make_acc(const Plan& p) {
  Acc a;
  if (is_logical(p.op)) {
    const bool any = p.op == ReduceOp::any;
    const DType src = p.src;
    a.type = Type::boolean;
    a.shared = Type::u32;
    a.init = kir::lit_bool(!any);
    a.step = [any, src](kir::Kernel& k, Expr acc, Expr v) {
      const Expr b = convert(k, src, DType::b8, v);
      return any ? (acc || b) : (acc && b);
    };
    a.comb = [any](Expr x, Expr y) { return any ? (x | y) : (x & y); };
  } else {
    const bool sum = p.op == ReduceOp::sum;
    const DType src = p.src, acc = p.acc;
    a.type = a.shared = kir::compute_of(p.acc);
    a.init = kir::lit(a.type, sum ? 0 : 1);
    a.step = [sum, src, acc](kir::Kernel& k, Expr x, Expr v) {
      const Expr c = convert(k, src, acc, v);
      return sum ? x + c : x * c;
    };
    a.comb = [sum](Expr x, Expr y) { return sum ? x + y : x * y; };
  }
  return a;
}

// cw: the split's params word of C (chunks per output), followed by CH (elements per chunk).
kir::Kernel make_kernel(const Plan& p, uint32_t ob, uint32_t ib, uint32_t cw) {
  kir::Kernel k(kernel_name(p), p.group ? p.group : 256);
  // A fused graph's values round as its eager ops stored them (no contraction across nodes).
  if (p.graph) k.set_precise_locals(true);
  const Bufs b = declare(k, p);
  const size_t ns = n_src(p);
  const bool extreme = is_extreme(p.op), logical = is_logical(p.op);
  // max/min order elements as vtype (bool as u32); the others read the compute type.
  const Type V = extreme ? vtype(p.src) : kir::compute_of(p.src);
  const kir::Function take =
      extreme ? take_function(k, p.src, p.op == ReduceOp::max) : kir::Function{};
  const Acc A = extreme ? Acc{} : make_acc(p);
  const std::vector<std::string> ovars = outer_vars(p), ivars = src_vars(p, "so");
  // Stores the final accumulator `a` (and index `ka`): into dst, or the split's partial w.
  auto done = [&](const std::vector<Expr>& o, Expr w, Expr a, Expr ka) {
    if (p.split != 1) return finish(k, p, b, o[ns], p.with_idx ? o[ns + 1] : Expr(), a, ka);
    if (extreme) {
      k.store(b.pv, w, red::vstore(k, p.src, p.src, a));
      k.store(b.pk, w, ka);
    } else if (logical) {
      k.store(b.pv, w, select(a, kir::lit(Type::u32, 1), kir::lit(Type::u32, 0)));
    } else {
      k.store(b.pv, w, a);
    }
  };
  // The reduced element at outer offsets sb and inner offsets so (one per source): src's, or the
  // graph's node evaluated there (its outputs stored on the way).
  auto element = [&](const std::vector<Expr>& sb, const std::vector<Expr>& so) {
    if (!p.graph)
      return k.let(
          "v", extreme ? red::vload(k, b.src, p.src, sb[0] + so[0]) : k.load(b.src, sb[0] + so[0]));
    const ir::FusedGraph& g = *p.graph;
    const size_t nout = g.outputs.size();
    const std::vector<Expr> v = graph_values(
        k, g, p.gword,
        [&](int32_t n) {
          const size_t in = size_t(g.nodes[size_t(n)].input);
          return k.load(b.ins[in], sb[nout + in] + so[nout + in]);
        },
        *p.caps);
    for (size_t j = 0; j < nout; ++j)
      k.store(b.outs[j], sb[j] + so[j], v[size_t(g.outputs[j].node)]);
    return v[size_t(g.reductions[0].node)];
  };
  // The loop over reduced elements [k0 + first, k1) step `step` updating best/bk or acc.
  auto at = [&](const std::vector<Expr>& sb, Expr kk) {
    return element(sb, p.contiguous ? std::vector<Expr>(ns, k.let("so", kir::cast(Type::i32, kk)))
                                    : iter_offsets(k, ivars, kk, p.ri, ib));
  };
  auto reduce_loop = [&](const std::vector<Expr>& sb, Expr first, Expr end, Expr step, Expr best,
                         Expr bk, Expr acc) {
    if (p.op == ReduceOp::sum) {
      // Sums in two accumulators (alternate elements): half the dependent adds per thread (CPU
      // devices run a work-item's loop scalar, bound by the add's latency). Not products: 0 in
      // one and an overflow to inf in the other would give NaN where the ordered product is 0.
      const Expr acc2 = k.let("acc2", A.init);
      k.for_range("k", first, end, step + step, [&](Expr kk) {
        k.assign(acc, A.step(k, acc, at(sb, kk)));
        const Expr k2 = k.let("k2", kk + step);
        k.if_(k2 < end, [&] { k.assign(acc2, A.step(k, acc2, at(sb, k2))); });
      });
      k.assign(acc, A.comb(acc, acc2));
      return;
    }
    k.for_range("k", first, end, step, [&](Expr kk) {
      const Expr v = at(sb, kk);
      if (extreme) {
        k.if_(k.call(take, {best, bk, v, kk}), [&] {
          k.assign(best, v);
          k.assign(bk, kk);
        });
      } else {
        k.assign(acc, A.step(k, acc, v));
      }
    });
  };
  auto srcs = [&](const std::vector<Expr>& offs) {
    return std::vector<Expr>(offs.begin(), offs.begin() + std::ptrdiff_t(ns));
  };
  const Expr n_out = k.let("n_out", kir::param_u32(ob));
  const Expr R = k.let("R", kir::param_u32(ib));
  const Expr zero = kir::lit(Type::u32, 0), one = kir::lit(Type::u32, 1);
  if (!p.group) {
    k.grid_loop("o", n_out, [&](Expr o) {
      const std::vector<Expr> offs = iter_offsets(k, ovars, o, p.ro, ob);
      if (extreme) {
        const Expr best = k.let("best", kir::lit(V, 0)), bk = k.let("bk", kEmpty());
        reduce_loop(srcs(offs), zero, R, one, best, bk, Expr());
        done(offs, Expr(), best, bk);
      } else {
        const Expr acc = k.let("acc", A.init);
        reduce_loop(srcs(offs), zero, R, one, Expr(), Expr(), acc);
        done(offs, Expr(), acc, Expr());
      }
    });
    return k;
  }
  const uint32_t L = p.group;
  const Expr lid = kir::local_id();
  // One workgroup's part: output o (offsets offs), elements [first, end) strided by the group.
  auto group_body = [&](const std::vector<Expr>& offs, Expr w, Expr first, Expr end) {
    if (extreme) {
      const kir::Shared s_v = k.shared("s_v", V, L), s_k = k.shared("s_k", Type::u32, L);
      const Expr best = k.let("best", kir::lit(V, 0)), bk = k.let("bk", kEmpty());
      reduce_loop(srcs(offs), first, end, kir::local_size(), best, bk, Expr());
      k.store(s_v, lid, best);
      k.store(s_k, lid, bk);
      k.barrier();
      k.for_(
          "h", kir::local_size() / 2, [](Expr h) { return h > 0; }, [](Expr h) { return h >> 1; },
          [&](Expr h) {
            const Expr c = k.call(take, {k.load(s_v, lid), k.load(s_k, lid), k.load(s_v, lid + h),
                                         k.load(s_k, lid + h)});
            k.if_(lid < h && c, [&] {
              k.store(s_v, lid, k.load(s_v, lid + h));
              k.store(s_k, lid, k.load(s_k, lid + h));
            });
            k.barrier();
          });
      k.if_(lid == 0, [&] { done(offs, w, k.load(s_v, zero), k.load(s_k, zero)); });
    } else {
      const kir::Shared s_a = k.shared("s_a", A.shared, L);
      const Expr acc = k.let("acc", A.init);
      reduce_loop(srcs(offs), first, end, kir::local_size(), Expr(), Expr(), acc);
      k.store(s_a, lid, logical ? select(acc, one, zero) : acc);
      k.barrier();
      k.for_(
          "h", kir::local_size() / 2, [](Expr h) { return h > 0; }, [](Expr h) { return h >> 1; },
          [&](Expr h) {
            k.if_(lid < h,
                  [&] { k.store(s_a, lid, A.comb(k.load(s_a, lid), k.load(s_a, lid + h))); });
            k.barrier();
          });
      k.if_(lid == 0, [&] {
        if (logical)
          done(offs, w, k.let("r", k.load(s_a, zero) != 0), Expr());
        else
          done(offs, w, k.load(s_a, zero), Expr());
      });
    }
    k.barrier();
  };
  if (p.split == 1) {  // a workgroup per (output o, chunk c) pair w; chunks of CH elements
    const Expr C = k.let("C", kir::param_u32(cw)), CH = k.let("CH", kir::param_u32(cw + 1));
    k.for_(
        "w", kir::group_id(), [&](Expr w) { return w < n_out * C; },
        [](Expr w) { return w + kir::num_groups(); },
        [&](Expr w) {
          const Expr o = k.let("o", w / C), k0 = k.let("k0", (w % C) * CH);
          const std::vector<Expr> offs = iter_offsets(k, ovars, o, p.ro, ob);
          const Expr k1 = k.let("k1", select(R - k0 > CH, k0 + CH, R));
          group_body(offs, w, k0 + lid, k1);
        });
  } else {
    k.for_(
        "o", kir::group_id(), [&](Expr o) { return o < n_out; },
        [](Expr o) { return o + kir::num_groups(); },
        [&](Expr o) { group_body(iter_offsets(k, ovars, o, p.ro, ob), Expr(), lid, R); });
  }
  return k;
}

// The split's second kernel: a thread per output combines its C partials in chunk order.
kir::Kernel make_final_kernel(const Plan& p, uint32_t ob, uint32_t cw) {
  kir::Kernel k(kernel_name(p), 256);
  const Bufs b = declare(k, p);
  const std::vector<std::string> ovars = outer_vars(p);
  const size_t ns = n_src(p);
  const Expr n_out = k.let("n_out", kir::param_u32(ob));
  const Expr C = k.let("C", kir::param_u32(cw));
  const Expr zero = kir::lit(Type::u32, 0), one = kir::lit(Type::u32, 1);
  const kir::Function take =
      is_extreme(p.op) ? take_function(k, p.src, p.op == ReduceOp::max) : kir::Function{};
  k.grid_loop("o", n_out, [&](Expr o) {
    const std::vector<Expr> offs = iter_offsets(k, ovars, o, p.ro, ob);
    const Expr db = offs[ns], ib = p.with_idx ? offs[ns + 1] : Expr();
    if (is_extreme(p.op)) {
      const Type V = vtype(p.src);
      const Expr best = k.let("best", kir::lit(V, 0)), bk = k.let("bk", kEmpty());
      k.for_range("c", zero, C, one, [&](Expr c) {
        const Expr v = k.let("v", red::vload(k, b.pv, p.src, o * C + c));
        const Expr kk = k.let("k", k.load(b.pk, o * C + c));
        k.if_(k.call(take, {best, bk, v, kk}), [&] {
          k.assign(best, v);
          k.assign(bk, kk);
        });
      });
      finish(k, p, b, db, ib, best, bk);
    } else if (is_logical(p.op)) {
      const bool any = p.op == ReduceOp::any;
      const Expr acc = k.let("acc", kir::lit_bool(!any));
      k.for_range("c", zero, C, one, [&](Expr c) {
        const Expr x = k.load(b.pv, o * C + c) != 0;
        k.assign(acc, any ? (acc || x) : (acc && x));
      });
      finish(k, p, b, db, ib, acc, Expr());
    } else {
      const bool sum = p.op == ReduceOp::sum;
      const Expr acc = k.let("acc", kir::lit(kir::compute_of(p.acc), sum ? 0 : 1));
      k.for_range("c", zero, C, one, [&](Expr c) {
        const Expr x = k.load(b.pv, o * C + c);
        k.assign(acc, sum ? acc + x : acc * x);
      });
      finish(k, p, b, db, ib, acc, Expr());
    }
  });
  return k;
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

// The single pass's workgroup size by default: a thread per output for short extents, a
// workgroup each for long ones (the tree needs a power of two); lavapipe ends any shader loop at
// 65535 iterations (also nested loops, which share its counter) and the result is garbage: past
// 32768 * 256 elements a workgroup of up to 1024 threads keeps each thread's loop under it (to
// 67M elements; docs/vulkan.md).
uint32_t default_group(int64_t R, const Caps& caps) {
  const uint32_t maxg = floor_pow2(std::min<uint32_t>(caps.max_workgroup_size, 256));
  if (R > int64_t(32768) * 256)
    return floor_pow2(std::min<uint32_t>(caps.max_workgroup_size, 1024));
  if (R >= 128 && maxg >= 32) return std::min<uint32_t>(R >= 1024 ? 256 : 64, maxg);
  return 0;
}

// What one reduction reads and writes: its sources (src, or a fused graph's outputs then
// inputs), each of `shape`, and dst (and idx) of the keepdim shape over `dims`.
struct Operands {
  Shape shape;
  std::vector<Tensor> srcs;
  Tensor dst, idx;
  std::vector<int64_t> dims;
};

// The launches of plan p (op, dtypes, graph filled in) over o: the variant by extent, the split
// past the loop budget.
Lowering lower_plan(Plan& p, const Operands& o, const char* name, Dialect d, const Caps& caps,
                    const ReduceVariant* v) {
  const Tensor& dst = o.dst;
  if (dst.numel() == 0) return {};
  const size_t rank = o.shape.size(), ns = o.srcs.size();
  std::vector<bool> reduced(rank, false);
  for (int64_t dd : o.dims) reduced[size_t(dd)] = true;
  // Outer: dst's shape (1 on reduced dims) over the sources, dst and idx; inner: the reduced
  // dims of the sources.
  std::vector<int64_t> osz(rank), isz(rank);
  std::vector<std::vector<int64_t>> ost(ns + (p.with_idx ? 2 : 1), std::vector<int64_t>(rank));
  std::vector<std::vector<int64_t>> ist(ns, std::vector<int64_t>(rank));
  for (size_t k = 0; k < rank; ++k) {
    osz[k] = reduced[k] ? 1 : o.shape[k];
    isz[k] = reduced[k] ? o.shape[k] : 1;
    for (size_t s = 0; s < ns; ++s) ost[s][k] = ist[s][k] = o.srcs[s].strides()[k];
    ost[ns][k] = dst.strides()[k];
    if (p.with_idx) ost[ns + 1][k] = o.idx.strides()[k];
  }
  std::vector<int64_t> offs;
  for (const Tensor& t : o.srcs) offs.push_back(t.offset());
  offs.push_back(dst.offset());
  if (p.with_idx) offs.push_back(o.idx.offset());
  const Iter outer = merged_iter(osz, offs, ost);
  const Iter inner = merged_iter(isz, std::vector<int64_t>(ns, 0), ist);
  p.ro = outer.rank();
  p.ri = inner.rank();
  p.contiguous = p.ri == 1;
  for (const auto& st : inner.strides) p.contiguous = p.contiguous && st[0] == 1;
  const int64_t R = inner.numel;
  const ReduceVariant rv = v ? *v : reduce_variants(dst.numel(), R, caps)[0];
  p.group = rv.group;
  Params params;
  const uint32_t ob = add_iter(params, outer, name);
  const uint32_t ib = add_iter(params, inner, name);
  if (p.graph) p.gword = graph_params(params, *p.graph, caps);
  std::vector<Binding> bind;
  for (const Tensor& t : o.srcs) bind.push_back({t});
  bind.push_back({dst});
  if (p.with_idx) bind.push_back({o.idx});
  Lowering l;
  // Loop iterations per invocation of the single pass: outputs per workgroup (thread) times the
  // strided loop over R plus the tree's log2(group) steps.
  const int64_t n_out = dst.numel();
  int64_t iters;
  // Each element costs 1 + element_loops iterations (lavapipe counts a called function's loops
  // against the same limit).
  const int64_t per = 1 + p.element_loops;
  if (p.group) {
    const int64_t g = std::min<int64_t>(n_out, caps.max_groups_x);
    iters = (n_out + g - 1) / g * ((R + p.group - 1) / p.group * per + log2_of(p.group) + 3);
  } else {
    const int64_t g = groups_1d(n_out, 256, caps);
    iters = (n_out + g * 256 - 1) / (g * 256) * (R * per + 2);
  }
  auto check_fits = [&](size_t buffers) {
    EMBER_CHECK(buffers <= caps.max_buffers, name, buffers, " buffers exceed the ",
                caps.max_buffers, " a kernel may bind on this device");
    EMBER_CHECK(params.words().size() * 4 <= kParamsBytes, name, "needs ",
                params.words().size() * 4, " bytes of params; at most ", kParamsBytes,
                " are supported");
  };
  if (iters > kLoopBudget || rv.split_steps) {
    // Split: chunks of kChunkSteps (or the variant's) strides of a workgroup of L (<= 256)
    // threads.
    Plan p1 = p;
    p1.split = 1;
    p1.group = floor_pow2(std::min<uint32_t>(caps.max_workgroup_size, 256));
    const int64_t max_steps = std::max<int64_t>(1, kChunkSteps / per);
    const int64_t steps = rv.split_steps ? std::min<int64_t>(rv.split_steps, max_steps) : max_steps;
    const int64_t CH = steps * p1.group;
    const int64_t C = (R + CH - 1) / CH;
    const uint32_t cw = params.u32(uint32_t(C));
    params.u32(uint32_t(CH));
    Plan p2 = p;
    p2.split = 2;
    p2.group = 0;
    const std::vector<BufferDecl> parts = partial_buffers(p, true);
    check_fits(ns + parts.size());
    auto k1 = cached_kernel(key_of(p1), d, caps, [&] { return make_kernel(p1, ob, ib, cw); });
    auto k2 = cached_kernel(key_of(p2), d, caps, [&] { return make_final_kernel(p2, ob, cw); });
    const int64_t pairs = n_out * C;
    for (const BufferDecl& b : parts) l.scratch_bytes.push_back(pairs * dtype_size(b.dtype));
    std::vector<Binding> part(l.scratch_bytes.size());
    for (size_t k = 0; k < part.size(); ++k) part[k].scratch = int(k);
    const std::vector<uint32_t> words = params.take();
    Launch first;
    first.kernel = k1;
    first.bindings.assign(bind.begin(), bind.begin() + std::ptrdiff_t(ns));
    first.bindings.insert(first.bindings.end(), part.begin(), part.end());
    first.params = words;
    first.groups = uint32_t(std::min<int64_t>(pairs, caps.max_groups_x));
    l.launches.push_back(std::move(first));
    // the final kernel reads the partials, not the sources
    bind.erase(bind.begin(), bind.begin() + std::ptrdiff_t(ns));
    bind.insert(bind.end(), part.begin(), part.end());
    l.launches.push_back(launch_1d(k2, std::move(bind), words, n_out, caps));
    return l;
  }
  check_fits(bind.size());
  auto kernel = cached_kernel(key_of(p), d, caps, [&] { return make_kernel(p, ob, ib, 0); });
  if (p.group) {
    Launch launch;
    launch.kernel = kernel;
    launch.bindings = std::move(bind);
    launch.params = params.take();
    launch.groups = uint32_t(std::min<int64_t>(n_out, caps.max_groups_x));
    l.launches.push_back(std::move(launch));
  } else {
    l.launches.push_back(launch_1d(kernel, std::move(bind), params.take(), n_out, caps));
  }
  return l;
}

}  // namespace

namespace {

// Whether statements contain a loop.
bool has_loop(const std::vector<kir::Stmt>& body) {
  for (const kir::Stmt& st : body)
    if (st.kind == kir::St::for_ || st.kind == kir::St::while_ || has_loop(st.body) ||
        has_loop(st.orelse))
      return true;
  return false;
}

// A bound on the loop iterations of one call of any helper function with loops (erf's f64
// series: 200 + 50; integer pow: 64).
constexpr int64_t kHelperLoops = 256;

}  // namespace

int64_t graph_element_loops(const ir::FusedGraph& g, const Caps& caps) {
  static std::mutex mu;
  static std::map<std::string, int64_t> known;  // by the graph's key and the caps' dtypes
  const std::string key = g.key() + (caps.f64 ? "d" : "") + (caps.f16 ? "h" : "");
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = known.find(key);
    if (it != known.end()) return it->second;
  }
  // Evaluate the nodes once in a scratch kernel and look for loops in the helpers it defines.
  kir::Kernel k("probe", 1);
  std::vector<kir::Buf> in;
  for (size_t i = 0; i < g.inputs.size(); ++i)
    in.push_back(k.buffer("in" + std::to_string(i), g.inputs[i].dtype(), false));
  Params params;
  const std::vector<uint32_t> word = graph_params(params, g, caps);
  graph_values(
      k, g, word,
      [&](int32_t n) {
        return k.load(in[size_t(g.nodes[size_t(n)].input)], kir::lit(Type::i32, 0));
      },
      caps);
  int64_t loops = 0;
  for (const auto& f : k.functions())
    if (has_loop(f.body)) loops += kHelperLoops;
  std::lock_guard<std::mutex> lock(mu);
  known[key] = loops;
  return loops;
}

std::vector<ReduceVariant> reduce_variants(int64_t outputs, int64_t reduced, const Caps& caps) {
  const uint32_t maxg = floor_pow2(std::min<uint32_t>(caps.max_workgroup_size, 256));
  auto group = [](uint32_t g) {
    return ReduceVariant{g ? "group" + std::to_string(g) : std::string("thread"), g, 0};
  };
  // Chunks of `steps` strides of a maxg-thread workgroup; at least 64 steps and at most 4,096
  // chunks per output (the final kernel loops over them), by the extent's class.
  int64_t cls = 1;
  while (cls < reduced) cls <<= 1;
  const uint32_t steps = uint32_t(std::max<int64_t>(64, cls / (int64_t(maxg) * 4096)));
  auto split = [&](uint32_t s) { return ReduceVariant{"split" + std::to_string(s), maxg, s}; };
  // Thresholds at powers of two (x > 2^k iff its class is): one list per autotune class.
  const bool can_split = maxg >= 32 && outputs <= 256 && reduced > 16384;
  // A few long outputs: a workgroup each would leave most of the device idle.
  const bool few = can_split && outputs <= 64 && reduced > 32768;
  std::vector<ReduceVariant> vs{few ? split(steps) : group(default_group(reduced, caps))};
  auto add = [&](const ReduceVariant& v) {
    for (const ReduceVariant& x : vs)
      if (x.name == v.name) return;
    vs.push_back(v);
  };
  if (reduced <= int64_t(32768) * 256) {  // else only the group that stays in lavapipe's limit
    if (reduced <= 8192) add(group(0));   // longer loops per thread are never the fastest
    if (reduced > 8)
      for (uint32_t g : {32u, 64u, 128u, 256u})
        if (g <= maxg) add(group(g));
  }
  if (can_split) {
    add(split(steps));
    add(split(steps * 8));
  }
  return vs;
}

Lowering lower_reduce(const ir::Reduce& op, Dialect d, const Caps& caps, const ReduceVariant* v) {
  const char* name = op_name(op.op);
  Plan p;
  p.op = op.op;
  p.src = op.src.dtype();
  p.dst = op.dst.dtype();
  p.with_idx = op.indices.defined();
  p.acc = acc_dtype(p.src, caps);
  red::check_dtypes(name, {p.src, p.dst}, caps);
  if (p.with_idx) check_dtype(name, DType::i64, caps);
  return lower_plan(p, {op.src.shape(), {op.src}, op.dst, op.indices, op.dims}, name, d, caps, v);
}

Lowering lower_graph_reduce(const ir::FusedGraph& g, Dialect d, const Caps& caps,
                            const ReduceVariant* v) {
  constexpr const char* kName = "fused reduction";
  EMBER_CHECK(g.reductions.size() == 1, kName, g.reductions.size(),
              " reductions in one graph; one is supported");
  check_graph_nodes(g, caps);
  const ir::FusedGraph::Reduction& r = g.reductions[0];
  EMBER_CHECK(r.node >= 0 && size_t(r.node) < g.nodes.size(), kName, "reduces node ", r.node,
              " of ", g.nodes.size());
  EMBER_CHECK(r.op == ReduceOp::sum || r.op == ReduceOp::prod || is_extreme(r.op), kName,
              op_name(r.op), " is not foldable");
  Plan p;
  p.op = r.op;
  p.src = g.nodes[size_t(r.node)].dtype;
  p.dst = r.dst.dtype();
  EMBER_CHECK(p.src == p.dst && p.src != DType::b8, kName, "a ", dtype_name(p.dst), " result of a ",
              dtype_name(p.src), " node");
  p.with_idx = false;
  p.acc = acc_dtype(p.src, caps);
  p.graph = &g;
  p.caps = &caps;
  p.element_loops = graph_element_loops(g, caps);
  Shape kept = g.shape;
  for (int64_t dd : r.dims) {
    EMBER_CHECK(dd >= 0 && size_t(dd) < kept.size(), kName, "dim ", dd, " of a rank ", kept.size(),
                " graph");
    kept[size_t(dd)] = 1;
  }
  EMBER_CHECK(r.dst.shape() == kept, kName, "a result of another shape than the keepdim one");
  Operands o{g.shape, {}, r.dst, Tensor(), r.dims};
  for (const auto& out : g.outputs) o.srcs.push_back(out.dst);
  for (const Tensor& t : g.inputs) o.srcs.push_back(t);
  return lower_plan(p, o, kName, d, caps, v);
}

}  // namespace ember::codegen
