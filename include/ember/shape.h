// Shapes, strides and the helpers that check them.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace ember {

using Shape = std::vector<int64_t>;
using Strides = std::vector<int64_t>;

/// Product of the sizes; 1 for a 0-d shape.
int64_t numel_of(const Shape& s);
/// numel_of with an overflow check: throws ember::Error tagged `op` for a negative size or when
/// the product of the nonzero sizes exceeds 2^62 (the strides reach it even if one size is 0).
int64_t checked_numel(const Shape& s, const char* op);
/// Row-major strides in elements. Throws ember::Error("[contiguous_strides] ...") on overflow.
Strides contiguous_strides(const Shape& s);
/// "[2, 3]".
std::string shape_str(const Shape& s);
/// NumPy broadcasting of two shapes. Throws ember::Error tagged `op` when they do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op = "broadcast");
/// Wraps a possibly negative dim into [0, rank). rank 0 accepts -1 and 0. Throws ember::Error.
int64_t wrap_dim(int64_t dim, int64_t rank, const char* op);

std::ostream& operator<<(std::ostream& os, const Shape& s);

}  // namespace ember
