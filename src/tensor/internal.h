// Helpers shared by the frontend op implementations (src/tensor, src/ops). Internal.
#pragma once
#include <vector>

#include "ember/tensor.h"
#include "ir/ops.h"
#include "runtime/backend.h"

namespace ember::detail {

/// A new contiguous tensor (uninitialised). `lazy`: its buffer is allocated when first used
/// (for results of ops the stream may record: one never written is never allocated). `op`
/// tags a bad shape's error: a factory's name ("[zeros] negative dimension in shape [-2, 3]").
Tensor make_tensor(const Shape& shape, DType dtype, const Device& device, bool lazy = false,
                   const char* op = "empty");
/// A new tensor laid out as `f` (contiguous or a channels-last format matching the rank).
Tensor make_tensor(const Shape& shape, DType dtype, const Device& device, MemoryFormat f,
                   bool lazy = false);
/// The strides `f` gives shape `s`; throws (tagged "memory_format") on a rank mismatch.
Strides format_strides(const Shape& s, MemoryFormat f);
/// Throws "[op] channels_last needs a 4-d tensor ..." when `f` cannot lay out `s`.
void check_format(const Shape& s, MemoryFormat f, const char* op);
/// The layout of an element-wise result of shape `s`: that of the first operand of shape `s`
/// (broadcast operands do not decide, as in torch's TensorIterator), contiguous when none has it.
MemoryFormat format_for(const Shape& s, std::initializer_list<const Tensor*> operands);
/// A view of `base`'s storage with new geometry (keeps no autograd history).
Tensor make_view(const Tensor& base, Shape shape, Strides strides, int64_t offset);
/// Throws "[op] tensor is undefined" (inline: every op checks each operand).
[[noreturn]] void fail_undefined(const char* op);
/// Throws "[op] tensor is undefined" when !t.defined().
inline void check_defined(const Tensor& t, const char* op) {
  if (!t.defined()) fail_undefined(op);
}
/// Throws "[op] tensors are on different devices: cpu and ref (shapes [..] and [..])".
void check_same_device(const Tensor& a, const Tensor& b, const char* op);
/// Throws "[op] expected a floating-point tensor, got int64 [2, 3]".
void check_floating(const Tensor& t, const char* op);
/// A check that reads `device`'s data and throws the op's ember::Error: run now on host devices;
/// on GPU devices kept by the backend and run at its next sync or read (Backend::defer_check),
/// so the op path never waits for the device. Ops that defer a check clamp what they would
/// otherwise index out of bounds with, so the kernels stay in bounds until the error is raised.
void check_device_data(const Device& device, std::function<void()> check);
/// "float32 [2, 3] on cpu" for error messages.
std::string describe(const Tensor& t);

/// Result dtype of an op between tensors/scalars, as torch.result_type: the highest category
/// (bool < int < float) wins; within it, dimensioned tensors outrank 0-d tensors, which outrank
/// scalars.
DType result_type(const Tensor& a, const Tensor& b);
DType result_type(const Tensor& a, const Scalar& b);
/// A 0-d tensor of `dtype` holding v on `device`.
Tensor scalar_to_tensor(const Scalar& v, DType dtype, const Device& device);
/// t.to(dtype) that is a no-op for matching dtypes.
inline Tensor cast(const Tensor& t, DType dtype) { return t.dtype() == dtype ? t : t.to(dtype); }
/// Sorted, unique, wrapped dims; empty `dims` means all dims.
std::vector<int64_t> normalize_dims(const std::vector<int64_t>& dims, int64_t rank, const char* op);
/// Shape with `dims` removed (or set to 1 when keepdim).
Shape reduced_shape(const Shape& s, const std::vector<int64_t>& dims, bool keepdim);
/// Throws "[op] index N is out of range for dim D of size S" when any index is outside
/// [-size, size) (allow_negative) or [0, size), or is not an integer tensor. Returns the index as
/// i64 with negatives wrapped. `dim` (>= 0) is only named in the message. (src/ops/indexing.cpp)
/// The range check is check_device_data's: on GPU devices it throws at the next sync or read,
/// and the returned indices are clamped into [0, size) meanwhile.
Tensor check_index(const Tensor& index, int64_t size, const char* op, bool allow_negative = true,
                   int64_t dim = -1);

/// One unary primitive, with the dtype rule of ir::traits(op) (ir/op_traits.h): to_float ops
/// promote integer/bool input to f32; bool result for predicates. Checks the dtype is accepted.
Tensor unary(ir::UnaryOp op, const Tensor& x, double p0 = 0, double p1 = 0, double p2 = 0);
/// One binary primitive with broadcasting and promotion to `compute` (or result_type(a, b) when
/// compute is not given). Comparisons and logical ops return bool.
Tensor binary(ir::BinaryOp op, const Tensor& a, const Tensor& b);
Tensor binary(ir::BinaryOp op, const Tensor& a, const Scalar& b);
Tensor binary(ir::BinaryOp op, const Scalar& a, const Tensor& b);
/// Broadcasts `ts` to one shape (views, no copy). Throws naming `op` and all shapes.
std::vector<Tensor> broadcast_all(const std::vector<Tensor>& ts, const char* op);

/// Refuses an in-place write into t when it is (a view of) a leaf that requires grad while
/// grad mode is on (torch's rule), naming `op`; call it before anything is written.
void check_leaf_write(const Tensor& t, const char* op);

}  // namespace ember::detail
