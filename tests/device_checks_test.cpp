// Data checks on the op path (index ranges, class targets, probabilities): eager on host devices;
// on GPU devices no host read happens when the op is issued (nothing is submitted), and the same
// [op] ember::Error is raised at the next sync or read, after which the device works on.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "runtime/kernel_backend.h"

namespace ember {
namespace {

struct Case {
  const char* name;
  const char* message;  // a piece of the expected error
  std::function<Tensor(const Device&)> op;
};

std::vector<Case> cases() {
  auto f32 = [](std::vector<float> v, Shape s, const Device& d) {
    return from_vector<float>(v, s, Device::cpu()).to(d);
  };
  auto i64 = [](std::vector<int64_t> v, Shape s, const Device& d) {
    return from_vector<int64_t>(v, s, Device::cpu()).to(d);
  };
  return {
      {"gather", "[gather] index 7 is out of range for dim 1 of size 3",
       [=](const Device& d) {
         return gather(f32({1, 2, 3, 4, 5, 6}, {2, 3}, d), 1, i64({0, 7, 1, 2}, {2, 2}, d));
       }},
      {"index_select", "[index_select] index -5 is out of range",
       [=](const Device& d) {
         return index_select(f32({1, 2, 3, 4}, {4}, d), 0, i64({1, -5}, {2}, d));
       }},
      {"cross_entropy", "target 4 is out of bounds for 3 classes",
       [=](const Device& d) {
         return nn::functional::cross_entropy(f32({1, 2, 3, 4, 5, 6}, {2, 3}, d),
                                              i64({0, 4}, {2}, d));
       }},
      {"nll_loss", "target -2 is out of bounds for 3 classes",
       [=](const Device& d) {
         return nn::functional::nll_loss(f32({-1, -2, -3, -4, -5, -6}, {2, 3}, d),
                                         i64({-2, 1}, {2}, d));
       }},
      {"binary_cross_entropy", "[binary_cross_entropy] all elements of input should be between",
       [=](const Device& d) {
         return nn::functional::binary_cross_entropy(f32({0.5f, 1.5f}, {2}, d),
                                                     f32({1, 0}, {2}, d));
       }},
      {"embedding", "[embedding] index 9 is out of range for dim 0 of size 4",
       [=](const Device& d) {
         return nn::functional::embedding(i64({1, 9}, {2}, d),
                                          f32(std::vector<float>(8, 1), {4, 2}, d));
       }},
      {"bernoulli", "[bernoulli] probabilities must be in [0, 1], got 2",
       [=](const Device& d) {
         return bernoulli(f32({0.5f, 2.0f}, {2}, d));
       }},
      {"one_hot", "[one_hot] class value 5 is out of range for num_classes=3",
       [=](const Device& d) {
         return one_hot(i64({0, 5}, {2}, d), 3);
       }},
  };
}

void expect_error(const std::function<void()>& f, const std::string& piece, const char* what) {
  try {
    f();
    ADD_FAILURE() << what << ": no error (expected '" << piece << "')";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(piece), std::string::npos) << what << ": " << e.what();
  }
}

TEST(DeviceChecksTest, HostDevicesCheckWhenTheOpIsIssued) {
  for (const Device& d : {Device::cpu(), Device::ref()})
    for (const Case& c : cases())
      expect_error([&] { c.op(d); }, c.message, (std::string(c.name) + "/" + d.str()).c_str());
}

std::vector<Device> gpu_devices() {
  std::vector<Device> out;
  for (const DeviceInfo& i : available_devices())
    if (!i.device.is_host() && supports_dtype(i.device, DType::i64)) out.push_back(i.device);
  return out;
}

TEST(DeviceChecksTest, GpuDevicesRaiseAtTheNextSyncWithoutReadingOnTheOpPath) {
  const std::vector<Device> gpus = gpu_devices();
  if (gpus.empty()) GTEST_SKIP() << "no GPU device with int64";
  for (const Device& d : gpus) {
    auto* kb = dynamic_cast<runtime::KernelBackend*>(&backend_for(d));
    ASSERT_NE(kb, nullptr) << d.str();
    const int64_t saved = kb->max_tasks();
    kb->set_max_tasks(100000);  // nothing is submitted unless something syncs
    for (const Case& c : cases()) {
      const std::string what = std::string(c.name) + "/" + d.str();
      Tensor out;
      const int64_t before = kb->submissions();
      ASSERT_NO_THROW(out = c.op(d)) << what;
      EXPECT_EQ(kb->submissions(), before) << what << ": the op synced (a host read)";
      expect_error([&] { sync(d); }, c.message, what.c_str());
      // Raised once; the device keeps working and the result (made in bounds) is readable.
      ASSERT_NO_THROW(sync(d)) << what;
      EXPECT_NO_THROW(out.to(Device::cpu())) << what;
      EXPECT_EQ((ones({3}, {DType::f32, d}) * 2).sum().item<float>(), 6.0f) << what;
    }
    // A read raises it too, and valid data raises nothing.
    Tensor bad = gather(ones({2, 3}, {DType::f32, d}), 1,
                        from_vector<int64_t>({5}, {1, 1}, Device::cpu()).to(d));
    expect_error([&] { bad.to(Device::cpu()); }, "[gather] index 5", d.str().c_str());
    Tensor ok = gather(ones({2, 3}, {DType::f32, d}), 1,
                       from_vector<int64_t>({2, 0}, {1, 2}, Device::cpu()).to(d));
    EXPECT_EQ(ok.to(Device::cpu()).to_vector<float>(), (std::vector<float>{1, 1}));
    kb->set_max_tasks(saved);
  }
}

}  // namespace
}  // namespace ember
