// The cpu backend's max / average pooling through oneDNN (ir/fused.h): ir::Pool (forward) and
// ir::PoolBackward; f32, 1d/2d/3d, strided, padded, dilated (pooling_v2). Channels-last tensors
// are pooled as they are (NHWC / NDHWC, no reorder); f16/bf16 forwards on oneDNN's own kernels
// where fast, else in f32 and rounded once (backwards: natively for disjoint windows only);
// plain NCHW ones are reordered to and from oneDNN's blocked nChw8c, as its plain-layout pooling is
// a reference loop slower than the composite. A tensor that is not dense in its memory format is
// copied first. Primitives are created once per geometry and cached, keyed by every shape, stride
// and parameter; a geometry oneDNN declines (it throws at creation) is remembered and reported as
// not taken.
//
// oneDNN's max pooling starts each window from the lowest finite float and skips NaN, where
// torch gives -inf for a window of -inf and NaN for a window holding NaN: max pooling of an input
// with any NaN or -inf is declined (one scan of the input), and the composite runs. The max
// backward recomputes the forward in training mode for oneDNN's workspace (the first maximal
// tap of each window, as torch), then scatters grad_dst through it.
#include <dnnl.hpp>

#include <atomic>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "backends/cpu/dense.h"
#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/thread_pool.h"
#include "backends/ref/dispatch.h"
#include "backends/ref/kernels.h"
#include "tensor/internal.h"

namespace ember::cpu {

namespace {

using dnnl::memory;
using dnnl_util::dims_of;
using dnnl_util::engine;
using dnnl_util::Scratch;
using dnnl_util::strided_desc;
using Dims = memory::dims;

std::atomic<int64_t> g_runs{0};
std::atomic<bool> g_enabled{true};

template <typename Op>
struct Geo {
  Dims stride, kernel, dil, pl, pr;
  dnnl::algorithm alg;
  explicit Geo(const Op& op)
      : stride(op.stride.begin(), op.stride.end()),
        kernel(op.kernel.begin(), op.kernel.end()),
        pl(op.pad_begin.begin(), op.pad_begin.end()),
        pr(op.pad_end.begin(), op.pad_end.end()),
        alg(op.is_max              ? dnnl::algorithm::pooling_max
            : op.count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                   : dnnl::algorithm::pooling_avg_exclude_padding) {
    for (int64_t d : op.dilation) dil.push_back(d - 1);  // oneDNN counts the gaps
  }
  dnnl::pooling_v2_forward::desc forward(dnnl::prop_kind prop, const memory::desc& src,
                                         const memory::desc& dst) const {
    return dnnl::pooling_v2_forward::desc(prop, alg, src, dst, stride, kernel, dil, pl, pr);
  }
};

// The src-side (src, grad_src) and dst-side (dst, grad_dst) layouts: the tensors' own (user)
// and the primitives' (prim); a plain NC* layout runs blocked (nC*8c: oneDNN's plain-layout
// pooling is a slow reference loop), with reorders to and from the tensors.
struct Entry {
  dnnl::pooling_v2_forward fwd;  // inference (forward) or training (the max backward's recompute)
  dnnl::pooling_v2_backward bwd;
  memory::desc user_src, prim_src, user_dst, prim_dst, ws;
  dnnl::reorder src_in, src_out, dst_in, dst_out;  // user <-> prim; empty when they agree
  bool workspace = false;
};

// The layout the primitives run on for a src-side tensor: its own when channels-last (NHWC /
// NDHWC: no reorder), else blocked by 8 channels.
memory::desc prim_src_desc(const Tensor& t, bool blocked) {
  if (!blocked) return strided_desc(t);
  using tag = memory::format_tag;
  const tag tg = t.dim() == 3 ? tag::nCw8c : t.dim() == 4 ? tag::nChw8c : tag::nCdhw8c;
  return memory::desc(dims_of(t), dnnl_util::dnnl_type(t.dtype()), tg);
}
memory::desc any_like(const Tensor& t) {
  return memory::desc(dims_of(t), dnnl_util::dnnl_type(t.dtype()), memory::format_tag::any);
}
dnnl::reorder reorder(const memory::desc& from, const memory::desc& to) {
  if (from == to) return dnnl::reorder();
  return dnnl::reorder(dnnl::reorder::primitive_desc(engine(), from, engine(), to));
}

// make(true) (blocked) for a plain tensor when oneDNN has it, else make(false) (as it is).
template <typename Make>
std::unique_ptr<Entry> try_blocked(const Tensor& src, Make make) {
  if (src.memory_format() == MemoryFormat::contiguous) {
    try {
      return make(true);
    } catch (const dnnl::error&) {
      // no blocked implementation: the plain layout below
    }
  }
  return make(false);
}

// Tensors: src, dst.
template <typename Op>
std::unique_ptr<Entry> make_forward(const Tensor& src, const Tensor& dst, const Op& op) {
  return try_blocked(src, [&](bool blocked) {
    const Geo<Op> g(op);
    auto e = std::make_unique<Entry>();
    e->user_src = strided_desc(src);
    e->user_dst = strided_desc(dst);
    e->prim_src = prim_src_desc(src, blocked);
    const dnnl::pooling_v2_forward::primitive_desc pd(
        g.forward(dnnl::prop_kind::forward_inference, e->prim_src,
                  blocked ? any_like(dst) : e->user_dst),
        engine());
    dnnl_util::require_fast(pd.impl_info_str(), dnnl_util::dnnl_type(src.dtype()));
    e->prim_dst = pd.dst_desc();
    e->fwd = dnnl::pooling_v2_forward(pd);
    e->src_in = reorder(e->user_src, e->prim_src);
    e->dst_out = reorder(e->prim_dst, e->user_dst);
    return e;
  });
}

// Tensors: grad_dst, grad_src (max: the forward's input is laid out as grad_src).
template <typename Op>
std::unique_ptr<Entry> make_backward(const Tensor& gy, const Tensor& gx, const Op& op) {
  return try_blocked(gx, [&](bool blocked) {
    const Geo<Op> g(op);
    auto e = std::make_unique<Entry>();
    e->user_src = strided_desc(gx);
    e->user_dst = strided_desc(gy);
    e->prim_src = prim_src_desc(gx, blocked);
    const dnnl::pooling_v2_forward::primitive_desc hint(
        g.forward(dnnl::prop_kind::forward_training, e->prim_src,
                  blocked ? any_like(gy) : e->user_dst),
        engine());
    e->prim_dst = hint.dst_desc();
    e->ws = hint.workspace_desc();
    e->workspace = op.is_max && e->ws.get_size() > 0;
    if (op.is_max) e->fwd = dnnl::pooling_v2_forward(hint);
    const dnnl::pooling_v2_backward::primitive_desc bpd(
        dnnl::pooling_v2_backward::desc(g.alg, e->prim_src, e->prim_dst, g.stride, g.kernel, g.dil,
                                        g.pl, g.pr),
        engine(), hint);
    dnnl_util::require_fast(hint.impl_info_str(), dnnl_util::dnnl_type(gx.dtype()));
    dnnl_util::require_fast(bpd.impl_info_str(), dnnl_util::dnnl_type(gx.dtype()));
    e->bwd = dnnl::pooling_v2_backward(bpd);
    if (op.is_max) e->src_in = reorder(e->user_src, e->prim_src);
    e->src_out = reorder(e->prim_src, e->user_src);
    e->dst_in = reorder(e->user_dst, e->prim_dst);
    return e;
  });
}

template <typename Op>
std::vector<int64_t> key_of(bool backward, const std::vector<const Tensor*>& ts, const Op& op) {
  std::vector<int64_t> k{int64_t(backward), int64_t(op.is_max), int64_t(op.count_include_pad)};
  for (const Tensor* t : ts) {
    k.push_back(int64_t(t->dtype()));
    k.push_back(t->dim());
    k.insert(k.end(), t->shape().begin(), t->shape().end());
    k.insert(k.end(), t->strides().begin(), t->strides().end());
  }
  for (const auto* v : {&op.kernel, &op.stride, &op.pad_begin, &op.pad_end, &op.dilation}) {
    k.push_back(int64_t(v->size()));
    k.insert(k.end(), v->begin(), v->end());
  }
  return k;
}

// The cached entry for `key` (made by `make` on a miss); null when oneDNN declines it.
template <typename Make>
Entry* cached(const std::vector<int64_t>& key, Make make) {
  static std::mutex mu;
  static std::map<std::vector<int64_t>, std::unique_ptr<Entry>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it == cache.end()) {
    std::unique_ptr<Entry> e;
    try {
      e = make();
    } catch (const dnnl::error&) {
      e = nullptr;  // not supported by oneDNN: remembered, so it is not retried
    }
    it = cache.emplace(key, std::move(e)).first;
  }
  return it->second.get();  // entries are never erased, so the pointer stays valid
}

// True when every element of the dense f32 / f16 / bf16 tensor is > -inf (no NaN, no -inf).
template <typename T>
bool above_neg_inf_of(const Tensor& t) {
  const T* p = ref::ptr<T>(t);
  const int64_t n = t.numel();
  std::atomic<bool> ok{true};
  parallel_for(0, (n + 4095) / 4096, 8, [&](int64_t lo, int64_t hi) {
    const float ninf = -std::numeric_limits<float>::infinity();
    for (int64_t b = lo; b < hi && ok.load(std::memory_order_relaxed); ++b) {
      const int64_t e = std::min(n, (b + 1) * 4096);
      int bad = 0;
      for (int64_t i = b * 4096; i < e; ++i) bad |= !(float(p[i]) > ninf);
      if (bad) ok.store(false, std::memory_order_relaxed);
    }
  });
  return ok.load();
}

bool above_neg_inf(const Tensor& t) {
  switch (t.dtype()) {
    case DType::bf16:
      return above_neg_inf_of<BFloat16>(t);
    case DType::f16:
      return above_neg_inf_of<Half>(t);
    default:
      return above_neg_inf_of<float>(t);
  }
}

memory mem(const memory::desc& d, const Tensor& t) {
  return memory(d, engine(), dnnl_util::data_of(t));
}

void fail(const dnnl::error& err) {
  EMBER_FAIL("pool", "oneDNN pooling failed: ", err.what(), " (status ", int(err.status), ")");
}

bool half(const Tensor& t) {
  return t.defined() && (t.dtype() == DType::bf16 || t.dtype() == DType::f16);
}

bool usable(const Tensor& t) {
  return t.defined() && (t.dtype() == DType::f32 || half(t)) && t.numel() > 0 && t.dim() >= 3 &&
         t.dim() <= 5;
}

// A tensor's memory for `user`, and for `prim` (a scratch buffer) when they differ.
struct Mem {
  memory user, prim;
  std::unique_ptr<Scratch> scratch;
  Mem(const memory::desc& u, const memory::desc& p, const Tensor& t) : user(mem(u, t)) {
    if (u == p) {
      prim = user;
    } else {
      scratch = std::make_unique<Scratch>(int64_t(p.get_size()));
      prim = memory(p, engine(), scratch->p);
    }
  }
};

// An f32 copy of an f16/bf16 operand (exact) in the layout `f` (undefined stays undefined).
Tensor widen(const Tensor& t, MemoryFormat f) {
  return t.defined() ? dense_copy(t, DType::f32, f) : t;
}

// Rounds the f32 result `r` into `dst` once (cpu copy kernel, else the reference one).
void narrow_into(const Tensor& r, const Tensor& dst) {
  const ir::Copy c{r, dst};
  if (!copy(c)) ref::copy(c);
}

bool pool_native(const ir::Pool& op) {
  if (!g_enabled.load(std::memory_order_relaxed) || !usable(op.src) || !usable(op.dst) ||
      op.src.dtype() != op.dst.dtype() || !op.dst.is_contiguous(op.dst.memory_format()))
    return false;
  const Tensor x = dense(op.src, op.src.memory_format());
  if (op.is_max && !above_neg_inf(x)) return false;
  Entry* e = cached(key_of(false, {&x, &op.dst}, op), [&] { return make_forward(x, op.dst, op); });
  if (!e) return false;
  try {
    dnnl::stream s(engine());
    Mem src(e->user_src, e->prim_src, x), dst(e->user_dst, e->prim_dst, op.dst);
    if (src.scratch) e->src_in.execute(s, src.user, src.prim);
    e->fwd.execute(s, {{DNNL_ARG_SRC, src.prim}, {DNNL_ARG_DST, dst.prim}});
    if (dst.scratch) e->dst_out.execute(s, dst.prim, dst.user);
    s.wait();
  } catch (const dnnl::error& err) {
    fail(err);
  }
  g_runs.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool pool_native_backward(const ir::PoolBackward& op) {
  const Tensor& gx = op.grad_src;
  if (!g_enabled.load(std::memory_order_relaxed) || !usable(op.grad_dst) || !usable(gx) ||
      gx.dtype() != op.grad_dst.dtype() || (op.is_max && op.src.dtype() != gx.dtype()) ||
      !gx.is_contiguous(gx.memory_format()) || (op.is_max && !usable(op.src)))
    return false;
  // src and grad_dst in grad_src's layout, so the primitives see one format.
  const MemoryFormat f = gx.memory_format();
  const Tensor gy = dense(op.grad_dst, f);
  const Tensor x = op.is_max ? dense(op.src, f) : gx;  // avg: only the layout is used
  if (op.is_max && !above_neg_inf(x)) return false;
  Entry* e = cached(key_of(true, {&x, &gy, &gx}, op), [&] { return make_backward(gy, gx, op); });
  if (!e) return false;
  try {
    dnnl::stream s(engine());
    Mem dgy(e->user_dst, e->prim_dst, gy), dgx(e->user_src, e->prim_src, gx);
    if (dgy.scratch) e->dst_in.execute(s, dgy.user, dgy.prim);
    std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, dgy.prim},
                                         {DNNL_ARG_DIFF_SRC, dgx.prim}};
    std::unique_ptr<Scratch> ws, y;
    if (op.is_max) {
      Mem src(e->user_src, e->prim_src, x);
      if (src.scratch) e->src_in.execute(s, src.user, src.prim);
      y = std::make_unique<Scratch>(int64_t(e->prim_dst.get_size()));
      std::unordered_map<int, memory> fargs{{DNNL_ARG_SRC, src.prim},
                                            {DNNL_ARG_DST, memory(e->prim_dst, engine(), y->p)}};
      if (e->workspace) {
        ws = std::make_unique<Scratch>(int64_t(e->ws.get_size()));
        const memory wm(e->ws, engine(), ws->p);
        fargs.emplace(DNNL_ARG_WORKSPACE, wm);
        args.emplace(DNNL_ARG_WORKSPACE, wm);
      }
      e->fwd.execute(s, fargs);
      s.wait();  // src's scratch is released at the end of this block
    }
    e->bwd.execute(s, args);
    if (dgx.scratch) e->src_out.execute(s, dgx.prim, dgx.user);
    s.wait();
  } catch (const dnnl::error& err) {
    fail(err);
  }
  g_runs.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace

// f16/bf16 forward: oneDNN's own f16/bf16 pooling where it has a fast kernel (AVX-512 and up), else
// pooled in f32 (every f16/bf16 value is an f32 one, so max is exact and the average is rounded
// once, as the reference kernel) and rounded into dst.
bool pool_dnnl(const ir::Pool& op) {
  if (pool_native(op)) return true;
  if (!half(op.src) || op.dst.dtype() != op.src.dtype()) return false;
  const MemoryFormat f = op.dst.memory_format();
  ir::Pool wide = op;
  wide.src = widen(op.src, f);
  wide.dst = detail::make_tensor(op.dst.shape(), DType::f32, op.dst.device(), f);
  if (!pool_native(wide)) return false;
  narrow_into(wide.dst, op.dst);
  return true;
}

// Whether no two windows share an input element (each grad_src element gets one term at most).
bool disjoint_windows(const ir::PoolBackward& op) {
  for (size_t d = 0; d < op.kernel.size(); ++d)
    if (op.stride[d] < op.dilation[d] * (op.kernel[d] - 1) + 1) return false;
  return true;
}

// The backward of f16/bf16 runs on oneDNN's own kernel only for disjoint windows: it sums the
// gradients of overlapping windows in bf16 (two units in the last place off at 3x3 / stride 2),
// so those run in f32 and round once.
bool pool_dnnl_backward(const ir::PoolBackward& op) {
  const Tensor& gx = op.grad_src;
  if (gx.dtype() == DType::f32) return pool_native_backward(op);
  if (half(gx) && disjoint_windows(op) && pool_native_backward(op)) return true;
  if (!half(op.grad_dst) || gx.dtype() != op.grad_dst.dtype()) return false;
  const MemoryFormat f = gx.memory_format();
  ir::PoolBackward wide = op;
  wide.grad_dst = widen(op.grad_dst, f);
  wide.src = op.is_max ? widen(op.src, f) : op.src;
  wide.grad_src = detail::make_tensor(gx.shape(), DType::f32, gx.device(), f);
  if (!pool_native_backward(wide)) return false;
  narrow_into(wide.grad_src, gx);
  return true;
}

int64_t pool_dnnl_runs() { return g_runs.load(std::memory_order_relaxed); }

void set_pool_dnnl_enabled(bool on) { g_enabled.store(on); }

}  // namespace ember::cpu
