// Reference kernels, one function per primitive (src/ir/ops.h). Each family lives in its own file.
#pragma once
#include "ir/ops.h"

namespace ember::ref {

void copy(const ir::Copy& op);                   // elementwise.cpp
void fill(const ir::Fill& op);                   // elementwise.cpp
void unary(const ir::Unary& op);                 // unary.cpp
void binary(const ir::Binary& op);               // binary.cpp
void where(const ir::Where& op);                 // elementwise.cpp
void reduce(const ir::Reduce& op);               // reduce.cpp
void scan(const ir::Scan& op);                   // scan.cpp
void sort(const ir::Sort& op);                   // sort.cpp
void gather(const ir::Gather& op);               // indexing.cpp
void scatter(const ir::Scatter& op);             // indexing.cpp
void index_select(const ir::IndexSelect& op);    // indexing.cpp
void index_add(const ir::IndexAdd& op);          // indexing.cpp
void nonzero(const ir::Nonzero& op);             // indexing.cpp
void matmul(const ir::Matmul& op);               // matmul.cpp
void im2col(const ir::Im2col& op);               // im2col.cpp
void col2im(const ir::Col2im& op);               // im2col.cpp
void adaptive_pool(const ir::AdaptivePool& op);  // pool.cpp
void interpolate(const ir::Interpolate& op);     // interpolate.cpp
void random(const ir::Random& op);               // random.cpp

}  // namespace ember::ref
