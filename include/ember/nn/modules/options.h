// Helpers for the PyTorch-style options structs of ember::nn modules:
//   Conv2dOptions(3, 64, 3).stride(2).padding(1)
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "ember/error.h"

/// Declares a chainable option: `Options& name(T v)` sets it, `const T& name() const` reads it.
/// On a temporary both return by value (`Conv2dOptions(3, 8, 3).stride(2).kernel_size()`), so a
/// reference into a destroyed options object can never be formed.
#define EMBER_ARG(T, name)                            \
 public:                                              \
  auto& name(const T& new_##name)& {                  \
    this->name##_ = new_##name;                       \
    return *this;                                     \
  }                                                   \
  auto name(const T& new_##name)&& {                  \
    this->name##_ = new_##name;                       \
    return std::move(*this);                          \
  }                                                   \
  const T& name() const& noexcept { return name##_; } \
  T name()&& { return std::move(name##_); }           \
                                                      \
 private:                                             \
  T name##_

namespace ember::nn {

/// D spatial values given as one number (used for every dim) or a list of exactly D numbers, as
/// torch's _single/_pair/_triple. Remembers whether it was given as one number, because some
/// torch modules (pools) print a number and others a tuple. Throws for a list of another length.
template <size_t D>
struct ExpandingArray {
  ExpandingArray(int64_t v) : values(D, v), scalar(true) {}  // NOLINT
  ExpandingArray(std::initializer_list<int64_t> l) : ExpandingArray(std::vector<int64_t>(l)) {}
  ExpandingArray(std::vector<int64_t> v) : values(std::move(v)) {  // NOLINT
    if (values.size() != D)
      EMBER_FAIL("options", "expected ", D, " value(s), got a list of ", values.size());
  }
  std::vector<int64_t> values;
  bool scalar = false;
  const std::vector<int64_t>& vec() const& { return values; }
  std::vector<int64_t> vec() && { return std::move(values); }
  bool all(int64_t v) const {
    for (int64_t x : values)
      if (x != v) return false;
    return true;
  }
  bool operator==(const ExpandingArray& o) const { return values == o.values; }
};

namespace detail {
/// "(3, 3)" or "(3,)" as Python prints a tuple.
std::string tuple_str(const std::vector<int64_t>& v);
/// "3" when `a` was given as one number, else tuple_str.
template <size_t D>
std::string arg_str(const ExpandingArray<D>& a) {
  return a.scalar ? std::to_string(a.values[0]) : tuple_str(a.values);
}
/// Python's repr of a float: "0.1", "1e-05", "1.0".
std::string float_str(double v);
inline const char* bool_str(bool b) { return b ? "True" : "False"; }
}  // namespace detail

}  // namespace ember::nn
