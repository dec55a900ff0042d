// Training on Vulkan (lavapipe here) against the cpu backend: the gradients of every parameter
// of a small CNN and an MLP after one backward, gradients of composite ops (softmax, layer_norm,
// cross_entropy, conv2d, max_pool2d) and a short Adam run whose losses must match cpu's. Also a
// reduction long enough to pass lavapipe's 65535-iteration loop limit in one workgroup.
// Skipped with the reason when there is no Vulkan device.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "ember/autograd.h"
#include "ember/ember.h"
#include "ember/nn/functional/activation.h"
#include "ember/nn/functional/conv.h"
#include "ember/nn/functional/loss.h"
#include "ember/nn/functional/norm.h"
#include "ember/nn/functional/pool.h"
#include "ember/optim/adam.h"
#include "gradcheck.h"
#include "test_util.h"

namespace ember {
namespace {

namespace F = nn::functional;

// Max |a - b| <= atol + rtol * max |b| over the elements (a on any device, b on cpu).
void expect_close(const Tensor& a, const Tensor& b, double atol, double rtol,
                  const std::string& what) {
  ASSERT_TRUE(a.defined()) << what << ": undefined";
  ASSERT_TRUE(b.defined()) << what << ": undefined reference";
  ASSERT_EQ(a.shape(), b.shape()) << what;
  const std::vector<double> x = a.to(Device::cpu()).to(DType::f64).to_vector<double>();
  const std::vector<double> y = b.to(Device::cpu()).to(DType::f64).to_vector<double>();
  double scale = 0, worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < y.size(); ++i) scale = std::max(scale, std::abs(y[i]));
  for (size_t i = 0; i < y.size(); ++i) {
    const double d = std::abs(x[i] - y[i]);
    if (!(d <= worst)) {
      worst = d;
      at = i;
    }
  }
  EXPECT_LE(worst, atol + rtol * scale) << what << ": element " << at << " is " << x[at]
                                        << ", cpu has " << y[at] << " (max |cpu| " << scale << ")";
}

// Parameters made on cpu from a seed, and the same values on `dev`; both require grad.
std::vector<Tensor> params_on(const std::vector<Tensor>& cpu, const Device& dev) {
  std::vector<Tensor> out;
  for (const Tensor& p : cpu) {
    Tensor q = p.detach().to(dev);
    q.requires_grad_(true);
    out.push_back(q);
  }
  return out;
}

std::vector<Tensor> init(const std::vector<Shape>& shapes, uint64_t seed) {
  manual_seed(seed);
  std::vector<Tensor> ps;
  for (const Shape& s : shapes) {
    int64_t fan_in = 1;
    for (size_t i = 1; i < s.size(); ++i) fan_in *= s[i];
    Tensor p = randn(s) * (1.0 / std::sqrt(double(std::max<int64_t>(fan_in, 1))));
    p.requires_grad_(true);
    ps.push_back(p);
  }
  return ps;
}

// The Fashion-MNIST CNN's layers at a small size: conv 1->4, relu, conv 4->8, relu, max_pool 2,
// linear 72->16, relu, linear 16->10; input [N, 1, 10, 10].
using Model = std::function<Tensor(const std::vector<Tensor>&, const Tensor&)>;
const std::vector<Shape> kCnnShapes = {{4, 1, 3, 3}, {4},  {8, 4, 3, 3}, {8},
                                       {16, 72},     {16}, {10, 16},     {10}};
Tensor cnn(const std::vector<Tensor>& p, const Tensor& x) {
  Tensor h = F::relu(F::conv2d(x, p[0], p[1]));
  h = F::relu(F::conv2d(h, p[2], p[3]));
  h = F::max_pool2d(h, {2, 2}).flatten(1);
  h = F::relu(matmul(h, p[4].t()) + p[5]);
  return matmul(h, p[6].t()) + p[7];
}

const std::vector<Shape> kMlpShapes = {{32, 20}, {32}, {3, 32}, {3}};
Tensor mlp(const std::vector<Tensor>& p, const Tensor& x) {
  Tensor h = F::relu(matmul(x, p[0].t()) + p[1]);
  return matmul(h, p[2].t()) + p[3];
}

void expect_same_gradients(const Model& model, const std::vector<Shape>& shapes, const Tensor& x,
                           const Tensor& y, const Device& dev) {
  std::vector<Tensor> pc = init(shapes, 7);
  std::vector<Tensor> pv = params_on(pc, dev);
  Tensor lc = F::cross_entropy(model(pc, x), y);
  Tensor lv = F::cross_entropy(model(pv, x.to(dev)), y.to(dev));
  expect_close(lv, lc, 1e-5, 1e-5, "loss");
  lc.backward();
  lv.backward();
  for (size_t i = 0; i < pc.size(); ++i) {
    EXPECT_EQ(pv[i].grad().device(), dev) << "parameter " << i;
    expect_close(pv[i].grad(), pc[i].grad(), 1e-6, 1e-4,
                 "gradient of parameter " + std::to_string(i));
  }
}

TEST(VulkanTrain, CnnGradientsMatchCpu) {
  EMBER_VULKAN_OR_SKIP(dev);
  manual_seed(1);
  const Tensor x = randn({6, 1, 10, 10});
  const Tensor y = randint(0, 10, {6});
  expect_same_gradients(cnn, kCnnShapes, x, y, dev);
}

TEST(VulkanTrain, MlpGradientsMatchCpu) {
  EMBER_VULKAN_OR_SKIP(dev);
  manual_seed(2);
  const Tensor x = randn({16, 20});
  const Tensor y = randint(0, 3, {16});
  expect_same_gradients(mlp, kMlpShapes, x, y, dev);
}

// d(sum(f(inputs) * w))/d(inputs) on dev and on cpu.
void expect_same_op_gradients(const std::string& name,
                              const std::function<Tensor(const std::vector<Tensor>&)>& f,
                              const std::vector<Tensor>& cpu_inputs, const Device& dev) {
  std::vector<Tensor> vin = params_on(cpu_inputs, dev);
  std::vector<Tensor> cin = params_on(cpu_inputs, Device::cpu());
  Tensor oc = f(cin), ov = f(vin);
  expect_close(ov, oc, 1e-5, 1e-5, name + " forward");
  manual_seed(3);
  const Tensor w = randn(oc.shape());
  const std::vector<Tensor> gc = autograd::grad({(oc * w).sum()}, cin);
  const std::vector<Tensor> gv = autograd::grad({(ov * w.to(dev)).sum()}, vin);
  for (size_t i = 0; i < gc.size(); ++i)
    expect_close(gv[i], gc[i], 1e-5, 1e-4, name + " gradient of input " + std::to_string(i));
}

TEST(VulkanTrain, CompositeOpGradientsMatchCpu) {
  EMBER_VULKAN_OR_SKIP(dev);
  manual_seed(4);
  const Tensor target = randint(0, 5, {4});
  expect_same_op_gradients(
      "softmax", [](const std::vector<Tensor>& v) { return F::softmax(v[0], 1); }, {randn({4, 5})},
      dev);
  expect_same_op_gradients(
      "layer_norm",
      [](const std::vector<Tensor>& v) { return F::layer_norm(v[0], {6}, v[1], v[2]); },
      {randn({3, 6}), randn({6}), randn({6})}, dev);
  expect_same_op_gradients(
      "cross_entropy",
      [&](const std::vector<Tensor>& v) {
        return F::cross_entropy(v[0], target.to(v[0].device())).reshape({1});
      },
      {randn({4, 5})}, dev);
  expect_same_op_gradients(
      "conv2d",
      [](const std::vector<Tensor>& v) {
        return F::conv2d(v[0], v[1], v[2], {2, 1}, {1, 0});
      },
      {randn({2, 3, 7, 6}), randn({4, 3, 3, 2}), randn({4})}, dev);
  expect_same_op_gradients(
      "max_pool2d",
      [](const std::vector<Tensor>& v) {
        return F::max_pool2d(v[0], {2, 2});
      },
      {randn({2, 3, 6, 4})}, dev);
}

TEST(VulkanTrain, GradcheckOnVulkanInF64) {
  EMBER_VULKAN_OR_SKIP(dev);
  if (!supports_dtype(dev, DType::f64)) GTEST_SKIP() << dev.str() << " has no f64";
  const auto on_dev = [&](const Shape& s, uint64_t seed) {
    Tensor t = test::random_input(s, seed, -1, 1, false).to(dev);
    t.requires_grad_(true);
    return t;
  };
  EXPECT_EQ(test::gradcheck([](const std::vector<Tensor>& v) { return F::softmax(v[0], -1); },
                            {on_dev({2, 4}, 1)}),
            "");
  EXPECT_EQ(test::gradcheck(
                [](const std::vector<Tensor>& v) { return F::conv2d(v[0], v[1], v[2], {1}, {1}); },
                {on_dev({1, 2, 4, 3}, 2), on_dev({2, 2, 3, 3}, 3), on_dev({2}, 4)}),
            "");
  EXPECT_EQ(test::gradcheck(
                [](const std::vector<Tensor>& v) { return F::layer_norm(v[0], {4}, v[1], v[2]); },
                {on_dev({2, 4}, 5), on_dev({4}, 6), on_dev({4}, 7)}),
            "");
}

// 20 full-batch Adam steps of the MLP on 256 separable synthetic samples: the loss falls and
// every step's loss matches the cpu run's.
TEST(VulkanTrain, AdamRunMatchesCpuAndLearns) {
  EMBER_VULKAN_OR_SKIP(dev);
  manual_seed(5);
  const Tensor x = randn({256, 20});
  // Three classes from the sign pattern of two input features.
  const Tensor y =
      (gt(x.narrow(1, 0, 1), 0).to(DType::i64) + gt(x.narrow(1, 1, 1), 0.5).to(DType::i64))
          .flatten();
  std::vector<double> losses[2];
  const Device devs[2] = {Device::cpu(), dev};
  for (int d = 0; d < 2; ++d) {
    std::vector<Tensor> p = params_on(init(kMlpShapes, 9), devs[d]);
    optim::Adam opt(p, optim::AdamOptions(0.01));
    const Tensor xd = x.to(devs[d]), yd = y.to(devs[d]);
    for (int step = 0; step < 20; ++step) {
      Tensor loss = F::cross_entropy(mlp(p, xd), yd);
      opt.zero_grad();
      loss.backward();
      opt.step();
      losses[d].push_back(loss.item<float>());
    }
  }
  for (int step = 0; step < 20; ++step)
    EXPECT_NEAR(losses[1][size_t(step)], losses[0][size_t(step)],
                1e-4 * std::max(1.0, losses[0][size_t(step)]))
        << "step " << step;
  EXPECT_GT(losses[1].front(), 0.9);
  EXPECT_LT(losses[1].back(), 0.6)
      << "the loss did not fall: " << losses[1].front() << " -> " << losses[1].back();
}

// Long inner dims: the CNN's fc1 (K = 9216) and K = 40000; the tiled kernel's loops per K step
// are bounded so that no shader passes lavapipe's 65535 loop iterations (K = 9216 was wrong
// with 16 threads staging in loops).
TEST(VulkanTrain, LongMatmulsMatchCpu) {
  EMBER_VULKAN_OR_SKIP(dev);
  manual_seed(6);
  for (const auto& mnk : std::vector<std::vector<int64_t>>{{64, 128, 9216}, {16, 16, 40000}}) {
    const Tensor a = randn({mnk[0], mnk[2]}), b = randn({mnk[2], mnk[1]});
    expect_close(matmul(a.to(dev), b.to(dev)), matmul(a, b), 1e-3, 1e-5,
                 "matmul K=" + std::to_string(mnk[2]));
  }
}

// One output reduced over 65535 * 256 and 2^24 + 4096 elements: one workgroup of 256 threads
// would loop 65535 or more times, which lavapipe cuts (these sums were 131070).
TEST(VulkanTrain, ReductionPastTheDriverLoopLimit) {
  EMBER_VULKAN_OR_SKIP(dev);
  EXPECT_EQ(ones({65535 * 256}, {DType::f32, dev}).sum().item<float>(), 65535.0f * 256);
  const int64_t n = (int64_t(1) << 24) + 4096;
  Tensor x = ones({n}, {DType::f32, dev});
  EXPECT_EQ(x.sum().item<float>(), float(n));
  x.narrow(0, n - 3, 1).fill_(5.0f);
  auto [v, i] = max(x.reshape({1, n}), 1);
  EXPECT_EQ(v.item<float>(), 5.0f);
  EXPECT_EQ(i.item<int64_t>(), n - 3);
}

}  // namespace
}  // namespace ember
