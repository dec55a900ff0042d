// Optimizer base: options fields, parameter groups, step/zero_grad, flat state_dict.
#include "ember/optim/optimizer.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <typeinfo>

#include "ember/autograd.h"
#include "ember/checked.h"
#include "tensor/internal.h"

namespace ember::optim {

namespace {

// Splits "a.b.c" at dots.
std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : key) {
    if (c == '.') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// A non-negative decimal index, or -1.
int64_t parse_index(const std::string& s) {
  if (s.empty() || s.size() > 12) return -1;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

Tensor scalar_f64(double v) { return scalar_tensor(v, DType::f64); }

// The options that are flags (stored 0 / 1), across the optimizers.
const std::string kFlags[] = {"amsgrad", "maximize", "nesterov", "centered"};

}  // namespace

// ---- OptimizerOptions ----

double OptimizerOptions::get(const std::string& name) const {
  for (const auto& f : fields())
    if (name == f.name) return f.value->value_or(f.def);
  EMBER_FAIL(optimizer_name(), "has no option \"", name, "\"");
}

void OptimizerOptions::set(const std::string& name, double value) {
  for (auto& f : fields()) {
    if (name == f.name) {
      *f.value = value;
      return;
    }
  }
  EMBER_FAIL(optimizer_name(), "has no option \"", name, "\"");
}

bool OptimizerOptions::has(const std::string& name) const {
  for (const auto& f : fields())
    if (name == f.name) return f.value->has_value();
  return false;
}

std::vector<std::string> OptimizerOptions::names() const {
  std::vector<std::string> out;
  for (const auto& f : fields()) out.emplace_back(f.name);
  return out;
}

void OptimizerOptions::fill_unset_from(const OptimizerOptions& defaults) {
  if (typeid(*this) != typeid(defaults))
    EMBER_FAIL(optimizer_name(), "group options of type ", defaults.optimizer_name(),
               " do not match this optimizer");
  auto mine = fields();
  const auto theirs = defaults.fields();
  for (size_t i = 0; i < mine.size(); ++i)
    if (!mine[i].value->has_value()) *mine[i].value = *theirs[i].value;
}

// ---- ParamGroup ----

double ParamGroup::lr() const {
  if (!options) EMBER_FAIL("ParamGroup", "the group has no options yet (add it to an optimizer)");
  return options->get_lr();
}

void ParamGroup::set_lr(double lr) {
  if (!options) EMBER_FAIL("ParamGroup", "the group has no options yet (add it to an optimizer)");
  options->set_lr(lr);
}

// ---- Optimizer ----

Optimizer::Optimizer(std::string name, std::vector<ParamGroup> groups,
                     std::unique_ptr<OptimizerOptions> defaults)
    : name_(std::move(name)), defaults_(std::move(defaults)) {
  defaults_->validate();
  if (groups.empty() || (groups.size() == 1 && groups[0].params.empty()))
    EMBER_FAIL(name_.c_str(), "optimizer got an empty parameter list");
  for (auto& g : groups) add_param_group(std::move(g));
}

void Optimizer::add_param_group(ParamGroup group) {
  const char* op = name_.c_str();
  if (group.params.empty()) EMBER_FAIL(op, "optimizer got an empty parameter group");
  std::set<const TensorImpl*> seen;
  for (const auto& g : groups_)
    for (const auto& p : g.params) seen.insert(p.impl());
  std::set<const TensorImpl*> mine;
  for (size_t i = 0; i < group.params.size(); ++i) {
    const Tensor& p = group.params[i];
    if (!p.defined()) EMBER_FAIL(op, "parameter ", i, " of the group is an undefined tensor");
    if (!is_floating(p.dtype()))
      EMBER_FAIL(op, "can only optimize floating-point tensors, got ", detail::describe(p));
    if (!p.is_leaf())
      EMBER_FAIL(op, "can't optimize a non-leaf Tensor (", detail::describe(p), ")");
    if (seen.count(p.impl()) || !mine.insert(p.impl()).second)
      EMBER_FAIL(op, "some parameters appear in more than one parameter group");
  }
  if (!group.options) {
    group.options = defaults_->clone();
  } else {
    group.options->fill_unset_from(*defaults_);
    group.options->validate();
  }
  groups_.push_back(std::move(group));
}

void Optimizer::step() {
  NoGradGuard no_grad;
  for (const auto& g : groups_) {
    std::vector<Tensor> with_grad;
    for (const auto& p : g.params)
      if (p.grad().defined()) with_grad.push_back(p);
    if (!with_grad.empty()) update(with_grad, *g.options);
  }
}

Tensor Optimizer::step(const std::function<Tensor()>& closure) {
  Tensor loss;
  if (closure) {
    EnableGradGuard grad_on;
    loss = closure();
  }
  step();
  return loss;
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (auto& g : groups_) {
    for (auto& p : g.params) {
      Tensor gr = p.grad();
      if (!gr.defined()) continue;
      if (set_to_none) {
        p.set_grad(Tensor());
      } else {
        gr.zero_();
      }
    }
  }
}

const ParamState* Optimizer::state(const Tensor& param) const {
  if (!param.defined()) return nullptr;
  auto it = state_.find(param.impl());
  return it == state_.end() ? nullptr : &it->second;
}

nn::StateDict Optimizer::state_dict() const {
  nn::StateDict out;
  int64_t index = 0;
  for (const auto& g : groups_) {
    for (const auto& p : g.params) {
      auto it = state_.find(p.impl());
      if (it != state_.end()) {
        const std::string prefix = "state." + std::to_string(index) + ".";
        out.set(prefix + "step", scalar_f64(it->second.step));
        for (const auto& [name, buf] : it->second.buffers) out.set(prefix + name, buf.detach());
      }
      ++index;
    }
  }
  index = 0;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const auto& g = groups_[gi];
    const std::string prefix = "param_groups." + std::to_string(gi) + ".";
    std::vector<int64_t> ids;
    for (size_t i = 0; i < g.params.size(); ++i) ids.push_back(index++);
    out.set(prefix + "params", from_vector<int64_t>(ids, {int64_t(ids.size())}));
    for (const auto& name : g.options->names())
      out.set(prefix + name, scalar_f64(g.options->get(name)));
    if (g.initial_lr) out.set(prefix + "initial_lr", scalar_f64(*g.initial_lr));
  }
  return out;
}

void Optimizer::load_state_dict(const nn::StateDict& dict) {
  const std::string op = name_ + ".load_state_dict";
  const char* o = op.c_str();
  // Saved group layout: count the groups and check their sizes.
  size_t n_groups = 0;
  while (dict.contains("param_groups." + std::to_string(n_groups) + ".params")) ++n_groups;
  if (n_groups != groups_.size())
    EMBER_FAIL(o, "loaded state dict has ", n_groups, " parameter groups, the optimizer has ",
               groups_.size());
  // Saved parameter id -> current parameter, zipping the saved groups with ours (as torch).
  std::map<int64_t, Tensor> id_map;
  for (size_t gi = 0; gi < n_groups; ++gi) {
    const std::string key = "param_groups." + std::to_string(gi) + ".params";
    const Tensor& ids = dict.at(key);
    if (ids.dim() != 1 || ids.numel() != int64_t(groups_[gi].params.size()))
      EMBER_FAIL(o, "loaded parameter group ", gi, " has ", ids.numel(),
                 " parameters, the optimizer's group has ", groups_[gi].params.size());
    // Each id checked before it is converted (a NaN or 1e300 read as int64 is undefined).
    for (int64_t i = 0; i < ids.numel(); ++i) {
      const int64_t id = checked_int64(FileField{o, "", key + "[" + std::to_string(i) + "]"},
                                       ids[i], 0, kMaxFileCount);
      if (!id_map.emplace(id, groups_[gi].params[size_t(i)]).second)
        EMBER_FAIL(o, "\"", key, "\" names parameter ", id, " twice");
    }
  }
  // Build everything first, so that a bad dict changes nothing.
  std::vector<std::unique_ptr<OptimizerOptions>> new_opts;
  std::vector<std::optional<double>> new_initial(n_groups);
  for (size_t gi = 0; gi < n_groups; ++gi) new_opts.push_back(groups_[gi].options->clone());
  std::map<const TensorImpl*, ParamState> new_state;
  const auto buffer_names = state_names();
  for (const auto& [key, value] : dict.items()) {
    const auto parts = split_key(key);
    if (parts.size() == 3 && parts[0] == "param_groups") {
      const int64_t gi = parse_index(parts[1]);
      if (gi < 0 || size_t(gi) >= n_groups) EMBER_FAIL(o, "unexpected key \"", key, "\"");
      if (parts[2] == "params") continue;
      // Every option must be finite (validate() then checks its range: an lr of inf passed
      // "lr >= 0"), a flag 0 or 1.
      const FileField field{o, "", key};
      if (parts[2] == "initial_lr") {
        new_initial[size_t(gi)] = checked_double(field, value, 0.0);
        continue;
      }
      const auto names = new_opts[size_t(gi)]->names();
      if (std::find(names.begin(), names.end(), parts[2]) == names.end())
        EMBER_FAIL(o, "unexpected key \"", key, "\": ", name_, " has no option \"", parts[2], "\"");
      const bool flag =
          std::find(std::begin(kFlags), std::end(kFlags), parts[2]) != std::end(kFlags);
      new_opts[size_t(gi)]->set(parts[2], flag ? double(checked_int64(field, value, 0, 1))
                                               : checked_double(field, value));
    } else if (parts.size() == 3 && parts[0] == "state") {
      const int64_t id = parse_index(parts[1]);
      auto it = id_map.find(id);
      if (it == id_map.end())
        EMBER_FAIL(o, "unexpected key \"", key, "\" (no parameter ", parts[1], ")");
      const Tensor& p = it->second;
      ParamState& st = new_state[p.impl()];
      if (parts[2] == "step") {
        // A NaN step count made every bias correction NaN and the weights NaN after one step.
        st.step = double(checked_int64(FileField{o, "", key}, value, 0, kMaxFileCount));
        continue;
      }
      bool known = false;
      for (const auto& n : buffer_names) known = known || n == parts[2];
      if (!known)
        EMBER_FAIL(o, "unexpected key \"", key, "\": ", name_, " keeps no state \"", parts[2],
                   "\"");
      if (value.shape() != p.shape())
        EMBER_FAIL(o, "\"", key, "\" has shape ", shape_str(value.shape()),
                   " but its parameter has shape ", shape_str(p.shape()));
      st.buffers[parts[2]] = value.detach().to(p.device(), p.dtype()).clone();
    } else {
      EMBER_FAIL(o, "unexpected key \"", key, "\"");
    }
  }
  for (auto& o2 : new_opts) o2->validate();
  for (size_t gi = 0; gi < n_groups; ++gi) {
    groups_[gi].options = std::move(new_opts[gi]);
    groups_[gi].initial_lr = new_initial[gi];
  }
  state_ = std::move(new_state);
}

}  // namespace ember::optim
