// Reverse-mode automatic differentiation: grad mode, guards, and autograd::grad.
// Tensor::requires_grad_/backward/grad/detach are declared in ember/tensor.h.
// Recording follows PyTorch: an op whose inputs require grad (with grad mode on) attaches a
// backward node to its floating-point outputs; backward() walks the nodes in reverse creation
// order. Backward rules run with grad mode off, unless create_graph: then they run with grad mode
// on and record the backward pass itself, so gradients of gradients work (Hessian-vector
// products, gradient penalties, meta-learning); every backward rule is differentiable, fused ops
// included (in a create_graph backward they compute their gradients with differentiable
// composites). Gradient checkpointing is first-order only.
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include "ember/tensor.h"

namespace ember {

/// Whether ops record the graph on this thread (default true).
bool is_grad_enabled();
void set_grad_enabled(bool on);

/// Disables recording for its scope (as torch.no_grad()).
class NoGradGuard {
 public:
  NoGradGuard() : prev_(is_grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

/// Enables recording for its scope (inside a NoGradGuard).
class EnableGradGuard {
 public:
  EnableGradGuard() : prev_(is_grad_enabled()) { set_grad_enabled(true); }
  ~EnableGradGuard() { set_grad_enabled(prev_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool prev_;
};

/// Inference mode (as torch.inference_mode / c10::InferenceMode), for code that never
/// differentiates (serving, evaluation). While enabled on this thread:
///   - no graph is recorded (grad mode is off; EnableGradGuard does not turn recording back on);
///   - tensors created (factories, op results) are inference tensors (Tensor::is_inference()),
///     which have no version counter: in-place ops on them do not bump Storage::version.
///     In-place ops on normal tensors still do. Views of an inference tensor are inference
///     tensors (anywhere); views of a normal tensor are normal.
/// Outside inference mode an inference tensor is an ordinary value for ops that record nothing,
/// but ember::Error is thrown when one is an input of an op that records the graph ("inference
/// tensors cannot be saved for backward"; make a clone() outside InferenceMode to get a normal
/// tensor), when one is updated in place, and by requires_grad_(true) on one.
/// InferenceMode(false) inside an enabled one turns it off for its scope (grad mode on).
class InferenceMode {
 public:
  explicit InferenceMode(bool enabled = true);
  ~InferenceMode();
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;

 private:
  bool prev_inference_;
  bool prev_grad_;
};

/// Whether InferenceMode is on for this thread.
bool is_inference_mode_enabled();

namespace autograd {

/// d(sum_i <outputs[i], grad_outputs[i]>)/d(inputs) without touching any .grad
/// (torch.autograd.grad). grad_outputs may be omitted for 0-d outputs (they may themselves
/// require grad). An input that the outputs do not depend on throws unless allow_unused (then
/// its entry is undefined). The graph is freed unless retain_graph (default: create_graph).
/// With create_graph the backward pass is recorded: the returned gradients have history and can
/// be differentiated again (torch's create_graph=True), e.g. a Hessian-vector product is
/// grad({dot(grad({loss}, {x}, {}, {}, false, true)[0], v)}, {x}).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {},
                         std::optional<bool> retain_graph = std::nullopt, bool allow_unused = false,
                         bool create_graph = false);

/// Gradient checkpointing (as torch.utils.checkpoint): runs fn(inputs) without storing its
/// intermediate tensors; backward runs fn again to rebuild them. Trades compute for memory.
std::vector<Tensor> checkpoint(
    const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
    const std::vector<Tensor>& inputs);

/// Bytes held by tensors saved for backward in live graphs (for memory tests and tuning).
int64_t saved_tensor_bytes();

}  // namespace autograd
}  // namespace ember
