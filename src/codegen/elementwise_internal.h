// Shared pieces of the elementwise kernel family (elementwise*.cpp). Internal to src/codegen.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "codegen/common.h"
#include "ir/op_traits.h"

namespace ember::codegen {

/// Local size of elementwise kernels on a device.
uint32_t ew_local_size(const Caps& caps);

/// Unary `op` applied to x (kir::compute_of(t)), with op parameters p0..p2 at params words
/// pbase (f64: 2 words each, else 1). Predicates (isnan, isinf, isfinite, logical_not) give
/// bool. Library functions it calls are defined in k.
kir::Expr unary_expr(kir::Kernel& k, ir::UnaryOp op, DType t, kir::Expr x, uint32_t pbase,
                     const Caps& caps);
/// Binary `op` on a, b (kir::compute_of(t)): compute type, or bool for comparisons and logical
/// ops.
kir::Expr binary_expr(kir::Kernel& k, ir::BinaryOp op, DType t, kir::Expr a, kir::Expr b,
                      const Caps& caps);

}  // namespace ember::codegen
