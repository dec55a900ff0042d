#include "ember/nn/modules/container.h"

#include "tensor/internal.h"

namespace ember::nn {

namespace {
size_t resolve(const char* op, int64_t i, size_t n) {
  const int64_t s = int64_t(n);
  if (i < -s || i >= s) EMBER_FAIL(op, "index ", i, " is out of range for ", n, " modules");
  return size_t(i < 0 ? i + s : i);
}
}  // namespace

Sequential::Sequential(std::initializer_list<std::shared_ptr<UnaryModule>> modules)
    : UnaryModule("Sequential") {
  for (const auto& m : modules) push_back(m);
}

Sequential::Sequential(const std::vector<std::shared_ptr<UnaryModule>>& modules)
    : UnaryModule("Sequential") {
  for (const auto& m : modules) push_back(m);
}

Sequential::Sequential(const std::vector<AnyModule>& modules) : UnaryModule("Sequential") {
  for (const auto& m : modules) push_back(m);
}

void Sequential::push_back(AnyModule m) {
  push_back(std::to_string(modules_.size()), std::move(m));
}

void Sequential::push_back(const std::string& name, AnyModule m) {
  if (m.is_empty()) EMBER_FAIL("Sequential", "cannot add a null module '", name, "'");
  add_child(name, m.ptr());
  modules_.push_back(std::move(m));
}

std::shared_ptr<Module> Sequential::operator[](int64_t i) const {
  return modules_[resolve("Sequential", i, modules_.size())].ptr();
}

void Sequential::fail_cast(int64_t i) const {
  EMBER_FAIL("Sequential", "module ", i, " (", (*this)[i]->type_name(),
             ") is not of the requested type");
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (auto& m : modules_) y = m.forward(y);
  return y;
}

Tensor Sequential::forward_any(std::vector<std::any> args) {
  if (modules_.empty())
    EMBER_FAIL("Sequential", "an empty Sequential takes one input, got ", args.size());
  std::any first = modules_[0].any_forward(std::move(args));
  Tensor y = modules_[0].main_output(first);
  for (size_t i = 1; i < modules_.size(); ++i) y = modules_[i].forward(y);
  return y;
}

Tensor detail::forward_several(UnaryModule& m, const std::vector<std::any>& args) {
  if (auto* seq = dynamic_cast<Sequential*>(&m)) return seq->forward_any(args);
  fail_any_arity(m.type_name(), args.size(), 1);
}

Tensor Sequential::call_any(std::vector<std::any> args) {
  if (!has_forward_hooks()) return forward_any(std::move(args));
  std::vector<size_t> where;
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < args.size(); ++i)
    if (const Tensor* t = std::any_cast<Tensor>(&args[i])) {
      where.push_back(i);
      inputs.push_back(*t);
    }
  run_forward_pre_hooks(inputs);
  for (size_t j = 0; j < where.size(); ++j) args[where[j]] = inputs[j];
  Tensor y = forward_any(std::move(args));
  run_forward_hooks(inputs, y);
  return y;
}

ModuleList::ModuleList(std::initializer_list<std::shared_ptr<Module>> modules)
    : Module("ModuleList") {
  for (const auto& m : modules) push_back(m);
}

void ModuleList::push_back(std::shared_ptr<Module> m) {
  if (!m) EMBER_FAIL("ModuleList", "cannot add a null module");
  add_child(std::to_string(modules_.size()), m);
  modules_.push_back(std::move(m));
}

void ModuleList::extend(const std::vector<std::shared_ptr<Module>>& modules) {
  for (const auto& m : modules) push_back(m);
}

std::shared_ptr<Module> ModuleList::operator[](int64_t i) const {
  return modules_[resolve("ModuleList", i, modules_.size())];
}

void ModuleList::fail_cast(const std::string& key) const {
  EMBER_FAIL("ModuleList", "module ", key, " is not of the requested type");
}

void ModuleDict::insert(const std::string& key, std::shared_ptr<Module> m) {
  if (!m) EMBER_FAIL("ModuleDict", "cannot add a null module '", key, "'");
  add_child(key, std::move(m));
}

bool ModuleDict::contains(const std::string& key) const {
  for (const auto& c : named_children())
    if (c.first == key) return true;
  return false;
}

std::shared_ptr<Module> ModuleDict::operator[](const std::string& key) const {
  for (const auto& c : named_children())
    if (c.first == key) return c.second;
  EMBER_FAIL("ModuleDict", "no key '", key, "'");
}

std::vector<std::string> ModuleDict::keys() const {
  std::vector<std::string> out;
  for (const auto& c : named_children()) out.push_back(c.first);
  return out;
}

void ModuleDict::fail_cast(const std::string& key) const {
  EMBER_FAIL("ModuleDict", "module '", key, "' is not of the requested type");
}

}  // namespace ember::nn
