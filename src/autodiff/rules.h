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

// ---- reduce family (rules/reduce.cpp) ----
/// out (keepdim shape) = reduce(x) over `dims`; `indices` (keepdim shape) for max/min(dim).
void reduce(ir::ReduceOp op, const Tensor& x, const std::vector<int64_t>& dims, const Tensor& out,
            const Tensor& indices);
/// out = scan(x) along dim (x of rank >= 1); indices for cummax/cummin.
void scan(ir::ScanOp op, const Tensor& x, int64_t dim, const Tensor& out, const Tensor& indices);
/// (values, indices) = sort(x) along dim (x of rank >= 1).
void sort(const Tensor& x, int64_t dim, const Tensor& values, const Tensor& indices);
/// out = norm(x, p) over `dims` (squeezed or not): torch's norm_backward (0 where the norm is 0).
void norm(const Tensor& x, double p, const std::vector<int64_t>& dims, const Tensor& out);

// ---- indexing family (rules/indexing.cpp); indices are checked i64, x of rank >= 1 ----
void gather(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out);
/// out = x.scatter(dim, index, src) with `reduce`; src has the index's shape.
void scatter(ir::ScatterReduce reduce, bool include_self, const Tensor& x, int64_t dim,
             const Tensor& index, const Tensor& src, const Tensor& out);
void index_select(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out);
void index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, double alpha,
               const Tensor& out);
/// out = x [N, R] with rows `index` [M] replaced by (or, accumulate, added to) values [M, R].
void index_put(const Tensor& x, const Tensor& index, const Tensor& values, bool accumulate,
               const Tensor& out);

// ---- linalg and spatial families (rules/linalg.cpp, rules/spatial.cpp) ----
/// out [B, M, N] = a [B, M, K] @ b [B, K, N] (ir::Matmul; batches already equal).
void matmul(const Tensor& a, const Tensor& b, const Tensor& out);
/// The op just run (its src, dst and geometry); the gradient is the adjoint (col2im / im2col).
void im2col(const ir::Im2col& op);
void col2im(const ir::Col2im& op);
/// Max needs op.indices defined (the frontend computes them when src needs grad).
void adaptive_pool(const ir::AdaptivePool& op);
void interpolate(const ir::Interpolate& op);

}  // namespace ember::autograd::rules
