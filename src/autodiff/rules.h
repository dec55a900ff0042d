// Backward rules for the primitive frontend ops, one function per family. Each records a node
// when needs_grad(inputs); call after computing the output. Internal.
#pragma once
#include "autodiff/graph.h"
#include "ir/ops.h"

namespace ember::autograd::rules {

void unary(ir::UnaryOp op, const Tensor& x, const Tensor& out, double p0, double p1, double p2);
void binary(ir::BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);
void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out);
/// out = x converted to another dtype or device (or cloned).
void convert(const Tensor& x, const Tensor& out, const char* name);

}  // namespace ember::autograd::rules
