// Ordering on the shared GPU stream (src/runtime/kernel_backend.*), on every non-host device:
// host writes, launches and frees queued behind unfinished work must land in issue order, and
// memory freed while work that writes it is pending must not be handed out before that work has
// run (a write into a tensor freed unread once made Vulkan return another tensor's data).
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "ember/ember.h"
#include "runtime/kernel_backend.h"
#include "test_util.h"

namespace ember {
namespace {

using test::gpu_devices;

Tensor host4(float b) { return from_vector<float>({b, b + 1, b + 2, b + 3}, {4}, Device::ref()); }

// Runs `body` on each GPU device with max_tasks 1 (every op submitted) and 100000 (one batch).
void on_each_gpu(const std::function<void(const Device&, int64_t)>& body) {
  const std::vector<Device> gpus = gpu_devices();
  if (gpus.empty()) GTEST_SKIP() << "no GPU device";
  for (const Device& d : gpus) {
    auto* kb = dynamic_cast<runtime::KernelBackend*>(&backend_for(d));
    ASSERT_NE(kb, nullptr) << d.str();
    const int64_t saved = kb->max_tasks();
    for (int64_t mt : {int64_t(1), int64_t(100000)}) {
      kb->set_max_tasks(mt);
      body(d, mt);
    }
    kb->set_max_tasks(saved);
  }
}

TEST(GpuStreamTest, WritesIntoTensorsFreedUnreadDoNotReachLaterTensors) {
  on_each_gpu([](const Device& d, int64_t mt) {
    { Tensor pending = host4(0).to(d) + 1; }  // work queued, never read
    {
      Tensor a = host4(10).to(d);
      Tensor b = host4(20).to(d);
    }  // both freed with their writes still queued
    Tensor x = host4(100).to(d);
    EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{100, 101, 102, 103}))
        << d.str() << " max_tasks " << mt;
  });
}

TEST(GpuStreamTest, OpsOnFreshUploadsAfterFreedUploadsMatchRef) {
  on_each_gpu([](const Device& d, int64_t mt) {
    std::vector<float> xv(30);
    for (size_t i = 0; i < xv.size(); ++i) xv[i] = float(i);
    const Tensor xr = from_vector<float>(xv, {5, 6}, Device::ref());
    const Tensor ir =
        from_vector<int64_t>({0, 4, 2, 2, 1, 3, 4, 4, 0, 1, 2, 3}, {2, 6}, Device::ref());
    const std::vector<float> expect = gather(xr, 0, ir).to_vector<float>();
    for (int round = 0; round < 3; ++round) {
      { Tensor g = xr.to(d) * 2; }
      { Tensor a = xr.to(d), b = ir.to(d); }
      Tensor x = xr.to(d), i = ir.to(d);
      EXPECT_EQ(gather(x, 0, i).to_vector<float>(), expect)
          << d.str() << " max_tasks " << mt << " round " << round;
    }
  });
}

TEST(GpuStreamTest, RepeatedWritesToOneTensorKeepTheLast) {
  on_each_gpu([](const Device& d, int64_t mt) {
    Tensor x = host4(0).to(d);
    Tensor y = x + 1;  // queued work reading x
    x.copy_(host4(50));
    x.copy_(host4(60));
    EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 2, 3, 4})) << d.str() << mt;
    EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{60, 61, 62, 63})) << d.str() << mt;
  });
}

}  // namespace
}  // namespace ember
