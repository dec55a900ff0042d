// Custom differentiable ops (ember/autograd/function.h): the context, and the recording of a
// Function's node through autograd::record.
#include "ember/autograd/function.h"

#include <algorithm>

#include "autodiff/graph.h"
#include "autodiff/meta.h"
#include "tensor/internal.h"

#if __has_include(<cxxabi.h>)
#include <cxxabi.h>

#include <cstdlib>
#endif

namespace ember::autograd {

// ---- IValue ----

const char* IValue::kind() const {
  static const char* const kNames[] = {"None",   "bool",   "int",      "double",
                                       "string", "Tensor", "int list", "double list"};
  return kNames[v_.index()];
}

void IValue::wrong_kind(const char* want) const {
  EMBER_FAIL("saved_data", "expected ", want, ", the value is ", isInt() ? "an " : "a ", kind());
}

// ---- AutogradContext ----

struct AutogradContext::State {
  std::string name;  // the Function's type name, for messages ("MulConst")
  bool in_forward = true;
  std::vector<Tensor> to_save;  // until forward returns
  std::vector<SavedTensor> saved;
  std::vector<bool> needs_grad;  // per tensor input
  std::vector<Tensor> dirty, non_differentiable;
  std::vector<Tensor> inputs;  // the tensor arguments, until forward returns
  std::vector<int> arg_input;  // per forward argument: its index in inputs, or -1
};

AutogradContext::AutogradContext() : state_(std::make_unique<State>()) {}
AutogradContext::~AutogradContext() = default;

void AutogradContext::save_for_backward(std::vector<Tensor> to_save) {
  if (!state_->in_forward)
    EMBER_FAIL(state_->name.c_str(), "save_for_backward can only be called in forward");
  state_->to_save = std::move(to_save);
}

std::vector<Tensor> AutogradContext::get_saved_variables() const {
  if (state_->in_forward)
    EMBER_FAIL(state_->name.c_str(),
               "get_saved_variables is for backward; in forward use the tensors themselves");
  std::vector<Tensor> out;
  out.reserve(state_->saved.size());
  for (const SavedTensor& s : state_->saved) out.push_back(s.get(state_->name.c_str()));
  return out;
}

void AutogradContext::mark_dirty(const std::vector<Tensor>& inputs) {
  state_->dirty.insert(state_->dirty.end(), inputs.begin(), inputs.end());
}

void AutogradContext::mark_non_differentiable(const std::vector<Tensor>& outputs) {
  state_->non_differentiable.insert(state_->non_differentiable.end(), outputs.begin(),
                                    outputs.end());
}

bool AutogradContext::needs_input_grad(size_t i) const {
  if (i >= state_->needs_grad.size())
    EMBER_FAIL(state_->name.c_str(), "needs_input_grad(", i, "): the Function has ",
               state_->needs_grad.size(), " tensor inputs");
  return state_->needs_grad[i];
}

// ---- Function<T>::apply ----

namespace detail {

namespace {
// "MulConst" for "(anonymous namespace)::MulConst" or "ns::MulConst" (templates kept whole).
std::string type_name(const char* mangled) {
  std::string s = mangled;
#if __has_include(<cxxabi.h>)
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  if (d && status == 0) s = d;
  std::free(d);
#endif
  if (s.find('<') == std::string::npos) {
    const size_t p = s.rfind("::");
    if (p != std::string::npos) s = s.substr(p + 2);
  }
  return s;
}

bool contains(const std::vector<Tensor>& v, const Tensor& t) {
  return std::any_of(v.begin(), v.end(),
                     [&](const Tensor& o) { return o.defined() && o.impl() == t.impl(); });
}

// A new handle on t's data with no history (a returned input must not lose its own).
Tensor alias_of(const Tensor& t) {
  auto impl = std::make_shared<TensorImpl>(*t.impl());
  impl->autograd.reset();
  impl->view_base.reset();
  return Tensor(std::move(impl));
}
}  // namespace

FunctionCall::FunctionCall(const char* mangled_type_name)
    : ctx_(std::make_shared<AutogradContext>()) {
  ctx_->state().name = type_name(mangled_type_name);
}

FunctionCall::~FunctionCall() = default;

void FunctionCall::tensor_arg(const Tensor& t) {
  auto& st = ctx_->state();
  st.arg_input.push_back(int(st.inputs.size()));
  st.inputs.push_back(t);
}

void FunctionCall::other_arg() { ctx_->state().arg_input.push_back(-1); }

AutogradContext* FunctionCall::begin() {
  auto& st = ctx_->state();
  for (const Tensor& t : st.inputs) st.needs_grad.push_back(t.defined() && needs_grad({&t}));
  return ctx_.get();
}

std::vector<Tensor> FunctionCall::finish(std::vector<Tensor> outputs, FunctionBackward backward) {
  AutogradContext::State& st = ctx_->state();
  const std::vector<Tensor> inputs = std::move(st.inputs);
  st.inputs.clear();
  const std::string& name = st.name;
  st.in_forward = false;
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i].defined())
      EMBER_FAIL(name.c_str(), "forward returned an undefined Tensor as output ", i);

  // Inputs as the node sees them: a dirty input's history before forward wrote it.
  std::vector<Tensor> node_inputs = inputs;
  const bool recording = needs_grad(inputs);
  for (const Tensor& d : st.dirty) {
    if (!d.defined()) continue;
    auto in = std::find_if(inputs.begin(), inputs.end(),
                           [&](const Tensor& t) { return t.defined() && t.impl() == d.impl(); });
    if (in == inputs.end())
      EMBER_FAIL(name.c_str(), "mark_dirty was given a tensor that is not an input of forward");
    if (!contains(outputs, d))
      EMBER_FAIL(name.c_str(),
                 "an input marked dirty (modified in place) must be returned by forward");
    if (!recording) continue;  // no new history: d keeps its own
    if (d.requires_grad() && d.is_leaf())
      EMBER_FAIL(name.c_str(), "a leaf tensor that requires grad (shape ", shape_str(d.shape()),
                 ") is modified in place by forward (mark_dirty); wrap the call in NoGradGuard or "
                 "pass a clone()");
    if (d.impl()->view_base)
      EMBER_FAIL(name.c_str(), "mark_dirty on a view (shape ", shape_str(d.shape()),
                 ") is not supported; pass the tensor that owns the storage");
    Tensor& before = node_inputs[size_t(in - inputs.begin())];
    before = alias_of(d);
    if (d.impl()->autograd) {
      before.impl()->autograd = std::make_shared<AutogradMeta>(*d.impl()->autograd);
      // The written tensor starts a new history (this node's output), keeping its hooks.
      auto fresh = std::make_shared<AutogradMeta>();
      fresh->hooks = d.impl()->autograd->hooks;
      d.impl()->autograd = std::move(fresh);
    }
  }
  std::vector<bool> nondiff;
  for (const Tensor& o : outputs) nondiff.push_back(contains(st.non_differentiable, o));
  // An input returned as is, or one tensor returned twice, becomes a new alias carrying the node.
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& o = outputs[i];
    const bool repeated = std::any_of(outputs.begin(), outputs.begin() + long(i),
                                      [&](const Tensor& p) { return p.impl() == o.impl(); });
    if (repeated || (contains(inputs, o) && !contains(st.dirty, o))) o = alias_of(o);
    o.impl()->view_base.reset();  // outputs are not tracked as views of inputs
  }
  // Saved now (as LibTorch, when forward returns): an output gets this node as its history.
  st.saved.clear();
  for (const Tensor& t : st.to_save) st.saved.emplace_back(t);
  st.to_save.clear();

  std::vector<Shape> in_shapes;
  std::vector<Device> in_devices;
  for (const Tensor& t : inputs) {
    in_shapes.push_back(t.defined() ? t.shape() : Shape{});
    in_devices.push_back(t.defined() ? t.device() : Device::ref());
  }
  std::vector<bool> in_defined;
  for (const Tensor& t : inputs) in_defined.push_back(t.defined());
  record((name + "Backward").c_str(), node_inputs, outputs,
         [ctx = ctx_, backward, arg_input = st.arg_input, in_shapes, in_devices,
          in_defined](const std::vector<Tensor>& grads) {
           const std::string& fname = ctx->state().name;
           std::vector<Tensor> r = backward(ctx.get(), grads);
           const size_t nargs = arg_input.size();
           // As LibTorch: extra trailing undefined gradients are ignored.
           if (r.size() > nargs && std::all_of(r.begin() + long(nargs), r.end(),
                                               [](const Tensor& g) { return !g.defined(); }))
             r.resize(nargs);
           if (r.size() != nargs)
             EMBER_FAIL(fname.c_str(), "backward returned ", r.size(), " gradients, expected ",
                        nargs,
                        " (one per forward argument; an undefined Tensor for non-tensor "
                        "arguments and for inputs that need none)");
           std::vector<Tensor> out(in_shapes.size());
           for (size_t a = 0; a < nargs; ++a) {
             const int k = arg_input[a];
             if (k < 0) {
               if (r[a].defined())
                 EMBER_FAIL(fname.c_str(), "backward returned a gradient for argument ", a,
                            ", which is not a Tensor; return an undefined Tensor there");
               continue;
             }
             if (!r[a].defined() || !in_defined[size_t(k)]) continue;
             if (r[a].shape() != in_shapes[size_t(k)])
               EMBER_FAIL(fname.c_str(), "backward returned a gradient of shape ",
                          shape_str(r[a].shape()), " for argument ", a, " of shape ",
                          shape_str(in_shapes[size_t(k)]));
             if (r[a].device() != in_devices[size_t(k)])
               EMBER_FAIL(fname.c_str(), "backward returned a gradient on ", r[a].device().str(),
                          " for argument ", a, " on ", in_devices[size_t(k)].str());
             if (!is_floating(r[a].dtype()))
               EMBER_FAIL(fname.c_str(), "backward returned a gradient of dtype ",
                          dtype_name(r[a].dtype()), " for argument ", a,
                          "; gradients are floating-point");
             out[size_t(k)] = r[a];
           }
           return out;
         });
  for (size_t i = 0; i < outputs.size(); ++i)
    if (nondiff[i] && outputs[i].impl()->autograd) outputs[i].impl()->autograd->grad_fn.reset();
  st.dirty.clear();
  st.non_differentiable.clear();
  return outputs;
}

}  // namespace detail
}  // namespace ember::autograd
