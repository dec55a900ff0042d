// scaled_dot_product_attention and embedding against hand-computed values, plus errors.
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

void expect_close(const Tensor& got, const Tensor& want, double tol = 1e-5) {
  ASSERT_EQ(got.shape(), want.shape());
  expect_near(got, d(want), tol);
}

// softmax(q k^T * scale + bias) v, written out with plain ops.
Tensor manual_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias,
                        double scale) {
  Tensor s = matmul(q, k.mT()) * scale;
  if (bias.defined()) s = s + bias;
  Tensor e = exp(s - amax(s, {-1}, true));
  return matmul(e / sum(e, {-1}, true), v);
}

}  // namespace

TEST(AttentionTest, HandComputedCausal) {
  Tensor q = tensor<float>({1, 0, 0, 1}, {2, 2});
  Tensor v = tensor<float>({1, 2, 3, 4}, {2, 2});
  // Row 0 sees key 0 only; row 1 weighs scores {0, 1/sqrt(2)}.
  expect_near(F::scaled_dot_product_attention(q, q, v, Tensor(), 0, true),
              {1, 2, 2.3395231, 3.3395231});
}

TEST(AttentionTest, CausalMatchesManualSoftmax) {
  manual_seed(3);
  Tensor q = randn({2, 3, 4, 8}), k = randn({2, 3, 6, 8}), v = randn({2, 3, 6, 5});
  Tensor bias = where(tril(ones({4, 6}, DType::b8)), zeros({4, 6}), full({4, 6}, -INFINITY));
  Tensor want = manual_attention(q, k, v, bias, 1 / std::sqrt(8.0));
  Tensor got = F::scaled_dot_product_attention(q, k, v, Tensor(), 0, true);
  EXPECT_EQ(got.shape(), (Shape{2, 3, 4, 5}));
  expect_close(got, want);
  // The same lower triangle as a bool mask (true = attend).
  expect_close(F::scaled_dot_product_attention(q, k, v, tril(ones({4, 6}, DType::b8))), want);
}

TEST(AttentionTest, FloatMaskScaleAndBroadcastBatch) {
  manual_seed(4);
  Tensor q = randn({2, 3, 4}), k = randn({5, 4}), v = randn({5, 2});
  Tensor m = randn({3, 5});
  expect_close(F::scaled_dot_product_attention(q, k, v, m, 0, false, 0.3),
               manual_attention(q, k, v, m, 0.3));
  expect_close(F::scaled_dot_product_attention(q, k, v), manual_attention(q, k, v, Tensor(), 0.5));
}

TEST(AttentionTest, FullyMaskedRowGivesZeros) {
  Tensor q = ones({2, 2}), v = tensor<float>({1, 2, 3, 4}, {2, 2});
  Tensor mask = tensor<bool>({false, false, true, true}, {2, 2});
  expect_near(F::scaled_dot_product_attention(q, q, v, mask), {0, 0, 2, 3});
}

TEST(AttentionTest, DropoutOneGivesZeros) {
  Tensor q = ones({3, 2});
  expect_near(F::scaled_dot_product_attention(q, q, q, Tensor(), 1.0), {0, 0, 0, 0, 0, 0});
}

TEST(AttentionTest, HalfKeepsDtype) {
  Tensor q = tensor<float>({1, 0, 0, 1}, {2, 2});
  Tensor v = tensor<float>({1, 2, 3, 4}, {2, 2});
  Tensor h = F::scaled_dot_product_attention(q.to(DType::f16), q.to(DType::f16), v.to(DType::f16),
                                             Tensor(), 0, true);
  EXPECT_EQ(h.dtype(), DType::f16);
  expect_near(h, {1, 2, 2.3395231, 3.3395231}, 4e-3);
}

TEST(AttentionTest, Errors) {
  Tensor q = zeros({2, 4}), k = zeros({3, 4}), v = zeros({3, 5});
  expect_error(
      [&] {
        F::scaled_dot_product_attention(q, zeros({3, 5}), v);
      },
      {"[scaled_dot_product_attention]", "[2, 4]", "[3, 5]"});
  expect_error(
      [&] {
        F::scaled_dot_product_attention(q, k, zeros({2, 5}));
      },
      {"[scaled_dot_product_attention]"});
  expect_error([&] { F::scaled_dot_product_attention(zeros({4}), k, v); },
               {"[scaled_dot_product_attention]"});
  expect_error(
      [&] {
        F::scaled_dot_product_attention(q, k, v, ones({2, 3}, DType::b8), 0, true);
      },
      {"[scaled_dot_product_attention]", "is_causal"});
  expect_error(
      [&] {
        F::scaled_dot_product_attention(q, k, v, ones({2, 4}));
      },
      {"[scaled_dot_product_attention]", "attn_mask"});
  expect_error([&] { F::scaled_dot_product_attention(q, k, v, Tensor(), 2.0); },
               {"[scaled_dot_product_attention]", "dropout_p"});
  expect_error(
      [&] {
        F::scaled_dot_product_attention(q, k, v, ones({2, 3}, DType::i32));
      },
      {"[scaled_dot_product_attention]"});
}

// ---- embedding ----

TEST(EmbeddingTest, LooksUpRowsForAnyIndexShape) {
  Tensor w = arange(10).to(DType::f32).reshape({5, 2});
  Tensor e = F::embedding(tensor<int64_t>({0, 4, 2, 2}, {2, 2}), w);
  EXPECT_EQ(e.shape(), (Shape{2, 2, 2}));
  expect_near(e, {0, 1, 8, 9, 4, 5, 4, 5});
  Tensor s = F::embedding(scalar_tensor(3, DType::i64), w);
  EXPECT_EQ(s.shape(), (Shape{2}));
  expect_near(s, {6, 7});
  EXPECT_EQ(F::embedding(zeros({0, 3}, DType::i64), w).shape(), (Shape{0, 3, 2}));
  expect_near(F::embedding(tensor<int32_t>({1}), w), {2, 3});
  // padding_idx does not change the forward value.
  expect_near(F::embedding(tensor<int64_t>({1}), w, 1), {2, 3});
  expect_near(F::embedding(tensor<int64_t>({4}), w, -1), {8, 9});
}

TEST(EmbeddingTest, MaxNormRenormalizesRowsInPlace) {
  Tensor w = tensor<float>({3, 4, 0.3f, 0.4f, 6, 8}, {3, 2});
  Tensor e = F::embedding(tensor<int64_t>({0, 1, 0}), w, std::nullopt, 1.0);
  const double s = 1.0 / (5 + 1e-7);
  expect_near(e, {3 * s, 4 * s, 0.3, 0.4, 3 * s, 4 * s}, 1e-6);
  expect_near(w, {3 * s, 4 * s, 0.3, 0.4, 6, 8}, 1e-6);  // row 2 was not looked up
}

TEST(EmbeddingTest, Errors) {
  Tensor w = zeros({5, 2});
  expect_error(
      [&] {
        F::embedding(tensor<int64_t>({1, 7}), w);
      },
      {"[embedding]", "index 7 is out of range", "size 5"});
  expect_error([&] { F::embedding(tensor<int64_t>({-1}), w); }, {"[embedding]", "-1"});
  expect_error([&] { F::embedding(tensor<float>({1}), w); }, {"[embedding]", "integer"});
  expect_error([&] { F::embedding(tensor<int64_t>({1}), zeros({5})); }, {"[embedding]", "2-d"});
  expect_error([&] { F::embedding(tensor<int64_t>({1}), w, 5); }, {"[embedding]", "padding_idx"});
  expect_error([&] { F::embedding(tensor<int64_t>({1}), Tensor()); }, {"[embedding]"});
}
