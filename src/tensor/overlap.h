// Memory overlap of tensors: the rules torch's in-place writes follow (ATen's MemoryOverlap.h)
// and the sequential write of a destination whose elements share memory. Internal.
#pragma once
#include <functional>
#include <vector>

#include "ember/tensor.h"

namespace ember::detail {

/// Whether a tensor's own elements share memory, as at::has_internal_overlap: yes when a dim of
/// size > 1 has stride 0 (an expanded tensor), no when it is non-overlapping and dense,
/// too_hard otherwise (unfold windows, strided slices: not decided).
enum class InternalOverlap { no, yes, too_hard };
/// How two tensors' memory relates, as at::get_overlap_status: full (the same elements in the
/// same places), partial (they share some memory in another arrangement), no, or too_hard
/// (either is not non-overlapping and dense: not decided).
enum class Overlap { no, full, partial, too_hard };

/// torch's is_non_overlapping_and_dense: some permutation of the dims makes t contiguous.
bool is_non_overlapping_and_dense(const Tensor& t);
InternalOverlap internal_overlap(const Tensor& t);
Overlap overlap(const Tensor& a, const Tensor& b);

/// The checks torch's in-place ops make before writing `self`: throws
/// "[op] unsupported operation: more than one element of the written-to tensor refers to a
/// single memory location..." when self is expanded (unless `allow_expanded`: fill-like ops),
/// and "[op] unsupported operation: some elements of the input tensor and the written-to tensor
/// refer to a single memory location..." when an operand partially overlaps self.
void check_inplace(const Tensor& self, std::initializer_list<const Tensor*> operands,
                   const char* op, bool allow_expanded = false);

/// True when two elements of t may share memory (t passes no cheap proof that they don't).
bool overlaps_itself(const Tensor& t);
bool overlaps_itself(const Shape& shape, const Strides& strides);

/// Writes into a destination whose elements share memory (unfold windows, expanded tensors)
/// element after element as torch does, in parts that do not: calls fn(part, operand parts)
/// for each part of `self` in torch's loop order (TensorIterator's dim order), with each
/// operand (broadcast to self's shape; undefined ones passed as they are) cut the same way.
/// Returns false, calling nothing, when self does not overlap itself.
bool write_in_parts(const Tensor& self, const std::vector<Tensor>& operands,
                    const std::function<void(Tensor&, const std::vector<Tensor>&)>& fn);

/// dst += src (broadcast to dst's shape), where elements of dst that share memory add up: the
/// adjoint of reading such a view (as torch's AsStridedBackward sums a window's gradients).
/// Records no history.
void add_into(const Tensor& dst, const Tensor& src);

}  // namespace ember::detail
