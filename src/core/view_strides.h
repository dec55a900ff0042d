// The strides that view a strided tensor as another shape of the same elements in row-major
// order without a copy (torch's computeStride): Tensor::view, and the GPU matmul epilogues that
// index a graph's operands as the product's [B, M, N]. Internal; depends on ember/shape.h only.
#pragma once
#include "ember/shape.h"

namespace ember::detail {

/// Strides for viewing (old_shape, old_strides) as new_shape (same element count), or false when
/// none do it: groups of old dims contiguous among themselves map onto new dims. Stride-0
/// (broadcast) dims are kept as such.
bool view_strides(const Shape& old_shape, const Strides& old_strides, const Shape& new_shape,
                  Strides& out);

}  // namespace ember::detail
