// autograd::register_post_accumulate_grad_hook and autograd::queue_callback
// (ember/autograd/hooks.h): what DistributedDataParallel builds its overlap on.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/autograd/hooks.h"
#include "ember/ember.h"

using namespace ember;

namespace {

TEST(AutogradHooksTest, PostAccumulateHookSeesTheAccumulatedGrad) {
  Tensor w = from_vector<float>({1, 2, 3}, {3}).requires_grad_();
  std::vector<std::vector<float>> seen;
  auto h = autograd::register_post_accumulate_grad_hook(
      w, [&](const Tensor& leaf) { seen.push_back(leaf.grad().to_vector<float>()); });
  (w * 2.0).sum().backward();
  (w * w).sum().backward();  // accumulates: 2 + 2w
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], (std::vector<float>{2, 2, 2}));
  EXPECT_EQ(seen[1], (std::vector<float>{4, 6, 8}));
  h.remove();
  w.sum().backward();
  EXPECT_EQ(seen.size(), 2u);  // removed
}

TEST(AutogradHooksTest, PostAccumulateHookRunsOncePerPassWhateverThePaths) {
  Tensor w = from_vector<float>({1, 2}, {2}).requires_grad_();
  int calls = 0;
  auto h = autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) { ++calls; });
  ((w * 3.0).sum() + (w * w).sum() + w.sum()).backward();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{6, 8}));
  // autograd::grad writes no .grad: no call.
  autograd::grad({(w * w).sum()}, {w});
  EXPECT_EQ(calls, 1);
}

TEST(AutogradHooksTest, PostAccumulateHookRejectsNonLeavesAndEmptyHooks) {
  Tensor w = ones({2}).requires_grad_();
  EXPECT_THROW(autograd::register_post_accumulate_grad_hook(w * 2.0, [](const Tensor&) {}), Error);
  EXPECT_THROW(autograd::register_post_accumulate_grad_hook(ones({2}), [](const Tensor&) {}),
               Error);
  EXPECT_THROW(autograd::register_post_accumulate_grad_hook(w, nullptr), Error);
}

TEST(AutogradHooksTest, QueuedCallbacksRunAfterEveryGradientInOrder) {
  Tensor a = from_vector<float>({1, 2}, {2}).requires_grad_();
  Tensor b = from_vector<float>({3}, {1}).requires_grad_();
  std::vector<std::string> log;
  auto ha = autograd::register_post_accumulate_grad_hook(a, [&](const Tensor&) {
    log.push_back("a");
    EXPECT_TRUE(autograd::in_backward());
    autograd::queue_callback([&] {
      // Every gradient of the pass exists when the callbacks run.
      log.push_back(b.grad().defined() ? "cb1 b ready" : "cb1 b missing");
      autograd::queue_callback([&] { log.push_back("cb3"); });  // queued by a callback
    });
    autograd::queue_callback([&] { log.push_back("cb2"); });
  });
  auto hb =
      autograd::register_post_accumulate_grad_hook(b, [&](const Tensor&) { log.push_back("b"); });
  ((a * b).sum() + b.sum()).backward();
  ASSERT_EQ(log.size(), 5u);
  EXPECT_EQ(log[2], "cb1 b ready");
  EXPECT_EQ(log[3], "cb2");
  EXPECT_EQ(log[4], "cb3");
  EXPECT_FALSE(autograd::in_backward());
}

TEST(AutogradHooksTest, QueueCallbackOutsideBackwardThrowsAndAFailingCallbackFailsBackward) {
  EXPECT_THROW(autograd::queue_callback([] {}), Error);
  Tensor w = ones({2}).requires_grad_();
  auto h = autograd::register_post_accumulate_grad_hook(w, [](const Tensor&) {
    autograd::queue_callback([] { EMBER_FAIL("test", "callback failed"); });
  });
  try {
    w.sum().backward();
    FAIL() << "expected the callback's error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("callback failed"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(autograd::in_backward());
  h.remove();
  w.sum().backward();  // usable again
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{2, 2}));
}

}  // namespace
