// The cpu backend's dtype conversions (convert.cpp: casts, F16C / bf16 runs) and its f16/bf16
// elementwise ops (elementwise_half.cpp: computed in f32 with the f32 kernels of elementwise.cpp,
// rounded once, as the reference does). Internal.
#pragma once
#include <cstdint>

#include "ir/ops.h"

namespace ember::cpu {

/// Copy between different dtypes (a cast) with vector loops for the pairs it knows, bit-identical
/// to ref::cast; false: not taken (other pairs, overlapping operands).
bool cast_copy(const ir::Copy& op);

/// Contiguous runs between f16/bf16 bits and f32, rounding as Half/BFloat16 (nearest-even, NaN
/// kept NaN with the reference's bits). F16C on CPUs that have it.
void f16_to_f32(float* d, const uint16_t* s, int64_t n);
void f32_to_f16(uint16_t* d, const float* s, int64_t n);
void bf16_to_f32(float* d, const uint16_t* s, int64_t n);
void f32_to_bf16(uint16_t* d, const float* s, int64_t n);
/// The same for t = f16 or bf16 (the one dtype dispatch of these runs).
void half_to_f32(DType t, float* d, const uint16_t* s, int64_t n);
void f32_to_half(DType t, uint16_t* d, const float* s, int64_t n);

/// f16/bf16 Unary/Binary (elementwise_half.cpp); false: not taken.
bool unary_half(const ir::Unary& op);
bool binary_half(const ir::Binary& op);

/// The f32 functors of elementwise.cpp on contiguous runs (single-threaded): whether `op` has
/// one, and d[i] = op(s[i]) / d[i] = op(a[i * sa], b[i * sb]) with sa, sb in {0, 1} (d: bool for
/// comparisons, else float).
bool unary_f32_supported(ir::UnaryOp op);
void unary_f32_run(ir::UnaryOp op, double p0, float* d, const float* s, int64_t n);
bool binary_f32_supported(ir::BinaryOp op);
void binary_f32_run(ir::BinaryOp op, void* d, const float* a, const float* b, int64_t n, int64_t sa,
                    int64_t sb);

}  // namespace ember::cpu
