// The cpu backend's fused element-wise graphs (ir/graph.h), evaluated tile by tile: the graph's
// iteration space (its dims merged over every input and output, walked in the first output's
// memory order) is cut into tiles of p.tile elements (autotuned), tiles run in parallel on the
// thread pool, and per tile each load is gathered into a contiguous buffer (or read in place when
// it is contiguous along the tile), each node is evaluated into a tile buffer with the elementwise
// row kernels (kernels.h: unary_row / binary_row, the vectorised functors of elementwise.cpp), and
// each output is stored (scattered when strided). Memory is read once per input and written once
// per output.
//
// A graph ending in a reduction (FusedGraph::reductions) over any dims walks the graph with the
// kept dims outer and the reduced dims inner (each in the graph's order: a reduced row is a run
// of consecutive elements of the walk) in pieces of whole rows (or, for rows longer than kChunk
// elements, of fixed chunks of a row) across the thread pool; each tile's value of the reduced node
// is folded into its row's (chunk's) accumulator, and the chunks are combined in order at the end,
// so results do not depend on the thread count. A reduction over leading dims only (a bias
// gradient's sum over [N, L] of [N, L, C]) walks in the graph's order instead, each tile a
// contiguous run of the kept columns folded element by element into per-column accumulators
// (Folder's columns). Accumulation is in double, as the eager kernels.
//
// Values in tile buffers are in their compute dtype: f32 for f32, f16 and bf16 (a half node is
// rounded to its dtype after it is computed, as the eager f16/bf16 kernels round each op's
// result), the dtype itself otherwise (bool as bool). Nodes without a cpu functor run the
// reference kernel (ref/kernels.h) on the tile buffers, which the eager cpu backend runs for them
// too. exp, sigmoid and silu on f32/f16/bf16 are the one case where the eager kernel's formula
// depends on the op (the AVX2 exp256 on contiguous runs, the scalar exp_f32 on strided ones, the
// reference's std::exp under EMBER_CPU_KERNELS=ref): each such node takes the variant its eager
// op would have run, from the strides its eager operand and result have. tanh, erf, gelu and
// gelu_tanh run simd_math.h's lane templates, whose bits do not depend on the clone (std::tanh,
// std::erf under EMBER_CPU_KERNELS=ref).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/autotune_util.h"
#include "backends/cpu/convert.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/fused_fold.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/thread_pool.h"
#include "backends/ref/dispatch.h"
#include "backends/ref/kernels.h"
#include "core/env.h"
#include "core/merge_dims.h"
#include "ir/op_traits.h"
#include "tensor/internal.h"

namespace ember::cpu {

CpuBackend::CpuBackend() { enable_fusion(); }

// Every Copy, Fill, Unary, Binary and Where on host tensors: the executor runs any dtype (the
// base class keeps integer division, which throws on zero, out of the stream).
bool CpuBackend::fusible(const ir::Op&) const { return true; }

namespace {

using fold::Acc;
using fold::column_reduction;
using fold::combine;
using fold::foldable;
using fold::Folder;
using fold::identity;
using fold::kChunk;
using Kind = ir::FusedGraph::Kind;
using ir::UnaryOp;

// Elements per tile: autotuned per shape class (execute_graph) from these candidates, the first
// the default; the results do not depend on it (tiles only cut the element-wise loop).
constexpr int64_t kDefaultTile = 4096;
constexpr int64_t kMaxTile = 16384;
// Graphs smaller than this run with the default tile, untimed (the tile size cannot matter much).
constexpr int64_t kTuneMinElements = int64_t(1) << 20;
constexpr size_t kAlign = 64;

bool is_half(DType t) { return t == DType::f16 || t == DType::bf16; }
DType compute_dtype(DType t) { return is_half(t) ? DType::f32 : t; }

// EMBER_CPU_KERNELS=ref (cpu_backend.cpp): the eager ops run the reference kernels only.
bool ref_kernels_only() {
  static const bool v = env_choice("EMBER_CPU_KERNELS", {"own", "ref"}, "own") == "ref";
  return v;
}

bool exp_family(UnaryOp op) {
  return op == UnaryOp::exp || op == UnaryOp::sigmoid || op == UnaryOp::silu;
}
// Ops whose cpu f32 functor is an approximation of the reference's libm call (exp_family, and
// the lane templates of tanh, erf, log, log1p and gelu): under EMBER_CPU_KERNELS=ref a fused
// node runs the reference's, as the eager op does.
bool approximated(UnaryOp op) {
  return exp_family(op) || op == UnaryOp::tanh || op == UnaryOp::erf || op == UnaryOp::log ||
         op == UnaryOp::log1p || op == UnaryOp::gelu || op == UnaryOp::gelu_tanh;
}

// How a node is computed.
enum class How : uint8_t {
  row,         // unary_row / binary_row (vectorised clone)
  row_scalar,  // unary_row, baseline clone (exp family on a strided eager run)
  ref,         // the reference kernel on the tile buffers
  native,      // load, constant, where, cast: this file's loops
};

struct NodePlan {
  int32_t slot = -1;      // tile buffer (loads: used when gathered)
  int32_t constant = -1;  // constant: its buffer index
  How how = How::native;
  bool round = false;       // f16/bf16 result: round the f32 value to the dtype
  int32_t direct_out = -1;  // an output the node may be computed straight into (see make_plan)
};

// The operand offsets and length of one contiguous run (of the innermost merged dim) in a tile.
struct Segment {
  int64_t len;
  int64_t pos;  // position in the tile
};

struct Plan {
  const ir::FusedGraph* g = nullptr;
  std::vector<NodePlan> np;
  int32_t nslots = 0;
  int32_t nconst = 0;
  std::vector<int32_t> raw_slot;  // per output of a load: the buffer of its bits
  // Merged iteration over operands: inputs 0..ni-1, then outputs.
  size_t nops = 0;
  int64_t rank = 0;
  int64_t size[kMaxMergedDims];
  std::vector<int64_t> stride;  // stride[k * kMaxMergedDims + d]
  std::vector<char*> base;      // element 0 of each operand
  std::vector<int64_t> esize;   // element size of each operand
  // Per operand: row-major and unit-stride over the whole merged walk, so every tile (a range of
  // the walk) is one contiguous run of it, however many segments the tile has.
  std::vector<char> dense;
  int64_t total = 0;
  int64_t tile = kDefaultTile;  // elements per tile
  Folder* folder = nullptr;     // the graph's reduction, if any
};

// The strides an eager op's operand or result had: the graph's inputs and outputs as they are,
// intermediates in the layout the frontend gives an element-wise result (channels-last when a
// tensor of the graph is, else contiguous).
struct EagerLayout {
  const ir::FusedGraph& g;
  Strides intermediate;
  explicit EagerLayout(const ir::FusedGraph& graph) : g(graph) {
    MemoryFormat f = MemoryFormat::contiguous;
    auto look = [&](const Tensor& t) {
      if (f == MemoryFormat::contiguous && (t.dim() == 4 || t.dim() == 5)) f = t.memory_format();
    };
    for (const auto& o : g.outputs) look(o.dst);
    for (const auto& t : g.inputs) look(t);
    intermediate = detail::format_strides(g.shape, f);
  }
  const Strides& of(int32_t node) const {
    for (const auto& o : g.outputs)
      if (o.node == node) return o.dst.strides();
    const auto& n = g.nodes[size_t(node)];
    if (n.kind == Kind::load) return g.inputs[size_t(n.input)].strides();
    return intermediate;
  }
};

// Whether the eager cpu kernel's walk (parallel_rows: dims in the result's memory order, merged)
// has unit inner strides for both the result and the operand: its vectorised branch.
bool eager_contiguous_run(const Shape& shape, const Strides& dst, const Strides& src) {
  const MergedDims<2> m = merge_in_memory_order<2>(shape, {&dst, &src});
  if (m.rank == 0) return false;
  return m.stride[0][m.rank - 1] == 1 && m.stride[1][m.rank - 1] == 1;
}

// Whether no two elements of t share memory (tiles run in parallel: an output that overlaps
// itself, as a window view, must be written element by element in order, so it is declined).
bool non_overlapping(const Tensor& t) {
  std::vector<std::pair<int64_t, int64_t>> d;  // |stride|, size
  for (size_t i = 0; i < t.shape().size(); ++i)
    if (t.shape()[i] > 1) d.push_back({std::abs(t.strides()[i]), t.shape()[i]});
  std::sort(d.begin(), d.end());
  int64_t extent = 0;  // span of the dims so far, in elements, minus one
  for (const auto& [stride, size] : d) {
    if (stride <= extent) return false;
    extent += (size - 1) * stride;
  }
  return true;
}

// Plans the graph; false when the executor cannot run it.
bool make_plan(const ir::FusedGraph& g, Plan& p) {
  p.g = &g;
  const size_t nn = g.nodes.size();
  if (g.shape.size() > kMaxMergedDims) return false;
  p.np.assign(nn, {});
  p.total = numel_of(g.shape);
  const bool ref_only = ref_kernels_only();
  EagerLayout layout(g);
  // Last use of each node (outputs: the end of the tile).
  std::vector<size_t> last(nn, 0);
  for (size_t i = 0; i < nn; ++i) {
    const auto& n = g.nodes[i];
    for (int32_t o : {n.a, n.b, n.c}) {
      if (o < 0) continue;
      if (size_t(o) >= i) return false;
      last[size_t(o)] = i;
    }
  }
  for (const auto& o : g.outputs) {
    if (o.node < 0 || size_t(o.node) >= nn) return false;
    if (o.dst.dtype() != g.nodes[size_t(o.node)].dtype || o.dst.shape() != g.shape) return false;
    if (o.dst.device() != Device::cpu() || !non_overlapping(o.dst)) return false;
    last[size_t(o.node)] = nn;
  }
  for (const auto& t : g.inputs)
    if (t.shape() != g.shape || t.device() != Device::cpu()) return false;
  if (g.reductions.size() > 1) return false;
  for (const auto& r : g.reductions) {
    if (r.node < 0 || size_t(r.node) >= nn) return false;
    if (!foldable(r.op, g.nodes[size_t(r.node)].dtype, g.shape, r.dims, r.dst)) return false;
    const Storage* ds = r.dst.impl()->storage.get();
    for (const auto& t : g.inputs)
      if (t.impl()->storage.get() == ds) return false;
    for (const auto& o : g.outputs)
      if (o.dst.impl()->storage.get() == ds) return false;
    last[size_t(r.node)] = nn;  // read at the end of each tile
  }
  std::vector<int32_t> free_slots;
  for (size_t i = 0; i < nn; ++i) {
    const auto& n = g.nodes[i];
    NodePlan& q = p.np[i];
    auto operand_dtype = [&](int32_t o) { return g.nodes[size_t(o)].dtype; };
    switch (n.kind) {
      case Kind::load:
        if (n.input < 0 || size_t(n.input) >= g.inputs.size()) return false;
        if (g.inputs[size_t(n.input)].dtype() != n.dtype) return false;
        break;
      case Kind::constant:
        q.constant = p.nconst++;
        break;
      case Kind::unary: {
        if (n.a < 0) return false;
        const DType st = operand_dtype(n.a);
        const bool pred = ir::traits(n.unary).predicate;
        if (!pred && st != n.dtype) return false;
        if (pred && n.dtype != DType::b8) return false;
        q.round = !pred && is_half(n.dtype);
        q.how = How::row;
        if (approximated(n.unary) && compute_dtype(st) == DType::f32) {
          if (ref_only)
            q.how = How::ref;
          else if (exp_family(n.unary) && st == DType::f32 &&
                   !eager_contiguous_run(g.shape, layout.of(int32_t(i)), layout.of(n.a)))
            q.how = How::row_scalar;
        }
        break;
      }
      case Kind::binary: {
        if (n.a < 0 || n.b < 0 || operand_dtype(n.a) != operand_dtype(n.b)) return false;
        const bool pred = ir::traits(n.binary).predicate;
        if (n.dtype != (pred ? DType::b8 : operand_dtype(n.a))) return false;
        q.round = !pred && is_half(n.dtype);
        q.how = How::row;
        break;
      }
      case Kind::where:
        if (n.a < 0 || n.b < 0 || n.c < 0 || operand_dtype(n.a) != DType::b8 ||
            operand_dtype(n.b) != n.dtype || operand_dtype(n.c) != n.dtype)
          return false;
        break;
      case Kind::cast:
        if (n.a < 0) return false;
        q.round = is_half(n.dtype);
        break;
      default:
        return false;
    }
    // A buffer for the node's value (never one of its operands': kernels do not run in place).
    if (n.kind != Kind::constant) {
      if (free_slots.empty()) {
        q.slot = p.nslots++;
      } else {
        q.slot = free_slots.back();
        free_slots.pop_back();
      }
    }
    for (int32_t o : {n.a, n.b, n.c})
      if (o >= 0 && last[size_t(o)] == i && p.np[size_t(o)].slot >= 0 &&
          std::find(free_slots.begin(), free_slots.end(), p.np[size_t(o)].slot) ==
              free_slots.end()) {
        // Operand o dies here (an operand used twice by this node is freed once).
        free_slots.push_back(p.np[size_t(o)].slot);
      }
    if (last[i] == 0 && g.nodes[i].kind != Kind::constant) {
      // Never used (a node nobody reads): its buffer is free after it.
      bool is_out = false;
      for (const auto& o : g.outputs) is_out = is_out || o.node == int32_t(i);
      for (const auto& rd : g.reductions) is_out = is_out || rd.node == int32_t(i);
      if (!is_out) free_slots.push_back(q.slot);
    }
  }
  // A computed node of a non-half output is written straight into the output's memory when a
  // tile is one contiguous run of it, unless the output shares storage with an input (a load of
  // that input later in the node order would read the new values).
  for (size_t o = 0; o < g.outputs.size(); ++o) {
    const int32_t node = g.outputs[o].node;
    const auto& n = g.nodes[size_t(node)];
    if (n.kind == Kind::load || n.kind == Kind::constant || is_half(n.dtype)) continue;
    if (p.np[size_t(node)].direct_out >= 0) continue;
    bool alias = false;
    for (const auto& t : g.inputs)
      alias = alias || t.impl()->storage == g.outputs[o].dst.impl()->storage;
    if (!alias) p.np[size_t(node)].direct_out = int32_t(o);
  }
  p.raw_slot.assign(g.outputs.size(), -1);
  for (size_t o = 0; o < g.outputs.size(); ++o)
    if (g.nodes[size_t(g.outputs[o].node)].kind == Kind::load) p.raw_slot[o] = p.nslots++;
  // The merged iteration, in the first output's memory order (as parallel_rows).
  p.nops = g.inputs.size() + g.outputs.size();
  std::vector<const Strides*> st;
  for (const auto& t : g.inputs) st.push_back(&t.strides());
  for (const auto& o : g.outputs) st.push_back(&o.dst.strides());
  for (const auto& t : g.inputs) {
    p.base.push_back(static_cast<char*>(t.impl()->storage->data()) +
                     t.offset() * int64_t(t.element_size()));
    p.esize.push_back(int64_t(t.element_size()));
  }
  for (const auto& o : g.outputs) {
    p.base.push_back(static_cast<char*>(o.dst.impl()->storage->data()) +
                     o.dst.offset() * int64_t(o.dst.element_size()));
    p.esize.push_back(int64_t(o.dst.element_size()));
  }
  size_t order[kMaxMergedDims];
  size_t len = 0;
  // A reduction walks the kept dims, then the reduced ones (each in the graph's order): element
  // i of the walk is in reduced row i / len, rows in the keepdim dst's row-major order.
  // A column reduction (column_reduction) walks the graph's own order: reduced dims, then kept.
  bool by_memory = !g.outputs.empty() && g.reductions.empty();
  const bool by_rows = !g.reductions.empty() && !column_reduction(g);
  for (int pass = 0; pass < (by_rows ? 2 : 1); ++pass)
    for (size_t d = 0; d < g.shape.size(); ++d) {
      if (g.shape[d] == 1) continue;
      if (by_rows) {
        const auto& dims = g.reductions[0].dims;
        const bool red = std::find(dims.begin(), dims.end(), int64_t(d)) != dims.end();
        if (red != (pass == 1)) continue;
      }
      order[len++] = d;
      by_memory = by_memory && (*st[g.inputs.size()])[d] > 0;
    }
  if (by_memory) {
    sort_dims_by_stride(order, len, *st[g.inputs.size()]);
  }
  p.stride.assign(std::max<size_t>(p.nops, 1) * kMaxMergedDims, 0);
  p.rank = int64_t(merge_dims(g.shape, st.data(), p.nops, p.size, p.stride.data(), order, len));
  if (p.rank == 0) {  // a single element
    p.rank = 1;
    p.size[0] = 1;
    for (size_t k = 0; k < p.nops; ++k) p.stride[k * kMaxMergedDims] = 0;
  }
  p.dense.assign(p.nops, 0);
  for (size_t k = 0; k < p.nops; ++k) {
    int64_t want = 1;
    bool dense = true;
    for (int64_t d = p.rank - 1; d >= 0 && dense; --d) {
      dense = p.size[d] == 1 || p.stride[k * kMaxMergedDims + size_t(d)] == want;
      want *= p.size[d];
    }
    p.dense[k] = dense;
  }
  return true;
}

// ---- typed loops on tile buffers ----

template <typename U>
void strided_copy(U* d, int64_t sd, const U* s, int64_t ss, int64_t n) {
  if (sd == 1 && ss == 1) {
    std::memcpy(d, s, size_t(n) * sizeof(U));
    return;
  }
  if (sd == 1 && ss == 0) {  // a broadcast operand
    std::fill_n(d, n, *s);
    return;
  }
  for (int64_t i = 0; i < n; ++i) d[i * sd] = s[i * ss];
}

// Copies n elements of `esize` bytes.
void copy_elems(void* d, int64_t sd, const void* s, int64_t ss, int64_t n, int64_t esize) {
  switch (esize) {
    case 1:
      strided_copy(static_cast<uint8_t*>(d), sd, static_cast<const uint8_t*>(s), ss, n);
      break;
    case 2:
      strided_copy(static_cast<uint16_t*>(d), sd, static_cast<const uint16_t*>(s), ss, n);
      break;
    case 4:
      strided_copy(static_cast<uint32_t*>(d), sd, static_cast<const uint32_t*>(s), ss, n);
      break;
    default:
      strided_copy(static_cast<uint64_t*>(d), sd, static_cast<const uint64_t*>(s), ss, n);
      break;
  }
}

template <typename U>
void select_loop(U* d, const bool* c, const U* a, const U* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = c[i] ? a[i] : b[i];
}

void where_elems(void* d, const bool* c, const void* a, const void* b, int64_t n, int64_t esize) {
  switch (esize) {
    case 1:
      select_loop(static_cast<uint8_t*>(d), c, static_cast<const uint8_t*>(a),
                  static_cast<const uint8_t*>(b), n);
      break;
    case 2:
      select_loop(static_cast<uint16_t*>(d), c, static_cast<const uint16_t*>(a),
                  static_cast<const uint16_t*>(b), n);
      break;
    case 4:
      select_loop(static_cast<uint32_t*>(d), c, static_cast<const uint32_t*>(a),
                  static_cast<const uint32_t*>(b), n);
      break;
    default:
      select_loop(static_cast<uint64_t*>(d), c, static_cast<const uint64_t*>(a),
                  static_cast<const uint64_t*>(b), n);
      break;
  }
}

// d = scalar_cast(s) between compute dtypes (a half's f32 value casts as the half does).
void cast_elems(void* d, DType dt, const void* s, DType st, int64_t n) {
  dispatch_dtype(st, [&](auto stag) {
    using S = decltype(stag);
    dispatch_dtype(dt, [&](auto dtag) {
      using D = decltype(dtag);
      if constexpr (!is_half_v<S> && !is_half_v<D>) {
        const S* sp = static_cast<const S*>(s);
        D* dp = static_cast<D*>(d);
        for (int64_t i = 0; i < n; ++i) dp[i] = scalar_cast<D>(sp[i]);
      }
    });
  });
}

// The value of a Fill of `dtype` (as fill does), in its compute dtype, repeated n times.
void fill_constant(void* d, DType dtype, const Scalar& value, int64_t n) {
  dispatch_dtype(dtype, [&](auto tag) {
    using D = decltype(tag);
    const D v =
        value.is_float() ? scalar_cast<D>(value.to_double()) : scalar_cast<D>(value.to_int());
    using C = compute_t<D>;
    const C c = C(v);
    C* p = static_cast<C*>(d);
    for (int64_t i = 0; i < n; ++i) p[i] = c;
  });
}

// Rounds n f32 values to f16/bf16 and back, in place.
void round_half(DType t, float* f, uint16_t* tmp, int64_t n) {
  f32_to_half(t, tmp, f, n);
  half_to_f32(t, f, tmp, n);
}

// Host tensors over tile buffers, for the reference kernels (distinct storages, so no kernel sees
// an alias). The storages are the backend's (a 0-byte allocation each, given back at the end).
class Wrappers {
 public:
  explicit Wrappers(Backend* b) : backend_(b) {}
  Tensor wrap(int k, const void* p, DType t, int64_t n) {
    if (!st_[k]) {
      auto* s = new Storage(backend_, Device::cpu(), 0);
      void* own = s->data();
      st_[k] = std::shared_ptr<Storage>(s, [own](Storage* x) {
        x->exchange_data(own);
        x->nbytes = 0;
        delete x;
      });
    }
    st_[k]->exchange_data(const_cast<void*>(p));
    st_[k]->nbytes = n * int64_t(dtype_size(t));
    auto impl = std::make_shared<TensorImpl>();
    impl->storage = st_[k];
    impl->shape = {n};
    impl->strides = {1};
    impl->dtype = t;
    return Tensor(std::move(impl));
  }

 private:
  Backend* backend_;
  std::shared_ptr<Storage> st_[4];
};

// One thread's scratch: tile buffers, constants, segments.
struct Scratch {
  std::unique_ptr<unsigned char[]> mem;
  size_t bytes = 0;
  unsigned char* get(size_t n) {
    if (n + kAlign > bytes) {
      mem.reset(new unsigned char[n + kAlign]);
      bytes = n + kAlign;
    }
    auto a = reinterpret_cast<uintptr_t>(mem.get());
    return reinterpret_cast<unsigned char*>((a + kAlign - 1) / kAlign * kAlign);
  }
};

// Runs elements [range(k).first, range(k).second) of the iteration for k in [0, count), each in
// tiles of p.tile elements, with one set-up (scratch, constants) for all of them.
template <typename Ranges>
void run_ranges(const Plan& p, Backend* backend, int64_t count, const Ranges& range) {
  const ir::FusedGraph& g = *p.g;
  const size_t nn = g.nodes.size();
  const size_t ni = g.inputs.size();
  const int64_t r = p.rank;
  const int64_t kTile = p.tile;
  const int64_t slot_bytes = kTile * 8;
  // Layout of the scratch: slots, constants, a u16 tile, segments + offsets.
  const size_t seg_cap = size_t(kTile);  // a tile has at most kTile runs
  const size_t bytes = size_t(p.nslots + p.nconst) * size_t(slot_bytes) + size_t(kTile) * 2 +
                       seg_cap * sizeof(Segment) + seg_cap * p.nops * sizeof(int64_t) + 4 * kAlign;
  thread_local Scratch scratch;
  unsigned char* mem = scratch.get(bytes);
  auto slot = [&](int32_t s) { return mem + size_t(s) * size_t(slot_bytes); };
  unsigned char* cmem = mem + size_t(p.nslots) * size_t(slot_bytes);
  auto* h16 = reinterpret_cast<uint16_t*>(cmem + size_t(p.nconst) * size_t(slot_bytes));
  auto* segs = reinterpret_cast<Segment*>(h16 + kTile);
  auto* offs = reinterpret_cast<int64_t*>(segs + seg_cap);
  for (size_t i = 0; i < nn; ++i)
    if (g.nodes[i].kind == Kind::constant)
      fill_constant(cmem + size_t(p.np[i].constant) * size_t(slot_bytes), g.nodes[i].dtype,
                    g.nodes[i].value, kTile);
  std::unique_ptr<Wrappers> wr;
  std::vector<const void*> val(nn, nullptr);
  const int64_t* sz = p.size;
  auto st = [&](size_t k, int64_t d) { return p.stride[k * kMaxMergedDims + size_t(d)]; };

  std::vector<char> stored(g.outputs.size());
  for (int64_t k = 0; k < count; ++k) {
    const auto [eb, ee] = range(k);
    for (int64_t b = eb; b < ee; b += kTile) {
      std::fill(stored.begin(), stored.end(), false);
      const int64_t m = std::min(kTile, ee - b);
      // The tile's runs of the inner merged dim: the offsets of each run's first element.
      int64_t idx[kMaxMergedDims];
      int64_t* cur = offs;  // run 0's offsets; each next run starts from a copy of the last one's
      for (size_t k = 0; k < p.nops; ++k) cur[k] = 0;
      for (int64_t d = r - 1, rem = b; d >= 0; --d) {
        idx[d] = rem % sz[d];
        rem /= sz[d];
        for (size_t k = 0; k < p.nops; ++k) cur[k] += idx[d] * st(k, d);
      }
      int64_t nseg = 0;
      for (int64_t left = m, pos = 0;;) {
        const int64_t n = std::min(sz[r - 1] - idx[r - 1], left);
        segs[nseg++] = {n, pos};
        left -= n;
        pos += n;
        if (left == 0) break;
        // The next row: rewind the inner dim and carry into the outer dims.
        int64_t* next = cur + p.nops;
        for (size_t k = 0; k < p.nops; ++k) next[k] = cur[k] - idx[r - 1] * st(k, r - 1);
        cur = next;
        idx[r - 1] = 0;
        for (int64_t d = r - 2; d >= 0; --d) {
          ++idx[d];
          for (size_t k = 0; k < p.nops; ++k) cur[k] += st(k, d);
          if (idx[d] < sz[d]) break;
          for (size_t k = 0; k < p.nops; ++k) cur[k] -= st(k, d) * sz[d];
          idx[d] = 0;
        }
      }
      auto seg_off = [&](int64_t s, size_t k) { return offs[size_t(s) * p.nops + k]; };

      // Evaluate the nodes.
      for (size_t i = 0; i < nn; ++i) {
        const auto& n = g.nodes[i];
        const NodePlan& q = p.np[i];
        void* out = q.slot >= 0 ? slot(q.slot) : nullptr;
        if (q.direct_out >= 0) {
          const size_t k = ni + size_t(q.direct_out);
          if ((nseg == 1 && st(k, r - 1) == 1) || p.dense[k]) {
            out = p.base[k] + seg_off(0, k) * p.esize[k];
            stored[size_t(q.direct_out)] = true;
          }
        }
        switch (n.kind) {
          case Kind::load: {
            const size_t k = size_t(n.input);
            const int64_t es = p.esize[k];
            const int64_t is = st(k, r - 1);
            if (((nseg == 1 && is == 1) || p.dense[k]) && !is_half(n.dtype)) {
              val[i] = p.base[k] + seg_off(0, k) * es;
              break;
            }
            for (int64_t s = 0; s < nseg; ++s) {
              const char* src = p.base[k] + seg_off(s, k) * es;
              const int64_t len = segs[s].len, at = segs[s].pos;
              if (is_half(n.dtype)) {
                const uint16_t* h = reinterpret_cast<const uint16_t*>(src);
                if (is != 1) {
                  strided_copy(h16 + at, 1, h, is, len);
                  h = h16 + at;
                }
                half_to_f32(n.dtype, reinterpret_cast<float*>(out) + at, h, len);
              } else {
                copy_elems(static_cast<char*>(out) + at * es, 1, src, is, len, es);
              }
            }
            val[i] = out;
            break;
          }
          case Kind::constant:
            val[i] = cmem + size_t(q.constant) * size_t(slot_bytes);
            break;
          case Kind::unary: {
            const DType ct = compute_dtype(g.nodes[size_t(n.a)].dtype);
            const bool pred = ir::traits(n.unary).predicate;
            bool done = false;
            if (q.how == How::row || q.how == How::row_scalar)
              done =
                  unary_row(n.unary, n.p0, ct, pred, out, val[size_t(n.a)], m, q.how == How::row);
            if (!done) {
              if (!wr) wr = std::make_unique<Wrappers>(backend);
              ref::unary(ir::Unary{n.unary, wr->wrap(0, val[size_t(n.a)], ct, m),
                                   wr->wrap(1, out, pred ? DType::b8 : ct, m), n.p0, n.p1, n.p2});
            }
            val[i] = out;
            break;
          }
          case Kind::binary: {
            const DType ct = compute_dtype(g.nodes[size_t(n.a)].dtype);
            const bool pred = ir::traits(n.binary).predicate;
            // A constant operand is read with stride 0 (the row kernels' scalar-broadcast loops).
            const int64_t sa = g.nodes[size_t(n.a)].kind == Kind::constant ? 0 : 1;
            const int64_t sb = g.nodes[size_t(n.b)].kind == Kind::constant ? 0 : 1;
            if (!binary_row(n.binary, ct, out, val[size_t(n.a)], val[size_t(n.b)], m, sa, sb)) {
              if (!wr) wr = std::make_unique<Wrappers>(backend);
              ref::binary(ir::Binary{n.binary, wr->wrap(0, val[size_t(n.a)], ct, m),
                                     wr->wrap(1, val[size_t(n.b)], ct, m),
                                     wr->wrap(2, out, pred ? DType::b8 : ct, m)});
            }
            val[i] = out;
            break;
          }
          case Kind::where:
            where_elems(out, static_cast<const bool*>(val[size_t(n.a)]), val[size_t(n.b)],
                        val[size_t(n.c)], m, int64_t(dtype_size(compute_dtype(n.dtype))));
            val[i] = out;
            break;
          case Kind::cast:
            cast_elems(out, compute_dtype(n.dtype), val[size_t(n.a)],
                       compute_dtype(g.nodes[size_t(n.a)].dtype), m);
            val[i] = out;
            break;
        }
        if (q.round) round_half(n.dtype, static_cast<float*>(out), h16, m);
      }
      if (p.folder) p.folder->fold(b, m, val[size_t(p.folder->node)]);

      // Outputs that copy an input take its bits (as the eager copy moves them), gathered before
      // any store: a store may overwrite an input in place.
      for (size_t o = 0; o < g.outputs.size(); ++o) {
        const auto& node = g.nodes[size_t(g.outputs[o].node)];
        if (node.kind != Kind::load) continue;
        const size_t ki = size_t(node.input);
        const int64_t es = p.esize[ki], is = st(ki, r - 1);
        unsigned char* raw = slot(p.raw_slot[o]);
        for (int64_t s = 0; s < nseg; ++s)
          copy_elems(raw + segs[s].pos * es, 1, p.base[ki] + seg_off(s, ki) * es, is, segs[s].len,
                     es);
      }
      // Store the outputs.
      for (size_t o = 0; o < g.outputs.size(); ++o) {
        if (stored[o]) continue;
        const size_t k = ni + o;
        const auto& node = g.nodes[size_t(g.outputs[o].node)];
        const int64_t es = p.esize[k];
        const int64_t os = st(k, r - 1);
        if (node.kind == Kind::load) {
          const unsigned char* raw = slot(p.raw_slot[o]);
          for (int64_t s = 0; s < nseg; ++s)
            copy_elems(p.base[k] + seg_off(s, k) * es, os, raw + segs[s].pos * es, 1, segs[s].len,
                       es);
          continue;
        }
        const void* v = val[size_t(g.outputs[o].node)];
        for (int64_t s = 0; s < nseg; ++s) {
          char* dst = p.base[k] + seg_off(s, k) * es;
          const int64_t len = segs[s].len, at = segs[s].pos;
          if (is_half(node.dtype)) {
            const float* f = static_cast<const float*>(v) + at;
            if (os == 1) {
              f32_to_half(node.dtype, reinterpret_cast<uint16_t*>(dst), f, len);
            } else {
              f32_to_half(node.dtype, h16, f, len);
              strided_copy(reinterpret_cast<uint16_t*>(dst), os, h16, 1, len);
            }
          } else {
            copy_elems(dst, os, static_cast<const char*>(v) + at * es, 1, len, es);
          }
        }
      }
    }
  }
}

// Runs elements [eb, ee) of the iteration in tiles of p.tile elements.
void run_range(const Plan& p, Backend* backend, int64_t eb, int64_t ee) {
  run_ranges(p, backend, 1, [&](int64_t) { return std::pair<int64_t, int64_t>(eb, ee); });
}

}  // namespace

bool CpuBackend::reducible(const ir::Reduce& op) const {
  return !op.indices.defined() && op.src.device() == Device::cpu() &&
         foldable(op.op, op.src.dtype(), op.src.shape(), op.dims, op.dst);
}

namespace {

// Rows of kept columns per chunk of a column reduction: about kChunk elements, and whole tiles.
int64_t column_chunk_rows(int64_t columns) { return std::max<int64_t>(1, kChunk / columns); }
// Columns per task of a column reduction: all of them when a tile holds a row, else blocks of
// one tile.
int64_t column_block(int64_t columns) { return std::min(columns, kDefaultTile); }

// The graph with its reduction, rows (or columns) folded in parallel, then each result's parts
// combined in order into dst (so results do not depend on the thread count):
//  - rows: pieces of whole rows (rows of kChunk elements or more: single chunks);
//  - columns: one task per chunk of reduced rows and block of columns; a block of all the
//    columns runs its chunk as one range, a narrower one as one range per reduced row.
void run_reduction(Plan& p, Backend* backend) {
  const ir::FusedGraph& g = *p.g;
  const auto& r = g.reductions[0];
  Folder f;
  f.op = r.op;
  f.node = r.node;
  f.f64 = compute_dtype(g.nodes[size_t(r.node)].dtype) == DType::f64;
  f.columns = column_reduction(g);
  f.rows = numel_of(r.dst.shape());
  f.len = p.total / f.rows;
  p.folder = &f;
  p.tile = kDefaultTile;
  if (f.columns) {
    const int64_t cols = f.rows, red_rows = f.len;
    f.chunk_rows = column_chunk_rows(cols);
    f.chunks = (red_rows + f.chunk_rows - 1) / f.chunk_rows;
    f.parts.assign(size_t(f.chunks * cols), identity(r.op));
    const int64_t block = column_block(cols), nblocks = (cols + block - 1) / block;
    parallel_for(0, f.chunks * nblocks, 1, [&](int64_t b, int64_t e) {
      for (int64_t q = b; q < e; ++q) {
        const int64_t c = q / nblocks, j0 = (q % nblocks) * block;
        const int64_t j1 = std::min(cols, j0 + block);
        const int64_t r0 = c * f.chunk_rows, r1 = std::min(red_rows, r0 + f.chunk_rows);
        if (j0 == 0 && j1 == cols) {
          run_range(p, backend, r0 * cols, r1 * cols);
        } else {
          run_ranges(p, backend, r1 - r0, [&](int64_t k) {
            const int64_t at = (r0 + k) * cols;
            return std::pair<int64_t, int64_t>(at + j0, at + j1);
          });
        }
      }
    });
  } else {
    f.chunks = (f.len + kChunk - 1) / kChunk;
    f.parts.assign(size_t(f.rows * f.chunks), identity(r.op));
    // A piece: one chunk of a long row, or rows_per whole rows.
    const int64_t rows_per = f.chunks > 1 ? 1 : std::max<int64_t>(1, kChunk / f.len);
    const int64_t pieces = f.chunks > 1 ? f.rows * f.chunks : (f.rows + rows_per - 1) / rows_per;
    parallel_for(0, pieces, 1, [&](int64_t b, int64_t e) {
      for (int64_t q = b; q < e; ++q) {
        int64_t lo, hi;
        if (f.chunks > 1) {
          const int64_t row = q / f.chunks, c = q % f.chunks;
          lo = row * f.len + c * kChunk;
          hi = std::min((row + 1) * f.len, lo + kChunk);
        } else {
          lo = q * rows_per * f.len;
          hi = std::min(f.rows, (q + 1) * rows_per) * f.len;
        }
        run_range(p, backend, lo, hi);
      }
    });
  }
  // parts of result o: columns, parts[c * rows + o]; rows, parts[o * chunks + c].
  auto part = [&](int64_t o, int64_t c) -> const Acc& {
    return f.parts[size_t(f.columns ? c * f.rows + o : o * f.chunks + c)];
  };
  dispatch_dtype(r.dst.dtype(), [&](auto tag) {
    using D = decltype(tag);
    if constexpr (is_float_v<D>) {
      D* dst = ref::ptr<D>(r.dst);
      for (int64_t o = 0; o < f.rows; ++o) {
        Acc a = part(o, 0);
        for (int64_t c = 1; c < f.chunks; ++c) combine(r.op, a, part(o, c));
        dst[o] = scalar_cast<D>(a.v);
      }
    }
  });
}

}  // namespace

namespace {

// A plain graph (no reduction), tile by tile across the thread pool.
bool run_plain(Plan& p, const ir::FusedGraph& g, Backend* backend) {
  if (p.total == 0 || g.outputs.empty()) return true;
  auto run = [&](int64_t tile) {
    p.tile = tile;
    const int64_t ntiles = (p.total + tile - 1) / tile;
    parallel_for(0, ntiles, std::max<int64_t>(1, kGrainElementwise / tile),
                 [&](int64_t b, int64_t e) {
                   run_range(p, backend, b * tile, std::min(p.total, e * tile));
                 });
  };
  // Tuned only when running the graph again gives the same outputs: no output shares storage
  // with an input (an in-place a = a * 2 would compound).
  bool in_place = false;
  for (const auto& o : g.outputs)
    for (const auto& t : g.inputs)
      in_place = in_place || t.impl()->storage == o.dst.impl()->storage;
  if (p.total < kTuneMinElements || in_place) {
    run(kDefaultTile);
    return true;
  }
  static const int64_t tiles[] = {kDefaultTile, kMaxTile, 1024, 2048, 8192};
  static const std::vector<autotune::Candidate> cs{{"tile4096"},
                                                   {"tile16384", autotune::Effort::minimal},
                                                   {"tile1024", autotune::Effort::balanced},
                                                   {"tile2048", autotune::Effort::full},
                                                   {"tile8192", autotune::Effort::full}};
  autotune::Bench bench;
  bench.run = [&](size_t i) { run(tiles[i]); };
  bench.result = [&] {
    std::vector<double> v;
    for (const auto& o : g.outputs) {
      const std::vector<double> x = host_values(o.dst);
      v.insert(v.end(), x.begin(), x.end());
    }
    return v;
  };
  bench.detail = [&] { return g.describe(); };  // bit for bit: tolerance 0
  // The shape class: elements (a power of two), tile buffers and operands per element.
  const std::string shape = "n" + std::to_string(autotune::anchor(p.total)) + ".slots" +
                            std::to_string(p.nslots + p.nconst) + ".ops" + std::to_string(p.nops);
  run(tiles[tuner().pick("cpu.fused_graph", dtype_name(g.outputs[0].dst.dtype()), shape, cs,
                         bench)]);
  return true;
}

}  // namespace

bool CpuBackend::execute_graph(const ir::FusedGraph& g) {
  Plan p;
  if (!make_plan(g, p)) return false;
  if (!g.reductions.empty()) {
    // The epilogue (fuse-on-write) is planned before anything runs, so a declined one leaves
    // the whole graph to the ops.
    Plan pa;
    if (g.after.size() > 1) return false;
    if (!g.after.empty() &&
        (!g.after[0].reductions.empty() || !g.after[0].after.empty() || !make_plan(g.after[0], pa)))
      return false;
    run_reduction(p, this);
    if (!g.after.empty()) run_plain(pa, g.after[0], this);
    return true;
  }
  if (!g.after.empty()) return false;
  return run_plain(p, g, this);
}

}  // namespace ember::cpu
