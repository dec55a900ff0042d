// ember::data::DataLoader: batches of a Dataset, shuffled reproducibly per epoch, built by worker
// threads ahead of the consumer (as torch.utils.data.DataLoader).
#pragma once
#include <cstdint>
#include <exception>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/data/dataset.h"
#include "ember/data/sampler.h"

namespace ember::data {

/// Combines the items of one batch, in order, into a batch. Called from worker threads: batch()
/// must be thread-safe.
template <typename T, typename B>
class Batcher {
 public:
  virtual ~Batcher() = default;
  virtual B batch(std::vector<T> items) const = 0;
};

/// Stacks tensors of one shape and dtype along a new dim 0: n x [...] -> [n, ...], on the
/// device of the first. Throws "[stack_items] ..." naming the shapes/dtypes that differ, or for an
/// empty list.
Tensor stack_items(const std::vector<Tensor>& items);

/// The default batcher (as torch's default_collate): Examples -> {data [B, ...], target [B, ...]}.
class StackBatcher : public Batcher<Example, Example> {
 public:
  Example batch(std::vector<Example> items) const override;
};

/// How a batch moves to a device (DataLoaderOptions::device, DataLoader::set_device and the
/// Learner use it). Provided for Tensor (undefined stays undefined), Example, and std::vector,
/// std::pair, std::tuple and std::map<K, V> of movable types. The hook for a custom batch type:
/// give it a member `B to(const Device&) const` (as Tensor::to), or specialize this template
/// with `static constexpr bool supported = true` and `static B to(const B&, const Device&)`.
template <typename B, typename = void>
struct BatchToDevice {
  static constexpr bool supported = false;
};
template <>
struct BatchToDevice<Tensor> {
  static constexpr bool supported = true;
  static Tensor to(const Tensor& t, const Device& d) { return t.defined() ? t.to(d) : t; }
};
template <>
struct BatchToDevice<Example> {
  static constexpr bool supported = true;
  static Example to(const Example& e, const Device& d) {
    return Example{BatchToDevice<Tensor>::to(e.data, d), BatchToDevice<Tensor>::to(e.target, d)};
  }
};
template <typename T>
struct BatchToDevice<std::vector<T>, std::enable_if_t<BatchToDevice<T>::supported>> {
  static constexpr bool supported = true;
  static std::vector<T> to(const std::vector<T>& v, const Device& d) {
    std::vector<T> out;
    out.reserve(v.size());
    for (const T& x : v) out.push_back(BatchToDevice<T>::to(x, d));
    return out;
  }
};
template <typename A, typename C>
struct BatchToDevice<std::pair<A, C>,
                     std::enable_if_t<BatchToDevice<A>::supported && BatchToDevice<C>::supported>> {
  static constexpr bool supported = true;
  static std::pair<A, C> to(const std::pair<A, C>& p, const Device& d) {
    return {BatchToDevice<A>::to(p.first, d), BatchToDevice<C>::to(p.second, d)};
  }
};
template <typename... Ts>
struct BatchToDevice<std::tuple<Ts...>, std::enable_if_t<(BatchToDevice<Ts>::supported && ...)>> {
  static constexpr bool supported = true;
  static std::tuple<Ts...> to(const std::tuple<Ts...>& t, const Device& d) {
    return std::apply(
        [&](const Ts&... x) { return std::tuple<Ts...>(BatchToDevice<Ts>::to(x, d)...); }, t);
  }
};
template <typename K, typename V>
struct BatchToDevice<std::map<K, V>, std::enable_if_t<BatchToDevice<V>::supported>> {
  static constexpr bool supported = true;
  static std::map<K, V> to(const std::map<K, V>& m, const Device& d) {
    std::map<K, V> out;
    for (const auto& [k, v] : m) out.emplace(k, BatchToDevice<V>::to(v, d));
    return out;
  }
};
/// A type with a member `B to(const Device&) const` (not Tensor: that one is above).
template <typename B>
struct BatchToDevice<
    B,
    std::enable_if_t<
        !std::is_same_v<B, Tensor> &&
        std::is_same_v<decltype(std::declval<const B&>().to(std::declval<const Device&>())), B>>> {
  static constexpr bool supported = true;
  static B to(const B& b, const Device& d) { return b.to(d); }
};
/// Whether batches of type B can move to a device (BatchToDevice<B> is provided).
template <typename B>
inline constexpr bool batch_movable_v = BatchToDevice<B>::supported;
/// `b` with every tensor on `d` (a tensor already there is kept, not copied).
template <typename B>
B batch_to_device(const B& b, const Device& d) {
  static_assert(batch_movable_v<B>,
                "ember::data::batch_to_device: give the batch type a member `B to(const Device&) "
                "const` or specialize ember::data::BatchToDevice<B>");
  return BatchToDevice<B>::to(b, d);
}

struct DataLoaderOptions {
  int64_t batch_size = 1;
  /// A new order every epoch: epoch e reads the dataset in permutation(size, seed, e) order.
  /// Not together with `sampler`.
  bool shuffle = false;
  uint64_t seed = 0;
  /// Drops the last batch when it has fewer than batch_size items.
  bool drop_last = false;
  /// Worker threads building batches ahead of the consumer; 0 builds them in the caller.
  /// The batches (order and content) are the same for every value.
  int64_t num_workers = 0;
  /// Batches in flight per worker (the bounded prefetch queue holds num_workers * this).
  int64_t prefetch_factor = 2;
  /// When set, every batch comes out of next() with its tensors on this device (as Burn's
  /// DataLoader::set_device / moving batches with .to(device) in a torch loop), through
  /// BatchToDevice<B>. Batches are built on the host by the workers and moved in the consumer's
  /// thread. The loader's constructor throws ember::Error when B has no BatchToDevice.
  std::optional<Device> device;
  /// When set, epoch e reads sampler->indices(dataset size, e) (a DistributedSampler gives each
  /// rank its shard) and size() counts sampler->num_samples(dataset size) items. Exclusive with
  /// shuffle (as torch: the sampler decides the order).
  std::shared_ptr<const Sampler> sampler;
};

namespace detail {
/// Checks options (batch_size >= 1, num_workers >= 0, prefetch_factor >= 1, not both sampler and
/// shuffle); throws naming them.
void check_loader_options(const DataLoaderOptions& o);
/// sampler.indices(n, e), checked: every index in [0, n). Throws "[DataLoader] ..." naming the
/// first index out of range.
std::vector<int64_t> sampled_order(const Sampler& sampler, int64_t n, int64_t e);
/// Batches per epoch for n items.
int64_t loader_num_batches(int64_t n, const DataLoaderOptions& o);
/// Throws "[DataLoader] cannot place batches on <device>: the batch type has no BatchToDevice".
[[noreturn]] void fail_unmovable_batch(const Device& device);
/// Rethrows the current exception of batch b as ember::Error "[DataLoader] batch b: <what>".
[[noreturn]] void rethrow_batch_error(int64_t batch, std::exception_ptr e);

/// Runs produce(b) for b = 0, 1, ... num_batches-1 on `workers` threads, at most `capacity`
/// batches ahead of the consumer; produce(b) writes its result to slot b % capacity. The
/// consumer calls wait(b) then release(b) for b in order. Destruction stops and joins workers.
class Prefetcher {
 public:
  Prefetcher(int64_t num_batches, int64_t workers, int64_t capacity,
             std::function<void(int64_t)> produce);
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;
  /// Blocks until batch b is built; rethrows its failure as ember::Error.
  void wait(int64_t b);
  /// Frees batch b's slot for a worker.
  void release(int64_t b);

 private:
  struct State;
  std::unique_ptr<State> s_;
};
}  // namespace detail

/// Iterates a dataset in batches. Epochs: begin() (or the first next()) starts epoch epoch();
/// when an epoch's batches are all read, next() returns nullopt once and epoch() becomes e+1.
/// set_epoch(e) makes the next epoch e, so a resumed run reads the same batches as the original.
/// With shuffle, epoch e reads indices permutation(size, seed, e) (Philox-4x32-10 keyed by
/// splitmix64(seed, e); see permutation()); with a sampler, sampler->indices(size, e); with
/// neither, 0..size-1. Datasets are told the epoch
/// (Dataset::set_epoch) before its first item is read. A failure in a dataset or batcher (in any
/// worker) reaches the consumer as ember::Error "[DataLoader] batch b: ..." at batch b (so it is
/// reproducible too); the epoch then stops, and the next begin()/next() restarts it.
/// Not copyable; one consumer thread.
template <typename T = Example, typename B = Example>
class DataLoader {
 public:
  /// `batcher` defaults to StackBatcher for Examples (required otherwise). Throws ember::Error
  /// for bad options or a null dataset/batcher.
  DataLoader(DatasetPtr<T> dataset, DataLoaderOptions options,
             std::shared_ptr<const Batcher<T, B>> batcher = nullptr)
      : dataset_(std::move(dataset)), opts_(options), batcher_(std::move(batcher)) {
    detail::check_not_null(dataset_.get(), "DataLoader");
    detail::check_loader_options(opts_);
    if (opts_.device) set_device(*opts_.device);
    if (!batcher_) {
      if constexpr (std::is_same_v<T, Example> && std::is_same_v<B, Example>)
        batcher_ = std::make_shared<StackBatcher>();
      else
        detail::check_not_null(nullptr, "DataLoader batcher");
    }
  }
  ~DataLoader() { stop(); }
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  /// Batches come out of next() on `device` from now on (see DataLoaderOptions::device).
  /// Throws ember::Error("[DataLoader] ...") when the batch type has no BatchToDevice.
  void set_device(const Device& device) {
    if constexpr (!batch_movable_v<B>)
      detail::fail_unmovable_batch(device);
    else
      opts_.device = device;
  }

  /// Reads epochs through `sampler` from the next epoch on and turns shuffle off (the sampler
  /// decides the order; null goes back to the dataset's order, unshuffled). Stops an epoch in
  /// progress. What the Learner does to shard a loader for data-parallel training.
  void set_sampler(std::shared_ptr<const Sampler> sampler) {
    stop();
    opts_.sampler = std::move(sampler);
    opts_.shuffle = false;
  }

  /// Batches per epoch.
  int64_t size() const {
    const int64_t n = dataset_->size();
    return detail::loader_num_batches(opts_.sampler ? opts_.sampler->num_samples(n) : n, opts_);
  }
  const DataLoaderOptions& options() const { return opts_; }
  /// The epoch being read, or the next one to start.
  int64_t epoch() const { return epoch_; }
  /// Stops an epoch in progress; the next begin()/next() starts epoch e.
  void set_epoch(int64_t e) {
    stop();
    epoch_ = e;
  }
  /// The dataset indices epoch e reads, in order.
  std::vector<int64_t> epoch_order(int64_t e) const {
    const int64_t n = dataset_->size();
    if (opts_.sampler) return detail::sampled_order(*opts_.sampler, n, e);
    if (opts_.shuffle) return permutation(n, opts_.seed, uint64_t(e));
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = i;
    return v;
  }

  /// The next batch of the current epoch (starting it if none is running); nullopt at its end.
  std::optional<B> next() {
    if (!running_) start();
    if (next_ >= num_batches_) {
      stop();
      ++epoch_;
      return std::nullopt;
    }
    const int64_t b = next_++;
    std::optional<B> out;
    if (!prefetch_) {
      try {
        out = make_batch(b);
      } catch (...) {
        stop();
        detail::rethrow_batch_error(b, std::current_exception());
      }
    } else {
      try {
        prefetch_->wait(b);
      } catch (...) {
        stop();
        throw;
      }
      out = std::move(ring_[size_t(b % capacity_)]);
      ring_[size_t(b % capacity_)].reset();
      prefetch_->release(b);
    }
    if constexpr (batch_movable_v<B>) {
      if (opts_.device) {
        try {
          *out = BatchToDevice<B>::to(*out, *opts_.device);
        } catch (...) {
          stop();
          detail::rethrow_batch_error(b, std::current_exception());
        }
      }
    }
    return out;
  }

  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = B;
    using difference_type = std::ptrdiff_t;
    using pointer = B*;
    using reference = B&;
    iterator() = default;
    B& operator*() { return *cur_; }
    B* operator->() { return &*cur_; }
    iterator& operator++() {
      cur_ = loader_->next();
      return *this;
    }
    bool operator==(const iterator& o) const { return !cur_ && !o.cur_; }
    bool operator!=(const iterator& o) const { return !(*this == o); }

   private:
    friend class DataLoader;
    iterator(DataLoader* l, std::optional<B> first) : loader_(l), cur_(std::move(first)) {}
    DataLoader* loader_ = nullptr;
    std::optional<B> cur_;
  };
  /// (Re)starts epoch epoch() and returns its first batch.
  iterator begin() {
    stop();
    return iterator(this, next());
  }
  iterator end() { return iterator(); }

 private:
  B make_batch(int64_t b) const {
    const int64_t lo = b * opts_.batch_size;
    const int64_t hi = lo + std::min<int64_t>(opts_.batch_size, int64_t(order_.size()) - lo);
    std::vector<T> items;
    items.reserve(size_t(hi - lo));
    for (int64_t i = lo; i < hi; ++i) items.push_back(dataset_->get(order_[size_t(i)]));
    return batcher_->batch(std::move(items));
  }
  void start() {
    order_ = epoch_order(epoch_);
    num_batches_ = detail::loader_num_batches(int64_t(order_.size()), opts_);
    next_ = 0;
    dataset_->set_epoch(epoch_);
    running_ = true;
    if (opts_.num_workers > 0) {
      capacity_ = opts_.num_workers * opts_.prefetch_factor;
      ring_.assign(size_t(capacity_), std::nullopt);
      prefetch_ = std::make_unique<detail::Prefetcher>(
          num_batches_, opts_.num_workers, capacity_,
          [this](int64_t b) { ring_[size_t(b % capacity_)] = make_batch(b); });
    }
  }
  void stop() {
    prefetch_.reset();  // joins the workers
    ring_.clear();
    running_ = false;
  }

  DatasetPtr<T> dataset_;
  DataLoaderOptions opts_;
  std::shared_ptr<const Batcher<T, B>> batcher_;
  int64_t epoch_ = 0;
  bool running_ = false;
  std::vector<int64_t> order_;
  int64_t num_batches_ = 0, next_ = 0, capacity_ = 0;
  std::vector<std::optional<B>> ring_;
  std::unique_ptr<detail::Prefetcher> prefetch_;
};

}  // namespace ember::data
