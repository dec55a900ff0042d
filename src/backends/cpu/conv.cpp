// The cpu backend's convolutions through oneDNN (ir/fused.h): the forward (ir::Conv) and the two
// backward passes (ir::ConvBackwardData, ir::ConvBackwardWeights); f32, 1d/2d/3d, strided,
// padded, dilated, grouped and depthwise; bf16 (and f16 where oneDNN has it) in oneDNN's native
// low-precision convolutions (f32 accumulation, one rounding to the dtype, as the composite's
// matmul: AVX512_BF16 / AMX kernels), declined when oneDNN has none or only a reference one for
// the CPU (below AVX-512, and f16 in oneDNN 2.6), so the composite (im2col + matmul) runs. The ways
// to run one (Ways, made once per geometry and kept in a cache keyed by the kind, every shape,
// stride and parameter; the autotuner picks one per shape class, choose()): oneDNN's own (blocked)
// layouts with reorders from and to the tensors' strided ones; NHWC / NDHWC as they are for
// channels-last activations; for forward 3x3 stride-1 kernels whose weights are used again
// unchanged, Winograd; for forward 1x1 stride-1 kernels on NHWC rows, a matmul. Anything oneDNN
// declines (it throws at creation) is reported as not taken.
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
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <type_traits>
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
using dnnl_util::data_of;
using dnnl_util::dims_of;
using dnnl_util::engine;
using dnnl_util::Scratch;
using dnnl_util::strided_desc;
using Dims = memory::dims;
using DT = memory::data_type;
const auto kF32 = DT::f32;

std::atomic<int64_t> g_backward_runs{0};
std::atomic<int64_t> g_winograd_runs{0};
std::atomic<int64_t> g_matmul_runs{0};
std::atomic<int64_t> g_half_runs{0};
std::atomic<bool> g_backward_enabled{true};

enum class Kind : int64_t { forward, backward_data, backward_weights };

// One tensor argument of a primitive: its strided layout, the primitive's, and the reorder
// between them (input: user -> prim before the primitive; output: prim -> user after it). An
// input oneDNN cannot reorder at once (channels-last weights into Winograd's layout) goes
// through a row-major copy `mid`: user -> mid (reorder), mid -> prim (reorder2).
struct Bind {
  int arg = 0;
  bool out = false;
  memory::desc user, prim, mid;
  dnnl::reorder reorder, reorder2;  // empty when the layouts agree / when there is no mid
  bool same = true, two_step = false;
};

struct Entry {
  dnnl::primitive prim;
  bool winograd = false, matmul = false;  // which way (counted for tests)
  int oc_mask = 1;                   // the weights' output-channel dims (output scales of a fold)
  std::vector<Bind> binds;           // in the order the tensors are passed to execute()
  std::vector<memory::desc> binary;  // a matmul's post-op operands as rows (else their own)
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
  return memory::desc(wd, dnnl_util::dnnl_type(w.dtype()), ws);
}
memory::desc any_desc(const Dims& d, DT dt) { return memory::desc(d, dt, memory::format_tag::any); }
// Activations: NHWC / NDHWC when the tensor is channels-last (oneDNN then runs on it as it is,
// with no reorder of input or output), else oneDNN's choice (a blocked layout, reordered).
memory::desc act_desc(const Dims& d, bool cl, DT dt) {
  if (!cl) return any_desc(d, dt);
  return memory::desc(d, dt, d.size() == 4 ? memory::format_tag::nhwc : memory::format_tag::ndhwc);
}
bool channels_last(const Tensor& t) { return t.memory_format() != MemoryFormat::contiguous; }
memory::desc bias_desc(const Tensor& b) {
  return memory::desc({b.size(0)}, dnnl_util::dnnl_type(b.dtype()), memory::format_tag::x);
}

// The geometry shared by the three kinds.
struct Geo {
  Dims stride, pl, pr, dil;
  int64_t groups = 1;
  bool nhwc = false;      // channels-last activations: run on NHWC as is (else blocked + reorders)
  bool winograd = false;  // oneDNN's Winograd F(4x4, 3x3) (its own layouts; forward only)
  DT dt = kF32;           // the tensors' data type (one for all)
  template <typename Op>
  explicit Geo(const Op& op)
      : stride(op.stride.begin(), op.stride.end()),
        pl(op.pad_begin.begin(), op.pad_begin.end()),
        pr(op.pad_end.begin(), op.pad_end.end()),
        groups(op.groups) {
    for (int64_t d : op.dilation) dil.push_back(d - 1);  // oneDNN counts the gaps
  }
};

// md's dims, dense and row-major.
memory::desc row_major(const memory::desc& md) {
  const Dims d = md.dims();
  Dims st(d.size(), 1);
  for (size_t i = d.size() - 1; i > 0; --i) st[i - 1] = st[i] * d[i];
  return memory::desc(d, md.data_type(), st);
}

Bind bind(int arg, bool out, const memory::desc& user, const memory::desc& prim) {
  Bind b;
  b.arg = arg;
  b.out = out;
  b.user = user;
  b.prim = prim;
  b.same = user == prim;
  if (b.same) return b;
  if (out) {
    b.reorder = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), prim, engine(), user));
    return b;
  }
  try {
    b.reorder = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), user, engine(), prim));
  } catch (const dnnl::error&) {
    b.mid = row_major(user);
    b.two_step = true;
    b.reorder = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), user, engine(), b.mid));
    b.reorder2 = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), b.mid, engine(), prim));
  }
  return b;
}

dnnl::convolution_forward::desc forward_desc(dnnl::prop_kind prop, const Dims& x, const Dims& w,
                                             const memory::desc* bias, const Dims& y, const Geo& g,
                                             bool cl) {
  const auto alg =
      g.winograd ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct;
  const DT dt = g.dt;
  if (bias)
    return dnnl::convolution_forward::desc(prop, alg, act_desc(x, cl, dt), any_desc(w, dt), *bias,
                                           act_desc(y, cl, dt), g.stride, g.dil, g.pl, g.pr);
  return dnnl::convolution_forward::desc(prop, alg, act_desc(x, cl, dt), any_desc(w, dt),
                                         act_desc(y, cl, dt), g.stride, g.dil, g.pl, g.pr);
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
  dnnl_util::require_fast(pd.impl_info_str(), g.dt);  // else the composite
  auto e = std::make_unique<Entry>();
  e->prim = dnnl::convolution_forward(pd);
  e->winograd = g.winograd;
  e->oc_mask = g.groups > 1 ? 3 : 1;  // [g, C_out / g, ...]
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
      dnnl::convolution_backward_data::desc(
          dnnl::algorithm::convolution_direct, act_desc(dims_of(gx), cl, g.dt), any_desc(wd, g.dt),
          act_desc(dims_of(gy), cl, g.dt), g.stride, g.dil, g.pl, g.pr),
      engine(), hint);
  dnnl_util::require_fast(pd.impl_info_str(), g.dt);  // else the composite
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
  const memory::desc xd = act_desc(dims_of(x), cl, g.dt), gyd = act_desc(dims_of(gy), cl, g.dt);
  const memory::desc wany = any_desc(wd, g.dt);
  const auto desc = has_b ? dnnl::convolution_backward_weights::desc(alg, xd, wany, bmd, gyd,
                                                                     g.stride, g.dil, g.pl, g.pr)
                          : dnnl::convolution_backward_weights::desc(alg, xd, wany, gyd, g.stride,
                                                                     g.dil, g.pl, g.pr);
  const dnnl::convolution_backward_weights::primitive_desc pd(desc, engine(), hint);
  dnnl_util::require_fast(pd.impl_info_str(), g.dt);  // else the composite
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
    k.push_back(int64_t(t->dtype()));
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
// f32, or bf16/f16 for oneDNN's native low-precision convolutions (every tensor one dtype).
bool usable(const Tensor& t, DType dt = DType::f32) {
  return t.dtype() == dt && (dt == DType::f32 || dt == DType::bf16 || dt == DType::f16) &&
         t.numel() > 0;
}

// A forward entry's weights in its primitive's layout, scaled per output channel when an
// epilogue was folded (with the folded bias), for one weight storage at one write count.
struct Packed {
  std::weak_ptr<Storage> storage;
  uint64_t writes = 0;
  std::vector<float> fold;          // the folded scale, shift and bias: equal values reuse it
  std::unique_ptr<Scratch> buffer;  // the weights' (from the caching allocator: training
                                    // repacks every step)
  memory weights, bias;             // bias: empty when nothing was folded (the op's own is bound)
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
      user[i] = memory(b.user, eng, data_of(*ts[i]));
      if (b.same) {
        prim[i] = user[i];
      } else {
        scratch.push_back(std::make_unique<Scratch>(int64_t(b.prim.get_size())));
        prim[i] = memory(b.prim, eng, scratch.back()->p);
        if (b.two_step) {
          scratch.push_back(std::make_unique<Scratch>(int64_t(b.mid.get_size())));
          memory mid(b.mid, eng, scratch.back()->p);
          b.reorder.execute(s, user[i], mid);
          b.reorder2.execute(s, mid, prim[i]);
        } else if (!b.out) {
          b.reorder.execute(s, user[i], prim[i]);
        }
      }
      args.emplace(b.arg, prim[i]);
    }
    for (const auto& [arg, mem] : extra) args.emplace(arg, mem);
    e.prim.execute(s, args);
    if (e.winograd) g_winograd_runs.fetch_add(1, std::memory_order_relaxed);
    if (e.matmul) g_matmul_runs.fetch_add(1, std::memory_order_relaxed);
    if (ts[0] && ts[0]->dtype() != DType::f32) g_half_runs.fetch_add(1, std::memory_order_relaxed);
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
  if (fold) attr.set_output_scales(e.oc_mask, fold->scale);  // per output channel
  p.buffer = std::make_unique<Scratch>(int64_t(wb->prim.get_size()));
  p.weights = memory(wb->prim, eng, p.buffer->p);
  memory src(wb->user, eng, data_of(w));
  dnnl::stream s(eng);
  if (wb->two_step || (fold && e.winograd)) {
    // Scaled on the way to a row-major copy: oneDNN's reorder into Winograd's layout gave
    // wrong values with output scales (ConvEpilogueTest.WinogradForReusedWeights...).
    const memory::desc mid_md = wb->two_step ? wb->mid : row_major(wb->user);
    const Scratch mid_buffer(int64_t(mid_md.get_size()));
    memory mid(mid_md, eng, mid_buffer.p);
    dnnl::reorder(dnnl::reorder::primitive_desc(eng, wb->user, eng, mid_md, attr))
        .execute(s, src, mid);
    dnnl::reorder(dnnl::reorder::primitive_desc(eng, mid_md, eng, wb->prim))
        .execute(s, mid, p.weights);
  } else {
    dnnl::reorder(dnnl::reorder::primitive_desc(eng, wb->user, eng, wb->prim, attr))
        .execute(s, src, p.weights);
  }
  s.wait();
  if (fold) {
    const int64_t c = int64_t(fold->scale.size());
    const Bind* bb = nullptr;
    for (const Bind& b : e.binds)
      if (b.arg == DNNL_ARG_BIAS) bb = &b;
    p.bias = memory(bb ? bb->prim : memory::desc({c}, kF32, memory::format_tag::x), eng);
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

// The weight (storage, write count) each forward convolution last ran with (seen()); reused():
// whether op's weight is that one again, unchanged, as in inference. g_cache_mutex held.
std::map<std::pair<const Storage*, int64_t>, std::pair<std::weak_ptr<Storage>, uint64_t>> g_seen;
bool trackable(const ir::Conv& op, const Tensor& w) {
  return w.is_alias_of(op.weight) && op.weight_writes != ir::Conv::kUnknownWrites &&
         !w.impl()->storage->host_pointer_kept.load(std::memory_order_acquire);
}
bool reused(const ir::Conv& op, const Tensor& w) {
  if (!trackable(op, w)) return false;
  const auto it = g_seen.find({w.impl()->storage.get(), w.offset()});
  return it != g_seen.end() && it->second.first.lock() == w.impl()->storage &&
         it->second.second == op.weight_writes;
}
void seen(const ir::Conv& op, const Tensor& w) {
  if (!trackable(op, w)) return;
  if (g_seen.size() > 4096)  // drop those of gone storages
    for (auto it = g_seen.begin(); it != g_seen.end();)
      it = it->second.first.expired() ? g_seen.erase(it) : std::next(it);
  g_seen[{w.impl()->storage.get(), w.offset()}] = {w.impl()->storage, op.weight_writes};
}

template <typename Op, typename Make>
std::unique_ptr<Entry> try_make(Make make, const std::vector<const Tensor*>& ts, const Op& op,
                                bool nhwc, bool winograd = false) {
  Geo g(op);
  g.nhwc = nhwc;
  g.winograd = winograd;
  g.dt = dnnl_util::dnnl_type(ts[0]->dtype());
  try {
    return make(ts, g);
  } catch (const dnnl::error&) {
    return nullptr;  // not supported by oneDNN
  }
}

// A geometry's primitives: oneDNN's blocked layout (with reorders), and for channels-last
// activations (ts[0]: the input, or grad_dst for backward-data) also oneDNN on NHWC as it is.
// winograd: forward 3x3 kernels of stride 1 (what oneDNN's takes), a candidate only for weights
// used again unchanged (reused(): inference), timed with its transformed weights packed. Its
// weight transform costs more than many a convolution (ResNet-50's 512x7x7: 55 ms against 5),
// so weights written between calls (training) never take it; its rounding differs from the
// direct sum's (relative 1e-6 here).
// matmul: a 1x1 convolution of stride 1 without padding on NHWC activations is a product of
// [N*H*W, C_in] rows with the weights (as_rows); oneDNN's matmul beat its 1x1 convolutions on
// most of ResNet-50's (and takes a full-size residual post-op that brgconv_1x1 declines).
struct Ways {
  std::unique_ptr<Entry> nhwc, blocked, winograd, matmul;
};

// t [N, C, *S] viewed as rows [N * prod(S), C] (channel stride 1, the rest one stride), or a zero
// desc when it is not; `dims`: t's dims (a post-op operand's, broadcast dims 1).
memory::desc as_rows(const Dims& dims, const Dims& strides) {
  if (dims.size() < 3) return memory::desc();
  int64_t rows = 1, step = 0, expect = -1;
  for (size_t d = dims.size(); d-- > 0;) {  // the dims but channels, innermost first
    if (d == 1 || dims[d] == 1) continue;
    if (expect >= 0 && strides[d] != expect) return memory::desc();
    if (expect < 0) step = strides[d];
    expect = strides[d] * dims[d];
    rows *= dims[d];
  }
  const int64_t c = dims[1];
  if (c > 1 && strides[1] != 1) return memory::desc();
  if (rows == 1) step = std::max<int64_t>(c, 1);
  if (step < c) return memory::desc();  // rows would overlap
  return memory::desc({rows, c}, kF32, {step, 1});
}
memory::desc as_rows(const Tensor& t) {
  return as_rows(dims_of(t), Dims(t.strides().begin(), t.strides().end()));
}
memory::desc as_rows(const memory::desc& md) {
  const Dims d = md.dims();
  const Dims st(md.data.format_desc.blocking.strides,
                md.data.format_desc.blocking.strides + d.size());
  return as_rows(d, st);
}

// Whether op (forward) can run as a matmul: 2d, 1x1, stride 1, no padding, one group.
bool matmul_shape(const ir::Conv& op) {
  if (op.weight.dim() != 4 || op.weight.size(2) != 1 || op.weight.size(3) != 1 || op.groups != 1)
    return false;
  for (size_t d = 0; d < op.stride.size(); ++d)
    if (op.stride[d] != 1 || op.pad_begin[d] != 0 || op.pad_end[d] != 0) return false;
  return true;
}

// The matmul entry for x, w, [bias], out (binds in that order; `bias`: the bind's desc is
// [1, C_out], null when none) with post-ops `po` whose binary operands are `binary` (4-d, as
// post_ops::Plan's); null when a view does not reduce to rows or oneDNN declines.
std::unique_ptr<Entry> make_matmul(const Tensor& x, const Tensor& w, bool bias, const Tensor& out,
                                   const dnnl::post_ops* po,
                                   const std::vector<memory::desc>& binary) {
  const memory::desc xr = as_rows(x), yr = as_rows(out);
  if (xr.is_zero() || yr.is_zero() || xr.dims()[0] != yr.dims()[0]) return nullptr;
  const int64_t k = w.size(1), n = w.size(0);
  const memory::desc wr({k, n}, kF32, {w.stride(1), w.stride(0)});
  const memory::desc wany({k, n}, kF32, memory::format_tag::any);
  const memory::desc br({1, n}, kF32, {n, 1});
  auto e = std::make_unique<Entry>();
  dnnl::post_ops rows_po;
  for (int i = 0; po && i < po->len(); ++i) {
    if (po->kind(i) == dnnl::primitive::kind::eltwise) {
      float sc, alpha, beta;
      dnnl::algorithm alg;
      po->get_params_eltwise(i, sc, alg, alpha, beta);
      rows_po.append_eltwise(sc, alg, alpha, beta);
      continue;
    }
    dnnl::algorithm alg;
    memory::desc md;
    po->get_params_binary(i, alg, md);
    // Full-size operands and per-channel / scalar ones only: rows of another count (a
    // per-image or per-pixel broadcast) were accepted by oneDNN and came out wrong.
    const memory::desc& b = binary[e->binary.size()];
    const Dims bd = b.dims(), od = dims_of(out);
    bool channel_only = true;
    for (size_t d = 0; d < bd.size(); ++d) channel_only = channel_only && (d == 1 || bd[d] == 1);
    const memory::desc r = as_rows(b);
    if (r.is_zero() || !(bd == od || channel_only)) return nullptr;
    e->binary.push_back(r);
    rows_po.append_binary(alg, r);
  }
  dnnl::primitive_attr attr;
  attr.set_post_ops(rows_po);
  try {
    const dnnl::matmul::primitive_desc pd(
        bias ? dnnl::matmul::desc(xr, wany, br, yr) : dnnl::matmul::desc(xr, wany, yr), attr,
        engine());
    if (!post_ops::exact_post_ops(pd.impl_info_str(), rows_po)) return nullptr;
    e->prim = dnnl::matmul(pd);
    e->oc_mask = 2;
    e->matmul = true;
    e->binds.push_back(bind(DNNL_ARG_SRC, false, xr, pd.src_desc()));
    e->binds.push_back(bind(DNNL_ARG_WEIGHTS, false, wr, pd.weights_desc()));
    if (bias) e->binds.push_back(bind(DNNL_ARG_BIAS, false, br, pd.bias_desc()));
    e->binds.push_back(bind(DNNL_ARG_DST, true, yr, pd.dst_desc()));
  } catch (const dnnl::error&) {
    return nullptr;
  }
  return e;
}

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

// The ways in order: NHWC as it is and blocked with reorders (neither wins everywhere on AVX2:
// NHWC was faster for 1x1 kernels, blocked for 3x3), then Winograd when `reused`; those made.
std::vector<std::pair<const char*, Entry*>> ways_in_order(const Ways& w, const Tensor& weight,
                                                          bool reused) {
  bool one_by_one = true;
  for (int64_t d = 2; d < weight.dim(); ++d) one_by_one = one_by_one && weight.size(d) == 1;
  const std::pair<const char*, Entry*> all[4] = {
      {one_by_one ? "nhwc" : "blocked", one_by_one ? w.nhwc.get() : w.blocked.get()},
      {one_by_one ? "blocked" : "nhwc", one_by_one ? w.blocked.get() : w.nhwc.get()},
      {"winograd", reused ? w.winograd.get() : nullptr},
      {"matmul", w.matmul.get()}};
  std::vector<std::pair<const char*, Entry*>> made;
  for (const auto& a : all)
    if (a.second) made.push_back(a);
  return made;
}

// The way to run: the autotuner times the ways per shape class (runtime/autotune.h); its default
// (EMBER_AUTOTUNE=off) is the first of ways_in_order. All compute the same convolution.
// Winograd's rounding differs from the direct sum's (and its transforms overflow sooner: an inf
// input or values near the float limit give inf / NaN where the direct sum does not), and it is
// a candidate from a weight's
// second call on: only EMBER_AUTOTUNE=full takes it (in a class of its own), so that at the
// default effort a call's results never depend on whether the weight was seen before.
// `packed` (forward only): the weights each way runs with.
template <typename Op>
Entry* choose(Kind kind, Ways& w, const std::vector<const Tensor*>& ts, const Op& op,
              const Tensor& weight, bool reused = false,
              const std::function<const Packed*(Entry&)>& packed = nullptr) {
  reused = reused && w.winograd && tuner().options().effort == autotune::Effort::full;
  const auto made = ways_in_order(w, weight, reused);
  if (made.size() <= 1) return made.empty() ? nullptr : made[0].second;
  std::vector<Entry*> es;
  std::vector<autotune::Candidate> cs;
  for (const auto& m : made) {
    es.push_back(m.second);
    cs.push_back({m.first});
  }
  autotune::Bench bench;
  bench.run = [&](size_t i) { execute(*es[i], ts, {}, packed ? packed(*es[i]) : nullptr); };
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
  // bf16/f16: the ways sum in other orders, then round (two units in the last place).
  const DType dt = ts[0]->dtype();
  bench.rtol = dt == DType::bf16 ? 1.0 / 64 : dt == DType::f16 ? 1.0 / 512 : 1e-4;
  bench.max_rtol = 1e-4;
  bench.detail = [&] {
    std::string s = kind_name(kind);
    for (const Tensor* t : ts) s += " " + describe(*t);
    return s;
  };
  return es[tuner().pick("cpu.conv", dtype_name(dt),
                         shape_class(kind, ts, op, &weight) + (reused ? ".reused" : ""), cs,
                         bench)];
}

// Finds or creates the primitives for (kind, tensors, geometry) and runs the chosen one; false
// when oneDNN declines the geometry. Tensors are in the order of the entry's binds.
std::mutex g_cache_mutex;  // one convolution at a time
std::map<std::vector<int64_t>, Ways> g_cache;

// Whether oneDNN's Winograd may take the geometry: 2d, 3x3, stride 1, no dilation, one group.
template <typename Op>
bool winograd_shape(const Op& op, const Tensor& weight) {
  if (weight.dim() != 4 || weight.size(2) != 3 || weight.size(3) != 3 || op.groups != 1)
    return false;
  for (size_t d = 0; d < op.stride.size(); ++d)
    if (op.stride[d] != 1 || op.dilation[d] != 1) return false;
  return true;
}

// The cached primitives for (kind, tensors, geometry), made on first use; g_cache_mutex held.
template <typename Op, typename Make>
Ways& ways_of(Kind kind, const std::vector<const Tensor*>& ts, const Op& op, Make make) {
  const auto key = key_of(kind, ts, op);
  auto it = g_cache.find(key);
  if (it == g_cache.end()) {
    Ways w;
    w.blocked = try_make(make, ts, op, false);
    if (channels_last(*ts[0])) w.nhwc = try_make(make, ts, op, true);
    const bool f32 = ts[0]->dtype() == DType::f32;  // Winograd and the matmul way: f32 only
    if (f32 && kind == Kind::forward && winograd_shape(op, *ts[1]))
      w.winograd = try_make(make, ts, op, false, true);
    if constexpr (std::is_same_v<Op, ir::Conv>)
      if (f32 && kind == Kind::forward && matmul_shape(op))
        w.matmul = make_matmul(*ts[0], *ts[1], ts.size() == 4, *ts.back(), nullptr, {});
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
  const DType dt = op.src.dtype();
  if (!usable(op.src, dt) || !usable(op.weight, dt) || op.dst.dtype() != dt ||
      op.dst.numel() == 0 || !plain_strides(op.dst) || (op.bias.defined() && op.bias.dtype() != dt))
    return false;
  const Tensor x = readable(op.src), w = readable(op.weight), b = readable(op.bias);
  std::vector<const Tensor*> ts{&x, &w};
  if (b.defined()) ts.push_back(&b);
  ts.push_back(&op.dst);
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  Packed local;
  auto packed = [&](Entry& e) { return pack(e, op, w, b, nullptr, local); };
  Entry* e = choose(Kind::forward, ways_of(Kind::forward, ts, op, make_forward), ts, op, w,
                    reused(op, w), packed);
  if (!e) return false;  // remembered, so it is not retried
  execute(*e, ts, {}, packed(*e));
  seen(op, w);
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
  return w.blocked || w.nhwc;  // conv_dnnl will run it (winograd only besides these)
}

namespace {

// The epilogue's primitives by (geometry, tensors, graph structure with its constants and
// parameters, binary operands' layouts); null: oneDNN declined every layout. g_cache_mutex held.
std::map<std::vector<int64_t>, std::unique_ptr<Entry>> g_epilogue_cache;

std::vector<int64_t> epilogue_key(const std::vector<const Tensor*>& ts, const ir::Conv& op,
                                  const ir::FusedGraph& g, int32_t anchor_input, int folded,
                                  bool reused, const post_ops::Plan& p) {
  std::vector<int64_t> k = key_of(Kind::forward, ts, op);
  k.push_back(folded);
  k.push_back(reused);
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
  // Nor when a scale is beyond 1e10 or below 1e-10 (but 0): weight * scale could overflow or
  // underflow where (conv * scale) does not (conv / 3e-39 folds a scale of 3.3e38).
  for (size_t c = 0; folded && c < fold.scale.size(); ++c) {
    const float a = std::fabs(fold.scale[c]);
    if (!std::isfinite(fold.scale[c]) || !std::isfinite(fold.shift[c]) || a > 1e10f ||
        (a != 0 && a < 1e-10f))
      folded = 0;
  }
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
  // NHWC); the product never reaches memory in any. Winograd first for reused weights when the
  // plain convolution's autotuner picks it (choose() times the ways once) and every post-op is
  // element-wise. {nhwc, winograd} each.
  bool one_by_one = true;
  for (int64_t d = 2; d < w.dim(); ++d) one_by_one = one_by_one && w.size(d) == 1;
  std::vector<std::pair<bool, bool>> ways;
  if (channels_last(x) && one_by_one) ways.push_back({true, false});
  ways.push_back({false, false});
  if (channels_last(x) && !one_by_one) ways.push_back({true, false});
  std::vector<const Tensor*> ts{&x, &w};
  if (has_b) ts.push_back(folded ? nullptr : &op.bias);  // folded: Packed's bias
  ts.push_back(&out);
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  const bool again = reused(op, w);
  // Made once per key: creating the primitive and its reorders each call cost more than the
  // passes the epilogue saves (ResNet-50's convolutions with batch_norm and relu).
  auto [it, fresh] =
      g_epilogue_cache.try_emplace(epilogue_key(ts, op, g, anchor_input, folded, again, p));
  if (fresh && ((again && p.binary.empty() && winograd_shape(op, w)) || matmul_shape(op))) {
    std::vector<const Tensor*> pts{&x, &w};
    if (op.bias.defined()) pts.push_back(&op.bias);
    pts.push_back(&op.dst);
    Ways& plain = ways_of(Kind::forward, pts, op, make_forward);
    Packed local;
    auto packed = [&](Entry& e) { return pack(e, op, w, op.bias, nullptr, local); };
    const Entry* pick = choose(Kind::forward, plain, pts, op, w, again, packed);
    if (pick && pick == plain.winograd.get() && p.binary.empty())
      ways.insert(ways.begin(), {false, true});
    if (pick && pick == plain.matmul.get()) {  // the epilogue's matmul, else a convolution
      std::vector<memory::desc> mds;
      for (const post_ops::Plan::Binary& b : p.binary) mds.push_back(b.md);
      it->second = make_matmul(x, w, has_b, out, &p.po, mds);
    }
  }
  for (size_t i = 0; fresh && !it->second && i < ways.size(); ++i) {
    const bool nhwc = ways[i].first;
    Geo geo(op);
    geo.nhwc = nhwc;
    geo.winograd = ways[i].second;
    auto e = std::make_unique<Entry>();
    try {
      const dnnl::convolution_forward::primitive_desc pd(
          forward_desc(dnnl::prop_kind::forward_inference, dims_of(x), weight_dims(w, op.groups),
                       has_b ? &bmd : nullptr, dims, geo, nhwc),
          attr, engine());
      if (!post_ops::exact_post_ops(pd.impl_info_str(), p.po)) continue;
      // oneDNN 2.6's gemm convolution runs binary post-ops element by element through its
      // reference path (an NCHW ResNet-50 residual + relu: 36 ms where the convolution and a
      // fused pass take 3), and applied operands in another layout than its dst's at the wrong
      // elements: left to the plain convolution and the epilogue's own graph.
      if (!p.binary.empty() && std::strstr(pd.impl_info_str(), "gemm")) continue;
      e->prim = dnnl::convolution_forward(pd);
      e->winograd = geo.winograd;
      e->oc_mask = op.groups > 1 ? 3 : 1;
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
  const std::vector<memory::desc>& rows = it->second->binary;
  for (size_t j = 0; j < p.binary.size(); ++j) {
    const post_ops::Plan::Binary& b = p.binary[j];
    extra.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(b.index) | DNNL_ARG_SRC_1,
                     memory(rows.empty() ? b.md : rows[j], engine(),
                            const_cast<float*>(ref::ptr<float>(b.src)))});
  }
  Packed local;
  execute(*it->second, ts, extra,
          pack(*it->second, op, w, op.bias, folded ? &fold : nullptr, local));
  seen(op, w);
  count_fused_run();
  return true;
}

bool conv_dnnl_backward_data(const ir::ConvBackwardData& op) {
  const DType dt = op.grad_dst.dtype();
  if (!g_backward_enabled.load(std::memory_order_relaxed) || !usable(op.grad_dst, dt) ||
      !usable(op.weight, dt) || op.grad_src.numel() == 0 || op.grad_src.dtype() != dt ||
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
  const DType dt = op.src.dtype();
  if (!g_backward_enabled.load(std::memory_order_relaxed) || !usable(op.src, dt) ||
      !usable(op.grad_dst, dt) || !usable(op.grad_weight, dt) || !plain_strides(op.grad_weight) ||
      (gb.defined() && (gb.dtype() != dt || gb.stride(0) != 1)))
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

int64_t conv_winograd_runs() { return g_winograd_runs.load(std::memory_order_relaxed); }

int64_t conv_matmul_runs() { return g_matmul_runs.load(std::memory_order_relaxed); }

int64_t conv_half_runs() { return g_half_runs.load(std::memory_order_relaxed); }

}  // namespace ember::cpu
