// nn::Module: parameters, buffers and submodules with names, train/eval, device/dtype moves and
// state_dict, as torch.nn.Module.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/tensor.h"

namespace ember::nn {

/// Ordered name -> tensor map (insertion order kept, like PyTorch's OrderedDict).
class StateDict {
 public:
  void set(const std::string& key, const Tensor& value);
  bool contains(const std::string& key) const { return index_.count(key) > 0; }
  /// Throws ember::Error naming the key when absent.
  const Tensor& at(const std::string& key) const;
  const std::vector<std::pair<std::string, Tensor>>& items() const { return items_; }
  size_t size() const { return items_.size(); }

 private:
  std::vector<std::pair<std::string, Tensor>> items_;
  std::map<std::string, size_t> index_;
};

/// Base class of all layers. A subclass registers its tensors and children in its constructor:
///   weight_ = register_parameter("weight", empty({out, in}));
///   fc_ = register_module("fc", std::make_shared<Linear>(4, 2));
/// Registered tensors share data with the members they were returned to, so to(device) and
/// load_state_dict update both.
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
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules();

  /// Sets training mode recursively (dropout, batch norm behave differently).
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  /// Moves / casts every parameter and buffer in place (floating tensors only for dtype).
  void to(const Device& device);
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
  /// missing and unexpected ones are returned as "missing: ...; unexpected: ..." (empty when none).
  std::string load_state_dict(const StateDict& dict, bool strict = true);

  const std::string& type_name() const { return type_name_; }
  /// The constructor arguments as PyTorch prints them ("in_features=4, out_features=2").
  virtual std::string extra_repr() const { return ""; }
  /// PyTorch-style tree: "Sequential(\n  (0): Linear(in_features=4, ...)\n)".
  std::string str() const;

 protected:
  void add_child(const std::string& name, std::shared_ptr<Module> m);

 private:
  std::string type_name_;
  bool training_ = true;
  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

/// A module with one tensor in and one tensor out (what Sequential chains).
class UnaryModule : public Module {
 public:
  using Module::Module;
  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }
};

}  // namespace ember::nn
