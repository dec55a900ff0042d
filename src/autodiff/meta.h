// Per-tensor autograd state. Internal.
#pragma once
#include <memory>

#include "autodiff/graph.h"

namespace ember {

struct AutogradMeta {
  bool requires_grad = false;  // leaves only; non-leaves require grad through grad_fn
  Tensor grad;
  std::shared_ptr<autograd::Node> grad_fn;
  uint32_t output_nr = 0;
  std::weak_ptr<autograd::Node> accumulator;  // the leaf's AccumulateGrad, while a graph uses it
};

}  // namespace ember
