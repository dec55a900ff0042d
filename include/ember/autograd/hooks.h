// Hooks into the backward pass for code that acts on gradients as they become ready
// (DistributedDataParallel's bucketed all-reduce, optimizers fused into backward).
#pragma once
#include <functional>

#include "ember/tensor.h"

namespace ember::autograd {

/// Registers hook(leaf), called in a backward pass right after `leaf`'s .grad has been
/// accumulated (torch 2.1's Tensor.register_post_accumulate_grad_hook): the hook reads
/// leaf.grad(). Not called by autograd::grad (which writes no .grad). Hooks run in registration
/// order on the thread running backward. Throws ember::Error("[register_post_accumulate_grad_hook]
/// ...") for a tensor that is not a leaf requiring grad, or an empty hook.
RemovableHandle register_post_accumulate_grad_hook(const Tensor& leaf,
                                                   std::function<void(const Tensor&)> hook);

/// Runs fn once the backward pass running on this thread finishes (torch's
/// Variable._execution_engine.queue_callback), after every gradient of that pass is written;
/// callbacks run in the order queued and may queue more. A callback that throws makes
/// backward() throw (the callbacks after it are dropped). Throws ember::Error
/// ("[queue_callback] ...") when no backward pass is running on this thread.
void queue_callback(std::function<void()> fn);

/// Whether a backward pass is running on this thread (for code called from gradient hooks).
bool in_backward();

}  // namespace ember::autograd
