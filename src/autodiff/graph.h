// The autograd graph: nodes, edges, saved tensors and the recording helper. Internal.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/autograd.h"
#include "ember/tensor.h"

namespace ember::autograd {

struct Node;

/// Where a gradient goes: input slot `input_nr` of `node` (null node: nowhere).
struct Edge {
  std::shared_ptr<Node> node;
  uint32_t input_nr = 0;
  bool valid() const { return node != nullptr; }
};

/// Shape, dtype and device of one output of a node, to make zeros when no gradient reached it.
struct OutputMeta {
  Shape shape;
  DType dtype;
  Device device;
};

/// The gradient hooks of one tensor (Tensor::register_hook): held by its AutogradMeta and by the
/// node whose output slot (or leaf accumulator) receives its gradient.
struct GradHooks {
  std::vector<std::pair<uint64_t, std::function<Tensor(const Tensor&)>>> fns;  // id, hook
  uint64_t next_id = 0;
};

/// A leaf's register_post_accumulate_grad_hook hooks.
struct PostAccumulateHooks {
  std::vector<std::pair<uint64_t, std::function<void(const Tensor&)>>> fns;  // id, hook
  uint64_t next_id = 0;
};

struct Node {
  virtual ~Node() = default;
  /// Gradients for each input edge, given one gradient per output (never undefined: the engine
  /// fills zeros). Runs with grad mode off, or on in a create_graph backward: then the tensor
  /// ops it runs record their own nodes, so its gradients can be differentiated again.
  virtual std::vector<Tensor> apply(const std::vector<Tensor>& grad_outputs) = 0;
  /// Frees saved tensors (after a backward without retain_graph).
  virtual void release() {}
  std::string name;
  std::vector<Edge> next;  // one per input
  std::vector<OutputMeta> outputs;
  uint64_t seq = 0;  // creation order: later nodes run first
  /// Tensor hooks run on the gradient of output slot `first` before the node uses it.
  std::vector<std::pair<uint32_t, std::shared_ptr<GradHooks>>> pre_hooks;
};

/// Runs the tensor hooks of n on the delivered gradients (undefined ones are skipped). Throws
/// ember::Error "[register_hook] ..." when a hook changes a gradient's shape, dtype or device.
void run_pre_hooks(const Node& n, std::vector<Tensor>& grads);

/// Where a saved tensor that had no history when saved came from: record() fills it when that
/// tensor becomes an output of the node being recorded (held weakly: a node's saved output must
/// not keep the node alive, as torch's SavedVariable).
struct SavedOutput {
  std::weak_ptr<Node> node;
  uint32_t output_nr = 0;
};

/// A tensor saved for backward: an alias without history (no reference cycle through the
/// output's own node) plus the storage version at save time, checked on use. It also remembers
/// the tensor's history (its gradient edge when it required grad, else which node's output it
/// became), given back by get() in a create_graph backward.
class SavedTensor {
 public:
  SavedTensor() = default;
  explicit SavedTensor(const Tensor& t);
  ~SavedTensor();
  SavedTensor(const SavedTensor& o);
  SavedTensor& operator=(const SavedTensor& o);
  /// The saved tensor; throws "[autograd] ... modified by an in-place operation" if its storage
  /// was written since it was saved. With grad mode on (a create_graph backward) the alias
  /// carries the saved tensor's history, so what a rule computes from it is differentiable.
  Tensor get(const char* op) const;
  bool defined() const { return t_.defined(); }

 private:
  Tensor t_;
  int64_t version_ = 0;
  Edge edge_;                            // t's gradient edge when it required grad
  std::shared_ptr<SavedOutput> output_;  // else: the node t becomes an output of, if any
};

using BackwardFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& grad_outputs)>;

/// True when grad mode is on and any defined input requires grad.
bool needs_grad(std::initializer_list<const Tensor*> inputs);
bool needs_grad(const std::vector<Tensor>& inputs);

/// Attaches a node named `name` (e.g. "MulBackward") to the floating outputs; `fn` maps the
/// output gradients to one gradient per input (undefined where an input needs none). No-op when
/// !needs_grad(inputs).
void record(const char* name, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
            BackwardFn fn);
/// Single-output shorthand: fn gets the output's gradient.
void record1(const char* name, const std::vector<Tensor>& inputs, const Tensor& output,
             std::function<std::vector<Tensor>(const Tensor& grad)> fn);

/// Sums `grad` down to `shape` (undoing broadcasting) and casts it to `dtype`.
Tensor reduce_to(const Tensor& grad, const Shape& shape, DType dtype);

/// Rebases the history of `dst` after `dst.copy_(src)` (in-place ops are copy_ of a result):
/// dst (or its base, when dst is a view) gets a node whose gradient flows to src for the written
/// region and to the old value elsewhere.
void record_copy(const Tensor& dst, const Tensor& src, const Tensor& dst_before_base);

/// Where a strided tensor lies in its storage: sizes, strides and offset, in elements.
struct Geometry {
  Shape shape;
  Strides strides;
  int64_t offset = 0;
};

/// Gradient of input.as_strided(output) from the output's gradient (torch's as_strided_backward):
/// grad is scattered into a zero buffer laid out as the storage the two geometries cover,
/// summing where several output elements alias one storage element, and read back at the input's
/// geometry (an element's share divided among the input elements that alias it). Storage the
/// input does not cover gets no gradient.
Tensor as_strided_backward(const Tensor& grad, const Geometry& input, const Geometry& output);

/// Throws ember::Error when t is an inference tensor and InferenceMode is off (in-place writes).
void check_inference_write(const Tensor& t);

/// The gradient edge of t: its grad_fn, its accumulator (leaf requiring grad), or none.
Edge gradient_edge(const Tensor& t);

}  // namespace ember::autograd
