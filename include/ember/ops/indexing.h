// Indexing ops (as torch). Index tensors are integer: i64 as in torch, but any integer dtype is
// accepted (see docs/ops.md). Every index is range-checked before use: an out-of-range index
// throws ember::Error naming the op, the index, the dim and its size, never reads or writes out of
// bounds. On GPU devices the range check runs on the device and its error is raised at the
// device's next sync or read (as CUDA's device-side asserts; no host round trip per op), with
// indices clamped in bounds meanwhile. Negative indices wrap only in advanced indexing (index, index_put), as in torch; gather,
// scatter*, index_select, index_add, take_along_dim and one_hot reject them, as torch does.
// Every op returns a new tensor (the input is not modified) except slice_assign_. All tensors must
// be on one device; mismatches, undefined tensors and bad shapes throw ember::Error.
// Writes with duplicate indices are applied in row-major order of the index (the last write wins
// for scatter / index_put), so results are deterministic on the ref and cpu backends.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ember/ops/tensor_index.h"  // Tensor::index({Slice(), 0, mask}): torch's x[...]
#include "ember/tensor.h"

namespace ember {

/// out[i][j] = x[index[i][j]][j] for dim 0 (torch.gather). index has x's rank (0-d counts as
/// 1-d) and sizes <= x's in dims other than `dim`; out has index's shape and x's dtype.
/// Throws for a rank mismatch, a too-large index size, or an index outside [0, x.size(dim)).
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
/// Copy of x with out[index[i][j]][j] = src[i][j] (dim 0), as torch.scatter. index has x's rank,
/// sizes <= src's in every dim and <= x's in dims other than `dim`; src has x's dtype (throws
/// otherwise). Duplicate indices: the last in row-major order of index wins.
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
/// As above with every scattered value = `value` (converted to x's dtype).
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value);
/// Copy of x with out[index[i][j]][j] += src[i][j] (torch.scatter_add); duplicates accumulate.
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
/// torch.scatter_reduce: reduce "sum", "prod", "mean", "amax", "amin" of src into the indexed
/// positions of x; include_self = false leaves x's own value out of positions that are scattered
/// to. "mean" of integers rounds down (floor), as torch; "mean" is rejected for bool. NaN
/// propagates through amax/amin. Throws for an unknown reduce.
Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self = true);
/// torch.index_select: entries of x along dim at the 0-d or 1-d `index`; out has x's shape with
/// dim of size index.numel(). Throws for an index outside [0, x.size(dim)).
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
/// torch.index_add: copy of x with out.select(dim, index[i]) += alpha * src.select(dim, i).
/// index 0-d/1-d; src has x's dtype and shape except src.size(dim) == index.numel(). Duplicate
/// indices accumulate. alpha must be an integer for non-floating x.
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                 const Scalar& alpha = 1);
/// Advanced indexing read x[indices...], as torch's x[i, j] with index tensors. `indices` holds
/// one entry per leading dim of x: an integer tensor (negative values wrap), a bool mask (covers
/// as many dims as it has, its shape must match them; a 0-d mask adds a dim of size 1 or 0), or an
/// undefined Tensor() meaning the whole dim (Python's ':'). Integer indices (and the masks'
/// nonzero coordinates) broadcast together to a shape B. Result: B replaces the indexed dims when
/// they are adjacent, else B comes first, then the other dims (torch's rule). dtype of x.
/// Throws for too many indices, a mask shape mismatch, or an index outside [-size, size).
Tensor index(const Tensor& x, const std::vector<Tensor>& indices);
/// Advanced indexing assignment, as torch.index_put: copy of x with x[indices...] = values (or
/// += with accumulate, where duplicate indices accumulate; without, the last duplicate wins).
/// indices as for index(); values (x's dtype, as torch) broadcast to the shape x[indices...] has.
Tensor index_put(const Tensor& x, const std::vector<Tensor>& indices, const Tensor& values,
                 bool accumulate = false);
/// torch.masked_fill: copy of x with `value` (converted to x's dtype) where the bool mask is
/// true; x and mask broadcast together (the result has the broadcast shape, as torch's
/// out-of-place form). The tensor form takes a 0-d value (throws otherwise).
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value);
/// torch.masked_select: 1-d tensor of the elements of x where the bool mask is true, x and mask
/// broadcast together, in row-major order.
Tensor masked_select(const Tensor& x, const Tensor& mask);
/// torch.nonzero: [count, rank] i64 coordinates of the non-zero elements (NaN counts as
/// non-zero) in row-major order. The output size depends on the data (a host read).
Tensor nonzero(const Tensor& x);
/// torch.nn.functional.one_hot: x (integer, values in [0, num_classes)) -> i64 [..., num_classes].
/// num_classes = -1 infers max(x) + 1 (throws for empty x). Throws for negative or too-large
/// classes and for non-integer x.
Tensor one_hot(const Tensor& x, int64_t num_classes = -1);
/// torch.take_along_dim: with dim, x and indices (same rank) broadcast in every dim but `dim`,
/// then gather along dim; without dim, gather from the flattened x with the flattened indices
/// (1-d result). Indices in [0, size).
Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim);
/// Slice assignment x[..., start:stop:step, ...] = value along dim, in place (returns x).
/// start/stop as Python slices (negative counts from the end, clamped); step > 0. value broadcasts
/// to the slice's shape and is converted to x's dtype. Throws for a 0-d x or step <= 0.
Tensor& slice_assign_(Tensor& x, int64_t dim, int64_t start, int64_t stop, int64_t step,
                      const Tensor& value);

}  // namespace ember
