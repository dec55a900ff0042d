// ONNX models at run time: load a .onnx file onto a device and run it with Ember's ops, no
// code generation. Built on ONNX's own protobuf classes, checker and shape inference (Debian's
// libonnx-dev); present when Ember was built with EMBER_ONNX (the default where libonnx-dev is
// installed; ember/onnx.h is then installed too).
//
//   auto model = ember::onnx::load("resnet50.onnx", ember::Device::cpu());
//   std::map<std::string, ember::Tensor> out = model.run({{"input", x}});
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/error.h"
#include "ember/tensor.h"

namespace ember::nn {
class Module;
}

namespace ember::onnx {

/// A graph input or output. shape[d] is the dim's size, or -1 when the model leaves it open
/// (dim_params[d] then names it, e.g. "batch", or is "" when unnamed). has_shape is false when
/// the model gives no rank at all (shape is then empty).
struct ValueInfo {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  std::vector<std::string> dim_params;
  bool has_shape = true;
};

/// A node Ember cannot run, and why ("op not mapped", "attribute X not mapped", "tensor type
/// STRING", ...). `node` is the node's name, or "#k" (its index in the graph) when it has none.
struct Unsupported {
  std::string node;
  std::string op_type;
  std::string reason;
};

/// What a model file holds, read without running it (`ember onnx info`).
struct Info {
  int64_t ir_version = 0;
  int64_t opset = 0;  // of the default domain ("" / "ai.onnx")
  std::string producer;
  std::vector<ValueInfo> inputs;  // the inputs run() takes (initializers left out)
  std::vector<ValueInfo> outputs;
  std::map<std::string, int64_t> op_counts;     // op type -> nodes
  int64_t initializers = 0;                     // weight tensors
  int64_t parameters = 0;                       // their elements
  std::vector<Unsupported> unsupported;         // empty: load() accepts the model
  std::map<std::string, std::string> metadata;  // the model's metadata_props (key -> value)
};

/// The opsets of the default domain Ember runs: every one Debian's ONNX 1.12 knows. Old
/// opsets' attributes (broadcast, consumed_inputs, is_test, ...) are checked per node as any other.
inline constexpr int64_t kMinOpset = 1;
inline constexpr int64_t kMaxOpset = 17;

/// Reads `path` (and its external data files, resolved against the model's directory) and says
/// what it holds and which nodes Ember cannot run. Throws ember::Error when the file cannot be
/// read, is not an ONNX model (truncated, corrupt: protobuf parse or ONNX checker failure) or
/// names an opset outside [kMinOpset, kMaxOpset].
Info inspect(const std::string& path);

/// A loaded model: its weights live on device(); run() may be called from one thread at a time
/// per Model (copies share the weights).
class Model {
 public:
  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;
  int64_t opset() const;
  /// The model's metadata_props (`ember export` records ember.mean, ember.std, ember.classes).
  const std::map<std::string, std::string>& metadata() const;
  Device device() const;
  /// Nodes computed once at load time because all their inputs are constant (Constant,
  /// shape arithmetic on initializers, ...), and nodes left to run.
  int64_t folded_nodes() const;
  int64_t nodes() const;

  /// Runs the graph on `inputs` (every graph input by name; tensors on any device are copied to
  /// device()) and returns every graph output by name. Throws ember::Error naming the input for
  /// a missing or unknown name, a dtype other than the model's, or a shape whose rank or fixed
  /// dims differ from the model's; naming the node (name, op type) when an op fails on it.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs) const;

  struct Impl;

 private:
  const Impl& impl() const;  // throws for a Model not made by load()
  std::shared_ptr<const Impl> impl_;
  friend Model load(const std::string& path, Device device);
};

/// Loads `path` onto `device`: parses and checks the model (ONNX's checker), infers the shapes
/// and types of every value (ONNX's shape inference), checks every node against Ember's op
/// mapping, copies the initializers (and external data) to the device and folds the nodes whose
/// inputs are all constant. Throws ember::Error as inspect() does, and when a node cannot run:
/// the message names each such node, its op type and what is missing (an op, an attribute, a
/// dtype), or when the device lacks a dtype the weights need.
Model load(const std::string& path, Device device = Device::default_device());

/// One case of ONNX's backend test data (Debian libonnx-testdata): a directory holding model.onnx
/// and test_data_set_*/ with input_*.pb and output_*.pb (TensorProto files, in graph order).
/// run_test_case loads the model on `device`, runs every data set and compares each output with
/// ONNX's tolerances: |got - want| <= 1e-7 + 1e-3 |want| for floats (NaN equals NaN), exact
/// otherwise, and the same dtype and shape.
/// A case is excluded (not counted against coverage) when it needs what Ember has no tensor
/// type for: strings, sequences, optionals, maps, or ops outside the default domain (ONNX's
/// training ops); unsupported otherwise when load() rejects it.
struct CaseResult {
  enum class Status { passed, failed, unsupported, excluded };
  Status status = Status::unsupported;
  std::string op_type;  // unsupported: the first op Ember cannot run ("" for the model itself)
  std::string detail;   // why it did not pass ("" when it did)
};
/// Never throws for a bad case: a model load() rejects, or a dtype the device lacks, is
/// unsupported; a wrong value, an error while running or an unreadable .pb file is failed.
CaseResult run_test_case(const std::string& dir, Device device);

// ---- export: Ember nn modules -> ONNX (opset kExportOpset) ----

/// The opset export() writes (LayerNormalization needs 17).
inline constexpr int64_t kExportOpset = 17;

/// How save() writes a model.
struct ExportOptions {
  std::string input_name = "input";    ///< the graph input's name
  std::string output_name = "output";  ///< the graph output's name
  /// Dim 0 of the input and output is the symbolic "batch" (any batch size runs); false keeps
  /// the example's size.
  bool dynamic_batch = true;
  /// Loads the written file with ember::onnx::load on the example's device, runs it on the
  /// example and compares with the module's own output: |got - want| <= atol + rtol |want|.
  bool check = true;
  double rtol = 1e-4, atol = 1e-5;
  /// Written as the model's metadata_props (key, value): what a user of the file needs to know
  /// (the input's normalization, the class names...).
  std::map<std::string, std::string> metadata;
};

/// A node attribute: an int, a float, a string or a list of ints or floats.
struct Attribute {
  std::string name;
  std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>> value;
};

/// The graph an exporter writes into (default domain, opset kExportOpset).
class ExportGraph {
 public:
  /// Adds node `op_type`(inputs) with `attrs` (an input "" is an omitted optional input) and
  /// returns the names of its `outputs` outputs.
  virtual std::vector<std::string> add(const std::string& op_type,
                                       const std::vector<std::string>& inputs,
                                       const std::vector<Attribute>& attrs = {},
                                       int outputs = 1) = 0;
  /// add(...)[0], for the common one-output node.
  std::string node(const std::string& op_type, const std::vector<std::string>& inputs,
                   const std::vector<Attribute>& attrs = {}) {
    return add(op_type, inputs, attrs, 1)[0];
  }
  /// `t` (any device, any dtype) as an initializer named `name` in the module's path
  /// ("conv1.weight"), and its value name. One tensor (same storage, shape and strides) added
  /// twice gives one initializer.
  virtual std::string constant(const Tensor& t, const std::string& name) = 0;
  /// Exports child `m` (registered under `child_name`) applied to value `input` and returns its
  /// output value. Throws ember::Error naming the module's path when it has no exporter.
  virtual std::string module(nn::Module& m, const std::string& child_name,
                             const std::string& input) = 0;
  /// The example tensor flowing through value `v` (known for the graph input and every module's
  /// input and output): what an exporter reads shapes from. Dim 0 is the batch.
  virtual const Tensor& example(const std::string& v) const = 0;

 protected:
  ~ExportGraph() = default;
};

/// Writes the ONNX nodes of module `m` applied to value `input` (m is in eval mode) and returns
/// the output value's name.
using Exporter =
    std::function<std::string(nn::Module& m, ExportGraph& g, const std::string& input)>;

/// Makes save() export modules whose type_name() is `type_name` with `fn` (replacing a built-in
/// or earlier one). Built in: Sequential (and subclasses that keep its forward), Identity,
/// Linear, Flatten, Unflatten, Conv1d/2d/3d (zeros, reflect and replicate padding, "same" and
/// "valid"), ConvTranspose1d/2d/3d, BatchNorm1d/2d (running statistics), InstanceNorm2d,
/// LayerNorm, GroupNorm, RMSNorm, MaxPool1d/2d/3d, AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d and
/// AdaptiveMaxPool2d (global, or sizes dividing the input), Dropout*, Embedding, and the
/// activations ReLU, ReLU6, LeakyReLU, PReLU, ELU, CELU, SELU, GELU, SiLU, Mish, Sigmoid, Tanh,
/// Hardtanh, Hardsigmoid, Hardswish, Softplus, Softsign, LogSigmoid, Tanhshrink, Hardshrink,
/// Softshrink, Threshold, GLU, Softmax, LogSoftmax, Softmin.
void register_exporter(const std::string& type_name, Exporter fn);

/// Exports `module` (a UnaryModule: one tensor in, one out) as an ONNX model at `path`, as
/// torch.onnx.export: the module runs on `example_input` (any shape, dtype and device it takes)
/// in eval mode (its train/eval mode is restored), its weights become initializers, and the
/// graph has one input and one output (ExportOptions). The file is written atomically and,
/// with options.check, only after ember::onnx ran it and matched the module (src: ONNX IR
/// spec, https://onnx.ai/onnx/repo-docs/IR.html; operators of opset 17). Throws ember::Error
/// naming the module's path and type for a module without an exporter or an option ONNX cannot
/// express (a BatchNorm without running statistics, circular padding, return_indices...), when
/// the check fails, or when the file cannot be written (nothing is then left at `path`).
void save(nn::Module& module, const Tensor& example_input, const std::string& path,
          const ExportOptions& options = {});
inline void save(const std::shared_ptr<nn::Module>& module, const Tensor& example_input,
                 const std::string& path, const ExportOptions& options = {}) {
  EMBER_CHECK(module != nullptr, "onnx::save", "the module is null");
  save(*module, example_input, path, options);
}

}  // namespace ember::onnx
