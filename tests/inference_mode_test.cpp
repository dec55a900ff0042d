// InferenceMode: no graph, no version counters, inference tensors and their errors outside it
// (torch's c10::InferenceMode rules).
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "test_util.h"

using namespace ember;
using ember::test::expect_error;
using ember::test::expect_near;

TEST(InferenceModeTest, RecordsNoGraphAndMarksNewTensors) {
  Tensor w = tensor<float>({1, 2, 3}).requires_grad_();
  EXPECT_FALSE(is_inference_mode_enabled());
  {
    InferenceMode guard;
    EXPECT_TRUE(is_inference_mode_enabled());
    EXPECT_FALSE(is_grad_enabled());
    Tensor y = w * 2;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_TRUE(y.is_inference());
    EXPECT_TRUE(zeros({2}).is_inference());
    EXPECT_FALSE(w.is_inference());
    EXPECT_FALSE(w.view({3, 1}).is_inference());  // a view of a normal tensor stays normal
    EnableGradGuard enable;                       // inference mode still records nothing
    EXPECT_FALSE((w * 3).requires_grad());
  }
  EXPECT_FALSE(is_inference_mode_enabled());
  EXPECT_TRUE(is_grad_enabled());
  EXPECT_FALSE((w * 2).is_inference());
  EXPECT_TRUE((w * 2).requires_grad());
}

TEST(InferenceModeTest, InferenceTensorsHaveNoVersionCounter) {
  Tensor n = zeros({3});
  Tensor t;
  {
    InferenceMode guard;
    t = zeros({3});
    const int64_t v = t.impl()->storage->version;
    t.add_(1);
    t.mul_(2);
    EXPECT_EQ(t.impl()->storage->version, v);
    expect_near(t, {2, 2, 2});
    const int64_t nv = n.impl()->storage->version;
    n.add_(1);  // a normal tensor keeps counting, so saved tensors still see the write
    EXPECT_EQ(n.impl()->storage->version, nv + 1);
  }
}

TEST(InferenceModeTest, OutsideItInferenceTensorsAreReadOnlyValues) {
  Tensor t;
  {
    InferenceMode guard;
    t = tensor<float>({1, 2, 3});
  }
  Tensor u = t * 2 + 1;  // ops that record nothing take them and make normal tensors
  EXPECT_FALSE(u.is_inference());
  expect_near(u, {3, 5, 7});
  EXPECT_TRUE(t.view({3, 1}).is_inference());  // views of an inference tensor are inference
  Tensor w = tensor<float>({1, 1, 1}).requires_grad_();
  expect_error([&] { (void)(t * w); },
               {"[autograd]", "inference tensors cannot be saved for backward", "clone()"});
  expect_error([&] { t.add_(1); }, {"[InferenceMode]", "in-place update to an inference tensor"});
  expect_error([&] { t.copy_(u); }, {"[InferenceMode]", "clone()"});
  expect_error([&] { t.view({3, 1}).fill_(0); }, {"[InferenceMode]"});
  expect_error([&] { t.requires_grad_(); }, {"[requires_grad_]", "inference tensor"});
  // The way out: a clone made outside InferenceMode is a normal tensor.
  Tensor c = t.clone();
  EXPECT_FALSE(c.is_inference());
  c.add_(1);
  (c * w).sum().backward();
  expect_near(w.grad(), {2, 3, 4});
}

TEST(InferenceModeTest, DisabledInsideEnabledAndModulesUnderIt) {
  {
    InferenceMode on;
    InferenceMode off(false);
    EXPECT_FALSE(is_inference_mode_enabled());
    EXPECT_TRUE(is_grad_enabled());
    EXPECT_FALSE(zeros({1}).is_inference());
  }
  manual_seed(0);
  auto lin = std::make_shared<nn::Linear>(4, 2);
  Tensor x = randn({3, 4});
  Tensor y;
  {
    InferenceMode guard;
    y = lin->forward(x);
  }
  EXPECT_FALSE(y.requires_grad());
  EXPECT_TRUE(y.is_inference());
  Tensor want;
  {
    NoGradGuard no_grad;
    want = lin->forward(x);
  }
  expect_near(y, want.to_vector<double>(), 0);
}
