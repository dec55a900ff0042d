// The wasm backend's SIMD128 kernels. Each returns false when it has no fast path for the op
// (dtype, layout, aliasing) and has written nothing; the backend then runs the reference kernel.
// Results equal the reference's within the op table's f32 tolerance (most are bit-identical:
// the GEMM sums each product in the reference's order). Internal.
#pragma once
#include <cstdint>

#include "ir/fused.h"
#include "ir/ops.h"

namespace ember::wasm {

bool copy(const ir::Copy& op);      // elementwise.cpp: f32 / same-dtype copies
bool fill(const ir::Fill& op);      // elementwise.cpp
bool unary(const ir::Unary& op);    // elementwise.cpp: f32 neg abs relu square sqrt ...
bool binary(const ir::Binary& op);  // elementwise.cpp: f32 add sub mul div maximum minimum
bool reduce(const ir::Reduce& op);  // reduce.cpp: f32 sum / max / min over the last dim
bool matmul(const ir::Matmul& op);  // gemm.cpp: f32, any strides, batched
bool im2col(const ir::Im2col& op);  // conv.cpp: f32, 2-d
bool conv(const ir::Conv& op);      // conv.cpp: f32 2-d forward convolution, groups 1
bool pool(const ir::Pool& op);      // conv.cpp: f32 2-d max pooling

/// gemm.cpp: C[M, N] = A[M, K] @ B[K, N] (+ bias[m] on row m when bias is not null) in f32,
/// A and B at any element strides (rs: row, cs: column), C rows ldc apart and contiguous. Each
/// product is summed in k order from 0 (the reference's order). Splits over num_threads()
/// when `threaded`.
void sgemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t a_rs, int64_t a_cs,
           const float* B, int64_t b_rs, int64_t b_cs, float* C, int64_t ldc, const float* bias,
           bool threaded);

}  // namespace ember::wasm
