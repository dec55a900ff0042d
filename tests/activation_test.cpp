// nn::functional activations, softmax and dropout against hand-computed values, plus errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ember/ember.h"
#include "test_util.h"

using namespace ember;
using ember::test::d;
using ember::test::expect_error;
using ember::test::expect_near;
namespace F = ember::nn::functional;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST(ActivationTest, SoftmaxOfOneTwoThree) {
  Tensor x = tensor<float>({1, 2, 3});
  expect_near(F::softmax(x, 0), {0.09003057, 0.24472847, 0.66524096});
  expect_near(F::log_softmax(x, -1), {-2.4076060, -1.4076060, -0.4076060});
  expect_near(F::softmin(x, 0), {0.66524096, 0.24472847, 0.09003057});
  EXPECT_EQ(F::softmax(x, 0).dtype(), DType::f32);
}

TEST(ActivationTest, SoftmaxAlongDimsIsStable) {
  Tensor x = tensor<float>({1000, 1000, -1000, 0}, {2, 2});
  expect_near(F::softmax(x, 1), {0.5, 0.5, 0, 1});
  expect_near(F::softmax(x, 0), {1, 1, 0, 0});
  expect_near(F::log_softmax(x, 1), {-std::log(2.0), -std::log(2.0), -1000, 0}, 1e-4);
  // -inf entries get probability 0; a row of -inf is NaN, as torch.
  Tensor m = tensor<float>({0, -INFINITY, -INFINITY, -INFINITY}, {2, 2});
  auto s = d(F::softmax(m, 1));
  EXPECT_DOUBLE_EQ(s[0], 1);
  EXPECT_DOUBLE_EQ(s[1], 0);
  EXPECT_TRUE(std::isnan(s[2]));
}

TEST(ActivationTest, SoftmaxDtypeZeroDimAndEmpty) {
  Tensor i = tensor<int64_t>({1, 2, 3});
  Tensor s = F::softmax(i, 0, DType::f64);
  EXPECT_EQ(s.dtype(), DType::f64);
  expect_near(s, {0.09003057, 0.24472847, 0.66524096});
  Tensor h = F::softmax(tensor<float>({1, 2, 3}).to(DType::f16), 0, DType::f32);
  EXPECT_EQ(h.dtype(), DType::f32);
  Tensor z = F::softmax(scalar_tensor(3.0f), 0);
  EXPECT_EQ(z.dim(), 0);
  EXPECT_EQ(z.item<float>(), 1.0f);
  EXPECT_EQ(F::log_softmax(scalar_tensor(3.0f), -1).item<float>(), 0.0f);
  Tensor e = F::softmax(zeros({0, 3}), 1);
  EXPECT_EQ(e.shape(), (Shape{0, 3}));
  EXPECT_EQ(F::log_softmax(zeros({2, 0}), 1).shape(), (Shape{2, 0}));
  Tensor b = F::softmax(tensor<float>({1, 2, 3}).to(DType::bf16), 0);
  EXPECT_EQ(b.dtype(), DType::bf16);
  expect_near(b, {0.09003057, 0.24472847, 0.66524096}, 4e-3);
}

TEST(ActivationTest, GeluAndFriendsAtOne) {
  Tensor one = tensor<float>({1});
  EXPECT_NEAR(F::gelu(one).item<float>(), 0.8413447, 1e-6);
  EXPECT_NEAR(F::gelu(one, "tanh").item<float>(), 0.8411920, 1e-6);
  EXPECT_NEAR(F::silu(one).item<float>(), 0.7310586, 1e-6);
  EXPECT_NEAR(F::mish(one).item<float>(), 0.8650984, 1e-6);
  EXPECT_NEAR(F::softplus(one).item<float>(), 1.3132617, 1e-6);
  EXPECT_NEAR(F::sigmoid(one).item<float>(), 0.7310586, 1e-6);
  EXPECT_NEAR(F::tanh(one).item<float>(), 0.7615942, 1e-6);
  EXPECT_NEAR(F::hardsigmoid(one).item<float>(), 4.0 / 6, 1e-6);
  EXPECT_NEAR(F::hardswish(one).item<float>(), 4.0 / 6, 1e-6);
  EXPECT_NEAR(F::softsign(one).item<float>(), 0.5, 1e-7);
  EXPECT_NEAR(F::tanhshrink(one).item<float>(), 1 - 0.7615942, 1e-6);
}

TEST(ActivationTest, PiecewiseActivations) {
  Tensor x = tensor<float>({-4, -1, 0, 0.5, 3, 7});
  expect_near(F::relu(x), {0, 0, 0, 0.5, 3, 7});
  expect_near(F::relu6(x), {0, 0, 0, 0.5, 3, 6});
  expect_near(F::hardtanh(x), {-1, -1, 0, 0.5, 1, 1});
  expect_near(F::hardtanh(x, -2, 2.5), {-2, -1, 0, 0.5, 2.5, 2.5});
  expect_near(F::leaky_relu(x), {-0.04, -0.01, 0, 0.5, 3, 7});
  expect_near(F::leaky_relu(x, 0.2), {-0.8, -0.2, 0, 0.5, 3, 7});
  expect_near(F::elu(x), {std::expm1(-4.0), std::expm1(-1.0), 0, 0.5, 3, 7});
  expect_near(F::elu(x, 2), {2 * std::expm1(-4.0), 2 * std::expm1(-1.0), 0, 0.5, 3, 7});
  EXPECT_NEAR(d(F::selu(x))[1], -1.1113307, 1e-6);
  EXPECT_NEAR(d(F::selu(x))[4], 3 * 1.0507009873554805, 1e-6);
  EXPECT_NEAR(d(F::celu(x, 2))[1], -0.7869387, 1e-6);
  EXPECT_NEAR(d(F::celu(x, 2))[5], 7, 1e-6);
  expect_near(F::hardsigmoid(x), {0, 2.0 / 6, 0.5, 3.5 / 6, 1, 1});
  expect_near(F::hardswish(x), {0, -2.0 / 6, 0, 0.5 * 3.5 / 6, 3, 7});
  expect_near(F::hardshrink(x, 0.5), {-4, -1, 0, 0, 3, 7});
  expect_near(F::softshrink(x, 0.5), {-3.5, -0.5, 0, 0, 2.5, 6.5});
  expect_near(F::threshold(x, 0.5, -9), {-9, -9, -9, -9, 3, 7});
}

TEST(ActivationTest, SoftplusBetaThresholdAndLogSigmoid) {
  expect_near(F::softplus(tensor<float>({2}), 2), {2.0090750});
  expect_near(F::softplus(tensor<float>({30, -30})), {30, std::log1p(std::exp(-30.0))});
  expect_near(F::softplus(tensor<float>({3}), 1, 2), {3});  // beta * x > threshold: x
  expect_near(F::log_sigmoid(tensor<float>({0, -100, 100})), {-std::log(2.0), -100, 0}, 1e-5);
  expect_near(F::logsigmoid(tensor<float>({0})), {-std::log(2.0)});
}

TEST(ActivationTest, IntegerInputs) {
  Tensor i = tensor<int32_t>({-2, 3, 9});
  EXPECT_EQ(F::relu(i).dtype(), DType::i32);
  EXPECT_EQ(F::relu(i).to_vector<int32_t>(), (std::vector<int32_t>{0, 3, 9}));
  EXPECT_EQ(F::relu6(i).to_vector<int32_t>(), (std::vector<int32_t>{0, 3, 6}));
  EXPECT_EQ(F::threshold(i, 0, 5).to_vector<int32_t>(), (std::vector<int32_t>{5, 3, 9}));
  EXPECT_EQ(F::sigmoid(i).dtype(), DType::f32);
  EXPECT_EQ(F::gelu(i).dtype(), DType::f32);
}

TEST(ActivationTest, GluAndPrelu) {
  expect_near(F::glu(tensor<float>({1, 2, 3, 4})), {0.9525741, 1.9640276});
  Tensor g = F::glu(arange(8).to(DType::f32).reshape({4, 2}), 0);
  EXPECT_EQ(g.shape(), (Shape{2, 2}));
  Tensor x = tensor<float>({-1, 2, -3, 4}, {1, 2, 2});
  expect_near(F::prelu(x, tensor<float>({0.1f, 0.5f})), {-0.1, 2, -1.5, 4});
  expect_near(F::prelu(x, tensor<float>({0.25f})), {-0.25, 2, -0.75, 4});
}

TEST(ActivationTest, NanPropagates) {
  Tensor n = tensor<float>({NAN});
  for (Tensor r : {F::relu(n), F::gelu(n), F::silu(n), F::elu(n), F::leaky_relu(n), F::softplus(n),
                   F::hardshrink(n), F::celu(n), F::softsign(n)})
    EXPECT_TRUE(std::isnan(r.item<float>()));
}

TEST(ActivationTest, Errors) {
  Tensor x = tensor<float>({1, 2, 3});
  expect_error([&] { F::softmax(x, 1); }, {"[softmax]"});
  expect_error([&] { F::softmax(tensor<int64_t>({1, 2}), 0); }, {"[softmax]", "floating"});
  expect_error([&] { F::log_softmax(Tensor(), 0); }, {"[log_softmax]"});
  expect_error([&] { F::gelu(x, "erf"); }, {"[gelu]", "approximate"});
  expect_error([&] { F::hardtanh(x, 2, 1); }, {"[hardtanh]"});
  expect_error([&] { F::leaky_relu(tensor<int32_t>({1})); }, {"leaky_relu"});
  expect_error([&] { F::glu(x); }, {"[glu]", "even"});
  expect_error([&] { F::glu(scalar_tensor(1.0f)); }, {"[glu]"});
  expect_error([&] { F::prelu(zeros({2, 3}), ones({2})); }, {"[prelu]", "channel"});
  expect_error([&] { F::softshrink(x, -1); }, {"[softshrink]"});
  expect_error([&] { F::celu(x, 0); }, {"[celu]"});
  expect_error([&] { F::relu(Tensor()); }, {"relu"});
}

// ---- dropout ----

TEST(DropoutTest, IdentityWhenEvalOrZeroP) {
  Tensor x = tensor<float>({1, -2, 3, 4});
  Tensor a = F::dropout(x, 0.5, false);
  EXPECT_TRUE(a.is_alias_of(x));
  EXPECT_EQ(d(a), d(x));
  Tensor b = F::dropout(x, 0.0, true);
  EXPECT_EQ(d(b), d(x));
  EXPECT_EQ(d(F::dropout2d(zeros({2, 3, 4, 4}) + 1, 0.0)), d(ones({2, 3, 4, 4})));
}

TEST(DropoutTest, POneGivesZeros) {
  Tensor x = tensor<float>({1, -2, 3, 4});
  EXPECT_EQ(d(F::dropout(x, 1.0)), (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(d(F::dropout2d(ones({2, 3, 2, 2}), 1.0)), d(zeros({2, 3, 2, 2})));
}

TEST(DropoutTest, KeptValuesAreScaledExactly) {
  manual_seed(123);
  Tensor x = arange(1, 1001).to(DType::f32);
  Tensor y = F::dropout(x, 0.25);
  auto xv = d(x), yv = d(y);
  int64_t zeros_count = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    if (yv[i] == 0) {
      ++zeros_count;
    } else {
      EXPECT_FLOAT_EQ(float(yv[i]), float(xv[i] / 0.75)) << "at " << i;
    }
  }
  EXPECT_GT(zeros_count, 0);
  EXPECT_LT(zeros_count, 1000);
  // Same seed, same mask.
  manual_seed(123);
  EXPECT_EQ(d(F::dropout(x, 0.25)), yv);
}

TEST(DropoutTest, ChannelDropoutZeroesWholeChannels) {
  manual_seed(5);
  Tensor x = ones({4, 8, 3, 3});
  Tensor y = F::dropout2d(x, 0.5);
  auto v = d(y);
  int64_t dropped = 0;
  for (int64_t ch = 0; ch < 32; ++ch) {
    const double first = v[size_t(ch * 9)];
    EXPECT_TRUE(first == 0 || first == 2) << first;
    dropped += first == 0;
    for (int64_t k = 1; k < 9; ++k) EXPECT_EQ(v[size_t(ch * 9 + k)], first);
  }
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, 32);
  EXPECT_EQ(F::dropout1d(ones({3, 5}), 0.5).shape(), (Shape{3, 5}));  // unbatched [C, L]
  EXPECT_EQ(F::dropout3d(ones({2, 2, 2, 2, 2}), 0.5).shape(), (Shape{2, 2, 2, 2, 2}));
}

TEST(DropoutTest, Errors) {
  Tensor x = ones({2, 3});
  expect_error([&] { F::dropout(x, 1.5); }, {"[dropout]", "1.5"});
  expect_error([&] { F::dropout(x, -0.1); }, {"[dropout]"});
  expect_error([&] { F::dropout(tensor<int32_t>({1}), 0.5); }, {"[dropout]"});
  expect_error([&] { F::dropout2d(ones({2, 3}), 0.5); }, {"[dropout2d]"});
  expect_error([&] { F::dropout1d(ones({2, 3, 4, 5}), 0.5); }, {"[dropout1d]"});
}
