// nn::AnyModule: holds any module and calls its forward with type-erased arguments (as
// LibTorch's torch::nn::AnyModule), so Sequential can chain modules of every kind:
//   nn::AnyModule enc(std::make_shared<nn::TransformerEncoder>(opts, 2));
//   Tensor y = enc.forward(src, mask);                       // forward(src, mask)
//   auto [out, w] = mha.forward<std::tuple<Tensor, Tensor>>(q, k, v);  // the full result
#pragma once
#include <any>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "ember/nn/module.h"

namespace ember::nn {

namespace detail {
template <typename T>
struct ForwardTraits;
template <typename C, typename R, typename... A>
struct ForwardTraits<R (C::*)(A...)> {
  using Ret = R;
  using Args = std::tuple<std::decay_t<A>...>;
  static constexpr size_t arity = sizeof...(A);
};
template <typename C, typename R, typename... A>
struct ForwardTraits<R (C::*)(A...) const> : ForwardTraits<R (C::*)(A...)> {};

template <typename T>
struct FirstIsTensor : std::false_type {};
template <typename... T>
struct FirstIsTensor<std::tuple<Tensor, T...>> : std::true_type {};
template <typename T>
struct FirstIsTensor<std::pair<Tensor, T>> : std::true_type {};

/// A call-site argument as stored: integers as int64_t, floating values as double, C strings as
/// std::string, anything else as itself.
template <typename T>
std::any any_arg(T&& v) {
  using D = std::decay_t<T>;
  if constexpr (std::is_same_v<D, bool>)
    return std::any(bool(v));
  else if constexpr (std::is_integral_v<D>)
    return std::any(int64_t(v));
  else if constexpr (std::is_floating_point_v<D>)
    return std::any(double(v));
  else if constexpr (std::is_same_v<D, const char*> || std::is_same_v<D, char*>)
    return std::any(std::string(v));
  else
    return std::any(D(std::forward<T>(v)));
}

[[noreturn]] void fail_any_arg(const std::string& module, size_t index, const std::type_info& want,
                               const std::type_info& got);
[[noreturn]] void fail_any_arity(const std::string& module, size_t got, size_t most);
/// A UnaryModule called with several arguments: a Sequential passes them to its first module
/// (container.cpp); any other throws fail_any_arity.
Tensor forward_several(UnaryModule& m, const std::vector<std::any>& args);
[[noreturn]] void fail_any_result(const std::string& module, const std::type_info& want,
                                  const std::type_info& got);

/// Argument `i` converted to forward's parameter type P; a missing (trailing) argument is P{}.
template <typename P>
P from_any(const std::vector<std::any>& args, size_t i, const std::string& module) {
  if (i >= args.size()) return P{};
  const std::any& a = args[i];
  if (const P* p = std::any_cast<P>(&a)) return *p;
  if constexpr (std::is_floating_point_v<P>) {
    if (const int64_t* v = std::any_cast<int64_t>(&a)) return P(*v);
    if (const double* v = std::any_cast<double>(&a)) return P(*v);
  } else if constexpr (std::is_integral_v<P> && !std::is_same_v<P, bool>) {
    if (const int64_t* v = std::any_cast<int64_t>(&a)) return P(*v);
  }
  fail_any_arg(module, i, typeid(P), a.type());
}

template <typename M, size_t... I>
auto invoke_forward(M& m, const std::vector<std::any>& args, const std::string& name,
                    std::index_sequence<I...>) {
  using Args = typename ForwardTraits<decltype(&M::forward)>::Args;
  return m.forward(from_any<std::tuple_element_t<I, Args>>(args, I, name)...);
}
}  // namespace detail

/// A type-erased module: any nn::Module subclass M with one forward (UnaryModules with their
/// forward(const Tensor&); a Sequential also with several arguments, for its first module).
/// forward(args...) checks each argument against M::forward's parameters at run time (integers
/// convert to integer and floating parameters, floating values to floating ones) and throws
/// "[AnyModule] argument 1 of Linear's forward ..." on a mismatch or "[AnyModule] ... takes at most
/// N arguments". Missing trailing arguments are value-initialized (Tensor(), false, 0): for Ember's
/// modules that is their default, except MultiheadAttention's need_weights / average_attn_weights,
/// which then give no weights. forward() returns a Tensor: the output, or the first element of a
/// tuple/pair result (MultiheadAttention's attn_output, LSTM's output); forward<R>(...) returns the
/// full result (throws when it is not an R). Calls run the module's forward pre-hooks and hooks, as
/// operator() does. Holds a shared_ptr: copies share the module.
class AnyModule {
 public:
  AnyModule() = default;
  template <typename M, typename = std::enable_if_t<std::is_base_of_v<Module, M>>>
  AnyModule(std::shared_ptr<M> m) {  // NOLINT: implicit, as LibTorch's
    if (!m) return;
    module_ = m;
    if constexpr (std::is_base_of_v<UnaryModule, M>) {
      unary_ = m.get();
      caller_ = [u = static_cast<UnaryModule*>(m.get())](const std::vector<std::any>& a) {
        if (a.size() != 1) return std::any(detail::forward_several(*u, a));
        return std::any(u->forward(detail::from_any<Tensor>(a, 0, u->type_name())));
      };
      main_ = [](std::any& r) { return std::any_cast<Tensor>(&r); };
    } else {
      using Tr = detail::ForwardTraits<decltype(&M::forward)>;
      using Ret = typename Tr::Ret;
      static_assert(!std::is_void_v<Ret>, "AnyModule needs a forward that returns a value");
      caller_ = [p = m.get()](const std::vector<std::any>& a) {
        if (a.size() > Tr::arity) detail::fail_any_arity(p->type_name(), a.size(), Tr::arity);
        return std::any(
            detail::invoke_forward(*p, a, p->type_name(), std::make_index_sequence<Tr::arity>{}));
      };
      main_ = [](std::any& r) -> Tensor* {
        if constexpr (std::is_same_v<Ret, Tensor>)
          return std::any_cast<Tensor>(&r);
        else if constexpr (detail::FirstIsTensor<Ret>::value)
          return &std::get<0>(*std::any_cast<Ret>(&r));
        else
          return nullptr;
      };
    }
  }

  /// forward(args...) through the type-erased call, with hooks. Throws for an empty holder.
  template <typename R = Tensor, typename... Args>
  R forward(Args&&... args) {
    if constexpr (std::is_same_v<R, Tensor> && sizeof...(Args) == 1 &&
                  (std::is_same_v<std::decay_t<Args>, Tensor> && ...)) {
      if (unary_) return (*unary_)(args...);  // the common case, without std::any
    }
    std::vector<std::any> a{detail::any_arg(std::forward<Args>(args))...};
    std::any out = any_forward(std::move(a));
    if constexpr (std::is_same_v<R, Tensor>) {
      return main_output(out);
    } else {
      if (R* r = std::any_cast<R>(&out)) return std::move(*r);
      detail::fail_any_result(name(), typeid(R), out.type());
    }
  }
  template <typename R = Tensor, typename... Args>
  R operator()(Args&&... args) {
    return forward<R>(std::forward<Args>(args)...);
  }
  /// The call with arguments already erased (as LibTorch's any_forward): runs the pre-hooks on
  /// the Tensor arguments, forward, then the hooks on the output tensor. The result holds
  /// forward's return value.
  std::any any_forward(std::vector<std::any> args);
  /// The output tensor of an any_forward result (its first element for a tuple); throws when
  /// the module's forward returns no tensor.
  Tensor main_output(std::any& result) const;

  /// The module; null for an empty holder.
  std::shared_ptr<Module> ptr() const { return module_; }
  /// The module as M; throws "[AnyModule] ..." when it is not an M.
  template <typename M>
  std::shared_ptr<M> get() const {
    auto m = std::dynamic_pointer_cast<M>(module_);
    if (!m) fail_get();
    return m;
  }
  bool is_empty() const { return !module_; }
  /// The module's type name ("" when empty).
  std::string name() const { return module_ ? module_->type_name() : std::string(); }

 private:
  [[noreturn]] void fail_get() const;
  std::shared_ptr<Module> module_;
  UnaryModule* unary_ = nullptr;
  std::function<std::any(const std::vector<std::any>&)> caller_;
  std::function<Tensor*(std::any&)> main_;
};

}  // namespace ember::nn
