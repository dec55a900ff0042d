// The cpu backend's own kernels (threaded over thread_pool.h, vectorised with run-time chosen
// AVX2 clones). Each returns false when it has no fast path for the op, and the backend then runs
// the reference kernel. Internal.
#pragma once
#include <cstdint>
#include <string>

#include "ir/fused.h"
#include "ir/graph.h"
#include "ir/ops.h"

namespace ember::cpu {

bool unary(const ir::Unary& op);    // elementwise.cpp
bool binary(const ir::Binary& op);  // elementwise.cpp
bool copy(const ir::Copy& op);      // elementwise.cpp
bool fill(const ir::Fill& op);      // elementwise.cpp
bool where(const ir::Where& op);    // elementwise.cpp
bool reduce(const ir::Reduce& op);  // reduce.cpp
bool scan(const ir::Scan& op);      // reduce.cpp: f32/f64 contiguous cumsum
/// Sum of x[0, n) in double over 8 independent lanes (AVX2 when the CPU has it): the eager
/// reduce's order, which the fused reductions (fused_graph.cpp) keep. reduce.cpp.
double sum_lanes(const float* x, int64_t n);
double sum_lanes(const double* x, int64_t n);
bool im2col(const ir::Im2col& op);        // im2col.cpp
bool col2im(const ir::Col2im& op);        // im2col.cpp
bool sgemm_matmul(const ir::Matmul& op);  // gemm.cpp
/// Whether sgemm_matmul runs this f32 matmul on oneDNN (the autotuned library choice for its
/// shape class, tuned now if it was not yet). gemm.cpp.
bool sgemm_runs_onednn(const ir::Matmul& op);
/// gemm.cpp, for tests: how many f16/bf16 matmuls ran on oneDNN's native low-precision matmul,
/// and the implementation oneDNN gives op (one dtype, f16/bf16; "" when it has no fast one and
/// the f32 way runs: e.g. "brg:avx512_core_bf16").
int64_t native_half_matmul_runs();
std::string native_half_matmul_impl(const ir::Matmul& op);
/// An f32 matmul and its epilogue graph (reading the product as inputs[anchor_input]) as one
/// oneDNN matmul with post-ops; false (nothing written) when the epilogue does not map onto
/// them, or when the eager matmul would run on OpenBLAS (the fused result then keeps the eager
/// one's summation order). epilogue.cpp.
bool matmul_epilogue(const ir::Matmul& op, const ir::FusedGraph& epilogue, int32_t anchor_input);
bool conv_dnnl(const ir::Conv& op);  // conv.cpp: oneDNN forward convolution (f32)
/// conv.cpp: whether conv_dnnl runs `op` with its tensors as they are (a stream anchor), and
/// `op` + its epilogue as one primitive with post-ops (false: nothing written).
bool conv_dnnl_anchorable(const ir::Conv& op);
bool conv_dnnl_epilogue(const ir::Conv& op, const ir::FusedGraph& epilogue, int32_t anchor_input);
/// conv.cpp: oneDNN backward-data / backward-weights convolutions (f32); false: not taken.
bool conv_dnnl_backward_data(const ir::ConvBackwardData& op);
bool conv_dnnl_backward_weights(const ir::ConvBackwardWeights& op);
/// How many oneDNN backward convolutions (data or weights) have run (for tests).
int64_t conv_backward_runs();
/// Forward convolutions run through oneDNN's Winograd since start (conv.cpp; for tests).
int64_t conv_winograd_runs();
/// Forward 1x1 convolutions run as oneDNN matmuls since start (conv.cpp; for tests).
int64_t conv_matmul_runs();
/// bf16/f16 convolution passes (any kind) run on oneDNN's native kernels since start (conv.cpp;
/// for tests).
int64_t conv_half_runs();
/// Test hook: off makes the backward passes decline (the frontend's composite gradients run).
void set_conv_backward_enabled(bool on);
/// pool.cpp: oneDNN max / avg pooling forward and backward (f32); false: not taken.
bool pool_dnnl(const ir::Pool& op);
bool pool_dnnl_backward(const ir::PoolBackward& op);
/// How many oneDNN pooling passes (forward or backward) have run (for tests).
int64_t pool_dnnl_runs();
/// Test hook: off makes pool_dnnl / pool_dnnl_backward decline (the composite runs).
void set_pool_dnnl_enabled(bool on);

/// sliced.cpp: the reference kernel on independent slices in parallel (false: too small, nothing
/// to split, or an output overlaps an input).
bool sliced(const ir::Reduce& op);
bool sliced(const ir::Scan& op);
bool sliced(const ir::Sort& op);
bool sliced(const ir::Gather& op);
bool sliced(const ir::Scatter& op);
bool sliced(const ir::IndexSelect& op);
bool sliced(const ir::IndexAdd& op);
bool sliced(const ir::AdaptivePool& op);
bool sliced(const ir::Interpolate& op);
bool sliced(const ir::Nonzero& op);
/// How many ops sliced() has run in parallel (for tests that check the path is taken).
int64_t sliced_runs();

/// Runs a fused op (ir/fused.h) when a cpu kernel takes it (fused.cpp); false: not taken.
bool fused(const ir::Fused& op);
/// How many fused ops the cpu kernels have run (for tests that check the fused path is taken).
int64_t fused_runs();
/// Counts one fused op run outside fused() (a convolution with its epilogue: conv.cpp).
void count_fused_run();

/// elementwise.cpp: the elementwise kernels' row loops on contiguous runs (single-threaded), for
/// the fused-graph executor: d[i] = op(s[i]), d[i] = op(a[i * sa], b[i * sb]) (sa, sb in {0, 1}),
/// operands of dtype t (not f16/bf16: those compute in f32), d bool for predicates (`pred`) and
/// comparisons, else t. vec: the AVX2 clone where the CPU has it (the elementwise kernels' choice
/// for contiguous runs; false: the baseline clone, their choice for strided runs, which differs in
/// the last bit for exp, sigmoid and silu on f32; tanh, erf, gelu and gelu_tanh give the same bits
/// on every clone). False, nothing written: no cpu functor (the
/// reference kernel computes it).
bool unary_row(ir::UnaryOp op, double p0, DType t, bool pred, void* d, const void* s, int64_t n,
               bool vec = true);
bool binary_row(ir::BinaryOp op, DType t, void* d, const void* a, const void* b, int64_t n,
                int64_t sa, int64_t sb);

/// True when the CPU runs AVX2 and FMA (the kernels' fast clones), checked once.
bool has_avx2();
/// True when it also runs AVX-512F (the 16-lane clones of tanh, erf and gelu), checked once.
bool has_avx512();

/// A row-loop clone of the elementwise kernels: baseline x86-64, AVX2+FMA, AVX-512F.
enum class CpuIsa : uint8_t { baseline, avx2, avx512 };
/// The widest clone this CPU runs (the kernels' choice).
CpuIsa cpu_isa();
/// convert.h's unary_f32_run on the given clone, which the CPU must run (tests compare clones).
void unary_f32_run_on(CpuIsa isa, ir::UnaryOp op, double p0, float* d, const float* s, int64_t n);

}  // namespace ember::cpu

// Marks a function as the AVX2+FMA clone of a kernel (chosen at run time with has_avx2()), or
// the AVX-512 one (has_avx512()).
#if defined(__x86_64__)
#define EMBER_CPU_AVX2 __attribute__((target("avx2,fma")))
#define EMBER_CPU_AVX512 __attribute__((target("avx512f,avx2,fma")))
#else
#define EMBER_CPU_AVX2  // not x86: has_avx2() is false and these clones are never called
#define EMBER_CPU_AVX512
#endif
