// Tensor's autograd methods and gradient checkpointing.
#include <algorithm>

#include "autodiff/graph.h"
#include "autodiff/meta.h"
#include "ember/autograd/hooks.h"
#include "tensor/internal.h"

namespace ember {

namespace autograd {
void backward_from(const Tensor& out, const Tensor& gradient, std::optional<bool> retain_graph,
                   bool create_graph);
}

bool Tensor::requires_grad() const {
  detail::check_defined(*this, "requires_grad");
  const auto& m = impl_->autograd;
  return m && (m->requires_grad || m->grad_fn);
}

Tensor& Tensor::requires_grad_(bool on) {
  detail::check_defined(*this, "requires_grad_");
  auto& m = impl_->autograd;
  if (m && m->grad_fn) {
    if (on) return *this;
    EMBER_FAIL("requires_grad_",
               "can only change requires_grad of leaf tensors; use detach() "
               "(shape ",
               shape_str(shape()), ")");
  }
  if (on && !is_floating(dtype()))
    EMBER_FAIL("requires_grad_", "only floating-point tensors can require gradients, got ",
               detail::describe(*this));
  if (on && impl_->inference && !is_inference_mode_enabled())
    EMBER_FAIL("requires_grad_",
               "setting requires_grad on an inference tensor (created under InferenceMode) "
               "outside InferenceMode is not allowed; make a clone() of it outside "
               "InferenceMode to get a normal tensor");
  if (!m) m = std::make_shared<AutogradMeta>();
  m->requires_grad = on;
  // A leaf made by a view op (arange(6).reshape({2, 3}).requires_grad_()) is the base of its
  // own views from now on, so writes through them find the leaf and are refused, as torch.
  if (on) impl_->view_base = nullptr;
  return *this;
}

Tensor Tensor::grad() const {
  detail::check_defined(*this, "grad");
  return impl_->autograd ? impl_->autograd->grad : Tensor();
}

void Tensor::set_grad(const Tensor& g) {
  detail::check_defined(*this, "set_grad");
  if (g.defined() && g.shape() != shape())
    EMBER_FAIL("set_grad", "gradient shape ", shape_str(g.shape()), " does not match the tensor's ",
               shape_str(shape()));
  if (!impl_->autograd) impl_->autograd = std::make_shared<AutogradMeta>();
  impl_->autograd->grad = g;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph,
                      bool create_graph) const {
  autograd::backward_from(*this, gradient, retain_graph, create_graph);
}

Tensor Tensor::detach() const {
  detail::check_defined(*this, "detach");
  auto impl = std::make_shared<TensorImpl>(*impl_);
  impl->autograd.reset();
  impl->view_base.reset();
  return Tensor(std::move(impl));
}

bool Tensor::is_leaf() const {
  detail::check_defined(*this, "is_leaf");
  return !impl_->autograd || !impl_->autograd->grad_fn;
}

std::string Tensor::grad_fn_name() const {
  detail::check_defined(*this, "grad_fn_name");
  if (!impl_->autograd || !impl_->autograd->grad_fn) return "";
  autograd::gradient_edge(*this);  // a view rebuilds its history if its base was written since
  return impl_->autograd->grad_fn->name;
}

RemovableHandle Tensor::register_grad_hook(std::function<Tensor(const Tensor&)> hook) const {
  detail::check_defined(*this, "register_hook");
  if (!requires_grad())
    EMBER_FAIL("register_hook", "cannot register a hook on a tensor that does not require grad (",
               detail::describe(*this), "); call requires_grad_() on a leaf first");
  if (!hook) EMBER_FAIL("register_hook", "the hook is empty");
  AutogradMeta& m = *impl_->autograd;
  if (!m.hooks) m.hooks = std::make_shared<autograd::GradHooks>();
  // The node that receives this tensor's gradient: its grad_fn's output slot, or (a leaf) its
  // accumulator, which also takes the hooks whenever it is created again.
  const autograd::Edge e = autograd::gradient_edge(*this);
  if (e.valid()) {
    auto& pre = e.node->pre_hooks;
    const bool attached = std::any_of(pre.begin(), pre.end(), [&](const auto& p) {
      return p.first == e.input_nr && p.second == m.hooks;
    });
    if (!attached) pre.push_back({e.input_nr, m.hooks});
  }
  const uint64_t id = m.hooks->next_id++;
  m.hooks->fns.push_back({id, std::move(hook)});
  return RemovableHandle([w = std::weak_ptr<autograd::GradHooks>(m.hooks), id] {
    if (auto h = w.lock())
      h->fns.erase(std::remove_if(h->fns.begin(), h->fns.end(),
                                  [id](const auto& p) { return p.first == id; }),
                   h->fns.end());
  });
}

bool Tensor::is_inference() const {
  detail::check_defined(*this, "is_inference");
  return impl_->inference;
}

namespace autograd {

std::vector<Tensor> checkpoint(
    const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
    const std::vector<Tensor>& inputs) {
  std::vector<Tensor> outputs;
  {
    NoGradGuard no_grad;  // nothing inside fn is saved
    outputs = fn(inputs);
  }
  if (!needs_grad(inputs)) return outputs;
  std::vector<SavedTensor> saved;
  for (const Tensor& in : inputs) saved.emplace_back(in);
  record("CheckpointBackward", inputs, outputs, [fn, saved](const std::vector<Tensor>& grads) {
    // Rebuild the graph of fn on detached copies of the inputs, then differentiate it.
    std::vector<Tensor> ins, want;
    for (const SavedTensor& s : saved) {
      Tensor d = s.get("CheckpointBackward").detach();
      if (is_floating(d.dtype())) d.requires_grad_(true);
      ins.push_back(d);
    }
    std::vector<Tensor> outs;
    {
      EnableGradGuard enable;
      outs = fn(ins);
    }
    std::vector<Tensor> used_outs, used_grads;
    for (size_t i = 0; i < outs.size(); ++i)
      if (outs[i].requires_grad()) {
        used_outs.push_back(outs[i]);
        used_grads.push_back(grads[i]);
      }
    for (const Tensor& in : ins)
      if (in.requires_grad()) want.push_back(in);
    std::vector<Tensor> g = grad(used_outs, want, used_grads, false, true);
    std::vector<Tensor> result;
    size_t k = 0;
    for (const Tensor& in : ins) result.push_back(in.requires_grad() ? g[k++] : Tensor());
    return result;
  });
  return outputs;
}

}  // namespace autograd
}  // namespace ember

namespace ember::autograd {

RemovableHandle register_post_accumulate_grad_hook(const Tensor& leaf,
                                                   std::function<void(const Tensor&)> hook) {
  constexpr const char* op = "register_post_accumulate_grad_hook";
  detail::check_defined(leaf, op);
  if (!leaf.requires_grad() || !leaf.is_leaf())
    EMBER_FAIL(op, "the tensor must be a leaf that requires grad (", detail::describe(leaf),
               "); its .grad is what the hook reads");
  if (!hook) EMBER_FAIL(op, "the hook is empty");
  AutogradMeta& m = *leaf.impl()->autograd;
  if (!m.post_accumulate_hooks) m.post_accumulate_hooks = std::make_shared<PostAccumulateHooks>();
  const uint64_t id = m.post_accumulate_hooks->next_id++;
  m.post_accumulate_hooks->fns.push_back({id, std::move(hook)});
  return RemovableHandle([w = std::weak_ptr<PostAccumulateHooks>(m.post_accumulate_hooks), id] {
    if (auto h = w.lock())
      h->fns.erase(std::remove_if(h->fns.begin(), h->fns.end(),
                                  [id](const auto& p) { return p.first == id; }),
                   h->fns.end());
  });
}

}  // namespace ember::autograd
