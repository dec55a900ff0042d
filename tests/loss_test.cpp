// nn::functional losses against values computed by the torch formulas, plus errors.
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

Tensor logits() { return tensor<float>({1, 2, 3, 0.5f, -1, 2.5f}, {2, 3}); }
Tensor idx(std::initializer_list<int64_t> v) { return tensor<int64_t>(v); }

}  // namespace

// Expected values: logp = log_softmax(rows), loss_i = (1 - e) * nll_i + (e / C) * smooth_i,
// computed in double by the torch 1.13 formulas (see loss.h).
TEST(LossTest, CrossEntropyClassIndices) {
  Tensor x = logits();
  expect_near(F::cross_entropy(x, idx({2, 0}), Tensor(), -100, "none"), {0.4076060, 2.1531782});
  expect_near(F::cross_entropy(x, idx({2, 0})), {1.2803921});
  expect_near(F::cross_entropy(x, idx({2, 0}), Tensor(), -100, "sum"), {2.5607842});
  Tensor w = tensor<float>({1, 2, 3});
  expect_near(F::cross_entropy(x, idx({2, 0}), w, -100, "none"), {1.2228179, 2.1531782});
  expect_near(F::cross_entropy(x, idx({2, 0}), w), {0.8439990});  // 3.3759961 / (3 + 1)
}

TEST(LossTest, CrossEntropyLabelSmoothingAndIgnoreIndex) {
  Tensor x = logits();
  expect_near(F::cross_entropy(x, idx({2, -100}), Tensor(), -100, "none", 0.1), {0.5076060, 0});
  expect_near(F::cross_entropy(x, idx({2, -100}), Tensor(), -100, "mean", 0.1), {0.5076060});
  expect_near(F::cross_entropy(x, idx({2, 0}), Tensor(), -100, "mean", 0.1), {1.3220588});
  expect_near(F::cross_entropy(x, idx({2, 0}), Tensor(), -100, "sum", 0.1), {2.6441175});
  Tensor w = tensor<float>({1, 2, 3});
  expect_near(F::cross_entropy(x, idx({2, 0}), w, -100, "none", 0.1), {1.3153906, 2.2684960});
  expect_near(F::cross_entropy(x, idx({2, 0}), w, -100, "mean", 0.1), {0.8959717});
  // Ignored rows leave both the numerator and the weight divisor.
  expect_near(F::cross_entropy(x, idx({2, -100}), w, -100, "mean", 0.1), {0.4384635});
  expect_near(F::cross_entropy(x, idx({2, 1}), w, 1, "mean", 0.1), {0.4384635});
  // Every target ignored: mean is 0 / 0.
  EXPECT_TRUE(std::isnan(F::cross_entropy(x, idx({-100, -100})).item<float>()));
}

TEST(LossTest, CrossEntropyProbabilitiesSpatialAndUnbatched) {
  Tensor row = tensor<float>({1, 2, 3}, {1, 3});
  Tensor p = tensor<float>({0.2f, 0.3f, 0.5f}, {1, 3});
  expect_near(F::cross_entropy(row, p), {1.1076060});
  expect_near(F::cross_entropy(row, p, Tensor(), -100, "mean", 0.1), {1.1376060});
  // [N, C, d]: classes along dim 1.
  Tensor x = logits().reshape({1, 2, 3}).transpose(1, 2);  // [1, 3, 2]: two positions
  Tensor t = tensor<int64_t>({2, 0}, {1, 2});
  Tensor l = F::cross_entropy(x, t, Tensor(), -100, "none");
  EXPECT_EQ(l.shape(), (Shape{1, 2}));
  expect_near(l, {0.4076060, 2.1531782});
  // Unbatched [C] with a 0-d target.
  Tensor u = F::cross_entropy(tensor<float>({1, 2, 3}), scalar_tensor(2, DType::i64), Tensor(),
                              -100, "none");
  EXPECT_EQ(u.dim(), 0);
  EXPECT_NEAR(u.item<float>(), 0.4076060, 1e-6);
}

TEST(LossTest, NllLossWeightsAndIgnore) {
  Tensor lp = tensor<float>({-1, -2, -3, -0.5f, -1.5f, -2.5f}, {2, 3});
  Tensor w = tensor<float>({1, 2, 3});
  expect_near(F::nll_loss(lp, idx({0, 2}), w), {2.125});  // (1 + 7.5) / (1 + 3)
  expect_near(F::nll_loss(lp, idx({0, 2}), w, 2), {1});
  expect_near(F::nll_loss(lp, idx({0, 2}), w, 2, "none"), {1, 0});
  expect_near(F::nll_loss(lp, idx({0, 2}), Tensor(), -100, "sum"), {3.5});
  expect_near(F::nll_loss(lp, idx({1, 1})), {1.75});
}

TEST(LossTest, PointwiseLosses) {
  Tensor a = tensor<float>({1, 2, 3}), b = tensor<float>({2, 2, 5});
  expect_near(F::mse_loss(a, b), {5.0 / 3});
  expect_near(F::mse_loss(a, b, "sum"), {5});
  expect_near(F::mse_loss(a, b, "none"), {1, 0, 4});
  expect_near(F::l1_loss(a, b), {1});
  Tensor x = tensor<float>({0.5f, 2, -0.25f}), z = zeros({3});
  expect_near(F::huber_loss(x, z, "none"), {0.125, 1.5, 0.03125});
  expect_near(F::huber_loss(x, z, "none", 2), {0.125, 2, 0.03125});
  expect_near(F::smooth_l1_loss(x, z, "none"), {0.125, 1.5, 0.03125});
  expect_near(F::smooth_l1_loss(x, z, "none", 0.5), {0.25, 1.75, 0.0625});
  expect_near(F::smooth_l1_loss(x, z, "none", 0), {0.5, 2, 0.25});
  // Broadcasting target and the mean of an empty loss.
  expect_near(F::mse_loss(tensor<float>({1, 3}), scalar_tensor(1.0f)), {2});
  EXPECT_TRUE(std::isnan(F::mse_loss(zeros({0}), zeros({0})).item<float>()));
  EXPECT_EQ(F::l1_loss(zeros({0}), zeros({0}), "sum").item<float>(), 0);
}

TEST(LossTest, BinaryCrossEntropy) {
  Tensor x = tensor<float>({0.5f, 0.9f, 0, 0}), t = tensor<float>({1, 0, 0, 1});
  expect_near(F::binary_cross_entropy(x, t, Tensor(), "none"),
              {std::log(2.0), -std::log(0.1), 0, 100}, 1e-5);
  expect_near(F::binary_cross_entropy(x, t, tensor<float>({2, 1, 1, 0}), "sum"),
              {2 * std::log(2.0) - std::log(0.1)}, 1e-5);
  Tensor l = tensor<float>({0, 2, 100, -100}), lt = tensor<float>({1, 0, 0, 1});
  expect_near(F::binary_cross_entropy_with_logits(l, lt, Tensor(), "none"),
              {std::log(2.0), 2.1269280, 100, 100}, 1e-5);
  expect_near(F::binary_cross_entropy_with_logits(l, lt, Tensor(), "none", tensor<float>({3})),
              {3 * std::log(2.0), 2.1269280, 100, 300}, 1e-4);
  expect_near(F::binary_cross_entropy_with_logits(l.slice(0, 0, 2), lt.slice(0, 0, 2),
                                                  tensor<float>({1, 0.5f})),
              {(std::log(2.0) + 0.5 * 2.1269280) / 2}, 1e-6);
}

TEST(LossTest, KlDiv) {
  Tensor in = tensor<float>({std::log(0.5f), std::log(0.5f)}, {1, 2});
  Tensor t = tensor<float>({0.25f, 0.75f}, {1, 2});
  expect_near(F::kl_div(in, t, "batchmean"), {0.1308120});
  expect_near(F::kl_div(in, t, "sum"), {0.1308120});
  expect_near(F::kl_div(in, t), {0.1308120 / 2});
  expect_near(F::kl_div(in, log(t), "batchmean", true), {0.1308120});
  expect_near(F::kl_div(in, tensor<float>({0, 1}, {1, 2}), "none"), {0, std::log(2.0)});
  expect_near(F::kl_div(in.reshape({2}), t.reshape({2}), "batchmean"), {0.1308120 / 2});
}

TEST(LossTest, HalfPrecisionKeepsDtype) {
  Tensor x = logits().to(DType::f16);
  Tensor l = F::cross_entropy(x, idx({2, 0}));
  EXPECT_EQ(l.dtype(), DType::f16);
  EXPECT_NEAR(l.item<float>(), 1.2803921, 2e-3);
  EXPECT_EQ(F::mse_loss(x, x).dtype(), DType::f16);
}

TEST(LossTest, Errors) {
  Tensor x = logits();
  expect_error([&] { F::cross_entropy(x, idx({1, 2, 0})); }, {"[cross_entropy]", "[3]", "[2, 3]"});
  expect_error(
      [&] {
        F::cross_entropy(x, idx({1, 3}));
      },
      {"[cross_entropy]", "target 3 is out of bounds", "3 classes"});
  expect_error([&] { F::cross_entropy(x, idx({-1, 0})); }, {"[cross_entropy]", "-1"});
  expect_error([&] { F::cross_entropy(x, zeros({2, 2})); }, {"[cross_entropy]", "[2, 2]"});
  expect_error([&] { F::cross_entropy(x, idx({1, 0}), ones({4})); }, {"[cross_entropy]", "weight"});
  expect_error(
      [&] {
        F::cross_entropy(x, idx({1, 0}), Tensor(), -100, "avg");
      },
      {"[cross_entropy]", "reduction"});
  expect_error(
      [&] {
        F::cross_entropy(x, idx({1, 0}), Tensor(), -100, "mean", 1.5);
      },
      {"[cross_entropy]", "label_smoothing"});
  expect_error([&] { F::cross_entropy(scalar_tensor(1.0f), scalar_tensor(0, DType::i64)); },
               {"[cross_entropy]"});
  expect_error([&] { F::nll_loss(x, idx({5, 0})); }, {"[nll_loss]", "out of bounds"});
  expect_error([&] { F::nll_loss(x, zeros({2})); }, {"[nll_loss]", "must be int64"});
  expect_error([&] { F::mse_loss(zeros({2}), zeros({3})); }, {"mse_loss"});
  expect_error([&] { F::mse_loss(tensor<int32_t>({1}), tensor<int32_t>({1})); }, {"[mse_loss]"});
  expect_error([&] { F::binary_cross_entropy(tensor<float>({1.5f}), tensor<float>({1})); },
               {"[binary_cross_entropy]", "between 0 and 1"});
  expect_error(
      [&] {
        F::binary_cross_entropy(zeros({2}), zeros({2, 1}));
      },
      {"[binary_cross_entropy]"});
  expect_error([&] { F::binary_cross_entropy_with_logits(zeros({2}), zeros({3})); },
               {"[binary_cross_entropy_with_logits]"});
  expect_error([&] { F::huber_loss(zeros({2}), zeros({2}), "mean", 0); }, {"[huber_loss]"});
  expect_error([&] { F::smooth_l1_loss(zeros({2}), zeros({2}), "mean", -1); },
               {"[smooth_l1_loss]"});
  expect_error([&] { F::kl_div(zeros({2}), zeros({2}), "batch"); }, {"[kl_div]", "batchmean"});
  expect_error([&] { F::mse_loss(zeros({2}), zeros({2}), "batchmean"); }, {"[mse_loss]"});
}
