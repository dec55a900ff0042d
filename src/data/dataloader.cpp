// DataLoader support: stacking, option checks, error wrapping and the worker pool (Prefetcher).
#include "ember/data/dataloader.h"

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

namespace ember::data {

Tensor stack_items(const std::vector<Tensor>& items) {
  if (items.empty()) EMBER_FAIL("stack_items", "no tensors to stack");
  const Tensor& first = items[0];
  if (!first.defined()) EMBER_FAIL("stack_items", "item 0 is undefined");
  for (size_t i = 1; i < items.size(); ++i) {
    const Tensor& t = items[i];
    if (!t.defined()) EMBER_FAIL("stack_items", "item ", i, " is undefined");
    if (t.shape() != first.shape() || t.dtype() != first.dtype())
      EMBER_FAIL("stack_items", "item ", i, " is ", dtype_name(t.dtype()), " ",
                 shape_str(t.shape()), " but item 0 is ", dtype_name(first.dtype()), " ",
                 shape_str(first.shape()), "; all items of a batch must match");
  }
  Shape shape = first.shape();
  shape.insert(shape.begin(), int64_t(items.size()));
  // Built on the host by byte copies (items are usually small host views), then moved.
  const Device host = first.device().is_host() ? first.device() : Device::cpu();
  Tensor out = empty(shape, TensorOptions(first.dtype(), host));
  const size_t bytes = size_t(first.numel()) * size_t(first.element_size());
  auto* dst = static_cast<unsigned char*>(out.raw_data());
  for (size_t i = 0; i < items.size(); ++i) {
    const Tensor src = items[i].to(host).contiguous();
    if (bytes) std::memcpy(dst + i * bytes, src.raw_data(), bytes);
  }
  return host == first.device() ? out : out.to(first.device());
}

Example StackBatcher::batch(std::vector<Example> items) const {
  std::vector<Tensor> data, target;
  data.reserve(items.size());
  target.reserve(items.size());
  for (auto& e : items) {
    data.push_back(std::move(e.data));
    target.push_back(std::move(e.target));
  }
  return Example{stack_items(data), stack_items(target)};
}

namespace detail {

void check_loader_options(const DataLoaderOptions& o) {
  if (o.batch_size < 1) EMBER_FAIL("DataLoader", "batch_size must be >= 1, got ", o.batch_size);
  if (o.num_workers < 0) EMBER_FAIL("DataLoader", "num_workers must be >= 0, got ", o.num_workers);
  if (o.prefetch_factor < 1)
    EMBER_FAIL("DataLoader", "prefetch_factor must be >= 1, got ", o.prefetch_factor);
  if (o.sampler && o.shuffle)
    EMBER_FAIL("DataLoader",
               "sampler option is mutually exclusive with shuffle (the sampler decides the order; "
               "a DistributedSampler shuffles with its own shuffle option)");
}

std::vector<int64_t> sampled_order(const Sampler& sampler, int64_t n, int64_t e) {
  std::vector<int64_t> order = sampler.indices(n, e);
  const int64_t want = sampler.num_samples(n);
  if (int64_t(order.size()) != want)
    EMBER_FAIL("DataLoader", "the sampler gave ", order.size(), " indices for epoch ", e,
               " but its num_samples(", n, ") is ", want, "; they must agree");
  for (size_t i = 0; i < order.size(); ++i)
    if (order[i] < 0 || order[i] >= n)
      EMBER_FAIL("DataLoader", "the sampler's index ", order[i], " (position ", i, " of epoch ", e,
                 ") is outside the dataset's [0, ", n, ")");
  return order;
}

int64_t loader_num_batches(int64_t n, const DataLoaderOptions& o) {
  return n / o.batch_size + (o.drop_last || n % o.batch_size == 0 ? 0 : 1);  // no n + bs - 1
}

[[noreturn]] void fail_unmovable_batch(const Device& device) {
  EMBER_FAIL("DataLoader", "cannot place batches on ", device.str(),
             ": the batch type has no ember::data::BatchToDevice (give it a member "
             "`B to(const Device&) const` or specialize BatchToDevice<B>)");
}

[[noreturn]] void rethrow_batch_error(int64_t batch, std::exception_ptr e) {
  std::string what = "unknown exception";
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    what = ex.what();
  } catch (...) {
  }
  EMBER_FAIL("DataLoader", "batch ", batch, ": ", what);
}

struct Prefetcher::State {
  std::mutex mu;
  std::condition_variable cv;
  int64_t num_batches = 0, capacity = 0;
  int64_t next_claim = 0;  // next batch a worker takes
  int64_t released = 0;    // batches the consumer has taken
  bool stop = false;
  std::vector<char> ready;                // per slot
  std::vector<std::exception_ptr> error;  // per slot
  std::function<void(int64_t)> produce;
  std::vector<std::thread> threads;

  void work() {
    for (;;) {
      int64_t b;
      {
        std::unique_lock<std::mutex> lk(mu);
        cv.wait(lk, [&] {
          return stop || next_claim >= num_batches || next_claim < released + capacity;
        });
        if (stop || next_claim >= num_batches) return;
        b = next_claim++;
      }
      std::exception_ptr err;
      try {
        produce(b);
      } catch (...) {
        err = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lk(mu);
        const size_t slot = size_t(b % capacity);
        ready[slot] = 1;
        error[slot] = err;
      }
      cv.notify_all();
    }
  }
};

Prefetcher::Prefetcher(int64_t num_batches, int64_t workers, int64_t capacity,
                       std::function<void(int64_t)> produce)
    : s_(std::make_unique<State>()) {
  s_->num_batches = num_batches;
  s_->capacity = capacity < 1 ? 1 : capacity;
  s_->ready.assign(size_t(s_->capacity), 0);
  s_->error.assign(size_t(s_->capacity), nullptr);
  s_->produce = std::move(produce);
  try {
    for (int64_t i = 0; i < workers; ++i) s_->threads.emplace_back([st = s_.get()] { st->work(); });
  } catch (const std::exception& e) {
    {
      std::lock_guard<std::mutex> lk(s_->mu);
      s_->stop = true;
    }
    s_->cv.notify_all();
    for (auto& t : s_->threads) t.join();
    EMBER_FAIL("DataLoader", "cannot start ", workers, " worker threads: ", e.what());
  }
}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard<std::mutex> lk(s_->mu);
    s_->stop = true;
  }
  s_->cv.notify_all();
  for (auto& t : s_->threads) t.join();
}

void Prefetcher::wait(int64_t b) {
  std::exception_ptr err;
  {
    std::unique_lock<std::mutex> lk(s_->mu);
    const size_t slot = size_t(b % s_->capacity);
    s_->cv.wait(lk, [&] { return s_->ready[slot] != 0; });
    err = s_->error[slot];
  }
  if (err) rethrow_batch_error(b, err);
}

void Prefetcher::release(int64_t b) {
  {
    std::lock_guard<std::mutex> lk(s_->mu);
    const size_t slot = size_t(b % s_->capacity);
    s_->ready[slot] = 0;
    s_->error[slot] = nullptr;
    s_->released = b + 1;
  }
  s_->cv.notify_all();
}

}  // namespace detail
}  // namespace ember::data
