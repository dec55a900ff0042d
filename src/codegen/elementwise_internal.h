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

/// The key part of an iteration: its merged rank and, for rank 1, each operand's access.
std::string rank_tag(const Iter& it);

/// A kernel over an Iter with one operand per buffer (decls[v] is operand v of the Iter, whose
/// params add_iter put at word 0); body(k, buffers, offsets, i) computes element i, whose offset
/// in operand v is offsets[v]. A rank-1 iteration reads each operand's offset (and stride) once,
/// before the loop, and walks idx offsets: 64-bit where the dialect addresses so, which lets CPU
/// OpenCL drivers vectorise.
using IterBody = std::function<void(kir::Kernel&, const std::vector<kir::Buf>&,
                                    const std::vector<kir::Expr>&, kir::Expr)>;
kir::Kernel iter_kernel(const std::string& name, const std::vector<BufferDecl>& decls,
                        const Iter& it, const Caps& caps, const IterBody& body);

// The per-op pieces the eager kernels (elementwise.cpp) and the fused graph kernels
// (fused_graph.cpp) share, so a fused node computes exactly what its eager op stores.

/// Fill `value` cast to dtype t on the host as the ref backend's fill, as raw bits (params u64).
uint64_t fill_bits(DType t, const Scalar& value);
/// The fill value fill_bits wrote at params word w, in t's compute type; narrow integers give
/// their low bits unwrapped (an i8 -1 is 255), which a store wraps (convert(k, t, t, v) wraps).
kir::Expr fill_value(DType t, uint32_t w);
/// Appends unary parameters p0..p2 (f64 when src is f64, or an integer on a device with f64;
/// else f32) and returns their first word, for unary_expr / unary_value.
uint32_t unary_params(Params& p, DType src, double p0, double p1, double p2, const Caps& caps);
/// Unary `op` on x (compute type of src) converted to dst's compute type, as the eager kernel
/// stores it (before the storage rounding of f16/bf16, see stored_value).
kir::Expr unary_value(kir::Kernel& k, ir::UnaryOp op, DType src, DType dst, kir::Expr x,
                      uint32_t pbase, const Caps& caps);
/// Binary `op` on a, b (compute type of t) converted to dst's compute type.
kir::Expr binary_value(kir::Kernel& k, ir::BinaryOp op, DType t, DType dst, kir::Expr a,
                       kir::Expr b, const Caps& caps);
/// v (t's compute type) as a store into a buffer of dtype t and a load back give it: f16 and
/// bf16 round to 16 bits (narrow integers are wrapped by convert already; others unchanged).
kir::Expr stored_value(kir::Kernel& k, DType t, kir::Expr v);

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
