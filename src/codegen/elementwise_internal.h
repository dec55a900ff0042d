// Shared pieces of the elementwise kernel family (elementwise*.cpp). Internal to src/codegen.
#pragma once
#include <string>

#include "codegen/common.h"
#include "ir/op_traits.h"

namespace ember::codegen {

/// A literal of compute_type(t) with value v ("1.0", "1.0lf", "1", "1u", "1l", "1ul", "true").
std::string lit(DType t, double v);
/// Local size of elementwise kernels on a device.
uint32_t ew_local_size(const Caps& caps);

/// Expression (compute_type(t)) of unary `op` applied to the variable `x` of dtype t, with op
/// parameters p0..p2 at params words pbase (f64: 2 words each, else 1). For predicates
/// (isnan, isinf, isfinite, logical_not) the expression is a bool.
std::string unary_expr(ir::UnaryOp op, DType t, const std::string& x, uint32_t pbase,
                       const Caps& caps);
/// Expression of binary `op` on variables a, b of dtype t: compute_type(t), or bool for
/// comparisons and logical ops.
std::string binary_expr(ir::BinaryOp op, DType t, const std::string& a, const std::string& b,
                        const Caps& caps);

}  // namespace ember::codegen
