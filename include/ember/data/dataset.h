// ember::data datasets: the Dataset interface, an in-memory TensorDataset, and the wrappers that
// map, shuffle, subset, split and concatenate datasets (as torch.utils.data).
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "ember/tensor.h"

namespace ember::data {

/// One sample: an input and its target (for classification an i64 0-d tensor holding the class).
struct Example {
  Tensor data;
  Tensor target;
};

/// What a per-item transform is told: the item's index in the dataset it maps and the epoch the
/// DataLoader is in. Random transforms draw from (seed, epoch, index) only, so a run reproduces.
struct ItemContext {
  int64_t index = 0;
  int64_t epoch = 0;
};

/// A map-style dataset (as torch.utils.data.Dataset): size() items, get(i) for i in [0, size()).
/// get() must be safe to call from several threads at once (DataLoader workers do) and throws
/// ember::Error for an index out of range. set_epoch() tells epoch-dependent items (random
/// transforms) the epoch; wrappers forward it to the datasets they wrap.
template <typename T>
class Dataset {
 public:
  using value_type = T;
  virtual ~Dataset() = default;
  virtual T get(int64_t index) const = 0;
  virtual int64_t size() const = 0;
  virtual void set_epoch(int64_t epoch) { (void)epoch; }
};
template <typename T>
using DatasetPtr = std::shared_ptr<Dataset<T>>;

namespace detail {
/// Throws "[what] index I is out of range for a dataset of size N" unless 0 <= index < size.
void check_item_index(int64_t index, int64_t size, const char* what);
/// Throws "[what] dataset is null" for a null pointer.
void check_not_null(const void* p, const char* what);
/// The sizes random_split cuts n items into (see random_split).
std::vector<int64_t> split_lengths(int64_t n, const std::vector<double>& lengths);
}  // namespace detail

/// A permutation of 0..n-1 that depends only on (seed, stream): a Fisher-Yates shuffle driven by
/// Philox-4x32-10 keyed by splitmix64(seed, stream), with unbiased bounded draws. The same on
/// every platform and standard library (no std::uniform_int_distribution). Throws for n < 0.
std::vector<int64_t> permutation(int64_t n, uint64_t seed, uint64_t stream = 0);

/// Items i of `data` [N, ...] and `targets` [N, ...] (views, no copy): the in-memory dataset, as
/// torch.utils.data.TensorDataset. Any dtypes and devices. Throws ember::Error when either is
/// undefined or 0-d, or when their first dims differ.
class TensorDataset : public Dataset<Example> {
 public:
  TensorDataset(Tensor data, Tensor targets);
  Example get(int64_t index) const override;
  int64_t size() const override { return size_; }
  const Tensor& data() const { return data_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor data_, targets_;
  int64_t size_ = 0;
};

/// `fn(item, {index, epoch})` applied to each item of `inner` when it is read (as
/// torchvision's transform argument). fn must be thread-safe.
template <typename In, typename Out = In>
class MapDataset : public Dataset<Out> {
 public:
  using Fn = std::function<Out(In, const ItemContext&)>;
  MapDataset(DatasetPtr<In> inner, Fn fn) : inner_(std::move(inner)), fn_(std::move(fn)) {
    detail::check_not_null(inner_.get(), "MapDataset");
    if (!fn_) detail::check_not_null(nullptr, "MapDataset function");
  }
  Out get(int64_t index) const override {
    detail::check_item_index(index, inner_->size(), "MapDataset");
    return fn_(inner_->get(index), ItemContext{index, epoch_.load()});
  }
  int64_t size() const override { return inner_->size(); }
  void set_epoch(int64_t epoch) override {
    epoch_ = epoch;
    inner_->set_epoch(epoch);
  }

 private:
  DatasetPtr<In> inner_;
  Fn fn_;
  std::atomic<int64_t> epoch_{0};
};

/// `inner` read through a fixed permutation(size, seed): the same order in every epoch (the
/// DataLoader's shuffle gives a new order each epoch).
template <typename T>
class ShuffledDataset : public Dataset<T> {
 public:
  ShuffledDataset(DatasetPtr<T> inner, uint64_t seed) : inner_(std::move(inner)) {
    detail::check_not_null(inner_.get(), "ShuffledDataset");
    order_ = permutation(inner_->size(), seed);
  }
  T get(int64_t index) const override {
    detail::check_item_index(index, int64_t(order_.size()), "ShuffledDataset");
    return inner_->get(order_[size_t(index)]);
  }
  int64_t size() const override { return int64_t(order_.size()); }
  void set_epoch(int64_t epoch) override { inner_->set_epoch(epoch); }
  const std::vector<int64_t>& order() const& { return order_; }
  std::vector<int64_t> order() && { return order_; }  // a copy on a temporary

 private:
  DatasetPtr<T> inner_;
  std::vector<int64_t> order_;
};

/// The items of `inner` at `indices`, in that order (as torch.utils.data.Subset). Throws when an
/// index is out of range for inner.
template <typename T>
class Subset : public Dataset<T> {
 public:
  Subset(DatasetPtr<T> inner, std::vector<int64_t> indices)
      : inner_(std::move(inner)), indices_(std::move(indices)) {
    detail::check_not_null(inner_.get(), "Subset");
    for (int64_t i : indices_) detail::check_item_index(i, inner_->size(), "Subset");
  }
  T get(int64_t index) const override {
    detail::check_item_index(index, int64_t(indices_.size()), "Subset");
    return inner_->get(indices_[size_t(index)]);
  }
  int64_t size() const override { return int64_t(indices_.size()); }
  void set_epoch(int64_t epoch) override { inner_->set_epoch(epoch); }
  const std::vector<int64_t>& indices() const& { return indices_; }
  std::vector<int64_t> indices() && { return indices_; }  // a copy on a temporary

 private:
  DatasetPtr<T> inner_;
  std::vector<int64_t> indices_;
};

/// Splits `dataset` into non-overlapping Subsets, as torch.utils.data.random_split: `lengths` are
/// counts summing to size() ({800, 200}), or fractions summing to 1 ({0.8, 0.2}; each split gets
/// floor(f * n) items and the remainder goes one by one to the first splits). Items are assigned
/// through permutation(size(), seed). Throws for negative lengths, counts that do not sum to
/// size(), or non-integral counts.
template <typename D, typename T = typename D::value_type>
std::vector<std::shared_ptr<Subset<T>>> random_split(const std::shared_ptr<D>& dataset,
                                                     const std::vector<double>& lengths,
                                                     uint64_t seed) {
  detail::check_not_null(dataset.get(), "random_split");
  const std::vector<int64_t> counts = detail::split_lengths(dataset->size(), lengths);
  const std::vector<int64_t> order = permutation(dataset->size(), seed);
  std::vector<std::shared_ptr<Subset<T>>> out;
  size_t at = 0;
  for (int64_t c : counts) {
    std::vector<int64_t> idx(order.begin() + ptrdiff_t(at), order.begin() + ptrdiff_t(at + c));
    out.push_back(std::make_shared<Subset<T>>(dataset, std::move(idx)));
    at += size_t(c);
  }
  return out;
}

/// The datasets one after another (as torch.utils.data.ConcatDataset).
template <typename T>
class ConcatDataset : public Dataset<T> {
 public:
  explicit ConcatDataset(std::vector<DatasetPtr<T>> parts) : parts_(std::move(parts)) {
    int64_t total = 0;
    for (const auto& p : parts_) {
      detail::check_not_null(p.get(), "ConcatDataset");
      total += p->size();
      ends_.push_back(total);
    }
  }
  T get(int64_t index) const override {
    detail::check_item_index(index, size(), "ConcatDataset");
    const size_t k = size_t(std::upper_bound(ends_.begin(), ends_.end(), index) - ends_.begin());
    return parts_[k]->get(index - (k == 0 ? 0 : ends_[k - 1]));
  }
  int64_t size() const override { return ends_.empty() ? 0 : ends_.back(); }
  void set_epoch(int64_t epoch) override {
    for (auto& p : parts_) p->set_epoch(epoch);
  }

 private:
  std::vector<DatasetPtr<T>> parts_;
  std::vector<int64_t> ends_;  // cumulative sizes
};

/// Shorthand for std::make_shared<MapDataset<In, Out>>(inner, fn): map<Example>(ds, fn).
template <typename Out, typename D, typename In = typename D::value_type>
std::shared_ptr<MapDataset<In, Out>> map(const std::shared_ptr<D>& inner,
                                         typename MapDataset<In, Out>::Fn fn) {
  return std::make_shared<MapDataset<In, Out>>(inner, std::move(fn));
}

}  // namespace ember::data
