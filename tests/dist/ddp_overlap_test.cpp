// DistributedDataParallel overlaps communication with backward: the first bucket's all-reduce
// starts before the last gradient of the pass is accumulated. A probe engine (one rank) records
// the all-reduces and holds the first one until the last gradient hook has seen it start.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "dist/engine.h"
#include "dist_test_util.h"
#include "ember/autograd/hooks.h"
#include "ember/nn/parallel/distributed.h"

using namespace ember;
using namespace std::chrono_literals;

namespace {

struct Probe {
  std::mutex mu;
  std::condition_variable cv;
  bool started = false;   // the first all-reduce reached the engine
  bool released = false;  // the test let it finish
  int hooks_at_start = -1;
  std::atomic<int> hooks_done{0};
  std::vector<int64_t> bytes;  // per all-reduce, in the order they ran
};

class ProbeEngine final : public dist::ProcessGroup::Engine {
 public:
  explicit ProbeEngine(Probe& p) : p_(p) {}
  const char* name() const override { return "local"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  bool reduces(DType) const override { return true; }
  void all_reduce(const char*, void*, int64_t count, DType dtype, dist::ReduceOp, double) override {
    std::unique_lock<std::mutex> lk(p_.mu);
    p_.bytes.push_back(count * dtype_size(dtype));
    if (p_.bytes.size() > 1) return;
    p_.started = true;
    p_.hooks_at_start = p_.hooks_done;
    p_.cv.notify_all();
    p_.cv.wait_for(lk, 60s, [&] { return p_.released; });  // bounded: never hangs the suite
  }
  void broadcast(const char*, void*, int64_t, int, double) override {}
  void all_gather(const char*, const void*, void*, int64_t, double) override {}
  void reduce_scatter(const char*, const void*, void*, int64_t, DType, dist::ReduceOp,
                      double) override {}
  void barrier(const char*, double) override {}

 private:
  Probe& p_;
};

}  // namespace

TEST(DistributedDataParallelOverlap, FirstBucketGoesOutWhileBackwardRuns) {
  Probe probe;
  dist::ProcessGroup group(std::make_unique<ProbeEngine>(probe), 60);
  manual_seed(90);
  auto model =
      nn::make_sequential(std::make_shared<nn::Linear>(32, 32), std::make_shared<nn::ReLU>(),
                          std::make_shared<nn::Linear>(32, 32), std::make_shared<nn::ReLU>(),
                          std::make_shared<nn::Linear>(32, 32), std::make_shared<nn::ReLU>(),
                          std::make_shared<nn::Linear>(32, 32));
  // 4 KiB: each layer's weight (32 x 32 f32) closes a bucket.
  nn::DistributedDataParallel ddp(model,
                                  {.bucket_cap_mb = 4096.0 / (1 << 20), .process_group = &group});
  const std::vector<int64_t> buckets = ddp.bucket_bytes();
  ASSERT_EQ(buckets.size(), 4u);
  const std::vector<Tensor> params = model->parameters();
  const int total = int(params.size());
  bool started_in_backward = false;
  std::vector<RemovableHandle> hooks;
  for (const Tensor& p : params)
    hooks.push_back(autograd::register_post_accumulate_grad_hook(p, [&](const Tensor&) {
      if (probe.hooks_done + 1 == total) {  // the pass's last gradient: backward still runs
        std::unique_lock<std::mutex> lk(probe.mu);
        started_in_backward = probe.cv.wait_for(lk, 60s, [&] { return probe.started; });
        probe.released = true;
        probe.cv.notify_all();
      }
      ++probe.hooks_done;
    }));
  ddp(test::host_randn({2, 32}, 9)).sum().backward();
  EXPECT_TRUE(started_in_backward) << "the first all-reduce did not start before the last "
                                      "gradient was accumulated";
  EXPECT_GE(probe.hooks_at_start, 2);  // the last layer's weight and bias were in
  EXPECT_LT(probe.hooks_at_start, total);
  EXPECT_EQ(probe.bytes, buckets);  // every bucket once, in bucket order
  for (RemovableHandle& h : hooks) h.remove();
}
