// Convolutions: hand-computed values, the conv / conv_transpose adjoint identity, errors.
#include <gtest/gtest.h>

#include <string>

#include "ember/ember.h"
#include "op_table.h"

using namespace ember;
namespace F = ember::nn::functional;

namespace {

std::vector<float> vals(const Tensor& t) { return t.to_vector<float>(); }

void expect_near(const Tensor& t, const std::vector<float>& want, float tol = 1e-5f) {
  auto got = vals(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

Tensor x3x3() { return arange(1, 10).to(DType::f32).reshape({1, 1, 3, 3}); }

// Expects `f` to throw ember::Error whose message contains every piece.
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

}  // namespace

TEST(ConvTest, Conv2dAllOnesKernel) {
  Tensor w = ones({1, 1, 2, 2});
  Tensor y = F::conv2d(x3x3(), w);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2, 2}));
  expect_near(y, {12, 16, 24, 28});
}

TEST(ConvTest, Conv2dPaddingStrideDilation) {
  Tensor w = ones({1, 1, 2, 2});
  Tensor p = F::conv2d(x3x3(), w, {}, {1}, {1});
  EXPECT_EQ(p.shape(), (Shape{1, 1, 4, 4}));
  expect_near(p, {1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9});
  // Stride 2 keeps every other window of the padded result.
  expect_near(F::conv2d(x3x3(), w, {}, {2}, {1}), {1, 5, 11, 28});
  // Dilation 2: the taps are the four corners.
  expect_near(F::conv2d(x3x3(), w, {}, {1}, {0}, {2}), {20});
  // Per-dim options: stride (1, 2), padding (0, 1).
  expect_near(F::conv2d(x3x3(), w, {}, {1, 2}, {0, 1}), {5, 16, 11, 28});
}

TEST(ConvTest, Conv2dGroupsAndBias) {
  Tensor x = cat({ones({1, 1, 2, 2}), full({1, 1, 2, 2}, 2.0f)}, 1);
  Tensor w = tensor<float>({3.f, 5.f}, {2, 1, 1, 1});
  Tensor b = tensor<float>({1.f, -1.f});
  Tensor y = F::conv2d(x, w, b, {1}, {0}, {1}, 2);
  EXPECT_EQ(y.shape(), (Shape{1, 2, 2, 2}));
  expect_near(y, {4, 4, 4, 4, 9, 9, 9, 9});
  // groups = 1 sums both channels: 3*1 + 5*2 = 13.
  Tensor w1 = tensor<float>({3.f, 5.f}, {1, 2, 1, 1});
  expect_near(F::conv2d(x, w1), {13, 13, 13, 13});
}

TEST(ConvTest, Conv1dSameAndValidPadding) {
  Tensor x = arange(1, 6).to(DType::f32).reshape({1, 1, 5});
  Tensor w = tensor<float>({1.f, 0.f, -1.f}, {1, 1, 3});
  expect_near(F::conv1d(x, w), {-2, -2, -2});
  expect_near(F::conv1d(x, w, {}, {1}, "valid"), {-2, -2, -2});
  expect_near(F::conv1d(x, w, {}, {1}, "same"), {-2, -2, -2, -2, 4});
  // Even kernel: the extra zero goes on the right, as torch.
  Tensor w2 = tensor<float>({1.f, 2.f}, {1, 1, 2});
  expect_near(F::conv1d(x, w2, {}, {1}, "same"), {5, 8, 11, 14, 5});
  // Dilated "same": total padding 2 * (2 - 1) = 2, one on each side.
  expect_near(F::conv1d(x, w2, {}, {1}, "same", {2}), {4, 7, 10, 13, 4});
}

TEST(ConvTest, UnbatchedInputAndConv3d) {
  Tensor y = F::conv2d(x3x3().squeeze(0), ones({1, 1, 2, 2}));
  EXPECT_EQ(y.shape(), (Shape{1, 2, 2}));
  expect_near(y, {12, 16, 24, 28});
  Tensor z = F::conv3d(ones({1, 1, 2, 3, 3}), ones({2, 1, 2, 2, 2}), tensor<float>({0.f, 1.f}));
  EXPECT_EQ(z.shape(), (Shape{1, 2, 1, 2, 2}));
  expect_near(z, {8, 8, 8, 8, 9, 9, 9, 9});
}

TEST(ConvTest, ConvTransposeKnownCases) {
  Tensor x = tensor<float>({1.f, 2.f}, {1, 1, 2});
  Tensor w = ones({1, 1, 3});
  expect_near(F::conv_transpose1d(x, w, {}, {2}), {1, 1, 3, 2, 2});
  expect_near(F::conv_transpose1d(x, w, {}, {2}, {1}), {1, 3, 2});
  expect_near(F::conv_transpose1d(x, w, {}, {2}, {1}, {1}), {1, 3, 2, 2});
  Tensor x2 = tensor<float>({1.f, 2.f, 3.f, 4.f}, {1, 1, 2, 2});
  Tensor y = F::conv_transpose2d(x2, ones({1, 1, 2, 2}), tensor<float>({0.5f}));
  EXPECT_EQ(y.shape(), (Shape{1, 1, 3, 3}));
  expect_near(y, {1.5f, 3.5f, 2.5f, 4.5f, 10.5f, 6.5f, 3.5f, 7.5f, 4.5f});
  // Dilation 2 spreads the taps: out length (2 - 1) + 2 * 2 + 1 = 6.
  expect_near(F::conv_transpose1d(x, w, {}, {1}, {0}, {0}, 1, {2}), {1, 2, 1, 2, 1, 2});
}

// <conv(x, w), y> == <x, conv_transpose(y, w)> for any x, y: conv_transpose is the adjoint.
TEST(ConvTest, ConvTransposeIsTheAdjointOfConv) {
  Tensor x = ember::testing::uniform({2, 4, 7, 6}, DType::f64, 1);
  Tensor w = ember::testing::uniform({6, 2, 3, 2}, DType::f64, 2);
  Tensor cx = F::conv2d(x, w, {}, {2, 1}, {1, 0}, {1, 2}, 2);
  Tensor y = ember::testing::uniform(cx.shape(), DType::f64, 3);
  // output_padding recovers the rows the strided conv dropped.
  const int64_t extra = 7 - ((cx.size(2) - 1) * 2 - 2 + 3);
  Tensor ty = F::conv_transpose2d(y, w, {}, {2, 1}, {1, 0}, {extra, 0}, 2, {1, 2});
  ASSERT_EQ(ty.shape(), x.shape());
  EXPECT_NEAR((cx * y).sum().item<double>(), (x * ty).sum().item<double>(), 1e-9);
}

TEST(ConvTest, UnfoldFoldRoundTrip) {
  Tensor cols = F::unfold(x3x3(), {2});
  EXPECT_EQ(cols.shape(), (Shape{1, 4, 4}));
  expect_near(cols, {1, 2, 4, 5, 2, 3, 5, 6, 4, 5, 7, 8, 5, 6, 8, 9});
  // fold sums overlapping taps: the centre is covered by all four windows.
  Tensor back = F::fold(cols, {3, 3}, {2});
  expect_near(back, {1, 4, 3, 8, 20, 12, 7, 16, 9});
}

TEST(ConvTest, HalfPrecisionMatchesFloat) {
  Tensor x = ember::testing::uniform({1, 2, 5, 5}, DType::f32, 7);
  Tensor w = ember::testing::uniform({3, 2, 3, 3}, DType::f32, 8);
  for (DType dt : {DType::f16, DType::bf16}) {
    // Same (rounded) inputs in f32: only accumulation and the final rounding differ.
    Tensor want = F::conv2d(x.to(dt).to(DType::f32), w.to(dt).to(DType::f32), {}, {1}, {1});
    Tensor got = F::conv2d(x.to(dt), w.to(dt), {}, {1}, {1});
    EXPECT_EQ(got.dtype(), dt);
    EXPECT_EQ(ember::testing::compare(want.to(dt), got, 2.0), "");
  }
}

TEST(ConvTest, ErrorsNameTheOpAndShapes) {
  expect_error(
      [] {
        F::conv2d(zeros({1, 3, 8, 8}), zeros({8, 4, 3, 3}));
      },
      {"[conv2d] input channels 3 do not match weight's in_channels 4 (input [1, 3, 8, "
       "8], weight [8, 4, 3, 3])"});
  expect_error(
      [] {
        F::conv2d(zeros({1, 4, 8, 8}), zeros({6, 1, 3, 3}), {}, {1}, {0}, {1}, 4);
      },
      {"[conv2d]", "out_channels 6 must be divisible by groups 4"});
  expect_error(
      [] {
        F::conv2d(zeros({1, 4, 8, 8}), zeros({4, 4, 3, 3}), {}, {1}, {0}, {1}, 0);
      },
      {"[conv2d]", "groups must be >= 1"});
  expect_error(
      [] {
        F::conv2d(zeros({1, 1, 2, 2}), zeros({1, 1, 3, 3}));
      },
      {"[conv2d]", "larger than the padded input"});
  expect_error(
      [] {
        F::conv2d(zeros({2, 3}), zeros({1, 1, 3, 3}));
      },
      {"[conv2d] expected a 3-d (unbatched) or 4-d (batched) input, got [2, 3]"});
  expect_error(
      [] {
        F::conv1d(zeros({1, 1, 4}), zeros({1, 1, 3, 3}));
      },
      {"[conv1d]", "3-d weight"});
  expect_error(
      [] {
        F::conv2d(zeros({1, 1, 4, 4}, DType::i32), zeros({1, 1, 3, 3}, DType::i32));
      },
      {"[conv2d]", "floating-point"});
  expect_error(
      [] {
        F::conv2d(zeros({1, 1, 4, 4}), zeros({1, 1, 3, 3}, DType::f64));
      },
      {"[conv2d]", "should be the same"});
  expect_error(
      [] {
        F::conv2d(zeros({1, 1, 4, 4}), zeros({2, 1, 3, 3}), zeros({3}));
      },
      {"[conv2d]", "bias"});
  expect_error(
      [] {
        F::conv2d(zeros({1, 1, 4, 4}), zeros({1, 1, 3, 3}), {}, {2}, "same");
      },
      {"[conv2d]", "strided"});
  expect_error(
      [] {
        F::conv2d(zeros({1, 1, 4, 4}), zeros({1, 1, 3, 3}), {}, {1}, "full");
      },
      {"[conv2d]", "'full'"});
  expect_error(
      [] {
        F::conv2d(zeros({1, 1, 4, 4}), zeros({1, 1, 3, 3}), {}, {1, 1, 1});
      },
      {"[conv2d]", "stride must have 1 or 2 values"});
  expect_error(
      [] {
        F::conv3d(zeros({1, 1, 4, 4, 4}), zeros({1, 1, 3, 3, 3}), {}, {0});
      },
      {"[conv3d]", "stride must be >= 1"});
  expect_error([] { F::conv2d(Tensor(), zeros({1, 1, 3, 3})); }, {"[conv2d]", "undefined"});
  expect_error(
      [] {
        F::conv_transpose2d(zeros({1, 3, 4, 4}), zeros({2, 1, 3, 3}));
      },
      {"[conv_transpose2d] input channels 3 do not match weight's in_channels 2"});
  expect_error(
      [] {
        F::conv_transpose1d(zeros({1, 1, 4}), zeros({1, 1, 3}), {}, {1}, {0}, {1});
      },
      {"[conv_transpose1d]", "output padding must be smaller"});
  expect_error(
      [] {
        F::conv_transpose1d(zeros({1, 1, 1}), zeros({1, 1, 1}), {}, {1}, {1});
      },
      {"[conv_transpose1d]", "too small"});
  expect_error([] { F::fold(zeros({1, 4, 3}), {3, 3}, {2}); }, {"[fold]", "blocks"});
}

TEST(ConvTest, LargeBatchRunsInChunksWithTheSameResultAndGradient) {
  // Columns of 144 x 3,844 f32 per image (2.2 MB): 33 images pass the 64 MiB bound, so the
  // composite path (ref) splits the batch; each image must equal its own convolution.
  manual_seed(5);
  const Device dev = Device::ref();
  Tensor x = randn({33, 16, 64, 64}, TensorOptions(DType::f32, dev)).requires_grad_();
  Tensor w = randn({8, 16, 3, 3}, TensorOptions(DType::f32, dev));
  Tensor y = F::conv2d(x, w);
  ASSERT_EQ(y.shape(), (Shape{33, 8, 62, 62}));
  for (int64_t i : {0, 29, 30, 32}) {
    Tensor yi = F::conv2d(x.detach().narrow(0, i, 1), w);
    EXPECT_EQ(ember::testing::compare(yi, y.detach().narrow(0, i, 1)), "") << "image " << i;
  }
  y.sum().backward();
  Tensor xi = x.detach().narrow(0, 31, 1).clone().requires_grad_();
  F::conv2d(xi, w).sum().backward();
  EXPECT_EQ(ember::testing::compare(xi.grad(), x.grad().narrow(0, 31, 1)), "");
}
