// The cpu backend's forward convolution (ir::Conv, ir/fused.h) through oneDNN: f32, 1d/2d/3d,
// strided, padded, dilated, grouped and depthwise. oneDNN chooses its own (blocked) layouts;
// reorders from and to the tensors' strided layouts are part of the cached entry. Primitives are
// created once per geometry and kept in a cache keyed by every shape, stride and parameter.
// Anything oneDNN declines (it throws at creation) is reported as not taken.
#include <dnnl.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "backends/cpu/allocator.h"
#include "backends/cpu/kernels.h"
#include "backends/ref/dispatch.h"

namespace ember::cpu {

namespace {

using dnnl::memory;
using Dims = memory::dims;

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// One geometry: the convolution, and the reorders between the tensors' layouts and its own.
struct ConvEntry {
  dnnl::convolution_forward conv;
  memory::desc src_user, w_user, dst_user, bias_md;
  memory::desc src_prim, w_prim, dst_prim;
  dnnl::reorder src_reorder, w_reorder, dst_reorder;  // empty when the layouts agree
  bool src_same = true, w_same = true, dst_same = true;
};

// A buffer from the caching allocator for one of oneDNN's own layouts, for one call.
struct Scratch {
  void* p = nullptr;
  int64_t n = 0;
  explicit Scratch(int64_t bytes)
      : p(bytes ? host_allocator().allocate(bytes) : nullptr), n(bytes) {}
  ~Scratch() {
    if (p) host_allocator().deallocate(p, n);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

Dims dims_of(const Tensor& t) { return Dims(t.shape().begin(), t.shape().end()); }
Dims strides_of(const Tensor& t) { return Dims(t.strides().begin(), t.strides().end()); }

std::unique_ptr<ConvEntry> make_entry(const Tensor& x, const Tensor& w, const Tensor& bias,
                                      const Tensor& y, const ir::Conv& op) {
  auto e = std::make_unique<ConvEntry>();
  const auto f32 = memory::data_type::f32;
  const int64_t g = op.groups, nd = x.dim() - 2;
  e->src_user = memory::desc(dims_of(x), f32, strides_of(x));
  e->dst_user = memory::desc(dims_of(y), f32, strides_of(y));
  Dims wd = dims_of(w), ws = strides_of(w);
  if (g > 1) {  // [C_out, C_in/g, *K] viewed as [g, C_out/g, C_in/g, *K]
    wd.insert(wd.begin(), g);
    wd[1] /= g;
    ws.insert(ws.begin(), ws[0] * wd[1]);
  }
  e->w_user = memory::desc(wd, f32, ws);
  const memory::desc src_any(dims_of(x), f32, memory::format_tag::any);
  const memory::desc dst_any(dims_of(y), f32, memory::format_tag::any);
  const memory::desc w_any(wd, f32, memory::format_tag::any);
  Dims stride(op.stride.begin(), op.stride.end()), pl(op.pad_begin.begin(), op.pad_begin.end()),
      pr(op.pad_end.begin(), op.pad_end.end()), dil(static_cast<size_t>(nd), 0);
  for (size_t d = 0; d < size_t(nd); ++d) dil[d] = op.dilation[d] - 1;
  if (bias.defined()) e->bias_md = memory::desc({bias.size(0)}, f32, memory::format_tag::x);
  const auto desc =
      bias.defined() ? dnnl::convolution_forward::desc(
                           dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                           src_any, w_any, e->bias_md, dst_any, stride, dil, pl, pr)
                     : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                       dnnl::algorithm::convolution_direct, src_any,
                                                       w_any, dst_any, stride, dil, pl, pr);
  const dnnl::convolution_forward::primitive_desc pd(desc, engine());
  e->conv = dnnl::convolution_forward(pd);
  e->src_prim = pd.src_desc();
  e->w_prim = pd.weights_desc();
  e->dst_prim = pd.dst_desc();
  e->src_same = e->src_prim == e->src_user;
  e->w_same = e->w_prim == e->w_user;
  e->dst_same = e->dst_prim == e->dst_user;
  auto reorder = [](const memory::desc& from, const memory::desc& to) {
    return dnnl::reorder(dnnl::reorder::primitive_desc(engine(), from, engine(), to));
  };
  if (!e->src_same) e->src_reorder = reorder(e->src_user, e->src_prim);
  if (!e->w_same) e->w_reorder = reorder(e->w_user, e->w_prim);
  if (!e->dst_same) e->dst_reorder = reorder(e->dst_prim, e->dst_user);
  return e;
}

std::vector<int64_t> key_of(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y,
                            const ir::Conv& op) {
  std::vector<int64_t> k;
  for (const Tensor* t : {&x, &w, &y}) {
    k.push_back(t->dim());
    k.insert(k.end(), t->shape().begin(), t->shape().end());
    k.insert(k.end(), t->strides().begin(), t->strides().end());
  }
  k.push_back(b.defined() ? 1 : 0);
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

}  // namespace

bool conv_dnnl(const ir::Conv& op) {
  if (op.src.dtype() != DType::f32 || op.src.numel() == 0 || op.dst.numel() == 0 ||
      op.weight.numel() == 0)
    return false;
  const Tensor x = plain_strides(op.src) ? op.src : op.src.contiguous();
  const Tensor w = plain_strides(op.weight) ? op.weight : op.weight.contiguous();
  const Tensor b = !op.bias.defined() || op.bias.stride(0) == 1 ? op.bias : op.bias.contiguous();
  const Tensor& y = op.dst;
  if (!plain_strides(y)) return false;

  static std::mutex mu;
  static std::map<std::vector<int64_t>, std::unique_ptr<ConvEntry>> cache;
  std::lock_guard<std::mutex> lock(mu);  // entries hold scratch layouts; one conv at a time
  const auto key = key_of(x, w, b, y, op);
  auto it = cache.find(key);
  if (it == cache.end()) {
    std::unique_ptr<ConvEntry> e;
    try {
      e = make_entry(x, w, b, y, op);
    } catch (const dnnl::error&) {
      e = nullptr;  // not supported by oneDNN: remembered, so it is not retried
    }
    it = cache.emplace(key, std::move(e)).first;
  }
  if (!it->second) return false;
  ConvEntry& e = *it->second;
  try {
    dnnl::stream s(engine());
    auto& eng = engine();
    memory src_u(e.src_user, eng, const_cast<float*>(ref::ptr<float>(x)));
    memory w_u(e.w_user, eng, const_cast<float*>(ref::ptr<float>(w)));
    memory dst_u(e.dst_user, eng, ref::ptr<float>(y));
    Scratch ss(e.src_same ? 0 : int64_t(e.src_prim.get_size()));
    Scratch ws(e.w_same ? 0 : int64_t(e.w_prim.get_size()));
    Scratch ds(e.dst_same ? 0 : int64_t(e.dst_prim.get_size()));
    memory src_p = e.src_same ? src_u : memory(e.src_prim, eng, ss.p);
    memory w_p = e.w_same ? w_u : memory(e.w_prim, eng, ws.p);
    memory dst_p = e.dst_same ? dst_u : memory(e.dst_prim, eng, ds.p);
    if (!e.src_same) e.src_reorder.execute(s, src_u, src_p);
    if (!e.w_same) e.w_reorder.execute(s, w_u, w_p);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src_p}, {DNNL_ARG_WEIGHTS, w_p}, {DNNL_ARG_DST, dst_p}};
    if (b.defined())
      args.emplace(DNNL_ARG_BIAS, memory(e.bias_md, eng, const_cast<float*>(ref::ptr<float>(b))));
    e.conv.execute(s, args);
    if (!e.dst_same) e.dst_reorder.execute(s, dst_p, dst_u);
    s.wait();
  } catch (const dnnl::error& err) {
    EMBER_FAIL("conv", "oneDNN convolution failed: ", err.what(), " (status ", int(err.status),
               ")");
  }
  return true;
}

}  // namespace ember::cpu
