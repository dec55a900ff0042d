// The backward engine: walks nodes in reverse creation order, summing gradients per input slot.
#include <map>
#include <queue>
#include <set>
#include <unordered_map>

#include "autodiff/graph.h"
#include "autodiff/meta.h"
#include "ember/autograd/hooks.h"
#include "ember/ops/elementwise.h"
#include "tensor/autocast.h"
#include "tensor/internal.h"

namespace ember::autograd {

namespace {

struct Later {
  bool operator()(const Node* a, const Node* b) const { return a->seq < b->seq; }
};

/// Sets grad mode for its scope.
class GradMode {
 public:
  explicit GradMode(bool on) : prev_(is_grad_enabled()) { set_grad_enabled(on); }
  ~GradMode() { set_grad_enabled(prev_); }
  GradMode(const GradMode&) = delete;
  GradMode& operator=(const GradMode&) = delete;

 private:
  bool prev_;
};

// The callbacks queued (autograd::queue_callback) during the backward pass running on this
// thread; null outside one. A nested pass (a checkpointed segment's recomputation) has its own.
thread_local std::vector<std::function<void()>>* g_callbacks = nullptr;

class CallbackScope {
 public:
  CallbackScope() : prev_(g_callbacks) { g_callbacks = &list_; }
  ~CallbackScope() { g_callbacks = prev_; }
  CallbackScope(const CallbackScope&) = delete;
  CallbackScope& operator=(const CallbackScope&) = delete;
  /// Runs the queued callbacks in order, including those they queue.
  void run() {
    for (size_t i = 0; i < list_.size(); ++i) {
      std::function<void()> fn = std::move(list_[i]);
      fn();
    }
    list_.clear();
  }

 private:
  std::vector<std::function<void()>> list_;
  std::vector<std::function<void()>>* prev_;
};

/// Runs the graph from `roots` (edges) with `root_grads`. When `capture` is non-empty, gradients
/// arriving at those edges are stored in `captured` instead of reaching .grad. With
/// create_graph the rules run with grad mode on (as torch), so the gradients they compute, and
/// the sums of them, are recorded and can be differentiated again.
void run_backward(const std::vector<Edge>& roots, const std::vector<Tensor>& root_grads,
                  bool retain_graph, bool create_graph, const std::vector<Edge>& capture,
                  std::vector<Tensor>* captured) {
  GradMode mode(create_graph);
  const detail::amp::Suspend no_autocast;  // backward runs in the forward's dtypes (as torch)
  CallbackScope callbacks;
  // Count how many edges point at each node (dependencies), over the reachable graph.
  std::unordered_map<Node*, int> deps;
  std::vector<Node*> stack;
  std::set<Node*> seen;
  for (const Edge& e : roots)
    if (e.valid() && seen.insert(e.node.get()).second) stack.push_back(e.node.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next) {
      if (!e.valid()) continue;
      deps[e.node.get()]++;
      if (seen.insert(e.node.get()).second) stack.push_back(e.node.get());
    }
  }
  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  std::unordered_map<Node*, std::shared_ptr<Node>> keep;  // keep nodes alive while running
  auto deliver = [&](const Edge& e, const Tensor& g) {
    if (!e.valid() || !g.defined()) return;
    auto& buf = buffers[e.node.get()];
    if (buf.empty()) buf.resize(e.node->outputs.size());
    Tensor& slot = buf[e.input_nr];
    slot = slot.defined() ? add(slot, g) : g;
    keep[e.node.get()] = e.node;
  };
  std::priority_queue<Node*, std::vector<Node*>, Later> ready;
  for (size_t i = 0; i < roots.size(); ++i) deliver(roots[i], root_grads[i]);
  for (const Edge& e : roots)
    if (e.valid() && deps[e.node.get()] == 0 && keep.count(e.node.get())) {
      ready.push(e.node.get());
      deps[e.node.get()] = -1;  // queued
    }
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    const bool has_grad = buffers.count(n) > 0;
    std::vector<Tensor> grads = has_grad ? std::move(buffers[n]) : std::vector<Tensor>{};
    buffers.erase(n);
    grads.resize(n->outputs.size());
    bool is_target = false;
    for (const Edge& c : capture) is_target |= c.node.get() == n;
    // Tensor hooks see (and may replace) the gradient before it is captured, accumulated or
    // used (torch 1.13 skipped them for autograd::grad's inputs). A leaf autograd::grad does not
    // differentiate with respect to gets no gradient, so its hooks do not run.
    if (has_grad && (is_target || !(captured && n->next.empty()))) run_pre_hooks(*n, grads);
    for (size_t c = 0; c < capture.size(); ++c)
      if (capture[c].node.get() == n) {
        const Tensor& g = grads[capture[c].input_nr];
        if (g.defined()) (*captured)[c] = g;
      }
    for (size_t i = 0; has_grad && i < grads.size(); ++i)
      if (!grads[i].defined())
        grads[i] = zeros(n->outputs[i].shape, {n->outputs[i].dtype, n->outputs[i].device});
    std::vector<Tensor> in_grads;
    // In capture mode leaves are not written; other nodes still run to reach further targets.
    if (has_grad && !(captured && n->next.empty())) in_grads = n->apply(grads);
    if (!retain_graph) n->release();
    for (size_t i = 0; i < n->next.size(); ++i) {
      const Edge& e = n->next[i];
      if (!e.valid()) continue;
      if (i < in_grads.size() && in_grads[i].defined()) {
        const OutputMeta& om = e.node->outputs[e.input_nr];
        if (in_grads[i].shape() != om.shape)
          EMBER_FAIL("backward", n->name, " returned a gradient of shape ",
                     shape_str(in_grads[i].shape()), " for an input of shape ",
                     shape_str(om.shape));
        deliver(e, detail::cast(in_grads[i], om.dtype));
      }
      if (--deps[e.node.get()] == 0) {
        if (!keep.count(e.node.get())) keep[e.node.get()] = e.node;
        ready.push(e.node.get());
      }
    }
    keep.erase(n);
  }
  callbacks.run();
}

Tensor default_grad(const Tensor& out, const Tensor& given, const char* op) {
  if (given.defined()) {
    if (given.shape() != out.shape())
      EMBER_FAIL(op, "gradient has shape ", shape_str(given.shape()), " but the output has shape ",
                 shape_str(out.shape()));
    return given;
  }
  if (out.numel() != 1)
    EMBER_FAIL(op,
               "grad can be implicitly created only for outputs with one element; the output "
               "has shape ",
               shape_str(out.shape()), ": pass a gradient");
  return ones_like(out);
}

}  // namespace

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph,
                         bool allow_unused, bool create_graph) {
  std::vector<Edge> roots;
  std::vector<Tensor> root_grads;
  for (size_t i = 0; i < outputs.size(); ++i) {
    detail::check_defined(outputs[i], "autograd::grad");
    if (!outputs[i].requires_grad())
      EMBER_FAIL("autograd::grad", "output ", i, " (shape ", shape_str(outputs[i].shape()),
                 ") does not require grad and has no grad_fn");
    roots.push_back(gradient_edge(outputs[i]));
    root_grads.push_back(default_grad(
        outputs[i], i < grad_outputs.size() ? grad_outputs[i] : Tensor(), "autograd::grad"));
  }
  std::vector<Edge> capture;
  for (const Tensor& in : inputs) {
    detail::check_defined(in, "autograd::grad");
    if (!in.requires_grad())
      EMBER_FAIL("autograd::grad", "input of shape ", shape_str(in.shape()),
                 " does not require grad");
    capture.push_back(gradient_edge(in));
  }
  std::vector<Tensor> captured(inputs.size());
  run_backward(roots, root_grads, retain_graph.value_or(create_graph), create_graph, capture,
               &captured);
  for (size_t i = 0; i < captured.size(); ++i)
    if (!captured[i].defined() && !allow_unused)
      EMBER_FAIL("autograd::grad", "input ", i, " (shape ", shape_str(inputs[i].shape()),
                 ") was not used to compute the outputs; pass allow_unused = true");
  return captured;
}

void queue_callback(std::function<void()> fn) {
  if (!g_callbacks)
    EMBER_FAIL("queue_callback",
               "no backward pass is running on this thread (call it from a "
               "gradient hook)");
  if (!fn) EMBER_FAIL("queue_callback", "the callback is empty");
  g_callbacks->push_back(std::move(fn));
}

bool in_backward() { return g_callbacks != nullptr; }

void backward_from(const Tensor& out, const Tensor& gradient, std::optional<bool> retain_graph,
                   bool create_graph) {
  detail::check_defined(out, "backward");
  if (!out.requires_grad())
    EMBER_FAIL("backward", "tensor of shape ", shape_str(out.shape()),
               " does not require grad and has no grad_fn (did you call requires_grad_() on "
               "the inputs, or run under NoGradGuard?)");
  run_backward({gradient_edge(out)}, {default_grad(out, gradient, "backward")},
               retain_graph.value_or(create_graph), create_graph, {}, nullptr);
}

}  // namespace ember::autograd
