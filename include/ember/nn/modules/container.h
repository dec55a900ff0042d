// Containers (as torch.nn.Sequential, ModuleList, ModuleDict). Children are registered under
// their position ("0", "1", ...) or their key, so a Sequential's state_dict reads
// "0.weight", "0.bias", "2.weight"...
#pragma once
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "ember/nn/module.h"

namespace ember::nn {

/// Chains UnaryModules: forward(x) = m_n(...m_1(m_0(x))) (as torch.nn.Sequential).
///   auto net = std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<UnaryModule>>{
///       std::make_shared<Linear>(4, 8), std::make_shared<ReLU>(), std::make_shared<Linear>(8,
///       2)});
/// An empty Sequential returns its input.
class Sequential : public UnaryModule {
 public:
  Sequential() : UnaryModule("Sequential") {}
  Sequential(std::initializer_list<std::shared_ptr<UnaryModule>> modules);  // NOLINT
  explicit Sequential(const std::vector<std::shared_ptr<UnaryModule>>& modules);
  /// Appends a module named by its position. Throws for a null module.
  void push_back(std::shared_ptr<UnaryModule> m);
  /// Appends a module under `name` (as Sequential(OrderedDict(...))). Throws for a duplicate,
  /// empty or dotted name.
  void push_back(const std::string& name, std::shared_ptr<UnaryModule> m);
  /// The i-th module; negative i counts from the end. Throws "[Sequential] index ..." when out
  /// of range.
  std::shared_ptr<UnaryModule> operator[](int64_t i) const;
  /// The i-th module cast to M; throws when it is not an M.
  template <typename M>
  std::shared_ptr<M> at(int64_t i) const {
    auto m = std::dynamic_pointer_cast<M>((*this)[i]);
    if (!m) fail_cast(i);
    return m;
  }
  size_t size() const { return modules_.size(); }
  bool empty() const { return modules_.empty(); }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }
  Tensor forward(const Tensor& x) override;

 private:
  [[noreturn]] void fail_cast(int64_t i) const;
  std::vector<std::shared_ptr<UnaryModule>> modules_;
};

/// A shared Sequential of the given modules:
///   auto net = make_sequential(std::make_shared<Linear>(4, 8), std::make_shared<ReLU>());
template <typename... M>
std::shared_ptr<Sequential> make_sequential(std::shared_ptr<M>... modules) {
  return std::make_shared<Sequential>(std::vector<std::shared_ptr<UnaryModule>>{
      std::shared_ptr<UnaryModule>(std::move(modules))...});
}

/// An indexable list of modules of any kind (as torch.nn.ModuleList); no forward.
class ModuleList : public Module {
 public:
  ModuleList() : Module("ModuleList") {}
  ModuleList(std::initializer_list<std::shared_ptr<Module>> modules);  // NOLINT
  void push_back(std::shared_ptr<Module> m);
  void extend(const std::vector<std::shared_ptr<Module>>& modules);
  /// Negative i counts from the end; throws "[ModuleList] index ..." when out of range.
  std::shared_ptr<Module> operator[](int64_t i) const;
  template <typename M>
  std::shared_ptr<M> at(int64_t i) const {
    auto m = std::dynamic_pointer_cast<M>((*this)[i]);
    if (!m) fail_cast(std::to_string(i));
    return m;
  }
  size_t size() const { return modules_.size(); }
  bool empty() const { return modules_.empty(); }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  [[noreturn]] void fail_cast(const std::string& key) const;
  std::vector<std::shared_ptr<Module>> modules_;
};

/// Modules by name, in insertion order (as torch.nn.ModuleDict); no forward.
class ModuleDict : public Module {
 public:
  ModuleDict() : Module("ModuleDict") {}
  /// Adds a module. Throws for a duplicate, empty or dotted key, or a null module.
  void insert(const std::string& key, std::shared_ptr<Module> m);
  bool contains(const std::string& key) const;
  /// Throws "[ModuleDict] no key ..." when absent.
  std::shared_ptr<Module> operator[](const std::string& key) const;
  template <typename M>
  std::shared_ptr<M> at(const std::string& key) const {
    auto m = std::dynamic_pointer_cast<M>((*this)[key]);
    if (!m) fail_cast(key);
    return m;
  }
  std::vector<std::string> keys() const;
  std::vector<std::shared_ptr<Module>> values() const { return children(); }
  size_t size() const { return children().size(); }
  bool empty() const { return size() == 0; }

 private:
  [[noreturn]] void fail_cast(const std::string& key) const;
};

}  // namespace ember::nn
