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
#include <functional>

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

// A kernel's buffers (the unused ones stay invalid).
struct Bufs {
  kir::Buf src, dst, idx, pv, pk;
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
  if (p.split != 2) b.src = k.buffer("src", p.src, false);
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
  kir::Kernel k(key_of(p), p.group ? p.group : 256);
  const Bufs b = declare(k, p);
  const bool extreme = is_extreme(p.op), logical = is_logical(p.op);
  // max/min order elements as vtype (bool as u32); the others read the compute type.
  const Type V = extreme ? vtype(p.src) : kir::compute_of(p.src);
  const kir::Function take =
      extreme ? take_function(k, p.src, p.op == ReduceOp::max) : kir::Function{};
  const Acc A = extreme ? Acc{} : make_acc(p);
  const std::vector<std::string> ovars = p.with_idx ? std::vector<std::string>{"sb", "db", "ib"}
                                                    : std::vector<std::string>{"sb", "db"};
  // Stores the final accumulator `a` (and index `ka`): into dst, or the split's partial w.
  auto done = [&](const std::vector<Expr>& o, Expr w, Expr a, Expr ka) {
    if (p.split != 1) return finish(k, p, b, o[1], p.with_idx ? o[2] : Expr(), a, ka);
    if (extreme) {
      k.store(b.pv, w, red::vstore(k, p.src, p.src, a));
      k.store(b.pk, w, ka);
    } else if (logical) {
      k.store(b.pv, w, select(a, kir::lit(Type::u32, 1), kir::lit(Type::u32, 0)));
    } else {
      k.store(b.pv, w, a);
    }
  };
  // The loop over reduced elements [k0 + first, k1) step `step` updating best/bk or acc.
  auto reduce_loop = [&](Expr sb, Expr first, Expr end, Expr step, Expr best, Expr bk, Expr acc) {
    k.for_range("k", first, end, step, [&](Expr kk) {
      const Expr so = iter_offsets(k, {"so"}, kk, p.ri, ib)[0];
      const Expr v =
          k.let("v", extreme ? red::vload(k, b.src, p.src, sb + so) : k.load(b.src, sb + so));
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
  const Expr n_out = k.let("n_out", kir::param_u32(ob));
  const Expr R = k.let("R", kir::param_u32(ib));
  const Expr zero = kir::lit(Type::u32, 0), one = kir::lit(Type::u32, 1);
  if (!p.group) {
    k.grid_loop("o", n_out, [&](Expr o) {
      const std::vector<Expr> offs = iter_offsets(k, ovars, o, p.ro, ob);
      if (extreme) {
        const Expr best = k.let("best", kir::lit(V, 0)), bk = k.let("bk", kEmpty());
        reduce_loop(offs[0], zero, R, one, best, bk, Expr());
        done(offs, Expr(), best, bk);
      } else {
        const Expr acc = k.let("acc", A.init);
        reduce_loop(offs[0], zero, R, one, Expr(), Expr(), acc);
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
      reduce_loop(offs[0], first, end, kir::local_size(), best, bk, Expr());
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
      reduce_loop(offs[0], first, end, kir::local_size(), Expr(), Expr(), acc);
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
  kir::Kernel k(key_of(p), 256);
  const Bufs b = declare(k, p);
  const std::vector<std::string> ovars = p.with_idx ? std::vector<std::string>{"sb", "db", "ib"}
                                                    : std::vector<std::string>{"sb", "db"};
  const Expr n_out = k.let("n_out", kir::param_u32(ob));
  const Expr C = k.let("C", kir::param_u32(cw));
  const Expr zero = kir::lit(Type::u32, 0), one = kir::lit(Type::u32, 1);
  const kir::Function take =
      is_extreme(p.op) ? take_function(k, p.src, p.op == ReduceOp::max) : kir::Function{};
  k.grid_loop("o", n_out, [&](Expr o) {
    const std::vector<Expr> offs = iter_offsets(k, ovars, o, p.ro, ob);
    const Expr db = offs[1], ib = p.with_idx ? offs[2] : Expr();
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
    auto k1 = cached_kernel(key_of(p1), d, caps, [&] { return make_kernel(p1, ob, ib, cw); });
    auto k2 = cached_kernel(key_of(p2), d, caps, [&] { return make_final_kernel(p2, ob, cw); });
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
  auto kernel = cached_kernel(key_of(p), d, caps, [&] { return make_kernel(p, ob, ib, 0); });
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
