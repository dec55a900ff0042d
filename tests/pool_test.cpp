// Pooling and interpolation: hand-computed values from torch's formulas, indices, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "ember/ember.h"
#include "op_table.h"

using namespace ember;
namespace F = ember::nn::functional;

namespace {

void expect_near(const Tensor& t, const std::vector<float>& want, float tol = 1e-5f) {
  auto got = t.to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

std::vector<int64_t> ints(const Tensor& t) { return t.to_vector<int64_t>(); }

template <typename Fn>
void expect_error(Fn f, std::vector<std::string> pieces) {
  try {
    f();
    ADD_FAILURE() << "no error thrown";
  } catch (const Error& e) {
    for (const auto& p : pieces)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

Tensor ramp(int64_t n, Shape s) { return arange(0, n).to(DType::f32).reshape(std::move(s)); }

}  // namespace

TEST(PoolTest, MaxPool2dValuesAndIndices) {
  Tensor x = ramp(16, {1, 1, 4, 4});
  auto [v, i] = F::max_pool2d_with_indices(x, {2});
  EXPECT_EQ(v.shape(), (Shape{1, 1, 2, 2}));
  expect_near(v, {5, 7, 13, 15});
  EXPECT_EQ(ints(i), (std::vector<int64_t>{5, 7, 13, 15}));
  EXPECT_EQ(i.dtype(), DType::i64);
  // Kernel 3, stride 2, padding 1 on a decreasing ramp: padding never wins.
  Tensor neg = -ramp(16, {1, 1, 4, 4}) - 1;
  auto [v2, i2] = F::max_pool2d_with_indices(neg, {3}, {2}, {1});
  expect_near(v2, {-1, -2, -5, -6});
  EXPECT_EQ(ints(i2), (std::vector<int64_t>{0, 1, 4, 5}));
  expect_near(F::max_pool2d(x, {3}, {2}, {1}), {5, 7, 13, 15});
}

TEST(PoolTest, MaxPool1dCeilModeDilationAndAllNegInf) {
  Tensor x = ramp(5, {1, 1, 5});
  expect_near(F::max_pool1d(x, {2}), {1, 3});
  auto [v, i] = F::max_pool1d_with_indices(x, {2}, {}, {0}, {1}, true);
  expect_near(v, {1, 3, 4});
  EXPECT_EQ(ints(i), (std::vector<int64_t>{1, 3, 4}));
  expect_near(F::max_pool1d(ramp(7, {1, 1, 7}), {2}, {1}, {0}, {2}), {2, 3, 4, 5, 6});
  // All -inf: torch reports the window's first in-bounds element, never a padding position.
  const float inf = std::numeric_limits<float>::infinity();
  auto [v3, i3] = F::max_pool1d_with_indices(tensor<float>({-inf, -inf}, {1, 1, 2}), {2}, {1}, {1});
  EXPECT_EQ(v3.to_vector<float>(), (std::vector<float>{-inf, -inf, -inf}));
  EXPECT_EQ(ints(i3), (std::vector<int64_t>{0, 0, 1}));
}

TEST(PoolTest, MaxPoolIntegersUnbatchedAnd3d) {
  Tensor x = arange(0, 16).to(DType::i32).reshape({1, 4, 4});  // unbatched [C, H, W]
  Tensor v = F::max_pool2d(x, {2});
  EXPECT_EQ(v.shape(), (Shape{1, 2, 2}));
  EXPECT_EQ(v.dtype(), DType::i32);
  EXPECT_EQ(v.to_vector<int32_t>(), (std::vector<int32_t>{5, 7, 13, 15}));
  // Integer padding uses the dtype's lowest value.
  Tensor u = tensor<uint8_t>({0, 0, 0}, {1, 1, 3});
  EXPECT_EQ(F::max_pool1d(u, {3}, {1}, {1}).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 0, 0}));
  auto [v3, i3] = F::max_pool3d_with_indices(ramp(8, {1, 1, 2, 2, 2}), {2});
  expect_near(v3, {7});
  EXPECT_EQ(ints(i3), (std::vector<int64_t>{7}));
}

TEST(PoolTest, AvgPoolCountIncludePadAtBorders) {
  Tensor x = arange(1, 10).to(DType::f32).reshape({1, 1, 3, 3});
  Tensor a = F::avg_pool2d(x, {3}, {1}, {1});
  expect_near(a,
              {12 / 9.f, 21 / 9.f, 16 / 9.f, 27 / 9.f, 5, 33 / 9.f, 24 / 9.f, 39 / 9.f, 28 / 9.f});
  Tensor b = F::avg_pool2d(x, {3}, {1}, {1}, false, false);
  expect_near(b, {3, 3.5f, 4, 4.5f, 5, 5.5f, 6, 6.5f, 7});
  expect_near(F::avg_pool2d(ones({1, 1, 2, 2}), {2}, {}, {0}, false, true, 3), {4 / 3.f});
}

TEST(PoolTest, AvgPoolCeilModeClipsToPaddedInput) {
  Tensor x = tensor<float>({1.f, 2.f, 3.f, 4.f}, {1, 1, 4});
  // Windows start at -1, 1, 3; the last is clipped to the padded end (size 2).
  expect_near(F::avg_pool1d(x, {3}, {2}, {1}, true, true), {1, 3, 2});
  expect_near(F::avg_pool1d(x, {3}, {2}, {1}, true, false), {1.5f, 3, 4});
  expect_near(F::avg_pool1d(x, {3}, {2}, {1}, false, true), {1, 3});
  expect_near(F::avg_pool3d(ones({1, 1, 2, 2, 2}), {2}), {1});
}

TEST(PoolTest, AdaptivePools) {
  Tensor x = tensor<float>({1.f, 2.f, 3.f, 4.f, 5.f}, {1, 1, 5});
  expect_near(F::adaptive_avg_pool1d(x, {3}), {1.5f, 3, 4.5f});
  Tensor y = arange(1, 10).to(DType::f32).reshape({1, 1, 3, 3});
  auto [v, i] = F::adaptive_max_pool2d_with_indices(y, {2});
  expect_near(v, {5, 6, 8, 9});
  EXPECT_EQ(ints(i), (std::vector<int64_t>{4, 5, 7, 8}));
  expect_near(F::adaptive_avg_pool2d(y, {1}), {5});
  expect_near(F::adaptive_avg_pool2d(y, {1, 3}), {4, 5, 6});
  expect_near(F::adaptive_avg_pool3d(ones({1, 1, 3, 3, 3}), {2}), {1, 1, 1, 1, 1, 1, 1, 1});
  EXPECT_EQ(F::adaptive_max_pool1d(y.reshape({1, 9}), {3}).shape(), (Shape{1, 3}));
}

TEST(PoolTest, ErrorsNameTheOp) {
  expect_error(
      [] {
        F::max_pool2d(zeros({2, 3}), {2});
      },
      {"[max_pool2d] expected a 3-d (unbatched) or 4-d (batched) input, got [2, 3]"});
  expect_error(
      [] {
        F::max_pool2d(zeros({1, 1, 4, 4}), {3}, {1}, {2});
      },
      {"[max_pool2d]", "pad should be at most half of kernel size"});
  expect_error([] { F::max_pool2d(zeros({1, 1, 2, 2}), {3}); }, {"[max_pool2d]", "too small"});
  // Window sizes past a C int overflowed the output size or ran oneDNN for hours.
  expect_error(
      [] {
        F::max_pool2d(zeros({2, 2, 7, 6}), {int64_t(1) << 62}, {1}, {int64_t(1) << 61});
      },
      {"[max_pool2d]", "kernel_size must be < 2^31"});
  expect_error(
      [] {
        F::avg_pool2d(zeros({1, 1, 4, 4}), {2}, {int64_t(1) << 31});
      },
      {"[avg_pool2d]", "stride must be < 2^31"});
  expect_error(
      [] {
        F::max_pool2d(zeros({1, 1, 4, 4}, DType::b8), {2});
      },
      {"[max_pool2d]", "bool"});
  expect_error(
      [] {
        F::avg_pool2d(zeros({1, 1, 4, 4}, DType::i64), {2});
      },
      {"[avg_pool2d]", "floating-point"});
  expect_error(
      [] {
        F::avg_pool2d(zeros({1, 1, 4, 4}), {2}, {}, {0}, false, true, 0);
      },
      {"[avg_pool2d]", "divisor_override"});
  expect_error(
      [] {
        F::max_pool3d(zeros({1, 1, 4, 4, 4}), {2, 2});
      },
      {"[max_pool3d]", "kernel_size must have 1 or 3 values"});
  expect_error([] { F::avg_pool1d(zeros({1, 0, 4}), {2}); }, {"[avg_pool1d]", "non-empty"});
  expect_error([] { F::adaptive_avg_pool2d(zeros({4}), {2}); },
               {"[adaptive_avg_pool2d] expected a 3-d"});
  expect_error([] { F::adaptive_max_pool2d(Tensor(), {2}); }, {"[adaptive_max_pool2d]"});
}

TEST(InterpolateTest, BilinearAlignCorners) {
  Tensor x = tensor<float>({1.f, 2.f, 3.f, 4.f}, {1, 1, 2, 2});
  // align_corners=false: src = max(0, (dst + 0.5) / 2 - 0.5) = 0, 0.25, 0.75, 1.25 (clamped).
  expect_near(
      F::interpolate(x, {4, 4}, {}, "bilinear", false),
      {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4});
  // align_corners=true: src = dst / 3.
  expect_near(F::interpolate(x, {4}, {}, "bilinear", true),
              {1, 4 / 3.f, 5 / 3.f, 2, 5 / 3.f, 2, 7 / 3.f, 8 / 3.f, 7 / 3.f, 8 / 3.f, 3, 10 / 3.f,
               3, 10 / 3.f, 11 / 3.f, 4});
  // scale_factor gives the same sizes and (here) the same mapping.
  expect_near(
      F::interpolate(x, {}, {2.0}, "bilinear"),
      {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4});
}

TEST(InterpolateTest, ScaleFactorVersusRecomputedScale) {
  Tensor x = ramp(4, {1, 1, 4});
  // out = floor(4 * 1.7) = 6. The kernel maps with 1 / 1.7 unless the scale is recomputed (4/6).
  Tensor a = F::interpolate(x, {}, {1.7}, "linear");
  Tensor b = F::interpolate(x, {}, {1.7}, "linear", std::nullopt, true);
  ASSERT_EQ(a.shape(), (Shape{1, 1, 6}));
  const float s = float(1.0 / 1.7);
  std::vector<float> want_a, want_b;
  for (int i = 0; i < 6; ++i) {
    want_a.push_back(std::min(std::max(0.f, s * (i + 0.5f) - 0.5f), 3.f));
    want_b.push_back(std::min(std::max(0.f, (4.f / 6.f) * (i + 0.5f) - 0.5f), 3.f));
  }
  expect_near(a, want_a);
  expect_near(b, want_b);
  EXPECT_NEAR(a.to_vector<float>()[5], 2.7352941f, 1e-5);
  EXPECT_NEAR(b.to_vector<float>()[5], 3.f, 1e-6);
}

TEST(InterpolateTest, NearestModes) {
  Tensor x = tensor<float>({1.f, 2.f, 3.f, 4.f}, {1, 1, 2, 2});
  expect_near(F::interpolate(x, {}, {2.0}), {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  Tensor r = tensor<int64_t>({10, 20, 30}, {1, 1, 3});
  // Legacy nearest: floor(dst * 1.5) = 0, 1; nearest-exact: floor((dst + 0.5) * 1.5) = 0, 2.
  EXPECT_EQ(ints(F::interpolate(r, {2})), (std::vector<int64_t>{10, 20}));
  EXPECT_EQ(ints(F::interpolate(r, {2}, {}, "nearest-exact")), (std::vector<int64_t>{10, 30}));
  // Upsampling 3 -> 5: floor(dst * 0.6) = 0 0 1 1 2; exact: floor((dst + .5) * .6) = 0 0 1 2 2.
  EXPECT_EQ(ints(F::interpolate(r, {5})), (std::vector<int64_t>{10, 10, 20, 20, 30}));
  EXPECT_EQ(ints(F::interpolate(r, {5}, {}, "nearest-exact")),
            (std::vector<int64_t>{10, 10, 20, 30, 30}));
}

TEST(InterpolateTest, BicubicTrilinearArea) {
  // 3 -> 5 with align_corners: src = dst / 2; at t = 0.5 the weights are
  // (-0.09375, 0.59375, 0.59375, -0.09375) with the taps clamped at the border.
  Tensor x = tensor<float>({1.f, 2.f, 4.f}, {1, 1, 1, 3});
  expect_near(F::interpolate(x, {1, 5}, {}, "bicubic", true), {1, 1.3125f, 2, 3.09375f, 4});
  // Bicubic keeps constants constant (the weights sum to 1).
  expect_near(F::interpolate(full({1, 1, 2, 3}, 2.5f), {3, 7}, {}, "bicubic"),
              std::vector<float>(21, 2.5f));
  // Trilinear with D = H = 1 is linear along W.
  Tensor w = tensor<float>({1.f, 3.f}, {1, 1, 1, 1, 2});
  expect_near(F::interpolate(w, {1, 1, 4}, {}, "trilinear"), {1, 1.5f, 2.5f, 3});
  expect_near(F::interpolate(w.reshape({1, 1, 2}), {4}, {}, "linear"), {1, 1.5f, 2.5f, 3});
  expect_near(F::interpolate(ramp(4, {1, 1, 4}), {2}, {}, "area"), {0.5f, 2.5f});
}

TEST(InterpolateTest, ErrorsNameTheOp) {
  Tensor x = zeros({1, 1, 2, 2});
  expect_error([&] { F::interpolate(x, {4}, {}, "linear"); },
               {"[interpolate] Got 4D input, but linear mode needs 3D input"});
  expect_error([&] { F::interpolate(x, {4}, {2.0}); }, {"[interpolate]", "only one of"});
  expect_error([&] { F::interpolate(x); }, {"[interpolate]", "either size or scale_factor"});
  expect_error([&] { F::interpolate(x, {4}, {}, "nearest", true); },
               {"[interpolate]", "align_corners"});
  expect_error([&] { F::interpolate(x, {4}, {}, "cubic"); }, {"[interpolate]", "unknown mode"});
  expect_error([&] { F::interpolate(zeros({2, 2}), {4}); }, {"[interpolate]", "3-d, 4-d and 5-d"});
  expect_error([&] { F::interpolate(x, {4, 4, 4}); }, {"[interpolate]", "spatial dimensions"});
  expect_error([&] { F::interpolate(x, {}, {0.2}); }, {"[interpolate]", "greater than 0"});
  expect_error([&] { F::interpolate(x.to(DType::i32), {4}, {}, "bilinear"); },
               {"[interpolate]", "floating-point"});
}

// ---- max pooling with -inf and NaN windows, as torch 1.13 on cpu (values from torch) ----

TEST(PoolTest, MaxPoolAllMinusInfWindowSendsItsGradientToItsFirstElement) {
  const float inf = std::numeric_limits<float>::infinity();
  for (const Device dev : {Device::cpu(), Device::ref()}) {
    SCOPED_TRACE(dev.str());
    for (bool with_indices : {true, false}) {
      Tensor x = tensor<float>({-inf, -inf, 1, -inf, -inf, 2, 3, 4, 5}, {1, 1, 3, 3})
                     .to(dev)
                     .requires_grad_();
      Tensor y, idx;
      if (with_indices) {
        std::tie(y, idx) = F::max_pool2d_with_indices(x, {2}, {2}, {1});
        EXPECT_EQ(ints(idx), (std::vector<int64_t>{0, 2, 6, 8}));
      } else {
        y = F::max_pool2d(x, {2}, {2}, {1});
      }
      EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{-inf, 1, 3, 5}));
      y.backward(tensor<float>({1, 2, 3, 4}, {1, 1, 2, 2}).to(dev));
      expect_near(x.grad(), {1, 0, 2, 0, 0, 0, 3, 0, 4});
    }
    Tensor a = full({1, 1, 2, 2}, -inf, TensorOptions(DType::f32, dev)).requires_grad_();
    auto [ya, ia] = F::max_pool2d_with_indices(a, {2}, {1}, {1});
    EXPECT_EQ(ints(ia), (std::vector<int64_t>{0, 0, 1, 0, 0, 1, 2, 2, 3}));
    ya.backward(arange(1, 10, 1, TensorOptions(DType::f32, dev)).reshape({1, 1, 3, 3}));
    expect_near(a.grad(), {12, 9, 15, 9});
    Tensor b = full({1, 1, 4}, -inf, TensorOptions(DType::f32, dev)).requires_grad_();
    Tensor yb = F::max_pool1d(b, {3}, {2}, {1});
    yb.backward(tensor<float>({1, 2}, {1, 1, 2}).to(dev));
    expect_near(b.grad(), {1, 2, 0, 0});
  }
}

TEST(PoolTest, MaxPoolReportsTheLastNaNOfAWindowAsTorch) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const Device dev : {Device::cpu(), Device::ref()}) {
    SCOPED_TRACE(dev.str());
    const Tensor x2 = tensor<float>({nan, 1, nan, 2, 3, nan, 4, 5}, {1, 1, 2, 4}).to(dev);
    auto [y2, i2] = F::max_pool2d_with_indices(x2, {2});
    EXPECT_TRUE(std::isnan(y2.to_vector<float>()[0]) && std::isnan(y2.to_vector<float>()[1]));
    EXPECT_EQ(ints(i2), (std::vector<int64_t>{5, 2}));
    EXPECT_EQ(ints(std::get<1>(F::adaptive_max_pool2d_with_indices(x2, {1}))),
              (std::vector<int64_t>{5}));
    EXPECT_EQ(ints(std::get<1>(F::adaptive_max_pool2d_with_indices(x2, {1, 2}))),
              (std::vector<int64_t>{5, 2}));
    for (bool adaptive : {false, true}) {
      Tensor x1 = tensor<float>({1, nan, 3, nan, 2}, {1, 1, 5}).to(dev).requires_grad_();
      auto [y1, i1] = adaptive ? F::adaptive_max_pool1d_with_indices(x1, {1})
                               : F::max_pool1d_with_indices(x1, {5});
      EXPECT_EQ(ints(i1), (std::vector<int64_t>{3}));
      y1.backward(ones_like(y1));
      expect_near(x1.grad(), {0, 0, 0, 1, 0});
    }
    Tensor x0 = tensor<float>({1, nan, 3, nan, 2}, {1, 1, 5}).to(dev).requires_grad_();
    F::max_pool1d(x0, {5}).backward(ones({1, 1, 1}).to(dev));  // no indices asked for
    expect_near(x0.grad(), {0, 0, 0, 1, 0});
    const Tensor x3 = tensor<float>({nan, 1, nan, 2, 3, nan, 4, 5}, {1, 1, 2, 2, 2}).to(dev);
    EXPECT_EQ(ints(std::get<1>(F::max_pool3d_with_indices(x3, {2}))), (std::vector<int64_t>{5}));
    EXPECT_EQ(ints(std::get<1>(F::adaptive_max_pool3d_with_indices(x3, {1}))),
              (std::vector<int64_t>{5}));
  }
}
