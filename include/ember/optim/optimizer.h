// ember::optim::Optimizer: parameter groups, step/zero_grad and a flat state_dict, as
// torch.optim.Optimizer (PyTorch 1.13 semantics).
//
//   optim::Adam opt(model->parameters(), optim::AdamOptions(1e-3).weight_decay(0.01));
//   loss.backward(); opt.step(); opt.zero_grad();
//
// Each ParamGroup carries its own options; a field the group's options did not set falls back
// to the defaults given at construction (as a torch group dict that names only "lr").
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/nn/module.h"
#include "ember/tensor.h"

namespace ember::optim {

/// Hyper-parameters of one optimizer, every field optional: an unset field reads as its
/// PyTorch default, or as the optimizer's default when the options belong to a group.
/// Flags are stored as 0/1. Field names are torch's, with betas split ("beta1", "beta2").
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  /// The optimizer this type configures ("Adam"), for error messages.
  virtual const char* optimizer_name() const = 0;

  double get_lr() const { return get("lr"); }
  void set_lr(double lr) { set("lr", lr); }
  /// The momentum OneCycleLR cycles: "momentum" (SGD, RMSprop) or "beta1" (Adam, AdamW);
  /// nullptr when the optimizer has none (Adagrad).
  virtual const char* momentum_field() const { return nullptr; }

  /// The value of a field by name (its default when unset). Throws ember::Error naming the
  /// field when the optimizer has no such field.
  double get(const std::string& name) const;
  /// Sets a field by name. Throws ember::Error for an unknown field.
  void set(const std::string& name, double value);
  bool has(const std::string& name) const;
  /// All field names, in declaration order.
  std::vector<std::string> names() const;
  /// Fills the fields this object leaves unset from `defaults` (the same options type).
  void fill_unset_from(const OptimizerOptions& defaults);
  /// Throws ember::Error("[<Optimizer>] Invalid ...") for out-of-range values, as torch's
  /// constructors do (negative lr, betas outside [0, 1), ...).
  virtual void validate() const = 0;

 protected:
  struct Field {
    const char* name;
    std::optional<double>* value;
    double def;
  };
  virtual std::vector<Field> fields() = 0;
  std::vector<Field> fields() const { return const_cast<OptimizerOptions*>(this)->fields(); }
};

// Declares a chainable setter `Self& name(T)`, a getter `T name() const` reading the default
// `def` while unset, and its storage.
#define EMBER_OPTIM_ARG(Self, T, name, def)           \
 public:                                              \
  static constexpr double name##_default = def;       \
  Self& name(T v) {                                   \
    name##_ = double(v);                              \
    return *this;                                     \
  }                                                   \
  T name() const { return T(name##_.value_or(def)); } \
                                                      \
 private:                                             \
  std::optional<double> name##_;

/// A set of parameters optimized with the same options (torch's param_groups entry).
struct ParamGroup {
  std::vector<Tensor> params;
  /// Null: all the optimizer's defaults. Otherwise the fields it sets override them.
  std::unique_ptr<OptimizerOptions> options;
  /// The lr a scheduler starts from (torch's group["initial_lr"]); set by the first LR
  /// scheduler attached to the optimizer.
  std::optional<double> initial_lr;

  ParamGroup(std::vector<Tensor> p) : params(std::move(p)) {}  // NOLINT
  ParamGroup(std::vector<Tensor> p, const OptimizerOptions& o)
      : params(std::move(p)), options(o.clone()) {}
  ParamGroup(const ParamGroup& o)
      : params(o.params),
        options(o.options ? o.options->clone() : nullptr),
        initial_lr(o.initial_lr) {}
  ParamGroup& operator=(const ParamGroup& o) {
    params = o.params;
    options = o.options ? o.options->clone() : nullptr;
    initial_lr = o.initial_lr;
    return *this;
  }
  ParamGroup(ParamGroup&&) = default;
  ParamGroup& operator=(ParamGroup&&) = default;

  /// The group's learning rate (options must be set, as they are once added to an optimizer).
  double lr() const;
  void set_lr(double lr);
};

/// Per-parameter state: the step count and named buffers ("exp_avg", "momentum_buffer"...).
struct ParamState {
  double step = 0;
  std::map<std::string, Tensor> buffers;
};

/// Base of all optimizers. Not copyable; schedulers hold a reference to it.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// One update of every parameter whose grad is defined (others are skipped), in place and
  /// without recording autograd history (under NoGradGuard).
  void step();
  /// Re-evaluates the loss with `closure` (grad mode on), then steps; returns the loss.
  Tensor step(const std::function<Tensor()>& closure);
  /// Clears every parameter's grad: to undefined (set_to_none, torch's default) or to zeros.
  void zero_grad(bool set_to_none = true);
  /// Appends a group; its unset options come from the defaults. Throws ember::Error for an
  /// empty group, an undefined / non-floating / non-leaf tensor, a parameter already in a
  /// group, or invalid options.
  void add_param_group(ParamGroup group);

  std::vector<ParamGroup>& param_groups() & { return groups_; }
  const std::vector<ParamGroup>& param_groups() const& { return groups_; }
  std::vector<ParamGroup> param_groups() && { return groups_; }  // a copy on a temporary
  const OptimizerOptions& defaults() const& { return *defaults_; }
  void defaults() const&& = delete;  // would refer into a destroyed optimizer
  /// State of one parameter (nullptr before its first step).
  const ParamState* state(const Tensor& param) const;
  const std::string& name() const& { return name_; }
  std::string name() && { return name_; }  // a copy on a temporary

  /// Flat state: "state.<i>.step" (0-d f64), "state.<i>.<buffer>" (the buffer, sharing data),
  /// "param_groups.<g>.params" (i64 indices), "param_groups.<g>.<field>" (0-d f64 per option),
  /// "param_groups.<g>.initial_lr" when a scheduler set it. <i> numbers the parameters across
  /// groups in order, as torch does, so the dict can be saved with a model (safetensors).
  nn::StateDict state_dict() const;
  /// Restores state and group options saved by state_dict() of the same optimizer type over
  /// the same parameter layout. Buffers are copied to each parameter's device and dtype.
  /// Throws ember::Error (changing nothing) for a different number of groups or group sizes,
  /// a buffer whose shape differs from its parameter's, an unknown key, or a value out of range
  /// (ember/checked.h; the error names the key): an option that is not finite or that
  /// validate() refuses, a flag other than 0 / 1, a step count or parameter id that is not an
  /// integer in [0, 2^53], an initial_lr < 0.
  void load_state_dict(const nn::StateDict& dict);

 protected:
  Optimizer(std::string name, std::vector<ParamGroup> groups,
            std::unique_ptr<OptimizerOptions> defaults);
  /// Updates the parameters of `params` (all with defined grads) using options `o`.
  virtual void update(const std::vector<Tensor>& params, const OptimizerOptions& o) = 0;
  /// The buffer names this optimizer keeps per parameter (for load_state_dict checks).
  virtual std::vector<std::string> state_names() const = 0;
  ParamState& state_of(const Tensor& param) { return state_[param.impl()]; }
  bool has_state(const Tensor& param) const { return state_.count(param.impl()) > 0; }

 private:
  std::string name_;
  std::unique_ptr<OptimizerOptions> defaults_;
  std::vector<ParamGroup> groups_;
  std::map<const TensorImpl*, ParamState> state_;
};

}  // namespace ember::optim
