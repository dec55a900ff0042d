#include "onnx/ops.h"

#include <algorithm>

namespace ember::onnx::detail {

const ::onnx::AttributeProto* Node::attr(const std::string& name) const {
  for (const auto& a : proto.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t Node::i(const std::string& name, int64_t def) const {
  auto* a = attr(name);
  return a ? a->i() : def;
}

double Node::f(const std::string& name, double def) const {
  auto* a = attr(name);
  return a ? double(a->f()) : def;
}

std::string Node::s(const std::string& name, const std::string& def) const {
  auto* a = attr(name);
  return a ? a->s() : def;
}

std::vector<int64_t> Node::ints(const std::string& name, std::vector<int64_t> def) const {
  auto* a = attr(name);
  if (!a) return def;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::vector<double> Node::floats(const std::string& name, std::vector<double> def) const {
  auto* a = attr(name);
  if (!a) return def;
  return std::vector<double>(a->floats().begin(), a->floats().end());
}

std::string Node::only_attrs(std::initializer_list<const char*> known) const {
  return only_attrs(std::vector<std::string>(known.begin(), known.end()));
}

std::string Node::only_attrs(const std::vector<std::string>& known) const {
  std::string extra;
  for (const auto& a : proto.attribute())
    if (std::find(known.begin(), known.end(), a.name()) == known.end())
      extra += (extra.empty() ? "" : ", ") + a.name();
  return extra.empty() ? "" : "attribute " + extra + " not mapped";
}

std::string ok(const Node&) { return ""; }

std::function<std::string(const Node&)> attrs(std::initializer_list<const char*> known) {
  return [k = std::vector<std::string>(known.begin(), known.end())](const Node& n) {
    return n.only_attrs(k);
  };
}

std::vector<int64_t> to_ints(const Tensor& t) {
  if (t.device().is_host() && is_integral(t.dtype())) return t.to_vector<int64_t>();
  return t.to(Device::ref()).to(DType::i64).to_vector<int64_t>();
}

std::vector<double> to_doubles(const Tensor& t) {
  if (t.device().is_host()) return t.to_vector<double>();
  return t.to(Device::ref()).to(DType::f64).to_vector<double>();
}

int64_t wrap(int64_t d, int64_t rank) { return d < 0 ? d + rank : d; }

bool wants_constant_scalars(const std::string& op_type) {
  return op_type == "Add" || op_type == "Sub" || op_type == "Mul" || op_type == "Div" ||
         op_type == "Pow" || op_type == "Clip";
}

std::optional<Scalar> Node::scalar_input(size_t k, const Tensor& x, bool any_dtype) const {
  if (k >= const_scalars.size() || !const_scalars[k] || !x.defined()) return std::nullopt;
  const ConstScalar& c = *const_scalars[k];
  if (!is_floating(x.dtype()) || c.dim > x.dim() || (!any_dtype && c.dtype != x.dtype()))
    return std::nullopt;
  return Scalar(c.value);
}

std::map<std::string, OpImpl>& op_registry() {
  static std::map<std::string, OpImpl> r = [] {
    std::map<std::string, OpImpl> m;
    register_math_ops(m);
    register_shape_ops(m);
    register_nn_ops(m);
    register_rnn_ops(m);
    register_resize_ops(m);  // after register_nn_ops: replaces its Resize
    register_quant_ops(m);
    register_signal_ops(m);
    register_detect_ops(m);
    register_text_ops(m);
    return m;
  }();
  return r;
}

}  // namespace ember::onnx::detail
