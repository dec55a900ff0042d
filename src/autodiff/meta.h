// Per-tensor autograd state. Internal.
#pragma once
#include <memory>
#include <vector>

#include "autodiff/graph.h"

namespace ember {

struct AutogradMeta {
  bool requires_grad = false;  // leaves only; non-leaves require grad through grad_fn
  Tensor grad;
  std::shared_ptr<autograd::Node> grad_fn;
  uint32_t output_nr = 0;
  std::weak_ptr<autograd::Node> accumulator;  // the leaf's AccumulateGrad, while a graph uses it
  /// For a view with history: its storage's version when grad_fn was set. A different version
  /// later means the base was written in place since, so the view's history is rebuilt from
  /// the base's (as torch regenerates a view's grad_fn).
  int64_t view_version = -1;
  /// Saved tensors of this tensor taken while it had no history: record() tells them the node
  /// that makes it an output (SavedOutput), then clears the list.
  std::vector<std::weak_ptr<autograd::SavedOutput>> saved_outputs;
  /// register_hook's hooks (null until one is registered); also attached to the node that
  /// receives this tensor's gradient (Node::pre_hooks).
  std::shared_ptr<autograd::GradHooks> hooks;
  /// register_post_accumulate_grad_hook's hooks (leaves; null until one is registered), run by
  /// the leaf's AccumulateGrad after it has written .grad.
  std::shared_ptr<autograd::PostAccumulateHooks> post_accumulate_hooks;
};

}  // namespace ember
