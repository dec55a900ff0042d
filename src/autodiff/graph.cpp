// Recording: nodes, edges, saved tensors, leaf accumulators, in-place history rebasing.
#include "autodiff/graph.h"

#include <algorithm>
#include <atomic>

#include "autodiff/meta.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/indexing.h"
#include "ember/ops/reduce.h"
#include "tensor/internal.h"
#include "tensor/overlap.h"

namespace ember {

namespace {
thread_local bool g_grad_enabled = true;
thread_local bool g_inference = false;
std::atomic<uint64_t> g_seq{0};
std::atomic<int64_t> g_saved_bytes{0};
}  // namespace

bool is_grad_enabled() { return g_grad_enabled; }
void set_grad_enabled(bool on) { g_grad_enabled = on; }

bool is_inference_mode_enabled() { return g_inference; }
// As c10::InferenceMode: grad mode follows (off when enabled, on when disabled).
InferenceMode::InferenceMode(bool enabled)
    : prev_inference_(g_inference), prev_grad_(g_grad_enabled) {
  g_inference = enabled;
  g_grad_enabled = !enabled;
}
InferenceMode::~InferenceMode() {
  g_inference = prev_inference_;
  g_grad_enabled = prev_grad_;
}

namespace autograd {

int64_t saved_tensor_bytes() { return g_saved_bytes.load(); }

namespace {
int64_t bytes_of(const Tensor& t) { return t.defined() ? t.numel() * t.element_size() : 0; }

// An alias of t's data with no history and no view tracking.
Tensor alias(const Tensor& t) {
  auto impl = std::make_shared<TensorImpl>(*t.impl());
  impl->autograd.reset();
  impl->view_base.reset();
  return Tensor(std::move(impl));
}

// Whether the incoming gradient x may become the leaf's .grad as it is (torch's AccumulateGrad
// steals it too): no graph is being recorded, x carries no history, nothing but the engine's
// buffer holds it, its storage or (x a view, as a reshaped sum) its base (the recorded ops'
// snapshots of the storage, its `pending` count, aside), and x is laid out as the copy would be
// (every element of its storage once, in the leaf's memory format).
bool can_take(const Tensor& x, const Tensor& leaf) {
  const TensorImpl& xi = *x.impl();
  if (is_grad_enabled() || xi.autograd || xi.inference) return false;
  if (x.dtype() != leaf.dtype() || x.device() != leaf.device() || x.numel() == 0) return false;
  if (x.impl_ptr().use_count() != 1) return false;
  long holders = 1;
  if (const std::shared_ptr<TensorImpl>& base = xi.view_base) {
    if (base.use_count() != 1 || base->autograd || base->view_base || base->storage != xi.storage)
      return false;
    holders = 2;
  }
  const std::shared_ptr<Storage>& s = xi.storage;
  if (s.use_count() != holders + long(s->pending.load())) return false;
  return xi.offset == 0 && s->nbytes == x.numel() * int64_t(x.element_size()) &&
         x.strides() == detail::format_strides(x.shape(), leaf.memory_format());
}

/// Adds incoming gradients into a leaf's .grad.
struct AccumulateGrad : Node {
  std::weak_ptr<TensorImpl> leaf;
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    auto impl = leaf.lock();
    if (!impl || !impl->autograd) return {};
    Tensor& grad = impl->autograd->grad;
    if (grad.defined()) {
      grad = add(grad, g[0]);
    } else if (can_take(g[0], Tensor(impl))) {
      // The gradient itself: no copy (one kernel less per parameter and step; with fusion the
      // copy ran alone, between backward's last ops and the optimizer step's graphs).
      grad = alias(g[0]);
    } else {
      // A fresh copy laid out as the leaf (torch's gradient layout contract), so a channels-last
      // parameter's optimizer step reads both in the same order.
      const Tensor& x = g[0];
      grad = empty(x.shape(), {x.dtype(), x.device()}, Tensor(impl).memory_format()).copy_(x);
    }
    if (const auto hooks = impl->autograd->post_accumulate_hooks) {
      const auto fns = hooks->fns;  // a hook may remove itself
      const Tensor leaf_tensor(impl);
      for (const auto& f : fns) f.second(leaf_tensor);
    }
    return {};
  }
};

struct LambdaNode : Node {
  BackwardFn fn;
  std::vector<Tensor> apply(const std::vector<Tensor>& g) override {
    // No node name: it is often one the user never called (a reshape's ViewBackward).
    if (!fn)
      EMBER_FAIL("backward",
                 "trying to backward through the graph a second time (or to use saved tensors "
                 "after they were freed): the graph's saved tensors are freed when backward() or "
                 "autograd::grad() returns. Specify retain_graph = true in the first call "
                 "(loss.backward({}, true), or autograd::grad(outputs, inputs, {}, true)) if you "
                 "need to backward through the graph a second time or to use saved tensors after "
                 "a backward");
    return fn(g);
  }
  void release() override { fn = nullptr; }
};

AutogradMeta& meta(const Tensor& t) {
  auto& m = t.impl()->autograd;
  if (!m) m = std::make_shared<AutogradMeta>();
  return *m;
}
}  // namespace

SavedTensor::SavedTensor(const Tensor& t) : t_(t.defined() ? alias(t) : Tensor()) {
  if (!t_.defined()) return;
  version_ = t_.impl()->storage->version;
  g_saved_bytes += bytes_of(t_);
  if (!is_floating(t.dtype()) || !g_grad_enabled) return;  // indices never carry history
  if (t.requires_grad()) {
    // An input: its edge is already one of the recording node's (no new reference cycle).
    edge_ = gradient_edge(t);
    return;
  }
  // No history yet: an output of the node about to be recorded (record() fills output_), or a
  // constant (output_ stays empty).
  output_ = std::make_shared<SavedOutput>();
  auto& pending = meta(t).saved_outputs;
  pending.erase(std::remove_if(pending.begin(), pending.end(),
                               [](const std::weak_ptr<SavedOutput>& w) { return w.expired(); }),
                pending.end());
  pending.push_back(output_);
}
SavedTensor::~SavedTensor() { g_saved_bytes -= bytes_of(t_); }
SavedTensor::SavedTensor(const SavedTensor& o)
    : t_(o.t_), version_(o.version_), edge_(o.edge_), output_(o.output_) {
  g_saved_bytes += bytes_of(t_);
}
SavedTensor& SavedTensor::operator=(const SavedTensor& o) {
  if (this != &o) {
    g_saved_bytes -= bytes_of(t_);
    t_ = o.t_;
    version_ = o.version_;
    edge_ = o.edge_;
    output_ = o.output_;
    g_saved_bytes += bytes_of(t_);
  }
  return *this;
}

Tensor SavedTensor::get(const char* op) const {
  if (t_.defined() && t_.impl()->storage->version != version_)
    EMBER_FAIL("autograd", "a tensor of shape ", shape_str(t_.shape()), " needed by ", op,
               " was modified by an in-place operation after it was saved (version ",
               t_.impl()->storage->version, ", expected ", version_,
               "); clone it before modifying it");
  if (!g_grad_enabled || !t_.defined()) return t_;
  // A create_graph backward: a fresh alias with the saved tensor's history (a leaf's edge is its
  // AccumulateGrad node, so gradients through it still reach .grad / autograd::grad's capture).
  Edge e = edge_;
  if (!e.valid() && output_) e = {output_->node.lock(), output_->output_nr};
  if (!e.valid()) return t_;
  Tensor r = alias(t_);
  auto m = std::make_shared<AutogradMeta>();
  m->grad_fn = e.node;
  m->output_nr = e.input_nr;
  r.impl()->autograd = std::move(m);
  return r;
}

bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  if (!g_grad_enabled || g_inference) return false;
  for (const Tensor* t : inputs)
    if (t && t->defined() && t->requires_grad()) return true;
  return false;
}

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!g_grad_enabled || g_inference) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

namespace {
// Where a view's elements lie in a tensor laid out as its base (a gradient of the base, which
// is dense in the base's memory format), or in a flat buffer (as_strided's backward).
struct Region {
  Shape shape;
  Strides strides;
  int64_t offset;
  bool overlapping;  // several elements of the view share one element of the base
  Region(const Tensor& view, const Tensor& base)
      : Region(view.shape(), view.strides(), view.offset() - base.offset()) {}
  Region(Shape sh, Strides st, int64_t off)
      : shape(std::move(sh)),
        strides(std::move(st)),
        offset(off),
        overlapping(detail::overlaps_itself(shape, strides)) {}
  Tensor operator()(const Tensor& g) const {
    return detail::make_view(g, shape, strides, g.offset() + offset);
  }
  // Writes g (of the region's shape) into dst's region, where dst (dense in its memory format)
  // is zero: elements of g that alias one element of dst add up there.
  void scatter(const Tensor& dst, const Tensor& g) const {
    if (overlapping)
      detail::add_into((*this)(dst), g);
    else
      (*this)(dst).copy_(g);
  }
};

Tensor region_write(const Region& region, const Tensor& g, const Shape& bshape, DType bdtype,
                    MemoryFormat bfmt);

// region(gb).clone() for gb of the base's shape, recorded (its adjoint is region_write), so a
// create_graph backward through views and in-place writes stays differentiable.
Tensor region_read(const Region& region, const Tensor& gb, MemoryFormat bfmt) {
  const Tensor dense =
      gb.is_contiguous(bfmt) ? gb : empty(gb.shape(), {gb.dtype(), gb.device()}, bfmt).copy_(gb);
  Tensor out;
  {
    NoGradGuard no_grad;
    out = region(dense).clone();
  }
  const Shape bshape = gb.shape();
  const DType bdtype = gb.dtype();
  record1("AsStridedReadBackward", {dense}, out, [region, bshape, bdtype, bfmt](const Tensor& g) {
    return std::vector<Tensor>{region_write(region, g, bshape, bdtype, bfmt)};
  });
  return out;
}

// Zeros of the base's shape (laid out as the base) with region = g, recorded (adjoint:
// region_read).
Tensor region_write(const Region& region, const Tensor& g, const Shape& bshape, DType bdtype,
                    MemoryFormat bfmt) {
  Tensor gb = empty(bshape, {bdtype, g.device()}, bfmt);
  {
    NoGradGuard no_grad;
    gb.zero_();
    region.scatter(gb, g);
  }
  record1("AsStridedBackward", {g}, gb, [region, bfmt](const Tensor& gg) {
    return std::vector<Tensor>{region_read(region, gg, bfmt)};
  });
  return gb;
}

// view's history: the region of base that view reads.
void record_view_of(const Tensor& base, const Tensor& view) {
  const Region region(view, base);
  const Shape bshape = base.shape();
  const DType bdtype = base.dtype();
  const MemoryFormat bfmt = base.memory_format();
  record1("AsStridedBackward", {base}, view, [region, bshape, bdtype, bfmt](const Tensor& g) {
    if (needs_grad({&g})) return std::vector<Tensor>{region_write(region, g, bshape, bdtype, bfmt)};
    Tensor gb = empty(bshape, {bdtype, g.device()}, bfmt).zero_();
    region.scatter(gb, g);
    return std::vector<Tensor>{gb};
  });
}

// The storage elements [lo, hi) a geometry reaches (hi == lo when it has no elements).
std::pair<int64_t, int64_t> extent(const Geometry& g) {
  int64_t lo = g.offset, hi = g.offset + 1;
  if (numel_of(g.shape) == 0) return {lo, lo};
  for (size_t i = 0; i < g.shape.size(); ++i) {
    const int64_t d = (g.shape[i] - 1) * g.strides[i];
    (d < 0 ? lo : hi) += d;
  }
  return {lo, hi};
}
}  // namespace

Tensor as_strided_backward(const Tensor& grad, const Geometry& input, const Geometry& output) {
  const TensorOptions opts{grad.dtype(), grad.device()};
  if (numel_of(input.shape) == 0) return zeros(input.shape, opts);
  auto [lo, hi] = extent(input);
  if (numel_of(output.shape) > 0) {
    const auto [olo, ohi] = extent(output);
    lo = std::min(lo, olo);
    hi = std::max(hi, ohi);
  }
  // The covered storage as a flat zero buffer; both geometries are placed in it relative to lo.
  // Written with index_add / index_select (recorded ops), so a create_graph backward through
  // as_strided is differentiable too.
  const int64_t n = hi - lo;
  const Tensor slot = arange(n, {DType::i64, grad.device()});
  Tensor storage = zeros({n}, opts);
  if (numel_of(output.shape) > 0) {
    const Tensor out_slots = Region(output.shape, output.strides, output.offset - lo)(slot);
    storage = index_add(storage, 0, out_slots.reshape({-1}), grad.reshape({-1}));
  }
  const Region in(input.shape, input.strides, input.offset - lo);
  const Tensor in_slots = in(slot).reshape({-1});
  if (in.overlapping) {
    // Input elements that alias one storage element share its gradient (the count is 0 only
    // where the input reads nothing, so the division's inf/nan there is never read).
    const Tensor count = index_add(zeros({n}, opts), 0, in_slots, ones({in_slots.numel()}, opts));
    storage = storage / count;
  }
  return index_select(storage, 0, in_slots).reshape(input.shape);
}

void check_inference_write(const Tensor& t) {
  if (t.impl()->inference && !g_inference)
    EMBER_FAIL("InferenceMode", "in-place update to an inference tensor (", detail::describe(t),
               ", created under InferenceMode) outside InferenceMode is not allowed; make a "
               "clone() of it to get a normal tensor before updating it in place");
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.impl()->autograd) return {};
  AutogradMeta& m = *t.impl()->autograd;
  // A view whose base was written in place after its history was recorded: rebuild it.
  if (m.grad_fn && m.view_version >= 0 && m.view_version != t.impl()->storage->version &&
      t.impl()->view_base) {
    const Tensor base(t.impl()->view_base);
    if (base.requires_grad() && base.is_contiguous(base.memory_format())) record_view_of(base, t);
  }
  if (m.grad_fn) return {m.grad_fn, m.output_nr};
  if (!m.requires_grad) return {};
  auto acc = m.accumulator.lock();
  if (!acc) {
    auto node = std::make_shared<AccumulateGrad>();
    node->name = "AccumulateGrad";
    node->leaf = t.impl_ptr();
    node->outputs.push_back({t.shape(), t.dtype(), t.device()});
    if (m.hooks) node->pre_hooks.push_back({0, m.hooks});
    m.accumulator = node;
    acc = node;
  }
  return {acc, 0};
}

void record(const char* name, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            BackwardFn fn) {
  if (!needs_grad(inputs)) return;
  for (const Tensor& in : inputs)
    if (in.defined() && in.impl()->inference)
      EMBER_FAIL("autograd", "inference tensors cannot be saved for backward: a tensor of shape ",
                 shape_str(in.shape()),
                 " created under InferenceMode is an input of an op that records the graph. To "
                 "work around, make a clone() outside InferenceMode to get a normal tensor and "
                 "use it in autograd");
  auto node = std::make_shared<LambdaNode>();
  node->name = name;
  node->fn = std::move(fn);
  node->seq = g_seq++;
  for (const Tensor& in : inputs) node->next.push_back(gradient_edge(in));
  for (uint32_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    node->outputs.push_back({out.shape(), out.dtype(), out.device()});
    if (!is_floating(out.dtype())) continue;  // integer outputs (indices) carry no gradient
    // An op's result that is a view of the op's own scratch (matmul's [1, M, N] product viewed
    // as [M, N]) is its own base for in-place writes: else a write through a slice of it would
    // rebase the history of the scratch, which has none, and be lost from the gradient.
    if (out.impl()->view_base && !Tensor(out.impl()->view_base).requires_grad())
      out.impl()->view_base.reset();
    AutogradMeta& m = meta(out);
    m.grad_fn = node;
    m.output_nr = i;
    for (const auto& w : m.saved_outputs)
      if (auto saved = w.lock()) *saved = {node, i};
    m.saved_outputs.clear();
    m.view_version = out.impl()->view_base ? out.impl()->storage->version : -1;
  }
}

void run_pre_hooks(const Node& n, std::vector<Tensor>& grads) {
  for (const auto& [slot, hooks] : n.pre_hooks) {
    if (slot >= grads.size() || !grads[slot].defined()) continue;
    const auto fns = hooks->fns;  // a hook may remove itself
    for (const auto& [id, fn] : fns) {
      Tensor& g = grads[slot];
      Tensor r = fn(g);
      if (!r.defined()) continue;
      if (r.shape() != g.shape() || r.dtype() != g.dtype() || r.device() != g.device())
        EMBER_FAIL("register_hook", "a hook returned a gradient of ", detail::describe(r),
                   " for a gradient of ", detail::describe(g),
                   "; a hook may only replace it by one of the same shape, dtype and device");
      g = std::move(r);
    }
  }
}

void record1(const char* name, const std::vector<Tensor>& inputs, const Tensor& output,
             std::function<std::vector<Tensor>(const Tensor& grad)> fn) {
  if (!needs_grad(inputs)) return;
  record(name, inputs, {output},
         [f = std::move(fn)](const std::vector<Tensor>& g) { return f(g[0]); });
}

Tensor reduce_to(const Tensor& grad, const Shape& shape, DType dtype) {
  Tensor g = grad;
  if (g.shape() != shape) {
    const int64_t lead = g.dim() - int64_t(shape.size());
    std::vector<int64_t> dims;
    for (int64_t i = 0; i < g.dim(); ++i)
      if (i < lead || (shape[size_t(i - lead)] == 1 && g.shape()[size_t(i)] != 1))
        dims.push_back(i);
    if (!dims.empty()) g = sum(g, dims, true);
    g = g.reshape(shape);
  }
  return detail::cast(g, dtype);
}

void record_copy(const Tensor& dst, const Tensor& src, const Tensor&) {
  if (!g_grad_enabled || g_inference) return;
  const bool src_grad = src.requires_grad();
  const std::shared_ptr<TensorImpl>& base_impl = dst.impl()->view_base;
  Tensor base = base_impl ? Tensor(base_impl) : dst;
  if (!src_grad && !base.requires_grad()) return;
  if (base.is_leaf() && base.requires_grad())
    EMBER_FAIL("copy_", "a leaf tensor that requires grad (shape ", shape_str(base.shape()),
               ") is being used in an in-place operation; wrap it in NoGradGuard");
  const Shape src_shape = src.shape();
  const DType src_dtype = src.dtype();
  if (!base_impl) {
    // The whole tensor is overwritten: its gradient goes to src only.
    record1("CopyBackward", {src}, dst, [src_shape, src_dtype](const Tensor& g) {
      return std::vector<Tensor>{reduce_to(g, src_shape, src_dtype)};
    });
    return;
  }
  // A view was written: the base's new value is (old base outside the region, src inside).
  const Region region(dst, base);
  // Gradients of the base are laid out as the base (plain or channels-last), so that region()
  // finds the view's elements in them at the view's strides.
  const MemoryFormat bfmt = base.memory_format();
  if (!base.is_contiguous(bfmt))
    EMBER_FAIL("copy_", "in-place write through a view of a tensor that is not dense (shape ",
               shape_str(base.shape()), ", strides ", shape_str(base.strides()),
               ") is not supported with autograd");
  Tensor old_base = detail::make_view(base, base.shape(), base.strides(), base.offset());
  if (base.impl()->autograd)
    old_base.impl()->autograd = std::make_shared<AutogradMeta>(*base.impl()->autograd);
  record("CopySlices", {old_base, src}, {base},
         [region, src_shape, src_dtype, bfmt](const std::vector<Tensor>& gs) {
           const Tensor& g0 = gs[0];
           if (needs_grad({&g0})) {  // create_graph: the same gradients, recorded
             const Tensor inside = region_read(region, g0, bfmt);
             const Tensor rest = g0 - region_write(region, inside, g0.shape(), g0.dtype(), bfmt);
             return std::vector<Tensor>{rest, reduce_to(inside, src_shape, src_dtype)};
           }
           Tensor g = empty(g0.shape(), {g0.dtype(), g0.device()}, bfmt).copy_(g0);
           Tensor gsrc = reduce_to(region(g).clone(), src_shape, src_dtype);
           region(g).fill_(0);
           return std::vector<Tensor>{g, gsrc};
         });
  // The view itself now reads from the new base.
  record_view_of(base, dst);
}

}  // namespace autograd
}  // namespace ember
