// Containers (as torch.nn.Sequential, ModuleList, ModuleDict). Children are registered under
// their position ("0", "1", ...) or their key, so a Sequential's state_dict reads
// "0.weight", "0.bias", "2.weight"...
#pragma once
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/nn/module.h"
#include "ember/nn/modules/any.h"

namespace ember::nn {

/// Chains modules: forward(x) = m_n(...m_1(m_0(x))) (as torch.nn.Sequential). Holds each module
/// as an AnyModule, so any module fits: the first may take several arguments, which
/// forward(args...) passes to it; every later one takes the previous output (a tuple output
/// passes on its first tensor, as AnyModule::forward).
///   auto net = std::make_shared<Sequential>(std::make_shared<Linear>(4, 8),
///                                           std::make_shared<ReLU>(), std::make_shared<Linear>(8,
///                                           2));
///   Sequential seq{std::make_shared<TransformerEncoder>(opts, 2), std::make_shared<Linear>(8, 2)};
///   Tensor y = seq.forward(src, mask);  // encoder(src, mask), then the Linear
/// An empty Sequential returns its input (and throws for a call with several arguments).
class Sequential : public UnaryModule {
 public:
  Sequential() : UnaryModule("Sequential") {}
  Sequential(std::initializer_list<std::shared_ptr<UnaryModule>> modules);  // NOLINT
  explicit Sequential(const std::vector<std::shared_ptr<UnaryModule>>& modules);
  explicit Sequential(const std::vector<AnyModule>& modules);
  /// Sequential(m0, m1, ...) from shared_ptrs of any modules (or AnyModules).
  template <typename... M,
            typename = std::enable_if_t<(sizeof...(M) > 0) &&
                                        (std::is_convertible_v<M&&, AnyModule> && ...)>>
  explicit Sequential(M&&... modules) : UnaryModule("Sequential") {
    (push_back(AnyModule(std::forward<M>(modules))), ...);
  }
  /// Appends a module named by its position. Throws for a null module.
  void push_back(AnyModule m);
  /// Appends a module under `name` (as Sequential(OrderedDict(...))). Throws for a duplicate,
  /// empty or dotted name.
  void push_back(const std::string& name, AnyModule m);
  /// The i-th module; negative i counts from the end. Throws "[Sequential] index ..." when out
  /// of range.
  std::shared_ptr<Module> operator[](int64_t i) const;
  /// The i-th module cast to M; throws when it is not an M.
  template <typename M>
  std::shared_ptr<M> at(int64_t i) const {
    auto m = std::dynamic_pointer_cast<M>((*this)[i]);
    if (!m) fail_cast(i);
    return m;
  }
  size_t size() const { return modules_.size(); }
  bool empty() const { return modules_.empty(); }
  /// Iterates the AnyModules (not on a temporary Sequential, whose iterators would dangle).
  auto begin() const& { return modules_.begin(); }
  auto end() const& { return modules_.end(); }
  void begin() const&& = delete;
  void end() const&& = delete;
  Tensor forward(const Tensor& x) override;
  /// The first module's forward(args...), then the others in turn.
  template <typename... Args, typename = std::enable_if_t<(sizeof...(Args) > 1)>>
  Tensor forward(Args&&... args) {
    return forward_any({detail::any_arg(std::forward<Args>(args))...});
  }
  using UnaryModule::operator();
  /// forward(args...) with this Sequential's own hooks (and each module's).
  template <typename... Args, typename = std::enable_if_t<(sizeof...(Args) > 1)>>
  Tensor operator()(Args&&... args) {
    return call_any({detail::any_arg(std::forward<Args>(args))...});
  }

 private:
  Tensor forward_any(std::vector<std::any> args);
  Tensor call_any(std::vector<std::any> args);
  [[noreturn]] void fail_cast(int64_t i) const;
  friend Tensor detail::forward_several(UnaryModule& m, const std::vector<std::any>& args);
  std::vector<AnyModule> modules_;

 protected:
  /// For a subclass that is a Sequential under its own type name (its str(), its errors).
  explicit Sequential(std::string type_name) : UnaryModule(std::move(type_name)) {}
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
  auto begin() const& { return modules_.begin(); }
  auto end() const& { return modules_.end(); }
  void begin() const&& = delete;
  void end() const&& = delete;

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
