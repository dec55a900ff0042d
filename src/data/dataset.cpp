// Dataset helpers, permutation() and TensorDataset.
#include "ember/data/dataset.h"

#include <cmath>
#include <numeric>

#include "data/random.h"

namespace ember::data {

namespace detail {

void check_item_index(int64_t index, int64_t size, const char* what) {
  if (index < 0 || index >= size)
    EMBER_FAIL(what, "index ", index, " is out of range for a dataset of size ", size);
}

void check_not_null(const void* p, const char* what) {
  if (!p) EMBER_FAIL(what, "got a null pointer");
}

std::vector<int64_t> split_lengths(int64_t n, const std::vector<double>& lengths) {
  if (lengths.empty()) EMBER_FAIL("random_split", "no lengths given");
  double sum = 0;
  for (double l : lengths) {
    if (!(l >= 0) || !std::isfinite(l))
      EMBER_FAIL("random_split", "lengths must be finite and non-negative, got ", l);
    sum += l;
  }
  std::vector<int64_t> out;
  if (std::fabs(sum - 1.0) < 1e-9 && sum <= double(n)) {
    // Fractions, as torch: floor each, then hand the remainder out one by one from the first.
    int64_t total = 0;
    for (double f : lengths) {
      out.push_back(int64_t(std::floor(f * double(n))));
      total += out.back();
    }
    for (size_t i = 0; total < n; i = (i + 1) % out.size(), ++total) ++out[i];
    return out;
  }
  int64_t total = 0;
  for (double l : lengths) {
    if (l != std::floor(l))
      EMBER_FAIL("random_split", "lengths are neither fractions summing to 1 nor counts (", l,
                 " is not an integer)");
    out.push_back(int64_t(l));
    total += out.back();
  }
  if (total != n)
    EMBER_FAIL("random_split", "the lengths sum to ", total, " but the dataset has ", n, " items");
  return out;
}

}  // namespace detail

std::vector<int64_t> permutation(int64_t n, uint64_t seed, uint64_t stream) {
  if (n < 0) EMBER_FAIL("permutation", "n must be >= 0, got ", n);
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), int64_t(0));
  detail::Stream rng(seed, stream, 0x7065726dull);  // "perm"
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = int64_t(rng.below(uint64_t(i) + 1));
    std::swap(v[size_t(i)], v[size_t(j)]);
  }
  return v;
}

TensorDataset::TensorDataset(Tensor data, Tensor targets)
    : data_(std::move(data)), targets_(std::move(targets)) {
  if (!data_.defined() || !targets_.defined())
    EMBER_FAIL("TensorDataset", "data and targets must be defined (got an undefined tensor)");
  if (data_.dim() == 0 || targets_.dim() == 0)
    EMBER_FAIL("TensorDataset", "data ", shape_str(data_.shape()), " and targets ",
               shape_str(targets_.shape()), " need a first (item) dim");
  if (data_.size(0) != targets_.size(0))
    EMBER_FAIL("TensorDataset", "data ", shape_str(data_.shape()), " and targets ",
               shape_str(targets_.shape()), " differ in their first dim (", data_.size(0),
               " != ", targets_.size(0), ")");
  size_ = data_.size(0);
}

Example TensorDataset::get(int64_t index) const {
  detail::check_item_index(index, size_, "TensorDataset");
  return Example{data_.select(0, index), targets_.select(0, index)};
}

}  // namespace ember::data
