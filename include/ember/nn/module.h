// nn::Module: parameters, buffers and submodules with names, train/eval, device/dtype moves and
// state_dict, as torch.nn.Module.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/tensor.h"

namespace ember::nn {

/// Ordered name -> tensor map (insertion order kept, like PyTorch's OrderedDict). Iterate it
/// directly, also on a temporary: `for (auto& [name, t] : model->state_dict())`. Accessors used on
/// a temporary (`model->state_dict().items()`, `.at(k)`) return copies, so they never dangle.
class StateDict {
 public:
  using Item = std::pair<std::string, Tensor>;
  void set(const std::string& key, const Tensor& value);
  bool contains(const std::string& key) const { return index_.count(key) > 0; }
  /// Throws ember::Error naming the key when absent.
  const Tensor& at(const std::string& key) const&;
  Tensor at(const std::string& key) && { return std::as_const(*this).at(key); }
  const std::vector<Item>& items() const& { return items_; }
  std::vector<Item> items() && { return std::move(items_); }
  std::vector<Item>::const_iterator begin() const& { return items_.begin(); }
  std::vector<Item>::const_iterator end() const& { return items_.end(); }
  // An iterator into a temporary would dangle; `for (... : f())` binds the temporary and works.
  void begin() const&& = delete;
  void end() const&& = delete;
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }

 private:
  std::vector<Item> items_;
  std::map<std::string, size_t> index_;
};

class Module;
/// A forward pre-hook as stored: may replace entries of `inputs` (the tensor arguments).
using ForwardPreHook = std::function<void(Module&, std::vector<Tensor>& inputs)>;
/// A forward hook as stored: may replace `output`.
using ForwardHook = std::function<void(Module&, const std::vector<Tensor>& inputs, Tensor& output)>;

/// Base class of all layers. A subclass registers its tensors and children in its constructor:
///   weight_ = register_parameter("weight", empty({out, in}));
///   fc_ = register_module("fc", std::make_shared<Linear>(4, 2));
/// Registered tensors share data with the members they were returned to, so to(device) and
/// load_state_dict update both. Create modules with std::make_shared (named_modules, summary
/// and AnyModule need the shared_ptr, as LibTorch's module holders).
class Module : public std::enable_shared_from_this<Module> {
 public:
  explicit Module(std::string type_name = "Module") : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// Registers a trainable tensor (requires_grad set unless `requires_grad` is false).
  /// Throws for a duplicate or dotted name, or a non-floating tensor with requires_grad.
  Tensor register_parameter(const std::string& name, Tensor t, bool requires_grad = true);
  /// Registers a non-trainable tensor saved in state_dict (running stats...). An undefined
  /// tensor registers an empty slot (skipped in state_dict).
  Tensor register_buffer(const std::string& name, Tensor t);
  /// Registers a buffer of running statistics (batch norm's running_mean / running_var): as
  /// register_buffer, except that to(f16 / bf16) keeps it in f32 (see to(DType)).
  Tensor register_statistic(const std::string& name, Tensor t);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    add_child(name, m);
    return m;
  }

  std::vector<Tensor> parameters(bool recurse = true) const;  // a shared one once (as torch)
  /// Dotted paths ("layers.0.weight"); a tensor shared by two modules once, first path.
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  /// This module and all descendants, depth first, named by path ("" for this one).
  /// Throws ember::Error when this module is not owned by a std::shared_ptr.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules();
  /// The shared_ptr owning this module (shared_from_this). Throws ember::Error "[op] the module
  /// is not owned by a std::shared_ptr: create it with std::make_shared<...>(...)" when there is
  /// none (a module on the stack, or a call from its own constructor).
  std::shared_ptr<Module> shared_self(const char* op = "Module");
  /// Number of parameter elements (a shared parameter once, as
  /// sum(p.numel() for p in model.parameters())); trainable_only counts requires_grad ones.
  int64_t num_parameters(bool trainable_only = false) const;

  /// Sets training mode recursively (dropout, batch norm behave differently).
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  /// Moves every parameter and buffer to `device` in place.
  void to(const Device& device);
  /// Casts the floating parameters and buffers in place, as torch's module.to(dtype); integer
  /// and bool ones (num_batches_tracked) are left as they are. One exception for inference and
  /// training in f16 / bf16: statistics (buffers registered with register_statistic, i.e.
  /// BatchNorm's and InstanceNorm's running_mean / running_var) become f32 when `dtype` is f16
  /// or bf16, and `dtype` otherwise, so momentum updates are not rounded away. Norm weights and
  /// biases are parameters and take `dtype` as in torch; the norm functionals normalize f16 /
  /// bf16 input in f32 and return the input's dtype whatever the dtype of the statistics and
  /// affine parameters. to(f32) afterwards restores an f32 model. A converted model takes
  /// input of `dtype` (ops do not promote a bf16 input against bf16 weights to f32).
  /// Throws ember::Error for a non-floating `dtype` ("nn.Module.to only accepts floating point
  /// dtypes", as torch).
  void to(DType dtype);
  /// Lays out every 4-d (channels_last) or 5-d (channels_last_3d) parameter and buffer in
  /// `format`, in place, as torch's module.to(memory_format=...); contiguous lays out all
  /// of them row-major. Other ranks are left as they are; preserve throws ember::Error.
  void to(MemoryFormat format);
  /// Clears the .grad of every parameter.
  void zero_grad();

  /// Parameters and buffers by dotted name (detached, sharing data).
  StateDict state_dict() const;
  /// Copies values into the parameters and buffers. strict: a missing, unexpected or mis-shaped
  /// key is an ember::Error listing all of them; non-strict: mis-shaped keys and integer/float
  /// mismatches still throw (floating values are cast to the parameter dtype as torch does);
  /// missing and unexpected ones are not loaded and are returned as one string,
  /// "missing keys: a, b; unexpected keys: c" (either part absent when it has no key; "" when
  /// the keys match), torch's _IncompatibleKeys(missing_keys, unexpected_keys) as text.
  std::string load_state_dict(const StateDict& dict, bool strict = true);

  const std::string& type_name() const& { return type_name_; }
  std::string type_name() && { return type_name_; }
  /// The constructor arguments as PyTorch prints them ("in_features=4, out_features=2").
  virtual std::string extra_repr() const { return ""; }
  /// PyTorch-style tree: "Sequential(\n  (0): Linear(in_features=4, ...)\n)".
  std::string str() const;

  /// Registers hook(module, input) called before each forward through operator() (or
  /// AnyModule / Sequential), as torch's register_forward_pre_hook. `input` is the first tensor
  /// argument (`const Tensor&`) or all tensor arguments (`const std::vector<Tensor>&`: through
  /// operator() every Tensor parameter, undefined for a mask not given; through AnyModule the
  /// Tensor arguments passed; non-tensor ones such as is_causal are not included); a hook
  /// returning a Tensor (resp. vector) replaces them (an undefined Tensor / empty vector keeps
  /// them), a void hook only inspects. Hooks run in registration order. A module's direct
  /// `forward(x)` call runs no hooks (as torch's module.forward(x)).
  template <typename F>
  RemovableHandle register_forward_pre_hook(F&& hook);
  /// Registers hook(module, input, output) called after each forward through operator(), as
  /// torch's register_forward_hook; `input` as for the pre-hook; `output` is the output tensor
  /// (the first one for a module returning a tuple: MultiheadAttention, LSTM). A hook returning
  /// a defined Tensor replaces the output; a void hook inspects it.
  template <typename F>
  RemovableHandle register_forward_hook(F&& hook);
  /// The stored forms the two templates build (throw ember::Error for an empty function).
  RemovableHandle add_forward_pre_hook(ForwardPreHook hook);
  RemovableHandle add_forward_hook(ForwardHook hook);

 protected:
  void add_child(const std::string& name, std::shared_ptr<Module> m);
  bool has_forward_hooks() const { return !hooks_->pre.empty() || !hooks_->post.empty(); }
  /// For a subclass's operator() taking several inputs: runs the pre-hooks on `inputs`,
  /// f(inputs) -> R (a Tensor, or a tuple/pair whose first element is the output tensor), then
  /// the forward hooks on that output tensor.
  template <typename R, typename F>
  R call_with_hooks(std::vector<Tensor> inputs, F&& f) {
    run_forward_pre_hooks(inputs);
    R out = f(inputs);
    if constexpr (std::is_same_v<R, Tensor>)
      run_forward_hooks(inputs, out);
    else
      run_forward_hooks(inputs, std::get<0>(out));
    return out;
  }
  void run_forward_pre_hooks(std::vector<Tensor>& inputs);
  void run_forward_hooks(const std::vector<Tensor>& inputs, Tensor& output);

 private:
  std::string type_name_;
  bool training_ = true;
  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::string> statistics_;  // names among buffers_ that to(f16/bf16) keeps f32
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  struct Hooks {
    int64_t next_id = 0;
    std::vector<std::pair<int64_t, ForwardPreHook>> pre;
    std::vector<std::pair<int64_t, ForwardHook>> post;
  };
  std::shared_ptr<Hooks> hooks_ = std::make_shared<Hooks>();  // handles hold a weak_ptr
  friend class AnyModule;
};

/// Prints module.str(), the PyTorch-style tree: `std::cout << *model` (or `<< model`).
std::ostream& operator<<(std::ostream& os, const Module& m);
template <typename M, typename = std::enable_if_t<std::is_base_of_v<Module, M>>>
std::ostream& operator<<(std::ostream& os, const std::shared_ptr<M>& m) {
  return m ? os << static_cast<const Module&>(*m) : os << "nullptr";
}

namespace detail {
template <typename F, typename In>
constexpr bool pre_hook_takes = std::is_invocable_v<F&, Module&, const In&>;
template <typename F, typename In>
constexpr bool hook_takes = std::is_invocable_v<F&, Module&, const In&, const Tensor&>;
[[noreturn]] void fail_hook_replacement(size_t got, size_t want);
}  // namespace detail

template <typename F>
RemovableHandle Module::register_forward_pre_hook(F&& hook) {
  using Fn = std::decay_t<F>;
  if constexpr (detail::pre_hook_takes<Fn, Tensor>) {
    return add_forward_pre_hook(
        [h = Fn(std::forward<F>(hook))](Module& m, std::vector<Tensor>& in) mutable {
          if constexpr (std::is_void_v<std::invoke_result_t<Fn&, Module&, const Tensor&>>) {
            h(m, in.at(0));
          } else {
            Tensor r = h(m, in.at(0));
            if (r.defined()) in[0] = std::move(r);
          }
        });
  } else {
    static_assert(detail::pre_hook_takes<Fn, std::vector<Tensor>>,
                  "a forward pre-hook is hook(Module&, const Tensor&) or "
                  "hook(Module&, const std::vector<Tensor>&), returning void or the new input");
    return add_forward_pre_hook(
        [h = Fn(std::forward<F>(hook))](Module& m, std::vector<Tensor>& in) mutable {
          using R = std::invoke_result_t<Fn&, Module&, const std::vector<Tensor>&>;
          if constexpr (std::is_void_v<R>) {
            h(m, std::as_const(in));
          } else {
            std::vector<Tensor> r = h(m, std::as_const(in));
            if (r.empty()) return;
            if (r.size() != in.size()) detail::fail_hook_replacement(r.size(), in.size());
            in = std::move(r);
          }
        });
  }
}

template <typename F>
RemovableHandle Module::register_forward_hook(F&& hook) {
  using Fn = std::decay_t<F>;
  constexpr bool unary = detail::hook_takes<Fn, Tensor>;
  static_assert(unary || detail::hook_takes<Fn, std::vector<Tensor>>,
                "a forward hook is hook(Module&, const Tensor& input, const Tensor& output) or "
                "hook(Module&, const std::vector<Tensor>& inputs, const Tensor& output), "
                "returning void or the new output");
  return add_forward_hook([h = Fn(std::forward<F>(hook))](Module& m, const std::vector<Tensor>& in,
                                                          Tensor& out) mutable {
    auto call = [&] {
      if constexpr (unary)
        return h(m, in.at(0), std::as_const(out));
      else
        return h(m, in, std::as_const(out));
    };
    if constexpr (std::is_void_v<decltype(call())>) {
      call();
    } else {
      Tensor r = call();
      if (r.defined()) out = std::move(r);
    }
  });
}

/// A module with one tensor in and one tensor out (what Sequential chains).
class UnaryModule : public Module {
 public:
  using Module::Module;
  virtual Tensor forward(const Tensor& x) = 0;
  /// forward(x) with the forward pre-hooks and hooks.
  Tensor operator()(const Tensor& x) {
    if (!has_forward_hooks()) return forward(x);
    return call_with_hooks<Tensor>({x},
                                   [&](const std::vector<Tensor>& in) { return forward(in[0]); });
  }
};

}  // namespace ember::nn
