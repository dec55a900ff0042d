// Tensor::as_strided: values, aliasing, writes through it and its gradient, against torch 1.13.
#include <gtest/gtest.h>

#include "ember/ember.h"

using namespace ember;

namespace {
std::vector<float> f(const Tensor& t) { return t.to_vector<float>(); }
using V = std::vector<float>;
}  // namespace

TEST(AsStridedTest, OverlappingWindowsShareTheStorage) {
  for (const Device dev : {Device::ref(), Device::cpu()}) {
    Tensor x = arange(5, {DType::f32, dev});
    Tensor w = x.as_strided({3, 3}, {1, 1});
    EXPECT_EQ(w.shape(), (Shape{3, 3}));
    EXPECT_EQ(w.strides(), (Strides{1, 1}));
    EXPECT_TRUE(w.is_alias_of(x));
    EXPECT_EQ(f(w), (V{0, 1, 2, 1, 2, 3, 2, 3, 4}));
    EXPECT_EQ(f(as_strided(x, {2, 2}, {0, 2}, 1)), (V{1, 3, 1, 3}));
    EXPECT_EQ(x.as_strided({}, {}, 4).item<float>(), 4.f);
    // The offset defaults to the tensor's own, and may reach storage outside the view (torch).
    const Tensor tail = x.narrow(0, 1, 4);
    EXPECT_EQ(f(tail.as_strided({2}, {1})), (V{1, 2}));
    EXPECT_EQ(f(tail.as_strided({2}, {1}, 0)), (V{0, 1}));
    // From a transposed view: the storage order, not the view's.
    const Tensor y = arange(12, {DType::f32, dev}).reshape({3, 4}).t();
    EXPECT_EQ(f(y.as_strided({2, 3}, {3, 1})), (V{0, 1, 2, 3, 4, 5}));
    // Writes reach the base.
    x.as_strided({2}, {2}, 1).fill_(-1);
    EXPECT_EQ(f(x), (V{0, -1, 2, -1, 4}));
  }
}

TEST(AsStridedTest, GradientSumsOverlapsAndSkipsUncoveredElements) {
  for (const Device dev : {Device::ref(), Device::cpu()}) {
    const Tensor w = (arange(9, {DType::f32, dev}) + 1).reshape({3, 3});
    Tensor x = tensor<float>({1, 2, 3, 4, 5}).to(dev).requires_grad_();
    (x.as_strided({3, 3}, {1, 1}) * w).sum().backward();
    EXPECT_EQ(f(x.grad()), (V{1, 6, 15, 14, 9}));  // torch
    EXPECT_EQ(x.as_strided({3, 3}, {1, 1}).grad_fn_name(), "AsStridedBackward");
    x.set_grad(Tensor());
    (x.as_strided({2, 2}, {0, 2}, 1) * tensor<float>({1, 2, 3, 4}, {2, 2}).to(dev))
        .sum()
        .backward();
    EXPECT_EQ(f(x.grad()), (V{0, 4, 0, 6, 0}));
    // Through a view input: positions are the storage's.
    x.set_grad(Tensor());
    (x.narrow(0, 1, 4).as_strided({2}, {2}) * tensor<float>({10, 20}).to(dev)).sum().backward();
    EXPECT_EQ(f(x.grad()), (V{0, 10, 0, 20, 0}));
    // An input whose elements alias (expanded) splits each storage element's gradient.
    Tensor b = tensor<float>({3, 4}).to(dev).requires_grad_();
    (b.unsqueeze(0).expand({3, 2}).as_strided({2}, {1}) * tensor<float>({1, 2}).to(dev))
        .sum()
        .backward();
    EXPECT_EQ(f(b.grad()), (V{1, 2}));
  }
}

TEST(AsStridedTest, WritesThroughItReachTheBaseHistory) {
  for (const Device dev : {Device::ref(), Device::cpu()}) {
    const Tensor k = tensor<float>({1, 2, 3, 4, 5}).to(dev);
    Tensor a = tensor<float>({1, 2, 3, 4, 5}).to(dev).requires_grad_();
    Tensor base = a * 1;
    base.as_strided({2, 2}, {2, 1}, 1).mul_(tensor<float>({10, 100, 1000, 10000}, {2, 2}).to(dev));
    EXPECT_EQ(f(base), (V{1, 20, 300, 4000, 50000}));
    (base * k).sum().backward();
    EXPECT_EQ(f(a.grad()), (V{1, 20, 300, 4000, 50000}));  // torch
    // A window view taken before its base was written rebuilds its history from the base's, and
    // the rebuilt AsStridedBackward still sums the overlapping windows (torch: 2 * [1, 6, 15, 14,
    // 9]).
    Tensor a2 = tensor<float>({1, 2, 3, 4, 5}).to(dev).requires_grad_();
    Tensor base2 = a2 * 1;
    Tensor v = base2.as_strided({3, 3}, {1, 1});
    base2.mul_(2);
    EXPECT_EQ(f(v), (V{2, 4, 6, 4, 6, 8, 6, 8, 10}));
    (v * (arange(9, {DType::f32, dev}) + 1).reshape({3, 3})).sum().backward();
    EXPECT_EQ(f(a2.grad()), (V{2, 12, 30, 28, 18}));
  }
}
