// Indexing ops (as torch). Index tensors are integer (i64 preferred; i32 accepted); every index
// is range-checked before use: an out-of-range index throws ember::Error naming the op, the index,
// the dim and its size, never reads or writes out of bounds. Negative indices wrap where torch
// allows them (index_select, index_put, take_along_dim do not in torch; here they do not either).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ember/tensor.h"

namespace ember {

/// out[i][j] = x[index[i][j]][j] for dim 0 (torch.gather). index has x's rank; its sizes may be
/// smaller than x's in dims other than `dim`.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
/// Copy of x with x[index[i][j]][j] = src[i][j] (dim 0). src tensor or scalar.
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
/// reduce: "sum", "prod", "mean", "amax", "amin" (torch.scatter_reduce).
Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self = true);
/// Entries of x along dim at the 1-d `index`.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
/// Copy of x with x.select(dim, index[i]) += alpha * src.select(dim, i).
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                 const Scalar& alpha = 1);
/// Advanced indexing assignment x[indices...] = values (or += with accumulate). `indices` holds
/// one integer (or bool mask) tensor per leading dim of x; they broadcast together.
Tensor index_put(const Tensor& x, const std::vector<Tensor>& indices, const Tensor& values,
                 bool accumulate = false);
/// Advanced indexing read x[indices...] (integer tensors broadcast together).
Tensor index(const Tensor& x, const std::vector<Tensor>& indices);
/// Copy of x with value where mask (bool, broadcast to x) is true.
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value);  // 0-d value
/// 1-d tensor of the elements of x where mask is true (row-major order).
Tensor masked_select(const Tensor& x, const Tensor& mask);
/// [count, rank] i64 coordinates of the non-zero elements.
Tensor nonzero(const Tensor& x);
/// x (integer, values in [0, num_classes)) -> i64 [..., num_classes]. num_classes < 0: max + 1.
Tensor one_hot(const Tensor& x, int64_t num_classes = -1);
/// torch.take_along_dim: gather with index broadcast against x (dim given) or flat (no dim).
Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim);
/// Slice assignment x[..., start:stop:step, ...] = value along dim, in place (returns x).
Tensor& slice_assign_(Tensor& x, int64_t dim, int64_t start, int64_t stop, int64_t step,
                      const Tensor& value);

}  // namespace ember
