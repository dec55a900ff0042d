// ember::Tensor: a strided view of a device buffer with a dtype, dynamic rank and autograd hooks.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/error.h"
#include "ember/shape.h"

namespace ember {

class Backend;
struct AutogradMeta;  // defined by autodiff; null when a tensor does not track gradients
class Tensor;
namespace indexing {
class TensorIndex;  // ember/ops/tensor_index.h: Slice, None, Ellipsis, integers, bools, tensors
}  // namespace indexing

/// What register_hook (tensors) and register_forward_hook / register_forward_pre_hook (modules)
/// return, as torch's RemovableHandle: remove() unregisters the hook; removing twice, or after
/// the tensor or module is gone, does nothing. A default-constructed handle holds no hook.
class RemovableHandle {
 public:
  RemovableHandle() = default;
  explicit RemovableHandle(std::function<void()> remove)
      : remove_(std::make_shared<std::function<void()>>(std::move(remove))) {}
  void remove() {
    if (remove_ && *remove_) std::exchange(*remove_, nullptr)();
  }
  /// False once removed (or for a default-constructed handle).
  bool active() const { return remove_ && *remove_; }

 private:
  std::shared_ptr<std::function<void()>> remove_;  // copies of a handle share it
};

/// A device buffer. Views share one Storage; `version` counts in-place writes (autodiff uses it).
struct Storage {
  Backend* backend = nullptr;
  Device device;
  int64_t nbytes = 0;
  int64_t version = 0;
  /// Recorded, not yet run ops of the backend's stream that read or write this storage: host
  /// access (Tensor::data_ptr) runs the stream first while it is not 0.
  std::atomic<int32_t> pending{0};
  /// Set once Tensor::data_ptr has handed out a host pointer into this storage: from then on the
  /// backend runs every op that reads or writes it at once (never recorded), so reads and writes
  /// through the pointer stay in program order with the ops.
  std::atomic<bool> host_pointer_kept{false};
  /// Counts the writes made to this storage: every op recorded or run through it (inference
  /// tensors too) and every host access (raw_data). While host_pointer_kept is false, the same
  /// count at two points means the same contents: a backend may key data derived from them by
  /// it (the cpu's convolutions keep reordered weights, ir::Conv::weight_writes).
  std::atomic<uint64_t> writes{0};
  /// `lazy`: the buffer is allocated by the first data() call, not here (the result of a
  /// recorded op that is never written never gets one). Otherwise allocated now; both throw what
  /// the backend's allocate throws (ember::Error when out of memory).
  Storage(Backend* b, Device d, int64_t bytes, bool lazy = false);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  /// The buffer: a host pointer for host devices, an opaque handle otherwise; allocated now if
  /// it was deferred (thread-safe).
  void* data() const {
    void* p = data_.load(std::memory_order_acquire);
    return p || nbytes == 0 ? p : allocate_now();
  }
  /// Whether the buffer exists (false for a lazy storage nothing has used yet).
  bool allocated() const { return data_.load(std::memory_order_acquire) != nullptr; }
  /// Frees the buffer now (a later data() allocates a new one, of undefined contents): for a
  /// stream whose remaining ops neither read nor write this storage and that nobody else holds.
  void release_buffer();
  /// Replaces the buffer pointer and returns the old one, for internal wrappers over memory the
  /// storage does not own (they restore the original before it is destroyed).
  void* exchange_data(void* p) { return data_.exchange(p, std::memory_order_acq_rel); }

 private:
  void* allocate_now() const;
  mutable std::atomic<void*> data_{nullptr};
};

/// A tensor's view of its storage. Ops recorded into a device's lazy stream share the impl with
/// their caller: change storage/shape/strides/offset/dtype of one in place only after
/// sync(device) (Module::to does).
struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Strides strides;     // in elements; may be 0 (broadcast) or negative (internal flips)
  int64_t offset = 0;  // in elements
  DType dtype = DType::f32;
  std::shared_ptr<AutogradMeta> autograd;
  /// For views made by view ops: the tensor that owns the storage (autodiff routes in-place
  /// writes through a view to it). Null for tensors that own their storage and for aliases.
  std::shared_ptr<TensorImpl> view_base;
  /// Created while InferenceMode was on (ember/autograd.h): never records history.
  bool inference = false;
};

/// How a 4-d [N, C, H, W] or 5-d [N, C, D, H, W] tensor is laid out in memory (torch's
/// memory_format). The logical shape and indexing never change; only the strides do:
///   contiguous:       row-major, strides of [N, C, H, W];
///   channels_last:    4-d, channels innermost (NHWC in memory): strides (HWC, 1, WC, C);
///   channels_last_3d: 5-d, NDHWC in memory: strides (DHWC, 1, HWC, WC, C);
///   preserve:         keep the source's layout (only where an op takes a format argument).
/// Element-wise ops give their result the channels-last layout of their first operand of the
/// result's shape (as torch), and convolutions give theirs the input's, so a model fed a
/// channels-last input stays channels-last: on the cpu backend its convolutions then run on
/// NHWC directly instead of reordering every input and output.
enum class MemoryFormat : uint8_t { contiguous, channels_last, channels_last_3d, preserve };
const char* memory_format_name(MemoryFormat f);  // "contiguous", "channels_last", ...

/// Tensor options for factories: dtype and device (defaults: f32, Device::default_device()).
struct TensorOptions {
  DType dtype_ = DType::f32;
  Device device_ = Device::default_device();
  bool has_dtype_ = false;  // a dtype was given (arange infers one otherwise)
  TensorOptions() = default;
  TensorOptions(DType d) : dtype_(d), has_dtype_(true) {}  // NOLINT
  TensorOptions(Device d) : device_(d) {}                  // NOLINT
  TensorOptions(DType t, Device d) : dtype_(t), device_(d), has_dtype_(true) {}
  TensorOptions dtype(DType d) const {
    auto o = *this;
    o.dtype_ = d;
    o.has_dtype_ = true;
    return o;
  }
  TensorOptions device(Device d) const {
    auto o = *this;
    o.device_ = d;
    return o;
  }
};

/// A tensor handle. Copying a Tensor shares the data (like torch.Tensor); use clone() to copy.
/// A default-constructed Tensor is undefined (defined() == false); using it throws ember::Error.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- metadata ----
  bool defined() const { return impl_ != nullptr; }
  /// On a temporary (`model->forward(x).shape()`) these return copies, never a reference into
  /// a tensor that is about to be destroyed.
  const Shape& shape() const&;
  Shape shape() const&& { return shape_copy(); }
  const Shape& sizes() const& { return shape(); }
  Shape sizes() const&& { return shape_copy(); }
  const Strides& strides() const&;
  Strides strides() const&& { return strides_copy(); }
  int64_t size(int64_t dim) const;  // negative dims count from the end
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return int64_t(shape().size()); }
  int64_t numel() const;
  int64_t offset() const;
  DType dtype() const;
  Device device() const;
  bool is_contiguous() const;
  /// True when the strides are those `f` gives this shape (sizes of 1 may have any stride, as
  /// torch). channels_last needs rank 4 and channels_last_3d rank 5 (false otherwise);
  /// preserve throws ember::Error.
  bool is_contiguous(MemoryFormat f) const;
  /// The layout this tensor is dense in: channels_last(_3d) when it is so and not also plain
  /// contiguous, else contiguous (torch's suggest_memory_format).
  MemoryFormat memory_format() const;
  int64_t element_size() const { return dtype_size(dtype()); }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  /// True when both share a Storage.
  bool is_alias_of(const Tensor& o) const;

  /// Host pointer to element 0 of this view, valid while the storage lives. Throws unless the
  /// device is host memory and T matches the dtype. The pointer stays current: later ops on this
  /// storage run at once instead of being recorded in the lazy stream (they are not fused).
  template <typename T>
  T* data_ptr() const {
    return static_cast<T*>(kept_host_pointer(dtype_of<T>::value, "data_ptr"));
  }
  /// Host pointer to element 0 (host devices only; throws otherwise), current at this call only:
  /// ops recorded after it are not seen through it until ember::sync. For reading or filling
  /// the values at once (Ember's own loaders use it); keep a pointer with data_ptr.
  void* raw_data() const;

  // ---- conversion and host access ----
  /// Copy to another device (returns *this when already there).
  Tensor to(const Device& d) const;
  /// Cast (returns *this when already that dtype). Float->int truncates toward zero.
  Tensor to(DType t) const;
  Tensor to(const Device& d, DType t) const { return to(t).to(d); }
  /// The single value of a one-element tensor, converted to T. Throws if numel() != 1.
  template <typename T>
  T item() const;
  /// All values, row-major, converted to T.
  template <typename T>
  std::vector<T> to_vector() const;
  /// Deep copy with the same shape, dtype, device (contiguous).
  Tensor clone() const;
  /// This tensor if contiguous, else a contiguous copy.
  Tensor contiguous() const;
  /// This tensor if already laid out as `f`, else a copy laid out so (same values, shape, dtype,
  /// device; differentiable). Throws ember::Error for channels_last on a tensor that is not 4-d,
  /// channels_last_3d on one that is not 5-d, or preserve.
  Tensor contiguous(MemoryFormat f) const;
  std::string str() const;  // PyTorch-style printing, summarised past 1000 elements

  // ---- views (share storage; no copy) ----
  /// Reshape without copying; throws if the strides cannot express it. -1 infers one dim.
  Tensor view(Shape shape) const;
  /// As view() when possible, else a contiguous copy.
  Tensor reshape(Shape shape) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor permute(std::vector<int64_t> dims) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const;   // 2-d transpose (0-d and 1-d returned as is)
  Tensor mT() const;  // transpose of the last two dims
  /// Python's x[start:stop:step] along dim; start/stop may be negative and are clamped; step > 0.
  Tensor slice(int64_t dim, int64_t start, int64_t stop, int64_t step = 1) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor expand(Shape shape) const;  // -1 keeps a size
  Tensor broadcast_to(Shape shape) const { return expand(std::move(shape)); }
  Tensor expand_as(const Tensor& o) const { return expand(o.shape()); }
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  /// Windows of `size` every `step` along dim, as a new last dim (torch.Tensor.unfold).
  Tensor unfold(int64_t dim, int64_t size, int64_t step) const;
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  /// Reverses the given dims (a copy, as torch.flip).
  Tensor flip(std::vector<int64_t> dims) const;
  /// A view of this tensor's storage with the given sizes, strides and storage offset (all in
  /// elements), as torch.Tensor.as_strided: the offset defaults to this tensor's own (offset()),
  /// and the result may read storage outside this view and may alias one element several times
  /// (size [3, 3], stride [1, 1] over 5 elements: overlapping windows). Writes through it reach
  /// this tensor and its history. Gradient: torch's as_strided_backward (aliased elements sum;
  /// storage this tensor does not cover gets none). Throws ember::Error "[as_strided] ..." when
  /// size and stride differ in length, a size or stride is negative, the offset is negative, or
  /// the furthest element lies past the storage (the message gives sizes, strides, offset,
  /// itemsize and the storage sizes needed and held, as torch's).
  Tensor as_strided(Shape size, Strides stride,
                    std::optional<int64_t> storage_offset = std::nullopt) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  /// LibTorch's indexing, x.index({Slice(), 0, Slice(1, None, 2), Ellipsis, None, mask, idx}):
  /// the rules of torch's x[...] (basic indices give views, advanced ones copies), with autograd.
  /// Documented in ember/ops/tensor_index.h (include it, or ember/ember.h, to call these).
  Tensor index(std::initializer_list<indexing::TensorIndex> indices) const;
  Tensor index(const std::vector<indexing::TensorIndex>& indices) const;
  /// x[...] = value in place (torch's x.index_put_({...}, v)); returns *this.
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& value);
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& value);
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Scalar& value);
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Scalar& value);

  // ---- in-place (through views; bump the version; overlapping operands: docs/ops.md) ----
  Tensor& fill_(const Scalar& v);
  Tensor& zero_() { return fill_(0); }
  /// Copies src (broadcast to this shape, converted to this dtype, any device) into this view.
  Tensor& copy_(const Tensor& src);
  Tensor& add_(const Tensor& o, const Scalar& alpha = 1);
  Tensor& add_(const Scalar& o);
  Tensor& sub_(const Tensor& o, const Scalar& alpha = 1);
  Tensor& sub_(const Scalar& o);
  Tensor& mul_(const Tensor& o);
  Tensor& mul_(const Scalar& o);
  Tensor& div_(const Tensor& o);
  Tensor& div_(const Scalar& o);
  Tensor& clamp_(const Scalar& lo, const Scalar& hi);
  Tensor& masked_fill_(const Tensor& mask, const Scalar& v);
  Tensor& uniform_(double lo = 0, double hi = 1);
  Tensor& normal_(double mean = 0, double std = 1);

  // ---- autograd (src/autodiff) ----
  bool requires_grad() const;
  /// Marks a floating-point leaf as needing gradients. Throws for integer/bool tensors and for
  /// non-leaf tensors.
  Tensor& requires_grad_(bool on = true);
  /// Accumulated gradient (undefined Tensor until a backward reaches this leaf).
  Tensor grad() const;
  /// Replaces the gradient (an undefined Tensor clears it, as `x.grad = None`).
  void set_grad(const Tensor& g);
  /// Back-propagates from this tensor. `gradient` (same shape) is required unless the tensor has
  /// one element. The graph is freed afterwards unless retain_graph (default: create_graph).
  /// Gradients accumulate into the .grad of leaves. With create_graph the backward pass is
  /// itself recorded (as torch): the accumulated .grad has a grad_fn and can be differentiated
  /// again (gradients of gradients).
  void backward(const Tensor& gradient = Tensor(), std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false) const;
  /// The same data without history (shares storage).
  Tensor detach() const;
  /// True for tensors that no op produced while recording (user-created or detached).
  bool is_leaf() const;
  /// Name of the backward node that produced this tensor ("" for leaves): "MulBackward"...
  std::string grad_fn_name() const;
  /// Registers hook(grad), called with this tensor's gradient each time one is computed
  /// (torch's Tensor.register_hook). A hook returning a Tensor replaces the gradient (same
  /// shape; an undefined Tensor keeps it); a void hook only inspects it. Hooks run in
  /// registration order; on a leaf they run before the gradient is accumulated into .grad.
  /// Throws ember::Error for a tensor that does not require grad.
  template <typename F>
  RemovableHandle register_hook(F&& hook) const {
    if constexpr (std::is_void_v<std::invoke_result_t<F&, const Tensor&>>) {
      return register_grad_hook([h = std::forward<F>(hook)](const Tensor& g) mutable {
        h(g);
        return Tensor();
      });
    } else {
      return register_grad_hook(std::function<Tensor(const Tensor&)>(std::forward<F>(hook)));
    }
  }
  RemovableHandle register_grad_hook(std::function<Tensor(const Tensor&)> hook) const;
  /// True for a tensor created under InferenceMode (ember/autograd.h).
  bool is_inference() const;

  // ---- common math as methods (the functions in ember/ops/*.h are the full set) ----
  Tensor sum() const;
  Tensor sum(std::vector<int64_t> dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(std::vector<int64_t> dims, bool keepdim = false) const;
  Tensor max() const;
  Tensor min() const;
  Tensor argmax(int64_t dim, bool keepdim = false) const;
  Tensor abs() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor relu() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  Tensor matmul(const Tensor& o) const;
  Tensor pow(const Scalar& e) const;

  // data_ptr's checks; marks the storage's host_pointer_kept.
  void* kept_host_pointer(DType expected, const char* op) const;
  Shape shape_copy() const;
  Strides strides_copy() const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// ---- operators (PyTorch type promotion and broadcasting) ----
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Scalar& a, const Tensor& b);
/// remainder(a, b), as torch's `%` (torch.remainder): the result has the sign of the divisor
/// (-7 % 3 == 2, 7 % -3 == -2); an integer remainder by zero throws ember::Error, a floating one
/// is NaN. Not C++'s `%` on ints, whose result has the sign of the dividend (that is fmod).
Tensor operator%(const Tensor& a, const Tensor& b);
Tensor operator%(const Tensor& a, const Scalar& b);
Tensor operator%(const Scalar& a, const Tensor& b);

// ---- creation ----
/// Uninitialised memory.
Tensor empty(Shape shape, TensorOptions opts = {});
/// Uninitialised memory laid out as `f` (contiguous, channels_last for 4-d, channels_last_3d for
/// 5-d shapes; anything else throws ember::Error).
Tensor empty(Shape shape, TensorOptions opts, MemoryFormat f);
Tensor zeros(Shape shape, TensorOptions opts = {});
Tensor ones(Shape shape, TensorOptions opts = {});
Tensor full(Shape shape, const Scalar& value, TensorOptions opts = {});
Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, const Scalar& value);
/// [start, end) every step, as torch.arange; without a dtype in opts: i64 when all three are
/// integers, else f32.
Tensor arange(const Scalar& end, TensorOptions opts = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1,
              TensorOptions opts = {});
Tensor arange_typed(const Scalar& start, const Scalar& end, const Scalar& step, DType dtype,
                    Device device);
/// `steps` evenly spaced values from start to end inclusive.
Tensor linspace(double start, double end, int64_t steps, TensorOptions opts = {});
/// n x m identity (m = n when m < 0).
Tensor eye(int64_t n, int64_t m = -1, TensorOptions opts = {});
/// A 0-d tensor.
Tensor scalar_tensor(const Scalar& v, TensorOptions opts = {});
/// Copies host values; shape defaults to [data.size()]. Throws when numel(shape) != size.
template <typename T>
Tensor from_vector(std::span<const T> data, Shape shape, Device device = Device::default_device());
template <typename T>
Tensor from_vector(const std::vector<T>& data, Shape shape,
                   Device device = Device::default_device()) {
  return from_vector<T>(std::span<const T>(data.data(), data.size()), std::move(shape), device);
}
/// tensor({1.f, 2.f, 3.f}) is f32 [3]; tensor({1, 2}, {2, 1}) is i32 [2, 1]...
template <typename T>
Tensor tensor(std::initializer_list<T> values, Shape shape = {},
              Device device = Device::default_device()) {
  // A plain array, not std::vector: std::vector<bool> has no contiguous storage.
  std::unique_ptr<T[]> v(new T[values.size()]);
  std::copy(values.begin(), values.end(), v.get());
  if (shape.empty()) shape = {int64_t(values.size())};
  return from_vector<T>(std::span<const T>(v.get(), values.size()), std::move(shape), device);
}
/// Copies raw host bytes of `dtype` into a new tensor.
Tensor from_blob(const void* data, Shape shape, DType dtype,
                 Device device = Device::default_device());

// ---- random (Philox-4x32-10: the same seed gives the same numbers on every backend) ----
/// Seeds the generator of `device` (all devices when none is given).
void manual_seed(uint64_t seed);
void manual_seed(const Device& device, uint64_t seed);
/// The state of a device's generator: its seed and the Philox offset of its next draw.
struct RandomState {
  uint64_t seed = 0;
  uint64_t offset = 0;
};
/// The generator state of `device` (checkpoints save it so a resumed run draws the same numbers).
RandomState random_state(const Device& device);
/// Restores a state returned by random_state(): the next draws repeat those that followed it.
void set_random_state(const Device& device, const RandomState& state);
Tensor rand(Shape shape, TensorOptions opts = {});   // U[0, 1)
Tensor randn(Shape shape, TensorOptions opts = {});  // N(0, 1), Box-Muller
/// Integers uniform in [low, high); dtype i64 unless opts say otherwise.
Tensor randint(int64_t low, int64_t high, Shape shape, TensorOptions opts = {DType::i64});
/// 1 with probability p (per element of p, or a scalar p), as the dtype of p. Throws
/// "[bernoulli] probabilities must be in [0, 1]" (on GPU devices at the next sync or read).
Tensor bernoulli(const Tensor& p);
Tensor bernoulli(Shape shape, double p, TensorOptions opts = {});
/// A random permutation of 0..n-1 (i64).
Tensor randperm(int64_t n, TensorOptions opts = {DType::i64});
Tensor rand_like(const Tensor& t);
Tensor randn_like(const Tensor& t);

}  // namespace ember
