// ember::nn::init: bounds, statistics and exact values of the initializers, as torch.nn.init.
#include <gtest/gtest.h>

#include <cmath>

#include "ember/ember.h"

using namespace ember;
namespace init = ember::nn::init;

namespace {

template <typename Fn>
void expect_error(Fn fn, const char* piece) {
  try {
    fn();
    ADD_FAILURE() << "expected an ember::Error containing " << piece;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(piece), std::string::npos) << e.what();
  }
}

struct Stats {
  double mean = 0, var = 0, min = 1e300, max = -1e300;
};
Stats stats(const Tensor& t) {
  auto v = t.to_vector<double>();
  Stats s;
  for (double x : v) {
    s.mean += x;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
  }
  s.mean /= double(v.size());
  for (double x : v) s.var += (x - s.mean) * (x - s.mean);
  s.var /= double(v.size() - 1);
  return s;
}

}  // namespace

TEST(NnInitTest, CalculateGainMatchesTorch) {
  EXPECT_DOUBLE_EQ(init::calculate_gain("linear"), 1.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain("conv2d"), 1.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain("sigmoid"), 1.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain("tanh"), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain("relu"), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(init::calculate_gain("selu"), 0.75);
  EXPECT_DOUBLE_EQ(init::calculate_gain("leaky_relu"), std::sqrt(2.0 / (1.0 + 0.0001)));
  // a = sqrt(5): the gain behind torch's default Linear/Conv init, sqrt(1/3).
  EXPECT_NEAR(init::calculate_gain("leaky_relu", std::sqrt(5.0)), std::sqrt(1.0 / 3.0), 1e-15);
  expect_error([] { init::calculate_gain("swish"); },
               "[calculate_gain] unsupported nonlinearity 'swish'");
}

TEST(NnInitTest, FanInAndFanOutAsTorch) {
  auto f = init::calculate_fan_in_and_fan_out(empty({8, 4, 3, 3}));
  EXPECT_EQ(f.first, 36);
  EXPECT_EQ(f.second, 72);
  f = init::calculate_fan_in_and_fan_out(empty({5, 7}));
  EXPECT_EQ(f.first, 7);
  EXPECT_EQ(f.second, 5);
  expect_error([] { init::calculate_fan_in_and_fan_out(empty({5})); },
               "[calculate_fan_in_and_fan_out] fan in and fan out can not be computed");
}

TEST(NnInitTest, KaimingUniformWithinBoundWithTheoreticalVariance) {
  manual_seed(7);
  Tensor w = empty({256, 256});
  init::kaiming_uniform_(w);  // a = 0, leaky_relu: gain sqrt(2)
  const double bound = std::sqrt(2.0) * std::sqrt(3.0 / 256.0);
  Stats s = stats(w);
  EXPECT_GE(s.min, -bound);
  EXPECT_LE(s.max, bound);
  EXPECT_GT(s.max, 0.99 * bound);  // the whole range is used
  EXPECT_NEAR(s.var, bound * bound / 3.0, 0.05 * bound * bound / 3.0);
  EXPECT_NEAR(s.mean, 0.0, 0.01 * bound);

  // fan_out mode on a conv weight [64, 16, 2, 2]: fan_out = 256, relu gain.
  Tensor c = empty({64, 16, 2, 2});
  init::kaiming_uniform_(c, 0.0, init::FanMode::FanOut, "relu");
  const double b2 = std::sqrt(2.0) * std::sqrt(3.0 / 256.0);
  Stats s2 = stats(c);
  EXPECT_GE(s2.min, -b2);
  EXPECT_LE(s2.max, b2);
}

TEST(NnInitTest, KaimingNormalAndXavierVariances) {
  manual_seed(3);
  Tensor w = empty({256, 256});
  init::kaiming_normal_(w, 0.0, init::FanMode::FanIn, "relu");
  EXPECT_NEAR(stats(w).var, 2.0 / 256.0, 0.05 * 2.0 / 256.0);

  Tensor x = empty({256, 256});
  init::xavier_uniform_(x, 2.0);
  const double a = 2.0 * std::sqrt(6.0 / 512.0);
  Stats sx = stats(x);
  EXPECT_GE(sx.min, -a);
  EXPECT_LE(sx.max, a);
  EXPECT_NEAR(sx.var, a * a / 3.0, 0.05 * a * a / 3.0);

  Tensor n = empty({256, 256}, DType::f64);
  init::xavier_normal_(n);
  EXPECT_NEAR(stats(n).var, 2.0 / 512.0, 0.05 * 2.0 / 512.0);
}

TEST(NnInitTest, UniformAndNormalMoments) {
  manual_seed(11);
  Tensor u = init::uniform_(empty({256, 256}), -3.0, 1.0);
  Stats su = stats(u);
  EXPECT_GE(su.min, -3.0);
  EXPECT_LE(su.max, 1.0);
  EXPECT_NEAR(su.mean, -1.0, 0.02);
  EXPECT_NEAR(su.var, 16.0 / 12.0, 0.05 * 16.0 / 12.0);
  Tensor g = init::normal_(empty({256, 256}), 2.0, 0.5);
  Stats sg = stats(g);
  EXPECT_NEAR(sg.mean, 2.0, 0.01);
  EXPECT_NEAR(sg.var, 0.25, 0.05 * 0.25);
  expect_error([] { init::uniform_(empty({2}), 1.0, 0.0); }, "[uniform_] expects a <= b");
  expect_error([] { init::normal_(empty({2}), 0.0, -1.0); }, "[normal_] expects std >= 0");
}

TEST(NnInitTest, TruncNormalStaysWithinBounds) {
  manual_seed(5);
  Tensor t = init::trunc_normal_(empty({256, 256}));  // N(0, 1) truncated to [-2, 2]
  Stats s = stats(t);
  EXPECT_GE(s.min, -2.0);
  EXPECT_LE(s.max, 2.0);
  // Variance of N(0,1) truncated to [-2, 2]: 1 - 2 * 2 * phi(2) / (Phi(2) - Phi(-2)).
  const double phi2 = std::exp(-2.0) / std::sqrt(2.0 * M_PI);
  const double mass = std::erf(2.0 / std::sqrt(2.0));
  const double var = 1.0 - 4.0 * phi2 / mass;
  EXPECT_NEAR(s.var, var, 0.05 * var);
  EXPECT_NEAR(s.mean, 0.0, 0.01);

  Tensor narrow = init::trunc_normal_(empty({1000}, DType::f64), 1.0, 2.0, 0.5, 0.75);
  Stats sn = stats(narrow);
  EXPECT_GE(sn.min, 0.5);
  EXPECT_LE(sn.max, 0.75);
  expect_error([] { init::trunc_normal_(empty({2}), 0, 1, 1.0, 1.0); },
               "[trunc_normal_] expects a < b");
}

TEST(NnInitTest, OrthogonalRowsOrColumnsAreOrthonormal) {
  manual_seed(2);
  Tensor w = init::orthogonal_(empty({4, 6}));  // rows <= cols: W W^T = I
  Tensor wwt = matmul(w, w.t()).to(DType::f64);
  auto v = wwt.to_vector<double>();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_NEAR(v[size_t(i * 4 + j)], i == j ? 1.0 : 0.0, 1e-5);

  Tensor tall = init::orthogonal_(empty({6, 3}, DType::f64), 2.0);  // W^T W = gain^2 I
  auto u = matmul(tall.t(), tall).to_vector<double>();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(u[size_t(i * 3 + j)], i == j ? 4.0 : 0.0, 1e-12);

  // A conv-shaped tensor is treated as [size(0), rest].
  Tensor c = init::orthogonal_(empty({3, 2, 2, 2}, DType::f64));
  Tensor m = c.reshape({3, 8});
  auto cc = matmul(m, m.t()).to_vector<double>();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(cc[size_t(i * 3 + j)], i == j ? 1.0 : 0.0, 1e-12);
  expect_error([] { init::orthogonal_(empty({4})); },
               "[orthogonal_] only tensors with 2 or more dimensions");
}

TEST(NnInitTest, ConstantZerosOnesEye) {
  Tensor t = empty({2, 3});
  init::constant_(t, 0.25);
  for (double v : t.to_vector<double>()) EXPECT_EQ(v, 0.25);
  init::zeros_(t);
  for (double v : t.to_vector<double>()) EXPECT_EQ(v, 0.0);
  init::ones_(t);
  for (double v : t.to_vector<double>()) EXPECT_EQ(v, 1.0);
  Tensor e = init::eye_(empty({2, 3}, DType::i32));
  EXPECT_EQ(e.to_vector<int32_t>(), (std::vector<int32_t>{1, 0, 0, 0, 1, 0}));
  expect_error([] { init::eye_(empty({2, 2, 2})); }, "[eye_] only tensors with 2 dimensions");
}

TEST(NnInitTest, InPlaceOnParametersKeepsThemLeaves) {
  Tensor p = empty({8, 4});
  p.requires_grad_(true);
  init::kaiming_uniform_(p, std::sqrt(5.0));
  EXPECT_TRUE(p.requires_grad());
  EXPECT_TRUE(p.is_leaf());
  EXPECT_EQ(p.grad_fn_name(), "");
  // a = sqrt(5) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  Stats s = stats(p);
  EXPECT_LE(s.max, 0.5);
  EXPECT_GE(s.min, -0.5);
}

TEST(NnInitTest, SameSeedSameValues) {
  manual_seed(42);
  auto a = init::xavier_uniform_(empty({5, 5})).to_vector<float>();
  manual_seed(42);
  auto b = init::xavier_uniform_(empty({5, 5})).to_vector<float>();
  EXPECT_EQ(a, b);
  auto c = init::xavier_uniform_(empty({5, 5})).to_vector<float>();
  EXPECT_NE(a, c);
}

TEST(NnInitTest, RejectsIntegerAndUndefinedTensors) {
  expect_error([] { init::kaiming_uniform_(zeros({4, 4}, DType::i64)); }, "[kaiming_uniform_]");
  expect_error([] { init::normal_(Tensor()); }, "[normal_]");
  expect_error([] { init::xavier_normal_(empty({3})); }, "fewer than 2 dimensions");
}
