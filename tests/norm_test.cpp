// nn::functional normalization layers against hand-computed values, plus errors.
#include <gtest/gtest.h>

#include <cmath>

#include "ember/ember.h"
#include "test_util.h"

using namespace ember;
using ember::test::d;
using ember::test::expect_error;
using ember::test::expect_near;
namespace F = ember::nn::functional;

namespace {

// (x - 2.5) / sqrt(1.25 + 1e-5) for x = 1..4.
const std::vector<double> kRow = {-1.3416354, -0.4472118, 0.4472118, 1.3416354};

}  // namespace

TEST(NormTest, LayerNormOfKnownRow) {
  Tensor x = tensor<float>({1, 2, 3, 4, 1, 2, 3, 4}, {2, 4});
  Tensor y = F::layer_norm(x, {4});
  EXPECT_EQ(y.shape(), (Shape{2, 4}));
  expect_near(y.slice(0, 0, 1), kRow);
  expect_near(y.slice(0, 1, 2), kRow);
  Tensor w = tensor<float>({1, 2, 1, 1}), b = tensor<float>({0, 0, 1, 0});
  expect_near(F::layer_norm(x, {4}, w, b).slice(0, 0, 1),
              {kRow[0], 2 * kRow[1], kRow[2] + 1, kRow[3]});
  // Over the last two dims: the 8 values 1..4,1..4 have the same mean and variance.
  Tensor z = F::layer_norm(x.reshape({1, 2, 4}), {2, 4});
  expect_near(z.reshape({8}).slice(0, 0, 4), kRow);
  Tensor h = F::layer_norm(x.to(DType::f16), {4});
  EXPECT_EQ(h.dtype(), DType::f16);
  expect_near(h.slice(0, 0, 1), kRow, 2e-3);
}

TEST(NormTest, RmsNorm) {
  Tensor x = tensor<float>({1, 2, 3, 4});
  expect_near(F::rms_norm(x, {4}), {0.3651484, 0.7302967, 1.0954451, 1.4605935});
  expect_near(F::rms_norm(x, {4}, tensor<float>({1, 1, 2, 0})),
              {0.3651484, 0.7302967, 2 * 1.0954451, 0});
  // eps default: float's epsilon; here mean(x^2) = 0 so x / sqrt(eps) shows it.
  Tensor t = tensor<float>({1e-4f, -1e-4f});
  expect_near(F::rms_norm(t, {2}),
              {1e-4 / std::sqrt(1e-8 + 1.1920929e-7), -1e-4 / std::sqrt(1e-8 + 1.1920929e-7)},
              1e-5);
  expect_near(F::rms_norm(t, {2}, Tensor(), 1e-2),
              {1e-4 / std::sqrt(1e-8 + 1e-2), -1e-4 / std::sqrt(1e-8 + 1e-2)});
}

TEST(NormTest, BatchNormTrainingUpdatesRunningStats) {
  // N = 2, C = 2: channel 0 holds {1, 3} (mean 2, var 1, unbiased 2), channel 1 {2, 6}
  // (mean 4, var 4, unbiased 8).
  Tensor x = tensor<float>({1, 2, 3, 6}, {2, 2});
  Tensor rm = zeros({2}), rv = ones({2});
  Tensor y = F::batch_norm(x, rm, rv, Tensor(), Tensor(), true, 0.1, 1e-5);
  const double a = 1 / std::sqrt(1 + 1e-5), b = 2 / std::sqrt(4 + 1e-5);
  expect_near(y, {-a, -b, a, b});
  expect_near(rm, {0.2, 0.4});
  expect_near(rv, {0.9 + 0.2, 0.9 + 0.8});
  // Weight and bias, spatial dims: [N=1, C=2, 2].
  Tensor x3 = tensor<float>({1, 3, 2, 6}, {1, 2, 2});
  Tensor y3 =
      F::batch_norm(x3, Tensor(), Tensor(), tensor<float>({2, 1}), tensor<float>({0, 1}), true);
  expect_near(y3, {-2 * a, 2 * a, 1 - b, 1 + b});
}

TEST(NormTest, BatchNormEvalUsesRunningStats) {
  Tensor x = tensor<float>({1, 2, 3, 6}, {2, 2});
  Tensor rm = tensor<float>({1, 2}), rv = tensor<float>({4, 1});
  Tensor y =
      F::batch_norm(x, rm, rv, tensor<float>({1, 3}), tensor<float>({0.5f, 0}), false, 0.1, 0);
  expect_near(y, {0.5, 0, 1.5, 12});
  expect_near(rm, {1, 2});  // unchanged
  expect_near(rv, {4, 1});
}

TEST(NormTest, GroupNormAndInstanceNorm) {
  Tensor x = tensor<float>({1, 2, 3, 4}, {1, 4, 1});
  const double g = 0.5 / std::sqrt(0.25 + 1e-5);
  expect_near(F::group_norm(x, 2), {-g, g, -g, g});
  expect_near(F::group_norm(x, 1).reshape({4}), kRow);
  expect_near(F::group_norm(x, 2, tensor<float>({1, 2, 3, 4}), tensor<float>({0, 0, 0, 1})),
              {-g, 2 * g, -3 * g, 4 * g + 1});
  Tensor xi = tensor<float>({1, 2, 3, 4, 2, 2, 4, 4}, {1, 2, 4});
  Tensor rm = zeros({2}), rv = ones({2});
  Tensor y = F::instance_norm(xi, rm, rv);
  expect_near(y.slice(1, 0, 1), kRow);
  const double h = 1 / std::sqrt(1 + 1e-5);
  expect_near(y.slice(1, 1, 2), {-h, -h, h, h});
  // Channel 0: mean 2.5, unbiased var 5/3; channel 1: mean 3, unbiased var 4/3.
  expect_near(rm, {0.25, 0.3});
  expect_near(rv, {0.9 + 0.1 * 5 / 3, 0.9 + 0.1 * 4 / 3});
}

TEST(NormTest, Normalize) {
  expect_near(F::normalize(tensor<float>({3, 4}), 2, 0), {0.6, 0.8});
  expect_near(F::normalize(tensor<float>({3, 4, 0, 0}, {2, 2})), {0.6, 0.8, 0, 0});
  expect_near(F::normalize(tensor<float>({1, -3}), 1, 0), {0.25, -0.75});
}

TEST(NormTest, EmptyBatches) {
  EXPECT_EQ(F::layer_norm(zeros({0, 4}), {4}).shape(), (Shape{0, 4}));
  EXPECT_EQ(F::group_norm(zeros({0, 4, 3}), 2).shape(), (Shape{0, 4, 3}));
}

TEST(NormTest, Errors) {
  Tensor x = zeros({2, 4});
  expect_error([&] { F::layer_norm(x, {3}); }, {"[layer_norm]", "[2, 4]", "[3]"});
  expect_error([&] { F::layer_norm(x, {2, 4, 1}); }, {"[layer_norm]"});
  expect_error([&] { F::layer_norm(x, {4}, ones({3})); }, {"[layer_norm]", "weight"});
  expect_error([&] { F::layer_norm(tensor<int32_t>({1, 2}), {2}); }, {"[layer_norm]"});
  expect_error([&] { F::rms_norm(x, {5}); }, {"[rms_norm]"});
  expect_error([&] { F::group_norm(zeros({2, 6, 3}), 4); }, {"[group_norm]", "divisible"});
  expect_error([&] { F::batch_norm(x, zeros({3}), ones({3})); },
               {"[batch_norm]", "running_mean", "[3]"});
  expect_error([&] { F::batch_norm(x, Tensor(), Tensor()); }, {"[batch_norm]", "running"});
  expect_error(
      [&] {
        F::batch_norm(zeros({1, 4}), Tensor(), Tensor(), Tensor(), Tensor(), true);
      },
      {"[batch_norm]", "more than 1 value per channel"});
  expect_error([&] { F::instance_norm(zeros({2, 3, 1})); }, {"[instance_norm]", "spatial"});
  expect_error([&] { F::batch_norm(zeros({4}), Tensor(), Tensor(), Tensor(), Tensor(), true); },
               {"[batch_norm]"});
}
