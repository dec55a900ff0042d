#include "runtime/backend.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "autodiff/graph.h"

namespace ember {

namespace {
struct Registry {
  std::mutex mutex;
  std::vector<Backend*> backends;
  uint64_t seed = 0x5eed;
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: backends outlive static teardown order
  return *r;
}
}  // namespace

Backend::Backend() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  seed_ = r.seed;
  r.backends.push_back(this);
}

Backend::~Backend() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.backends.erase(std::remove(r.backends.begin(), r.backends.end(), this), r.backends.end());
}

void seed_all_backends(uint64_t seed) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.seed = seed;
  for (Backend* b : r.backends) b->set_seed(seed);
}

std::string Backend::autotune_identity() const {
  const DeviceInfo i = info();
  return name() + " | " + i.name + " | " + i.details;
}

void Backend::defer_check(std::function<void()> check) {
  std::lock_guard<std::mutex> lock(checks_mutex_);
  checks_.push_back(std::move(check));
}

void Backend::run_deferred_checks() {
  if (running_ops_.load() > 0) return;
  std::vector<std::function<void()>> checks;
  {
    std::lock_guard<std::mutex> lock(checks_mutex_);
    checks.swap(checks_);
  }
  // A check reads device tensors (a nested sync finds the list empty).
  for (const auto& c : checks) c();
}

uint64_t Backend::next_random_offset(uint64_t count) {
  // One Philox counter per element: the next draw starts where this one ends.
  const uint64_t o = offset_;
  offset_ += count;
  return o;
}

namespace {
struct FirstTensor {
  const Tensor& operator()(const ir::Copy& o) const { return o.dst; }
  const Tensor& operator()(const ir::Fill& o) const { return o.dst; }
  const Tensor& operator()(const ir::Unary& o) const { return o.dst; }
  const Tensor& operator()(const ir::Binary& o) const { return o.dst; }
  const Tensor& operator()(const ir::Where& o) const { return o.dst; }
  const Tensor& operator()(const ir::Reduce& o) const { return o.dst; }
  const Tensor& operator()(const ir::Scan& o) const { return o.dst; }
  const Tensor& operator()(const ir::Sort& o) const { return o.values; }
  const Tensor& operator()(const ir::Gather& o) const { return o.dst; }
  const Tensor& operator()(const ir::Scatter& o) const { return o.dst; }
  const Tensor& operator()(const ir::IndexSelect& o) const { return o.dst; }
  const Tensor& operator()(const ir::IndexAdd& o) const { return o.dst; }
  const Tensor& operator()(const ir::Nonzero& o) const { return o.dst; }
  const Tensor& operator()(const ir::Matmul& o) const { return o.dst; }
  const Tensor& operator()(const ir::Im2col& o) const { return o.dst; }
  const Tensor& operator()(const ir::Col2im& o) const { return o.dst; }
  const Tensor& operator()(const ir::AdaptivePool& o) const { return o.dst; }
  const Tensor& operator()(const ir::Interpolate& o) const { return o.dst; }
  const Tensor& operator()(const ir::Random& o) const { return o.dst; }
};
}  // namespace

void run(const ir::Op& op) {
  const Tensor& t = std::visit(FirstTensor{}, op);
  // Writes bump the version counter that autodiff uses to detect in-place modification;
  // inference tensors have none, and outside InferenceMode they are read-only (as torch).
  t.impl()->storage->writes.fetch_add(1, std::memory_order_relaxed);
  if (t.impl()->inference)
    autograd::check_inference_write(t);
  else
    t.impl()->storage->version++;
  backend_for(t.device()).submit(op);
}

}  // namespace ember
