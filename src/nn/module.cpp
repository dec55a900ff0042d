#include "ember/nn/module.h"

#include <algorithm>
#include <sstream>

#include "ember/autograd.h"
#include "tensor/internal.h"

namespace ember::nn {

void StateDict::set(const std::string& key, const Tensor& value) {
  auto it = index_.find(key);
  if (it != index_.end()) {
    items_[it->second].second = value;
    return;
  }
  index_[key] = items_.size();
  items_.emplace_back(key, value);
}

const Tensor& StateDict::at(const std::string& key) const& {
  auto it = index_.find(key);
  if (it == index_.end()) EMBER_FAIL("state_dict", "no key '", key, "'");
  return items_[it->second].second;
}

namespace {
void check_name(const std::string& name, const char* op,
                const std::vector<std::pair<std::string, Tensor>>& a,
                const std::vector<std::pair<std::string, Tensor>>& b) {
  if (name.empty() || name.find('.') != std::string::npos)
    EMBER_FAIL(op, "invalid name '", name, "' (must be non-empty without '.')");
  for (const auto& p : a)
    if (p.first == name) EMBER_FAIL(op, "'", name, "' is already registered");
  for (const auto& p : b)
    if (p.first == name) EMBER_FAIL(op, "'", name, "' is already registered");
}

// Replaces t's contents in place, so every handle sharing its impl sees the converted tensor.
// Recorded ops share impls with their callers, so the device's stream runs first when it holds
// work on t (it would otherwise run on the new storage).
void replace_in_place(Tensor& t, const Tensor& converted) {
  const bool req = t.requires_grad() && t.is_leaf();
  TensorImpl& impl = *t.impl();
  if (impl.storage && impl.storage->pending.load(std::memory_order_acquire) > 0) sync(t.device());
  impl.storage = converted.impl()->storage;
  impl.shape = converted.shape();
  impl.strides = converted.strides();
  impl.offset = converted.offset();
  impl.dtype = converted.dtype();
  if (impl.autograd) t.set_grad(Tensor());
  if (req) t.requires_grad_(true);
}
}  // namespace

Tensor Module::register_parameter(const std::string& name, Tensor t, bool requires_grad) {
  check_name(name, "register_parameter", params_, buffers_);
  ember::detail::check_defined(t, "register_parameter");
  if (requires_grad) t.requires_grad_(true);
  params_.emplace_back(name, t);
  return t;
}

Tensor Module::register_buffer(const std::string& name, Tensor t) {
  check_name(name, "register_buffer", params_, buffers_);
  buffers_.emplace_back(name, t);
  return t;
}

Tensor Module::register_statistic(const std::string& name, Tensor t) {
  t = register_buffer(name, std::move(t));
  statistics_.push_back(name);
  return t;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> m) {
  if (!m) EMBER_FAIL("register_module", "module '", name, "' is null");
  if (name.empty() || name.find('.') != std::string::npos)
    EMBER_FAIL("register_module", "invalid name '", name, "'");
  for (const auto& c : children_)
    if (c.first == name) EMBER_FAIL("register_module", "'", name, "' is already registered");
  children_.emplace_back(name, std::move(m));
}

namespace {
using Named = std::vector<std::pair<std::string, Tensor>>;
// The first of the entries that are the same tensor (a module shared by two parents), as
// torch's named_parameters/named_buffers (remove_duplicate=True).
// Every entry `own` gives (a module's parameters or its defined buffers) by path, depth first;
// a shared module's under each of its paths (state_dict keeps them all, as torch's). `own` is a
// lambda of a Module member, which may read the private lists.
template <typename Own>
Named all_named(const Module& m, const Own& own, bool recurse, const std::string& prefix = "") {
  Named out;
  for (const auto& p : own(m))
    if (p.second.defined()) out.emplace_back(prefix + p.first, p.second);
  if (recurse)
    for (const auto& c : m.named_children())
      for (auto& p : all_named(*c.second, own, true, prefix + c.first + "."))
        out.push_back(std::move(p));
  return out;
}

Named first_of_each(Named all) {
  Named out;
  std::vector<const TensorImpl*> seen;
  for (auto& e : all) {
    const TensorImpl* id = e.second.impl();
    if (std::find(seen.begin(), seen.end(), id) != seen.end()) continue;
    seen.push_back(id);
    out.push_back(std::move(e));
  }
  return out;
}
}  // namespace

#define EMBER_PARAMS [](const Module& m) -> const Named& { return m.params_; }
#define EMBER_BUFFERS [](const Module& m) -> const Named& { return m.buffers_; }

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  return first_of_each(all_named(*this, EMBER_PARAMS, recurse));
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& p : named_parameters(recurse)) out.push_back(p.second);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  return first_of_each(all_named(*this, EMBER_BUFFERS, recurse));
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& p : named_buffers(recurse)) out.push_back(p.second);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& c : children_) out.push_back(c.second);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const {
  return children_;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_modules() {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> all, out;
  all.emplace_back("", shared_self("Module::named_modules"));
  for (const auto& c : children_)
    for (auto& m : c.second->named_modules())
      all.emplace_back(m.first.empty() ? c.first : c.first + "." + m.first, m.second);
  // A module reached twice (shared) is listed once, at its first path, as torch's.
  for (auto& m : all) {
    bool seen = false;
    for (const auto& o : out) seen = seen || o.second == m.second;
    if (!seen) out.push_back(std::move(m));
  }
  return out;
}

std::shared_ptr<Module> Module::shared_self(const char* op) {
  std::shared_ptr<Module> self = weak_from_this().lock();
  if (!self)
    EMBER_FAIL(op, "the ", type_name_,
               " module is not owned by a std::shared_ptr: create it with std::make_shared<",
               type_name_, ">(...) (and do not call this from its constructor)");
  return self;
}

int64_t Module::num_parameters(bool trainable_only) const {
  int64_t n = 0;
  for (const Tensor& p : parameters())
    if (!trainable_only || p.requires_grad()) n += p.numel();
  return n;
}

RemovableHandle Module::add_forward_pre_hook(ForwardPreHook hook) {
  if (!hook) EMBER_FAIL("register_forward_pre_hook", "the hook is empty");
  const int64_t id = hooks_->next_id++;
  hooks_->pre.emplace_back(id, std::move(hook));
  return RemovableHandle([w = std::weak_ptr<Hooks>(hooks_), id] {
    if (auto h = w.lock())
      h->pre.erase(std::remove_if(h->pre.begin(), h->pre.end(),
                                  [&](const auto& e) { return e.first == id; }),
                   h->pre.end());
  });
}

RemovableHandle Module::add_forward_hook(ForwardHook hook) {
  if (!hook) EMBER_FAIL("register_forward_hook", "the hook is empty");
  const int64_t id = hooks_->next_id++;
  hooks_->post.emplace_back(id, std::move(hook));
  return RemovableHandle([w = std::weak_ptr<Hooks>(hooks_), id] {
    if (auto h = w.lock())
      h->post.erase(std::remove_if(h->post.begin(), h->post.end(),
                                   [&](const auto& e) { return e.first == id; }),
                    h->post.end());
  });
}

// A copy of the list, so a hook may remove itself (or add hooks) while the list runs.
void Module::run_forward_pre_hooks(std::vector<Tensor>& inputs) {
  if (hooks_->pre.empty()) return;
  auto hooks = hooks_->pre;
  for (auto& h : hooks) h.second(*this, inputs);
}

void Module::run_forward_hooks(const std::vector<Tensor>& inputs, Tensor& output) {
  if (hooks_->post.empty()) return;
  auto hooks = hooks_->post;
  for (auto& h : hooks) h.second(*this, inputs, output);
}

namespace detail {
void fail_hook_replacement(size_t got, size_t want) {
  EMBER_FAIL("register_forward_pre_hook", "the hook returned ", got, " inputs for a call with ",
             want, " tensor inputs");
}
}  // namespace detail

std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.str(); }

void Module::train(bool on) {
  training_ = on;
  for (const auto& c : children_) c.second->train(on);
}

void Module::to(const Device& device) {
  NoGradGuard no_grad;
  for (auto& p : params_) replace_in_place(p.second, p.second.to(device));
  for (auto& b : buffers_)
    if (b.second.defined()) replace_in_place(b.second, b.second.to(device));
  for (const auto& c : children_) c.second->to(device);
}

void Module::to(DType dtype) {
  if (!is_floating(dtype))
    EMBER_FAIL("Module.to",
               "nn.Module.to only accepts floating point dtypes, but got desired dtype=",
               dtype_name(dtype));
  NoGradGuard no_grad;
  // Statistics accumulate momentum updates that f16 / bf16 would round away.
  const bool reduced = dtype == DType::f16 || dtype == DType::bf16;
  for (auto& p : params_)
    if (is_floating(p.second.dtype()) && p.second.dtype() != dtype)
      replace_in_place(p.second, p.second.to(dtype));
  for (auto& b : buffers_) {
    if (!b.second.defined() || !is_floating(b.second.dtype())) continue;
    const bool stat =
        std::find(statistics_.begin(), statistics_.end(), b.first) != statistics_.end();
    const DType want = stat && reduced ? DType::f32 : dtype;
    if (b.second.dtype() != want) replace_in_place(b.second, b.second.to(want));
  }
  for (const auto& c : children_) c.second->to(dtype);
}

void Module::to(MemoryFormat f) {
  if (f == MemoryFormat::preserve)
    EMBER_FAIL("Module.to",
               "memory format preserve names no layout; use contiguous, "
               "channels_last or channels_last_3d");
  NoGradGuard no_grad;
  const int64_t rank = f == MemoryFormat::channels_last ? 4 : 5;
  auto convert = [&](Tensor& t) {
    if (!t.defined() || t.is_contiguous(f)) return;
    if (f == MemoryFormat::contiguous || t.dim() == rank) replace_in_place(t, t.contiguous(f));
  };
  for (auto& p : params_) convert(p.second);
  for (auto& b : buffers_) convert(b.second);
  for (const auto& c : children_) c.second->to(f);
}

void Module::zero_grad() {
  for (Tensor& p : parameters()) p.set_grad(Tensor());
}

StateDict Module::state_dict() const {
  StateDict d;
  for (auto& p : all_named(*this, EMBER_PARAMS, true)) d.set(p.first, p.second.detach());
  for (auto& b : all_named(*this, EMBER_BUFFERS, true)) d.set(b.first, b.second.detach());
  return d;
}

std::string Module::load_state_dict(const StateDict& dict, bool strict) {
  std::vector<std::pair<std::string, Tensor>> mine = all_named(*this, EMBER_PARAMS, true);
  for (auto& b : all_named(*this, EMBER_BUFFERS, true)) mine.push_back(b);
  std::vector<std::string> missing, unexpected, misshaped;
  for (const auto& m : mine) {
    if (!dict.contains(m.first)) {
      missing.push_back(m.first);
    } else if (dict.at(m.first).shape() != m.second.shape()) {
      misshaped.push_back(m.first + " (checkpoint " + shape_str(dict.at(m.first).shape()) +
                          ", model " + shape_str(m.second.shape()) + ")");
    } else if (is_floating(dict.at(m.first).dtype()) != is_floating(m.second.dtype())) {
      // Floating values are cast as torch's copy_ does; integers never become weights silently.
      misshaped.push_back(m.first + " (checkpoint " + dtype_name(dict.at(m.first).dtype()) +
                          ", model " + dtype_name(m.second.dtype()) + ")");
    }
  }
  for (const auto& item : dict.items()) {
    bool found = false;
    for (const auto& m : mine) found |= m.first == item.first;
    if (!found) unexpected.push_back(item.first);
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return s;
  };
  std::string report;
  if (!missing.empty()) report += "missing keys: " + join(missing);
  if (!unexpected.empty())
    report += std::string(report.empty() ? "" : "; ") + "unexpected keys: " + join(unexpected);
  if (!misshaped.empty() || (strict && !report.empty())) {
    std::string all = report;
    if (!misshaped.empty())
      all += std::string(all.empty() ? "" : "; ") + "size or dtype mismatch: " + join(misshaped);
    EMBER_FAIL("load_state_dict", "cannot load into ", type_name_, ": ", all);
  }
  NoGradGuard no_grad;
  for (auto& m : mine)
    if (dict.contains(m.first))
      m.second.copy_(dict.at(m.first).to(m.second.device()).to(m.second.dtype()));
  return report;
}

#undef EMBER_PARAMS
#undef EMBER_BUFFERS

std::string Module::str() const {
  std::ostringstream os;
  os << type_name_ << '(' << extra_repr();
  if (!children_.empty()) {
    os << '\n';
    for (const auto& c : children_) {
      std::string sub = c.second->str();
      std::string indented;
      for (char ch : sub) {
        indented += ch;
        if (ch == '\n') indented += "  ";
      }
      os << "  (" << c.first << "): " << indented << '\n';
    }
  }
  os << ')';
  return os.str();
}

}  // namespace ember::nn
