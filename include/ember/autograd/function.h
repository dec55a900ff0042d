// Custom differentiable ops, as LibTorch's torch::autograd::Function<T> and AutogradContext:
//
//   struct MulConst : ember::autograd::Function<MulConst> {
//     static Tensor forward(AutogradContext* ctx, Tensor x, double c) {
//       ctx->saved_data["c"] = c;
//       return x * c;
//     }
//     static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
//       return {g[0] * ctx->saved_data["c"].toDouble(), Tensor()};  // one per forward argument
//     }
//   };
//   Tensor y = MulConst::apply(x, 2.0);
//
// forward runs with grad mode off and gets the arguments of apply as given: Tensor arguments
// (and each element of a std::vector<Tensor> argument) are the inputs of the graph node; any
// other argument is passed through and gets no gradient. forward returns a Tensor or a
// std::vector<Tensor> (several outputs); apply returns the same type, its floating-point
// outputs recording the node when grad mode is on and an input requires grad.
// backward gets one gradient per output (zeros for outputs no gradient reached) and returns one
// gradient per forward argument, in order (an undefined Tensor for non-tensor arguments and for
// inputs that need none; each std::vector<Tensor> element counts as one argument). It runs with
// grad mode off, or on in a create_graph backward: a backward written with tensor ops (it may
// use only tensor ops, so it runs on every backend) then gives second derivatives.
// Throws ember::Error "[Name] ..." naming the Function when backward returns the wrong number of
// gradients, a gradient for a non-tensor argument, or a gradient whose shape or device differs
// from its input's (a different floating dtype is converted, as torch).
// Outputs are never tracked as views of the inputs (a write into one does not rebase an
// input's history); use mark_dirty for inputs written in place.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "ember/autograd.h"
#include "ember/tensor.h"

namespace ember::autograd {

/// A non-tensor value kept in AutogradContext::saved_data (a subset of LibTorch's c10::IValue):
/// none, bool, integer (any integral type, kept as int64_t), double (float too), string, Tensor,
/// and lists of integers (a Shape) or doubles. The to*() accessors throw ember::Error naming the
/// kind held when it is another ("[saved_data] expected an int, the value is a double").
class IValue {
 public:
  IValue() = default;
  IValue(bool v) : v_(v) {}  // NOLINT: implicit, as c10::IValue
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  IValue(T v) : v_(int64_t(v)) {}                       // NOLINT
  IValue(double v) : v_(v) {}                           // NOLINT
  IValue(float v) : v_(double(v)) {}                    // NOLINT
  IValue(std::string v) : v_(std::move(v)) {}           // NOLINT
  IValue(const char* v) : v_(std::string(v)) {}         // NOLINT
  IValue(Tensor v) : v_(std::move(v)) {}                // NOLINT
  IValue(std::vector<int64_t> v) : v_(std::move(v)) {}  // NOLINT
  IValue(std::vector<double> v) : v_(std::move(v)) {}   // NOLINT

  bool isNone() const { return v_.index() == 0; }
  bool isBool() const { return v_.index() == 1; }
  bool isInt() const { return v_.index() == 2; }
  bool isDouble() const { return v_.index() == 3; }
  bool isString() const { return v_.index() == 4; }
  bool isTensor() const { return v_.index() == 5; }
  bool isIntList() const { return v_.index() == 6; }
  bool isDoubleList() const { return v_.index() == 7; }

  bool toBool() const { return get<bool>("a bool"); }
  int64_t toInt() const { return get<int64_t>("an int"); }
  double toDouble() const { return get<double>("a double"); }
  const std::string& toStringRef() const { return get<std::string>("a string"); }
  Tensor toTensor() const { return get<Tensor>("a Tensor"); }
  std::vector<int64_t> toIntVector() const { return get<std::vector<int64_t>>("an int list"); }
  std::vector<double> toDoubleVector() const { return get<std::vector<double>>("a double list"); }
  /// "None", "bool", "int", "double", "string", "Tensor", "int list", "double list".
  const char* kind() const;

 private:
  template <typename T>
  const T& get(const char* want) const {
    if (const T* p = std::get_if<T>(&v_)) return *p;
    wrong_kind(want);
  }
  [[noreturn]] void wrong_kind(const char* want) const;
  std::variant<std::monostate, bool, int64_t, double, std::string, Tensor, std::vector<int64_t>,
               std::vector<double>>
      v_;
};

/// What a Function's forward and backward get (LibTorch's AutogradContext). Owned by the graph
/// node; released (with its saved tensors) after a backward without retain_graph.
class AutogradContext {
 public:
  AutogradContext();
  ~AutogradContext();
  AutogradContext(const AutogradContext&) = delete;
  AutogradContext& operator=(const AutogradContext&) = delete;

  /// Saves inputs or outputs of forward for backward (call in forward; a later call replaces
  /// the list). Undefined Tensors are kept as undefined. They are saved when forward returns:
  /// writing one in place after that makes get_saved_variables() throw "[Name] ... modified by
  /// an in-place operation".
  void save_for_backward(std::vector<Tensor> to_save);
  /// The tensors given to save_for_backward, in order (in a create_graph backward they carry
  /// their history, so what backward computes from them is differentiable). Throws ember::Error
  /// when one was modified in place since, or when the graph was freed by an earlier backward.
  std::vector<Tensor> get_saved_variables() const;
  /// Declares inputs that forward modified in place (and returns as outputs): their history is
  /// moved onto this node. Throws, when forward returns, for a leaf that requires grad, a view,
  /// or a dirty tensor that is not returned.
  void mark_dirty(const std::vector<Tensor>& inputs);
  /// Declares outputs that get no gradient (indices, masks): they do not require grad, and the
  /// gradient backward gets for them is zeros.
  void mark_non_differentiable(const std::vector<Tensor>& outputs);
  /// Whether tensor input i (counting only Tensor arguments, as LibTorch's edges) requires grad:
  /// backward may skip the gradients of the others. Throws ember::Error for i out of range.
  bool needs_input_grad(size_t i) const;
  /// Non-tensor values for backward (LibTorch's saved_data).
  std::unordered_map<std::string, IValue> saved_data;

  struct State;  // internal
  State& state() const { return *state_; }

 private:
  std::unique_ptr<State> state_;
};

namespace detail {

using FunctionBackward = std::vector<Tensor> (*)(AutogradContext* ctx,
                                                 std::vector<Tensor> grad_outputs);

/// One call of Function<T>::apply: gathers the arguments, runs the recording. Internal.
class FunctionCall {
 public:
  explicit FunctionCall(const char* mangled_type_name);
  ~FunctionCall();
  FunctionCall(const FunctionCall&) = delete;
  FunctionCall& operator=(const FunctionCall&) = delete;
  void tensor_arg(const Tensor& t);
  void other_arg();
  /// Call after every argument is given, before forward.
  AutogradContext* begin();
  /// Call with forward's outputs: records the node; returns the outputs (an output that is an
  /// input returned as is comes back as a new alias carrying the node).
  std::vector<Tensor> finish(std::vector<Tensor> outputs, FunctionBackward backward);

 private:
  std::shared_ptr<AutogradContext> ctx_;
};

template <typename A>
void add_arg(FunctionCall& call, const A& a) {
  using D = std::decay_t<A>;
  if constexpr (std::is_same_v<D, Tensor>) {
    call.tensor_arg(a);
  } else if constexpr (std::is_same_v<D, std::vector<Tensor>>) {
    for (const Tensor& t : a) call.tensor_arg(t);
  } else if constexpr (std::is_same_v<D, std::optional<Tensor>>) {
    call.tensor_arg(a ? *a : Tensor());
  } else {
    call.other_arg();
  }
}

}  // namespace detail

/// Base of a custom op T (CRTP, as torch::autograd::Function<T>). T defines
///   static Tensor-or-std::vector<Tensor> forward(AutogradContext* ctx, ARGS...);
///   static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> grads);
/// and is called as T::apply(args...). The node is named "<T>Backward" (grad_fn_name()).
template <class T>
struct Function {
  // T::backward may take its gradients by value or by const reference.
  static std::vector<Tensor> backward_of(AutogradContext* ctx, std::vector<Tensor> grads) {
    return T::backward(ctx, std::move(grads));
  }
  template <typename... Args>
  static auto apply(Args&&... args) {
    detail::FunctionCall call(typeid(T).name());
    (detail::add_arg(call, args), ...);
    AutogradContext* ctx = call.begin();
    using R = decltype(T::forward(ctx, std::forward<Args>(args)...));
    static_assert(std::is_same_v<R, Tensor> || std::is_same_v<R, std::vector<Tensor>>,
                  "Function::forward must return Tensor or std::vector<Tensor>");
    R out = [&] {
      NoGradGuard no_grad;
      return T::forward(ctx, std::forward<Args>(args)...);
    }();
    if constexpr (std::is_same_v<R, Tensor>) {
      return call.finish({std::move(out)}, &backward_of)[0];
    } else {
      return call.finish(std::move(out), &backward_of);
    }
  }
};

}  // namespace ember::autograd
