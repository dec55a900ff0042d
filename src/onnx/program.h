// A graph compiled for running: its nodes in order over value slots, constants folded, and the
// control-flow nodes (If, Loop, Scan) holding their subgraphs compiled the same way. The main
// graph of a Model is one Program (model.cpp); a subgraph reads values of the graphs around it
// as captures, which its node receives as extra inputs.
#pragma once
#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "onnx/ops.h"

namespace ember::onnx::detail {

struct Program;

struct Step {
  const ::onnx::NodeProto* proto = nullptr;
  const OpImpl* op = nullptr;  // null for If / Loop / Scan (run by run_control)
  Node node;
  std::string label;           // the node's name, or "#index" (within its subgraph: "body/#2")
  std::vector<int> in, out;    // slots; -1 for an omitted optional value
  std::vector<int> release;    // slots no later step reads
  size_t explicit_inputs = 0;  // in[0..explicit_inputs) are the node's own inputs
  /// Its outputs depend only on the shapes of the program's inputs and captures (Shape, and
  /// what is computed from Shape and constants): run once per input shapes (Program::shapes).
  bool shape_step = false;
  /// If: then, else; Loop / Scan: body. body_captures[b][k]: the index in `in` of the value
  /// that body b's k-th capture reads.
  std::vector<std::shared_ptr<const Program>> bodies;
  std::vector<std::vector<size_t>> body_captures;
};

struct Program {
  std::vector<Tensor> constants;  // by slot; undefined for values computed when it runs
  std::vector<int> input_slots, output_slots;
  std::vector<std::string> captures;  // names of values of the enclosing graphs it reads
  std::vector<int> capture_slots;
  std::vector<Step> steps;
  int64_t folded = 0;
  /// The slots shape steps write, and their values by the input and capture shapes and dtypes
  /// they were computed for (a few keys; cleared when full).
  std::vector<int> shape_slots;
  struct ShapeValues {
    std::mutex mu;
    std::map<std::string, std::vector<Tensor>> by_key;
  };
  std::shared_ptr<ShapeValues> shapes = std::make_shared<ShapeValues>();
};

/// What compile() needs from the model: its opset, value types, folder (external data).
struct CompileContext {
  int64_t opset = 0;
  const std::map<std::string, int32_t>* types = nullptr;
  std::string dir;
  std::string path;  // for messages
  Device device = Device::ref();
};

/// Whether a node op is run by run_control (If, Loop, Scan).
bool is_control(const std::string& op_type);
/// "" when a control node's attributes are covered, else why not.
std::string control_problem(const ::onnx::NodeProto& n, int64_t opset);

/// Compiles `g`: `inputs` are the names of its inputs (in order), `outer` says whether the
/// enclosing graphs define a name (the main graph: none). Throws ember::Error naming a node that
/// reads an undefined value or fails on its constant inputs.
std::shared_ptr<Program> compile(const ::onnx::GraphProto& g,
                                 const std::vector<std::string>& inputs, const CompileContext& ctx,
                                 const std::function<bool(const std::string&)>& outer,
                                 const std::string& prefix = "");

/// Runs `p` on `inputs` (by input_slots) and `captures` (by capture_slots) and returns its
/// outputs. With `each`, the device finishes each node's work before the next (to name a
/// failing node). Throws ember::Error naming the node that fails.
Tensors execute(const Program& p, const Tensors& inputs, const Tensors& captures, Device device,
                bool each);

}  // namespace ember::onnx::detail
