// The layout torch's factories and layout-keeping ops give a result of a tensor's shape
// (TensorImpl::suggest_memory_format). Internal.
#pragma once
#include "ember/tensor.h"

namespace ember::detail {

/// channels_last(_3d) when t's strides order its dims as that layout does (also for a non-dense
/// view such as a strided slice of a channels-last tensor), else contiguous; as torch's
/// suggest_memory_format (is_channels_last_strides_2d/3d), which clone, empty_like, cat,
/// interpolate, constant pad and group_norm lay their result out in.
MemoryFormat suggest_format(const Tensor& t);

/// The layout torch's memory_format=preserve gives a copy of t (clone, empty_like and the other
/// *_like factories): the channels-last format whose dim order t's strides have (dense or not,
/// as torch's infer_dense_strides), else contiguous. torch also keeps other dim orders (a
/// transposed matrix clones transposed); Ember's copies of those are contiguous.
MemoryFormat preserve_format(const Tensor& t);

}  // namespace ember::detail
