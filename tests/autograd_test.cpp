// Autodiff core: recording, the engine, views and in-place ops, guards, errors, checkpointing.
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>

#include "ember/autograd.h"
#include "ember/ember.h"

using namespace ember;

namespace {
std::vector<double> v(const Tensor& t) { return t.to_vector<double>(); }
Tensor leaf(std::initializer_list<double> vals, Shape shape = {}) {
  Tensor t = tensor<double>(vals, shape);
  t.requires_grad_();
  return t;
}
}  // namespace

TEST(AutogradTest, ChainRuleThroughElementwiseOps) {
  Tensor x = leaf({1.0, 2.0, 3.0});
  Tensor y = exp(x) * x + sin(x) / 2;  // dy/dx = e^x (1 + x) + cos(x)/2
  y.backward(ones_like(y));
  const auto g = v(x.grad());
  for (int i = 0; i < 3; ++i) {
    const double xi = i + 1.0;
    EXPECT_NEAR(g[size_t(i)], std::exp(xi) * (1 + xi) + std::cos(xi) / 2, 1e-12);
  }
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_EQ(y.grad_fn_name(), "addBackward");
}

TEST(AutogradTest, BroadcastGradientsAreSummed) {
  Tensor a = leaf({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, {2, 3});
  Tensor b = leaf({10.0, 20.0, 30.0});
  Tensor y = a * b;
  y.backward(ones_like(y));
  EXPECT_EQ(v(b.grad()), (std::vector<double>{5, 7, 9}));
  EXPECT_EQ(v(a.grad()), (std::vector<double>{10, 20, 30, 10, 20, 30}));
}

TEST(AutogradTest, GradientsAccumulateAndCanBeCleared) {
  Tensor x = leaf({2.0});
  (x * x).backward();
  (x * 3).backward();
  EXPECT_EQ(v(x.grad()), (std::vector<double>{7}));
  x.set_grad(Tensor());
  EXPECT_FALSE(x.grad().defined());
}

TEST(AutogradTest, ViewsRouteGradientsToTheirSource) {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor y = x.t().select(0, 1) * 10 + x.slice(1, 0, 3, 2).flatten().narrow(0, 0, 2);
  // y[j] = 10 * x[j][1] + x_flat_sel[j]; x.slice(1,0,3,2) = [[1,3],[4,6]] -> flatten [1,3,4,6]
  y.backward(ones_like(y));
  EXPECT_EQ(v(x.grad()), (std::vector<double>{1, 10, 1, 0, 10, 0}));
  Tensor z = leaf({1, 2, 3});
  z.unsqueeze(0).expand({4, 3}).sum().backward();
  EXPECT_EQ(v(z.grad()), (std::vector<double>{4, 4, 4}));
  Tensor u = leaf({1, 2, 3, 4, 5});
  u.unfold(0, 3, 1).sum().backward();  // windows [0..2], [1..3], [2..4]
  EXPECT_EQ(v(u.grad()), (std::vector<double>{1, 2, 3, 2, 1}));
  Tensor f = leaf({1, 2, 3});
  (f.flip({0}) * tensor<double>({1, 2, 3})).sum().backward();
  EXPECT_EQ(v(f.grad()), (std::vector<double>{3, 2, 1}));
}

TEST(AutogradTest, InPlaceOnViewsRebasesHistory) {
  Tensor x = leaf({1, 2, 3, 4});
  Tensor y = x * 2;                           // [2, 4, 6, 8]
  y.narrow(0, 1, 2).mul_(x.narrow(0, 0, 2));  // y = [2, 4*1, 6*2, 8]
  y.sum().backward();
  // dy0/dx0 = 2 + (y1 region uses x0: 4) = 2 + 4; dx1 = 6 (from y2 = 2*x2*x1) ...
  // y = [2x0, 2x1*x0, 2x2*x1, 2x3] -> grads: x0: 2 + 2x1 = 6; x1: 2x0 + 2x2 = 8; x2: 2x1 = 4;
  // x3: 2.
  EXPECT_EQ(v(x.grad()), (std::vector<double>{6, 8, 4, 2}));
  Tensor w = leaf({1, 2, 3});
  Tensor z = w * 1;
  z.select(0, 0).fill_(5);  // no gradient flows through the overwritten element
  (z * z).sum().backward();
  EXPECT_EQ(v(w.grad()), (std::vector<double>{0, 4, 6}));
}

// Found by a new-user review: a write through a slice of an op's result that is a view of the
// op's scratch (matmul) was lost from the gradient, and a write through a view of a
// channels-last tensor routed its gradient in NCHW order. As torch 1.13.
TEST(AutogradTest, InPlaceThroughViewsOfOpResultsAndChannelsLast) {
  for (const Device& dev : {Device::cpu(), Device::ref()}) {
    SCOPED_TRACE(dev.str());
    Tensor a = randn({3, 4}, {dev}).requires_grad_();
    Tensor m = matmul(a, ones({4, 4}, {dev}));
    m.slice(1, 0, 2).mul_(0);
    EXPECT_EQ(m.grad_fn_name(), "AsStridedBackward");  // m views matmul's [1, 3, 4] product
    m.sum().backward();
    EXPECT_EQ(v(a.grad()), std::vector<double>(12, 2.0));  // torch: all 2

    Tensor x = randn({1, 2, 3, 3}, {dev}).contiguous(MemoryFormat::channels_last).requires_grad_();
    Tensor y = x * 1.f;
    y.select(1, 0).mul_(0);
    y.sum().backward();
    std::vector<double> want(18, 1.0);
    std::fill(want.begin(), want.begin() + 9, 0.0);  // channel 0 zeroed, channel 1 kept
    EXPECT_EQ(v(x.grad()), want);
    EXPECT_EQ(x.grad().memory_format(), MemoryFormat::channels_last);
  }
}

TEST(AutogradTest, ErrorsAreReadable) {
  Tensor x = leaf({1, 2});
  EXPECT_THROW(x.add_(1), Error);  // in-place on a leaf requiring grad
  EXPECT_THROW(zeros({2}, DType::i64).requires_grad_(), Error);
  EXPECT_THROW((x * 2).backward(), Error);  // non-scalar without gradient
  Tensor y = exp(x);                        // saves its output
  y.add_(1);
  try {
    y.sum().backward();
    ADD_FAILURE() << "expected an error for a saved tensor modified in place";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("in-place"), std::string::npos) << e.what();
  }
  Tensor a = leaf({3});
  Tensor b = a * a;
  b.backward();
  try {
    b.backward();
    ADD_FAILURE() << "expected an error for a second backward";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("retain_graph"), std::string::npos) << e.what();
  }
  Tensor c = a * a;
  c.backward(Tensor(), true);
  c.backward();
  EXPECT_EQ(v(a.grad()), (std::vector<double>{6 + 6 + 6}));
}

// The second-backward error names no internal node (a reshape records a ViewBackward the user
// never called) and says what to do, in C++ spelling.
TEST(AutogradTest, SecondBackwardErrorNamesNoInternalNode) {
  Tensor a = leaf({1, 2, 3, 4});
  Tensor loss = (a * a).reshape({2, 2}).flatten().sum();
  loss.backward();
  try {
    loss.backward();
    ADD_FAILURE() << "expected an error for a second backward";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("[backward] trying to backward through the graph a second time"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("retain_graph = true"), std::string::npos) << m;
    EXPECT_EQ(m.find("Backward"), std::string::npos) << m;  // no node name
    EXPECT_EQ(m.find("=True"), std::string::npos) << m;
  }
  Tensor b = leaf({1});
  try {
    (void)autograd::grad({(b * 2).sum()}, {leaf({2})});
    ADD_FAILURE() << "expected an error for an unused input";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("allow_unused = true"), std::string::npos) << e.what();
  }
}

TEST(AutogradTest, NoGradGuardAndDetachStopRecording) {
  Tensor x = leaf({1, 2});
  {
    NoGradGuard g;
    EXPECT_FALSE((x * 2).requires_grad());
  }
  EXPECT_TRUE((x * 2).requires_grad());
  EXPECT_FALSE(x.detach().requires_grad());
  EXPECT_FALSE((x.detach() * 2).requires_grad());
}

TEST(AutogradTest, AutogradGradDoesNotTouchLeaves) {
  Tensor x = leaf({1, 2, 3});
  Tensor y = (x * x).sum();
  auto g = autograd::grad({y}, {x});
  EXPECT_EQ(v(g[0]), (std::vector<double>{2, 4, 6}));
  EXPECT_FALSE(x.grad().defined());
}

TEST(AutogradTest, CheckpointRecomputesAndSavesMemory) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor h = in[0];
    for (int i = 0; i < 8; ++i) h = tanh(h * 1.1);  // each step saves a [64, 64] output
    return std::vector<Tensor>{h};
  };
  manual_seed(1);
  Tensor x1 = randn({64, 64}, DType::f64).requires_grad_();
  Tensor x2 = x1.detach().clone().requires_grad_();
  const int64_t before = autograd::saved_tensor_bytes();
  Tensor plain = fn({x1})[0];
  const int64_t plain_bytes = autograd::saved_tensor_bytes() - before;
  Tensor ck = autograd::checkpoint(fn, {x2})[0];
  const int64_t ck_bytes = autograd::saved_tensor_bytes() - before - plain_bytes;
  EXPECT_GE(plain_bytes, 8 * 64 * 64 * 8);  // 8 saved f64 outputs
  EXPECT_LE(ck_bytes, 64 * 64 * 8);         // only the input
  plain.sum().backward();
  ck.sum().backward();
  EXPECT_EQ(v(x1.grad()), v(x2.grad()));
}

// A leaf made by a view op (its storage's base does not require grad) is still a leaf: every
// in-place op on it is refused, as torch, instead of silently rebasing it (found by a tester:
// arange(6).reshape({2, 3}).requires_grad_().mul_(2) turned x into a non-leaf).
TEST(AutogradTest, InPlaceOnALeafMadeByAViewIsRefused) {
  Tensor x = arange(6, DType::f32).reshape({2, 3}).requires_grad_();
  ASSERT_TRUE(x.is_leaf());
  EXPECT_THROW(x.mul_(2), Error);
  EXPECT_THROW(x.add_(ones({2, 3})), Error);
  EXPECT_THROW(x.fill_(1), Error);
  EXPECT_THROW(x.copy_(zeros({2, 3})), Error);
  EXPECT_THROW(x.index_put_({0}, 5.0), Error);
  EXPECT_TRUE(x.is_leaf());
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  {
    NoGradGuard ng;  // an optimizer's update: allowed
    x.sub_(ones({2, 3}));
  }
  EXPECT_TRUE(x.is_leaf());
  (x.sum() * 2).backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>(6, 2.f)));
}
