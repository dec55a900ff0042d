// The cpu backend's convolutions through oneDNN (ir/fused.h): the forward (ir::Conv) and the two
// backward passes (ir::ConvBackwardData, ir::ConvBackwardWeights); f32, 1d/2d/3d, strided,
// padded, dilated, grouped and depthwise. For channels-last activations the primitives work on
// NHWC / NDHWC directly; otherwise oneDNN chooses its own (blocked) layouts, and reorders
// from and to the tensors' strided layouts are part of the cached entry; for channels-last
// activations both ways are made and the autotuner picks one (choose() below). Primitives are
// created once per geometry and kept in a cache keyed by the kind, every shape, stride and
// parameter.
// Anything oneDNN declines (it throws at creation) is reported as not taken.
//
// Forward convolutions keep their weights in the primitive's layout across calls (Packed below),
// keyed by the weight's storage and its write count when the op was made
// (ir::Conv::weight_writes): inference reorders each weight once, as ONNX Runtime's prepacking.
// An epilogue that starts with per-channel affine steps (eval batch_norm's scale and shift, a
// scalar scale) is folded into those weights and the bias, as torch's fuse_conv_bn_eval.
#include <dnnl.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backends/cpu/autotune_util.h"
#include "backends/cpu/dense.h"
#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/post_ops.h"
#include "backends/ref/dispatch.h"

namespace ember::cpu {

namespace {

using dnnl::memory;
using dnnl_util::dims_of;
using dnnl_util::engine;
using dnnl_util::Scratch;
using dnnl_util::strided_desc;
using Dims = memory::dims;
const auto kF32 = memory::data_type::f32;

std::atomic<int64_t> g_backward_runs{0};
std::atomic<bool> g_backward_enabled{true};

enum class Kind : int64_t { forward, backward_data, backward_weights };

// One tensor argument of a primitive: its strided layout, the primitive's, and the reorder
// between them (input: user -> prim before the primitive; output: prim -> user after it).
struct Bind {
  int arg = 0;
  bool out = false;
  memory::desc user, prim;
  dnnl::reorder reorder;  // empty when the layouts agree
  bool same = true;
};

struct Entry {
  dnnl::primitive prim;
  std::vector<Bind> binds;  // in the order the tensors are passed to execute()
};

// Weights [C_out, C_in/g, *K] viewed as [g, C_out/g, C_in/g, *K] when grouped.
Dims weight_dims(const Tensor& w, int64_t g) {
  Dims wd = dims_of(w);
  if (g > 1) {
    wd.insert(wd.begin(), g);
    wd[1] /= g;
  }
  return wd;
}
memory::desc weight_desc(const Tensor& w, int64_t g) {
  Dims ws(w.strides().begin(), w.strides().end());
  const Dims wd = weight_dims(w, g);
  if (g > 1) ws.insert(ws.begin(), ws[0] * wd[1]);
  return memory::desc(wd, kF32, ws);
}
memory::desc any_desc(const Dims& d) { return memory::desc(d, kF32, memory::format_tag::any); }
// Activations: NHWC / NDHWC when the tensor is channels-last (oneDNN then runs on it as it is,
// with no reorder of input or output), else oneDNN's choice (a blocked layout, reordered).
memory::desc act_desc(const Dims& d, bool cl) {
  if (!cl) return any_desc(d);
  return memory::desc(d, kF32,
                      d.size() == 4 ? memory::format_tag::nhwc : memory::format_tag::ndhwc);
}
bool channels_last(const Tensor& t) { return t.memory_format() != MemoryFormat::contiguous; }
memory::desc bias_desc(const Tensor& b) {
  return memory::desc({b.size(0)}, kF32, memory::format_tag::x);
}

// The geometry shared by the three kinds.
struct Geo {
  Dims stride, pl, pr, dil;
  int64_t groups = 1;
  bool nhwc = false;  // channels-last activations: run on NHWC as is (else blocked + reorders)
  template <typename Op>
  explicit Geo(const Op& op)
      : stride(op.stride.begin(), op.stride.end()),
        pl(op.pad_begin.begin(), op.pad_begin.end()),
        pr(op.pad_end.begin(), op.pad_end.end()),
        groups(op.groups) {
    for (int64_t d : op.dilation) dil.push_back(d - 1);  // oneDNN counts the gaps
  }
};

Bind bind(int arg, bool out, const memory::desc& user, const memory::desc& prim) {
  Bind b;
  b.arg = arg;
  b.out = out;
  b.user = user;
  b.prim = prim;
  b.same = user == prim;
  if (!b.same)
    b.reorder = out ? dnnl::reorder(dnnl::reorder::primitive_desc(engine(), prim, engine(), user))
                    : dnnl::reorder(dnnl::reorder::primitive_desc(engine(), user, engine(), prim));
  return b;
}

dnnl::convolution_forward::desc forward_desc(dnnl::prop_kind prop, const Dims& x, const Dims& w,
                                             const memory::desc* bias, const Dims& y, const Geo& g,
                                             bool cl) {
  const auto alg = dnnl::algorithm::convolution_direct;
  if (bias)
    return dnnl::convolution_forward::desc(prop, alg, act_desc(x, cl), any_desc(w), *bias,
                                           act_desc(y, cl), g.stride, g.dil, g.pl, g.pr);
  return dnnl::convolution_forward::desc(prop, alg, act_desc(x, cl), any_desc(w), act_desc(y, cl),
                                         g.stride, g.dil, g.pl, g.pr);
}

// Tensors: x, w, [bias], y.
std::unique_ptr<Entry> make_forward(const std::vector<const Tensor*>& t, const Geo& g) {
  const Tensor &x = *t[0], &w = *t[1], &y = *t.back();
  const bool has_b = t.size() == 4;
  const memory::desc bmd = has_b ? bias_desc(*t[2]) : memory::desc();
  const dnnl::convolution_forward::primitive_desc pd(
      forward_desc(dnnl::prop_kind::forward_inference, dims_of(x), weight_dims(w, g.groups),
                   has_b ? &bmd : nullptr, dims_of(y), g, g.nhwc),
      engine());
  auto e = std::make_unique<Entry>();
  e->prim = dnnl::convolution_forward(pd);
  e->binds.push_back(bind(DNNL_ARG_SRC, false, strided_desc(x), pd.src_desc()));
  e->binds.push_back(bind(DNNL_ARG_WEIGHTS, false, weight_desc(w, g.groups), pd.weights_desc()));
  if (has_b) e->binds.push_back(bind(DNNL_ARG_BIAS, false, bmd, pd.bias_desc()));
  e->binds.push_back(bind(DNNL_ARG_DST, true, strided_desc(y), pd.dst_desc()));
  return e;
}

// Tensors: grad_dst, w, grad_src.
std::unique_ptr<Entry> make_backward_data(const std::vector<const Tensor*>& t, const Geo& g) {
  const Tensor &gy = *t[0], &w = *t[1], &gx = *t[2];
  const Dims wd = weight_dims(w, g.groups);
  const bool cl = g.nhwc;
  const dnnl::convolution_forward::primitive_desc hint(
      forward_desc(dnnl::prop_kind::forward_training, dims_of(gx), wd, nullptr, dims_of(gy), g, cl),
      engine());
  const dnnl::convolution_backward_data::primitive_desc pd(
      dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct,
                                            act_desc(dims_of(gx), cl), any_desc(wd),
                                            act_desc(dims_of(gy), cl), g.stride, g.dil, g.pl, g.pr),
      engine(), hint);
  auto e = std::make_unique<Entry>();
  e->prim = dnnl::convolution_backward_data(pd);
  e->binds.push_back(bind(DNNL_ARG_DIFF_DST, false, strided_desc(gy), pd.diff_dst_desc()));
  e->binds.push_back(bind(DNNL_ARG_WEIGHTS, false, weight_desc(w, g.groups), pd.weights_desc()));
  e->binds.push_back(bind(DNNL_ARG_DIFF_SRC, true, strided_desc(gx), pd.diff_src_desc()));
  return e;
}

// Tensors: x, grad_dst, grad_weight, [grad_bias].
std::unique_ptr<Entry> make_backward_weights(const std::vector<const Tensor*>& t, const Geo& g) {
  const Tensor &x = *t[0], &gy = *t[1], &gw = *t[2];
  const bool has_b = t.size() == 4;
  const memory::desc bmd = has_b ? bias_desc(*t[3]) : memory::desc();
  const Dims wd = weight_dims(gw, g.groups);
  const bool cl = g.nhwc;
  const dnnl::convolution_forward::primitive_desc hint(
      forward_desc(dnnl::prop_kind::forward_training, dims_of(x), wd, has_b ? &bmd : nullptr,
                   dims_of(gy), g, cl),
      engine());
  const auto alg = dnnl::algorithm::convolution_direct;
  const memory::desc xd = act_desc(dims_of(x), cl), gyd = act_desc(dims_of(gy), cl);
  const auto desc = has_b ? dnnl::convolution_backward_weights::desc(
                                alg, xd, any_desc(wd), bmd, gyd, g.stride, g.dil, g.pl, g.pr)
                          : dnnl::convolution_backward_weights::desc(alg, xd, any_desc(wd), gyd,
                                                                     g.stride, g.dil, g.pl, g.pr);
  const dnnl::convolution_backward_weights::primitive_desc pd(desc, engine(), hint);
  auto e = std::make_unique<Entry>();
  e->prim = dnnl::convolution_backward_weights(pd);
  e->binds.push_back(bind(DNNL_ARG_SRC, false, strided_desc(x), pd.src_desc()));
  e->binds.push_back(bind(DNNL_ARG_DIFF_DST, false, strided_desc(gy), pd.diff_dst_desc()));
  e->binds.push_back(
      bind(DNNL_ARG_DIFF_WEIGHTS, true, weight_desc(gw, g.groups), pd.diff_weights_desc()));
  if (has_b) e->binds.push_back(bind(DNNL_ARG_DIFF_BIAS, true, bmd, pd.diff_bias_desc()));
  return e;
}

template <typename Op>
std::vector<int64_t> key_of(Kind kind, const std::vector<const Tensor*>& ts, const Op& op) {
  std::vector<int64_t> k{int64_t(kind), int64_t(ts.size())};
  for (const Tensor* t : ts) {
    if (!t) {  // bound from elsewhere (a folded bias)
      k.push_back(-1);
      continue;
    }
    k.push_back(t->dim());
    k.insert(k.end(), t->shape().begin(), t->shape().end());
    k.insert(k.end(), t->strides().begin(), t->strides().end());
  }
  for (const auto* v : {&op.stride, &op.pad_begin, &op.pad_end, &op.dilation}) {
    k.push_back(int64_t(v->size()));
    k.insert(k.end(), v->begin(), v->end());
  }
  k.push_back(op.groups);
  return k;
}

// Strides oneDNN accepts for a plain layout: every non-unit dim positive.
bool plain_strides(const Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 1 && t.stride(d) <= 0) return false;
  return true;
}
// Inputs: as they are when oneDNN can read them, else a contiguous copy.
Tensor readable(const Tensor& t) {
  if (!t.defined()) return t;
  if (t.dim() == 1) return t.stride(0) == 1 ? t : dense_copy(t);  // bias: format x
  return plain_strides(t) ? t : dense_copy(t);
}
bool usable(const Tensor& t) { return t.dtype() == DType::f32 && t.numel() > 0; }

// A forward entry's weights in its primitive's layout, scaled per output channel when an
// epilogue was folded (with the folded bias), for one weight storage at one write count.
struct Packed {
  std::weak_ptr<Storage> storage;
  uint64_t writes = 0;
  std::vector<float> fold;  // the folded scale, shift and bias: equal values reuse it
  memory weights, bias;     // bias: empty when nothing was folded (the op's own is bound)
};

// By (entry, weight storage, weight offset); g_cache_mutex held. Entries of storages that are
// gone are dropped when another is added; the whole cache is dropped past kPackedBytes.
std::map<std::tuple<const void*, const Storage*, int64_t>, Packed> g_packed;
int64_t g_packed_bytes = 0;
constexpr int64_t kPackedBytes = int64_t(2) << 30;

// Runs a created entry on the tensors (in the order of its binds); `extra`: post-op operands;
// `packed`: the weights (and a folded bias) already in the primitive's layout, bound in place
// of ts' (which may then be null).
void execute(Entry& e, const std::vector<const Tensor*>& ts,
             const std::vector<std::pair<int, memory>>& extra = {},
             const Packed* packed = nullptr) {
  try {
    dnnl::stream s(engine());
    auto& eng = engine();
    std::vector<std::unique_ptr<Scratch>> scratch;
    std::vector<memory> user(e.binds.size()), prim(e.binds.size());
    std::unordered_map<int, memory> args;
    for (size_t i = 0; i < e.binds.size(); ++i) {
      const Bind& b = e.binds[i];
      if (packed && (b.arg == DNNL_ARG_WEIGHTS || (b.arg == DNNL_ARG_BIAS && packed->bias))) {
        args.emplace(b.arg, b.arg == DNNL_ARG_WEIGHTS ? packed->weights : packed->bias);
        continue;
      }
      user[i] = memory(b.user, eng, const_cast<float*>(ref::ptr<float>(*ts[i])));
      if (b.same) {
        prim[i] = user[i];
      } else {
        scratch.push_back(std::make_unique<Scratch>(int64_t(b.prim.get_size())));
        prim[i] = memory(b.prim, eng, scratch.back()->p);
        if (!b.out) b.reorder.execute(s, user[i], prim[i]);
      }
      args.emplace(b.arg, prim[i]);
    }
    for (const auto& [arg, mem] : extra) args.emplace(arg, mem);
    e.prim.execute(s, args);
    for (size_t i = 0; i < e.binds.size(); ++i)
      if (e.binds[i].out && !e.binds[i].same) e.binds[i].reorder.execute(s, prim[i], user[i]);
    s.wait();
  } catch (const dnnl::error& err) {
    EMBER_FAIL("conv", "oneDNN convolution failed: ", err.what(), " (status ", int(err.status),
               ")");
  }
}

// What an epilogue folds into the weights: y * scale[c] + shift[c] (post_ops::fold_per_channel).
struct Fold {
  std::vector<float> scale, shift;
};

// e's weights for op (w: op.weight, or a copy of it) in e's layout, scaled and with the bias
// folded when `fold` is given: from g_packed when op's weight storage and write count match,
// else made (into g_packed when they can be kept, else into `local`). g_cache_mutex held.
const Packed* pack(const Entry& e, const ir::Conv& op, const Tensor& w, const Tensor& bias,
                   const Fold* fold, Packed& local) {
  const Bind* wb = nullptr;
  for (const Bind& b : e.binds)
    if (b.arg == DNNL_ARG_WEIGHTS) wb = &b;
  const std::shared_ptr<Storage>& st = w.impl()->storage;
  std::vector<float> fv;
  if (fold) {
    fv = fold->scale;
    fv.insert(fv.end(), fold->shift.begin(), fold->shift.end());
    if (bias.defined()) {
      const std::vector<double> b = host_values(bias);
      fv.insert(fv.end(), b.begin(), b.end());
    }
  }
  const bool keep = w.is_alias_of(op.weight) && op.weight_writes != ir::Conv::kUnknownWrites &&
                    !st->host_pointer_kept.load(std::memory_order_acquire);
  const auto key = std::make_tuple(static_cast<const void*>(&e), st.get(), w.offset());
  if (keep) {
    auto it = g_packed.find(key);
    if (it != g_packed.end() && it->second.storage.lock() == st &&
        it->second.writes == op.weight_writes && it->second.fold == fv)
      return &it->second;
  }
  Packed p;
  p.storage = st;
  p.writes = op.weight_writes;
  p.fold = fv;
  auto& eng = engine();
  dnnl::primitive_attr attr;
  if (fold) attr.set_output_scales(op.groups > 1 ? 3 : 1, fold->scale);  // per output channel
  p.weights = memory(wb->prim, eng);
  const memory src(wb->user, eng, const_cast<float*>(ref::ptr<float>(w)));
  dnnl::stream s(eng);
  dnnl::reorder(dnnl::reorder::primitive_desc(eng, wb->user, eng, wb->prim, attr))
      .execute(s, const_cast<memory&>(src), p.weights);
  s.wait();
  if (fold) {
    const int64_t c = int64_t(fold->scale.size());
    p.bias = memory(memory::desc({c}, kF32, memory::format_tag::x), eng);
    float* b = static_cast<float*>(p.bias.get_data_handle());
    for (int64_t i = 0; i < c; ++i)
      b[i] = (bias.defined() ? fv[size_t(2 * c + i)] * fold->scale[size_t(i)] : 0.f) +
             fold->shift[size_t(i)];
  }
  if (!keep) {
    local = std::move(p);
    return &local;
  }
  const int64_t bytes = int64_t(wb->prim.get_size());
  for (auto it = g_packed.begin(); it != g_packed.end();)  // drop those of gone storages
    if (it->second.storage.expired() || it->first == key) {
      g_packed_bytes -= int64_t(it->second.weights.get_desc().get_size());
      it = g_packed.erase(it);
    } else {
      ++it;
    }
  if (g_packed_bytes + bytes > kPackedBytes) {
    g_packed.clear();
    g_packed_bytes = 0;
  }
  g_packed_bytes += bytes;
  return &(g_packed[key] = std::move(p));
}

template <typename Op, typename Make>
std::unique_ptr<Entry> try_make(Make make, const std::vector<const Tensor*>& ts, const Op& op,
                                bool nhwc) {
  Geo g(op);
  g.nhwc = nhwc;
  try {
    return make(ts, g);
  } catch (const dnnl::error&) {
    return nullptr;  // not supported by oneDNN
  }
}

// A geometry's primitives: oneDNN's blocked layout (with reorders), and for channels-last
// activations (ts[0]: the input, or grad_dst for backward-data) also oneDNN on NHWC as it is.
struct Ways {
  std::unique_ptr<Entry> nhwc, blocked;
};

const char* kind_name(Kind k) {
  return k == Kind::forward         ? "forward"
         : k == Kind::backward_data ? "backward_data"
                                    : "backward_weights";
}

// The autotuner's shape class of a convolution: the kind, every shape with the batch rounded up
// to a power of two, and the geometry.
template <typename Op>
std::string shape_class(Kind kind, const std::vector<const Tensor*>& ts, const Op& op,
                        const Tensor* weight) {
  std::string s = kind_name(kind);
  for (size_t i = 0; i < ts.size(); ++i) {
    s += i ? "," : ".";
    for (int64_t d = 0; d < ts[i]->dim(); ++d) {
      // Activations (not weights or bias) lead with the batch.
      const bool batch = d == 0 && ts[i]->dim() > 2 && ts[i] != weight;
      const int64_t v = batch ? autotune::anchor(ts[i]->size(d)) : ts[i]->size(d);
      s += (d ? "x" : "") + std::to_string(v);
    }
  }
  for (const auto* v : {&op.stride, &op.pad_begin, &op.pad_end, &op.dilation}) {
    s += ".";
    for (size_t i = 0; i < v->size(); ++i) s += (i ? "x" : "") + std::to_string((*v)[i]);
  }
  return s + ".g" + std::to_string(op.groups);
}

// The way to run: NHWC as it is or blocked with reorders. Neither wins everywhere on AVX2
// (measured: NHWC is faster for 1x1 kernels, blocked for 3x3), so the autotuner times both per
// shape class (runtime/autotune.h); its default (EMBER_AUTOTUNE=off) is NHWC for 1x1 kernels,
// else blocked. Both compute the same convolution.
template <typename Op>
Entry* choose(Kind kind, Ways& w, const std::vector<const Tensor*>& ts, const Op& op,
              const Tensor& weight) {
  if (!w.nhwc || !w.blocked) return w.nhwc ? w.nhwc.get() : w.blocked.get();
  bool one_by_one = true;
  for (int64_t d = 2; d < weight.dim(); ++d) one_by_one = one_by_one && weight.size(d) == 1;
  Entry* es[2] = {one_by_one ? w.nhwc.get() : w.blocked.get(),
                  one_by_one ? w.blocked.get() : w.nhwc.get()};
  const std::vector<autotune::Candidate> cs{{one_by_one ? "nhwc" : "blocked"},
                                            {one_by_one ? "blocked" : "nhwc"}};
  autotune::Bench bench;
  bench.run = [&](size_t i) { execute(*es[i], ts); };
  bench.result = [&] {
    std::vector<double> v;
    for (size_t i = 0; i < ts.size(); ++i)
      if (es[0]->binds[i].out) {
        const std::vector<double> o = host_values(*ts[i]);
        v.insert(v.end(), o.begin(), o.end());
      }
    return v;
  };
  bench.warmup = 1;  // a primitive's first run initialises its scratch and JIT state
  bench.rtol = 1e-4;
  bench.max_rtol = 1e-4;
  bench.detail = [&] {
    std::string s = kind_name(kind);
    for (const Tensor* t : ts) s += " " + describe(*t);
    return s;
  };
  return es[tuner().pick("cpu.conv", dtype_name(DType::f32), shape_class(kind, ts, op, &weight), cs,
                         bench)];
}

// Finds or creates the primitives for (kind, tensors, geometry) and runs the chosen one; false
// when oneDNN declines the geometry. Tensors are in the order of the entry's binds.
std::mutex g_cache_mutex;  // one convolution at a time
std::map<std::vector<int64_t>, Ways> g_cache;

// The cached primitives for (kind, tensors, geometry), made on first use; g_cache_mutex held.
template <typename Op, typename Make>
Ways& ways_of(Kind kind, const std::vector<const Tensor*>& ts, const Op& op, Make make) {
  const auto key = key_of(kind, ts, op);
  auto it = g_cache.find(key);
  if (it == g_cache.end()) {
    Ways w;
    w.blocked = try_make(make, ts, op, false);
    if (channels_last(*ts[0])) w.nhwc = try_make(make, ts, op, true);
    it = g_cache.emplace(key, std::move(w)).first;
  }
  return it->second;
}

template <typename Op, typename Make>
bool run_cached(Kind kind, const std::vector<const Tensor*>& ts, const Op& op, Make make,
                const Tensor& weight) {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  Entry* e = choose(kind, ways_of(kind, ts, op, make), ts, op, weight);
  if (!e) return false;  // remembered, so it is not retried
  execute(*e, ts);
  return true;
}

}  // namespace

bool conv_dnnl(const ir::Conv& op) {
  if (!usable(op.src) || !usable(op.weight) || op.dst.numel() == 0 || !plain_strides(op.dst) ||
      (op.bias.defined() && op.bias.dtype() != DType::f32))
    return false;
  const Tensor x = readable(op.src), w = readable(op.weight), b = readable(op.bias);
  std::vector<const Tensor*> ts{&x, &w};
  if (b.defined()) ts.push_back(&b);
  ts.push_back(&op.dst);
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  Entry* e = choose(Kind::forward, ways_of(Kind::forward, ts, op, make_forward), ts, op, w);
  if (!e) return false;  // remembered, so it is not retried
  Packed local;
  execute(*e, ts, {}, pack(*e, op, w, b, nullptr, local));
  return true;
}

bool conv_dnnl_anchorable(const ir::Conv& op) {
  // Tensors oneDNN reads as they are (no dense copy of data that may still be pending).
  const Tensor& b = op.bias;
  if (!usable(op.src) || !usable(op.weight) || op.dst.numel() == 0 ||
      op.dst.dtype() != DType::f32 || !plain_strides(op.dst) || !plain_strides(op.src) ||
      !plain_strides(op.weight) || (b.defined() && (b.dtype() != DType::f32 || b.stride(0) != 1)))
    return false;
  std::vector<const Tensor*> ts{&op.src, &op.weight};
  if (b.defined()) ts.push_back(&b);
  ts.push_back(&op.dst);
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  const Ways& w = ways_of(Kind::forward, ts, op, make_forward);
  return w.blocked || w.nhwc;  // conv_dnnl will run it
}

namespace {

// The epilogue's primitives by (geometry, tensors, graph structure with its constants and
// parameters, binary operands' layouts); null: oneDNN declined every layout. g_cache_mutex held.
std::map<std::vector<int64_t>, std::unique_ptr<Entry>> g_epilogue_cache;

std::vector<int64_t> epilogue_key(const std::vector<const Tensor*>& ts, const ir::Conv& op,
                                  const ir::FusedGraph& g, int32_t anchor_input, int folded,
                                  const post_ops::Plan& p) {
  std::vector<int64_t> k = key_of(Kind::forward, ts, op);
  k.push_back(folded);
  const std::string gk = g.key();
  k.insert(k.end(), gk.begin(), gk.end());
  k.push_back(anchor_input);
  auto bits = [&](double v) {
    int64_t b;
    std::memcpy(&b, &v, sizeof b);
    k.push_back(b);
  };
  for (const ir::FusedGraph::Node& n : g.nodes) {
    if (n.kind == ir::FusedGraph::Kind::constant) bits(n.value.to_double());
    if (n.kind == ir::FusedGraph::Kind::unary) bits(n.p0), bits(n.p1), bits(n.p2);
  }
  for (const post_ops::Plan::Binary& b : p.binary) {
    k.push_back(b.index);
    k.push_back(b.src.dim());  // its md follows from its shape and strides
    k.insert(k.end(), b.src.shape().begin(), b.src.shape().end());
    k.insert(k.end(), b.src.strides().begin(), b.src.strides().end());
  }
  return k;
}

}  // namespace

bool conv_dnnl_epilogue(const ir::Conv& op, const ir::FusedGraph& g, int32_t anchor_input) {
  if (!conv_dnnl_anchorable(op) || g.outputs.size() != 1) return false;
  const Tensor& out = g.outputs[0].dst;
  const Dims dims = dims_of(op.dst);
  Dims out_strides;
  if (out.dtype() != DType::f32 || !post_ops::view_strides(out, dims, out_strides)) return false;
  post_ops::Plan p;
  if (!post_ops::plan_epilogue(g, anchor_input, dims, true, p)) return false;
  for (const post_ops::Plan::Binary& x : p.binary)  // written while read: left to the graph
    if (x.src.impl()->storage == out.impl()->storage) return false;
  // Leading per-channel affine steps go into the weights and bias (unless a value is not
  // finite: conv * inf is not (conv's weights * inf) summed).
  Fold fold;
  int folded = post_ops::fold_per_channel(p, op.dst.size(1), fold.scale, fold.shift);
  for (size_t c = 0; folded && c < fold.scale.size(); ++c)
    if (!std::isfinite(fold.scale[c]) || !std::isfinite(fold.shift[c])) folded = 0;
  if (folded) p = post_ops::drop_leading(p, folded);
  const memory::desc out_md(dims, kF32, out_strides);
  const Tensor& x = op.src;
  const Tensor& w = op.weight;
  const bool has_b = op.bias.defined() || folded;
  const memory::desc bmd =
      has_b ? memory::desc({op.dst.size(1)}, kF32, memory::format_tag::x) : memory::desc();
  dnnl::primitive_attr attr;
  attr.set_post_ops(p.po);
  // As choose()'s default: NHWC as it is for channels-last 1x1 kernels, else blocked (then
  // NHWC); the product never reaches memory in either.
  bool one_by_one = true;
  for (int64_t d = 2; d < w.dim(); ++d) one_by_one = one_by_one && w.size(d) == 1;
  std::vector<bool> ways;
  if (channels_last(x) && one_by_one) ways.push_back(true);
  ways.push_back(false);
  if (channels_last(x) && !one_by_one) ways.push_back(true);
  // oneDNN 2.6's gemm convolution read a full-size binary operand in another layout than dst's
  // at dst's offsets (an NCHW residual on an NHWC output came out wrong): not taken then.
  bool other_layout = false;
  for (const post_ops::Plan::Binary& b : p.binary)
    other_layout = other_layout || (b.md.dims() == dims && b.md != out_md);
  std::vector<const Tensor*> ts{&x, &w};
  if (has_b) ts.push_back(folded ? nullptr : &op.bias);  // folded: Packed's bias
  ts.push_back(&out);
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  // Made once per key: creating the primitive and its reorders each call cost more than the
  // passes the epilogue saves (ResNet-50's convolutions with batch_norm and relu).
  auto [it, fresh] = g_epilogue_cache.try_emplace(epilogue_key(ts, op, g, anchor_input, folded, p));
  for (size_t i = 0; fresh && i < ways.size(); ++i) {
    const bool nhwc = ways[i];
    Geo geo(op);
    geo.nhwc = nhwc;
    auto e = std::make_unique<Entry>();
    try {
      const dnnl::convolution_forward::primitive_desc pd(
          forward_desc(dnnl::prop_kind::forward_inference, dims_of(x), weight_dims(w, op.groups),
                       has_b ? &bmd : nullptr, dims, geo, nhwc),
          attr, engine());
      if (other_layout && std::strstr(pd.impl_info_str(), "gemm")) continue;
      e->prim = dnnl::convolution_forward(pd);
      e->binds.push_back(bind(DNNL_ARG_SRC, false, strided_desc(x), pd.src_desc()));
      e->binds.push_back(
          bind(DNNL_ARG_WEIGHTS, false, weight_desc(w, op.groups), pd.weights_desc()));
      if (has_b) e->binds.push_back(bind(DNNL_ARG_BIAS, false, bmd, pd.bias_desc()));
      e->binds.push_back(bind(DNNL_ARG_DST, true, out_md, pd.dst_desc()));
    } catch (const dnnl::error&) {
      continue;  // this layout with these post-ops is not taken
    }
    it->second = std::move(e);
    break;
  }
  if (!it->second) return false;  // remembered: not retried
  std::vector<std::pair<int, memory>> extra;
  for (const post_ops::Plan::Binary& b : p.binary)
    extra.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(b.index) | DNNL_ARG_SRC_1,
                     memory(b.md, engine(), const_cast<float*>(ref::ptr<float>(b.src)))});
  Packed local;
  execute(*it->second, ts, extra,
          pack(*it->second, op, w, op.bias, folded ? &fold : nullptr, local));
  count_fused_run();
  return true;
}

bool conv_dnnl_backward_data(const ir::ConvBackwardData& op) {
  if (!g_backward_enabled.load(std::memory_order_relaxed) || !usable(op.grad_dst) ||
      !usable(op.weight) || op.grad_src.numel() == 0 || op.grad_src.dtype() != DType::f32 ||
      !plain_strides(op.grad_src))
    return false;
  const Tensor gy = readable(op.grad_dst), w = readable(op.weight);
  if (!run_cached(Kind::backward_data, {&gy, &w, &op.grad_src}, op, make_backward_data, w))
    return false;
  g_backward_runs.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool conv_dnnl_backward_weights(const ir::ConvBackwardWeights& op) {
  const Tensor& gb = op.grad_bias;
  if (!g_backward_enabled.load(std::memory_order_relaxed) || !usable(op.src) ||
      !usable(op.grad_dst) || !usable(op.grad_weight) || op.grad_weight.dtype() != DType::f32 ||
      !plain_strides(op.grad_weight) ||
      (gb.defined() && (gb.dtype() != DType::f32 || gb.stride(0) != 1)))
    return false;
  const Tensor x = readable(op.src), gy = readable(op.grad_dst);
  std::vector<const Tensor*> ts{&x, &gy, &op.grad_weight};
  if (gb.defined()) ts.push_back(&gb);
  if (!run_cached(Kind::backward_weights, ts, op, make_backward_weights, op.grad_weight))
    return false;
  g_backward_runs.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void set_conv_backward_enabled(bool on) { g_backward_enabled.store(on); }

int64_t conv_backward_runs() { return g_backward_runs.load(std::memory_order_relaxed); }

}  // namespace ember::cpu
