// Maps ONNX operators (op_type + attributes + opset) onto Ember calls, for the ONNX backend node
// tests. Each mapped op has a `check` that decides up front, from the attributes, the opset and
// the input types that are known, whether the node is covered (returns "" or the reason it is
// not), and a `run` that computes the outputs with Ember ops on the inputs' device.
#pragma once
#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ember/ember.h"

namespace ember::onnx::detail {

/// A node with its opset and the ONNX element types of its inputs (0 where unknown).
struct Node {
  const ::onnx::NodeProto& proto;
  int64_t opset;
  std::vector<int32_t> input_types;
  Device device = Device::ref();  // where tensors the node makes from nothing go (Constant)

  const ::onnx::AttributeProto* attr(const std::string& name) const;
  bool has(const std::string& name) const { return attr(name) != nullptr; }
  int64_t i(const std::string& name, int64_t def) const;
  double f(const std::string& name, double def) const;
  std::string s(const std::string& name, const std::string& def) const;
  std::vector<int64_t> ints(const std::string& name, std::vector<int64_t> def = {}) const;
  std::vector<double> floats(const std::string& name, std::vector<double> def = {}) const;
  /// Whether input `k` is given (ONNX marks an omitted optional input with an empty name).
  bool has_input(size_t k) const {
    return int(k) < proto.input_size() && !proto.input(int(k)).empty();
  }
  int32_t input_type(size_t k) const { return k < input_types.size() ? input_types[k] : 0; }
  /// A one-element input that is a constant of the graph (an initializer or a folded value),
  /// read once at load: its value, rank and dtype. Filled for the ops that use it
  /// (wants_constant_scalars).
  struct ConstScalar {
    double value;
    int64_t dim;
    DType dtype;
  };
  std::vector<std::optional<ConstScalar>> const_scalars;
  /// Input k as a Scalar when it is such a constant of x's float dtype (any dtype when
  /// `any_dtype`) and of no more dims than x, so that `x op scalar` has x's shape and dtype.
  std::optional<Scalar> scalar_input(size_t k, const Tensor& x, bool any_dtype = false) const;
  /// "" when every attribute the node carries is in `known`, else a reason naming the others.
  std::string only_attrs(std::initializer_list<const char*> known) const;
  std::string only_attrs(const std::vector<std::string>& known) const;
};

using Tensors = std::vector<Tensor>;
struct OpImpl {
  std::function<std::string(const Node&)> check;  // "" = covered
  std::function<Tensors(const Node&, const Tensors&)> run;
};

/// Checks for the registry: a node covered whatever its attributes, or one whose attributes
/// must all be in `known` (Node::only_attrs).
std::string ok(const Node&);
std::function<std::string(const Node&)> attrs(std::initializer_list<const char*> known);

/// Every mapped op type (the default ONNX domain).
std::map<std::string, OpImpl>& op_registry();

// ---- helpers shared by the op files ----
/// Values of an integer tensor (any integer dtype) as int64.
std::vector<int64_t> to_ints(const Tensor& t);
std::vector<double> to_doubles(const Tensor& t);
/// Whether compile() fills Node::const_scalars for this op type.
bool wants_constant_scalars(const std::string& op_type);
/// ONNX dims may be negative: wrap against rank.
int64_t wrap(int64_t d, int64_t rank);

// Registration functions of the op files (called once by op_registry()).
void register_math_ops(std::map<std::string, OpImpl>& r);
void register_shape_ops(std::map<std::string, OpImpl>& r);
void register_nn_ops(std::map<std::string, OpImpl>& r);
void register_rnn_ops(std::map<std::string, OpImpl>& r);
void register_resize_ops(std::map<std::string, OpImpl>& r);  // Resize, GridSample, RoiAlign
void register_quant_ops(std::map<std::string, OpImpl>& r);   // quantization, Einsum, Det
void register_signal_ops(std::map<std::string, OpImpl>& r);  // windows, DFT, STFT, LRN, Unique
void register_detect_ops(std::map<std::string, OpImpl>& r);  // NonMaxSuppression, MaxUnpool
void register_text_ops(std::map<std::string, OpImpl>& r);    // TfIdfVectorizer

}  // namespace ember::onnx::detail
