// LibTorch's tensor indexing, as torch::indexing: the index list of x.index({...}) and
// x.index_put_({...}, v) (declared in ember/tensor.h), spelled as in LibTorch:
//
//   using namespace ember::indexing;
//   x.index({Slice(), 0, Slice(1, None, 2), Ellipsis, None, mask, idx});
//       // Python: x[:, 0, 1::2, ..., None, mask, idx]
//   x.index_put_({Slice(), 0}, 5.0);  // x[:, 0] = 5
//
// The rules are torch 1.13's (tests/tensor_index_test.cpp checks them against its answers):
//
// Basic indices give views of x (writing through them reaches x), applied left to right:
//  - an integer i (int, int64_t, any integer type) selects entry i of the current dim, removing
//    it (x.select); negative i counts from the end; out of [-size, size) throws.
//  - Slice(start, stop, step) takes Python's start:stop:step (x.slice): each part optional
//    (None or left out: 0, the end, 1), negative start/stop count from the end, out-of-range
//    ones are clamped (an empty dim, never an error); step must be > 0 (as torch).
//  - None inserts a dim of size 1 (x.unsqueeze).
//  - Ellipsis (or "...") stands for as many whole dims as the other indices leave; one at most
//    (as NumPy; torch 1.13 accepts a second one).
//    Without one, dims past the last index are kept whole.
// Advanced indices give copies (through ember::index / ember::index_put, ember/ops/indexing.h):
//  - an integer tensor (any integer dtype; torch takes i64) picks entries of its dim; negative
//    values wrap; out-of-range ones throw. A 0-d integer tensor counts as an integer (a view).
//  - a bool mask (u8 tensors count as masks, as torch) covers as many dims as it has, and its
//    shape must equal theirs; it picks the true positions (its nonzero() coordinates).
//  - true / false (a C++ bool, or a 0-d bool tensor) insert a dim of size 1 / 0 and count as an
//    advanced index there (as torch: x.index({true}) is a copy of shape [1, ...]).
//  - {0, 2, 1} (a braced list of integers) is an i64 index tensor.
//  All advanced indices broadcast together to a shape B. Placement, as torch: integers are
//  applied first (they remove their dim), then, if the remaining advanced indices sit in
//  adjacent dims, B replaces those dims in place; if a basic index (a slice, None, Ellipsis)
//  separates them, B comes first. So with x of shape [5, 6, 7] and i of shape [2]:
//    x.index({i, 0, i}) is [2] (adjacent once the 0 is applied), x.index({0, Slice(), i}) is
//    [6, 2], x.index({i, Slice(), i}) is [2, 6], x.index({Slice(), i, i}) is [5, 2].
//  (torch 1.13 misplaces basic indices that follow a mask of rank > 1 and refuses them; Ember
//  applies them to the dims after the mask, as NumPy.)
//
// index_put_(indices, value) writes value into x[indices...] in place and returns x:
//  - value broadcasts to the indexed shape (leading size-1 dims of value are dropped first, as
//    torch's setitem); a Scalar value is converted to x's dtype.
//  - with basic indices only it is copy_ into the view (value of any dtype, converted as copy_);
//    with advanced ones a tensor value must have x's dtype (as torch), and where an index repeats
//    the last write in row-major order of the index wins (no accumulation).
//  - x may itself be a view (x.index({Slice(1, None)}).index_put_({idx}, v) writes into the base).
// Autograd: index and index_put_ are differentiable w.r.t. x and value (index_put_ needs a tensor
// that is not a leaf requiring grad, as every in-place op). Gradients follow torch: a value
// written at a repeated index gets the gradient of that position at each occurrence.
//
// Errors (ember::Error, "[index] ..." or "[index_put_] ...", with the shapes involved): an empty
// index list, more indices than dims, an integer or index tensor out of range, a mask whose shape
// differs from the dims it covers, two Ellipsis, a step <= 0, a float index tensor, a value that
// does not broadcast to the indexed shape, a value of another dtype with advanced indices.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <type_traits>

#include "ember/tensor.h"

namespace ember::indexing {

/// torch::indexing::None (c10::nullopt): an index that inserts a dim, and an absent Slice part.
constexpr std::nullopt_t None = std::nullopt;

struct EllipsisIndexType final {
  EllipsisIndexType() = default;
};
/// torch::indexing::Ellipsis: the whole dims not covered by the other indices.
constexpr EllipsisIndexType Ellipsis = EllipsisIndexType();

/// torch::indexing::Slice(start, stop, step): Python's start:stop:step, each part optional.
class Slice final {
 public:
  Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
        std::optional<int64_t> step = std::nullopt)
      : start_(start), stop_(stop), step_(step) {}
  std::optional<int64_t> start() const { return start_; }
  std::optional<int64_t> stop() const { return stop_; }
  std::optional<int64_t> step() const { return step_; }

 private:
  std::optional<int64_t> start_, stop_, step_;
};

std::ostream& operator<<(std::ostream& os, const Slice& s);  // "1:None:2", as LibTorch

/// One entry of an index list: None, Ellipsis, an integer, a bool, a Slice or a Tensor (see the
/// rules above). Implicit from each, as torch::indexing::TensorIndex.
class TensorIndex final {
 public:
  enum class Type { None, Ellipsis, Integer, Boolean, Slice, Tensor };

  TensorIndex(std::nullopt_t) : type_(Type::None) {}         // NOLINT(google-explicit-constructor)
  TensorIndex(EllipsisIndexType) : type_(Type::Ellipsis) {}  // NOLINT
  /// "..." only (as LibTorch); any other string throws ember::Error.
  TensorIndex(const char* str);  // NOLINT
  /// Every integer type except bool (one template, so int, long, size_t... are never ambiguous).
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  TensorIndex(T integer)  // NOLINT
      : type_(Type::Integer), integer_(int64_t(integer)) {}
  /// true / false (a template so that pointers and integers never convert to it).
  template <typename T, std::enable_if_t<std::is_same_v<T, bool>, int> = 0>
  TensorIndex(T boolean)  // NOLINT
      : type_(Type::Boolean), boolean_(boolean) {}
  TensorIndex(Slice slice) : type_(Type::Slice), slice_(slice) {}  // NOLINT
  TensorIndex(Tensor tensor);                                      // NOLINT
  /// {0, 2, 1}: an i64 index tensor of these values (on the default device).
  TensorIndex(std::initializer_list<int64_t> values);

  Type type() const { return type_; }
  bool is_none() const { return type_ == Type::None; }
  bool is_ellipsis() const { return type_ == Type::Ellipsis; }
  bool is_integer() const { return type_ == Type::Integer; }
  bool is_boolean() const { return type_ == Type::Boolean; }
  bool is_slice() const { return type_ == Type::Slice; }
  bool is_tensor() const { return type_ == Type::Tensor; }
  int64_t integer() const { return integer_; }
  bool boolean() const { return boolean_; }
  const Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  Type type_;
  int64_t integer_ = 0;
  bool boolean_ = false;
  Slice slice_;
  Tensor tensor_;
};

/// As LibTorch: None, ..., 3, true, 1:None:2, Tensor [2, 3] (shapes of tensors only).
std::ostream& operator<<(std::ostream& os, const TensorIndex& index);

}  // namespace ember::indexing
