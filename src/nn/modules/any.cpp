#include "ember/nn/modules/any.h"

#include "tensor/internal.h"

namespace ember::nn {

namespace detail {
namespace {
std::string type_str(const std::type_info& t) {
  if (t == typeid(Tensor)) return "Tensor";
  if (t == typeid(bool)) return "bool";
  if (t == typeid(int64_t) || t == typeid(int)) return "an integer";
  if (t == typeid(double) || t == typeid(float)) return "a floating value";
  if (t == typeid(std::string)) return "std::string";
  if (t == typeid(std::vector<int64_t>)) return "std::vector<int64_t>";
  if (t == typeid(void)) return "nothing";
  return std::string("a value of type ") + t.name();
}
}  // namespace

void fail_any_arg(const std::string& module, size_t index, const std::type_info& want,
                  const std::type_info& got) {
  EMBER_FAIL("AnyModule", "argument ", index + 1, " of ", module, "'s forward takes ",
             type_str(want), ", got ", type_str(got));
}

void fail_any_arity(const std::string& module, size_t got, size_t most) {
  EMBER_FAIL("AnyModule", module, "'s forward takes at most ", most, " argument",
             most == 1 ? "" : "s", ", got ", got);
}

void fail_any_result(const std::string& module, const std::type_info& want,
                     const std::type_info& got) {
  EMBER_FAIL("AnyModule", module, "'s forward returns ", type_str(got), ", not ", type_str(want));
}
}  // namespace detail

std::any AnyModule::any_forward(std::vector<std::any> args) {
  if (!module_) EMBER_FAIL("AnyModule", "forward on an empty AnyModule");
  Module& m = *module_;
  if (!m.has_forward_hooks()) return caller_(args);
  // The hooks see (and may replace) the Tensor arguments, in order.
  std::vector<size_t> where;
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < args.size(); ++i)
    if (const Tensor* t = std::any_cast<Tensor>(&args[i])) {
      where.push_back(i);
      inputs.push_back(*t);
    }
  m.run_forward_pre_hooks(inputs);
  for (size_t j = 0; j < where.size(); ++j) args[where[j]] = inputs[j];
  std::any out = caller_(args);
  if (Tensor* t = main_(out)) m.run_forward_hooks(inputs, *t);
  return out;
}

Tensor AnyModule::main_output(std::any& result) const {
  if (Tensor* t = main_ ? main_(result) : nullptr) return *t;
  EMBER_FAIL("AnyModule", name(), "'s forward returns ", detail::type_str(result.type()),
             ", not a Tensor: call forward<R>(...) with its return type");
}

void AnyModule::fail_get() const {
  EMBER_FAIL("AnyModule", "the module is a ", name(), ", not the requested type");
}

}  // namespace ember::nn
