// PyTorch's type promotion (torch.result_type / torch.promote_types), hand-checked cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ember/ember.h"

using namespace ember;

TEST(PromotionTest, PromoteTypesTable) {
  EXPECT_EQ(promote_types(DType::u8, DType::i8), DType::i16);
  EXPECT_EQ(promote_types(DType::i32, DType::i64), DType::i64);
  EXPECT_EQ(promote_types(DType::b8, DType::u8), DType::u8);
  EXPECT_EQ(promote_types(DType::i64, DType::f16), DType::f16);
  EXPECT_EQ(promote_types(DType::f16, DType::bf16), DType::f32);
  EXPECT_EQ(promote_types(DType::f32, DType::f64), DType::f64);
  EXPECT_EQ(promote_types(DType::u16, DType::i16), DType::i32);
  EXPECT_EQ(promote_types(DType::u32, DType::i8), DType::i64);
}

TEST(PromotionTest, ScalarsAndZeroDimTensorsDoNotWidenDimensionedTensors) {
  const Tensor i32 = ones({2}, DType::i32), f16 = ones({2}, DType::f16), u8 = ones({2}, DType::u8);
  EXPECT_EQ((i32 + 1).dtype(), DType::i32);
  EXPECT_EQ((i32 * 0.5).dtype(), DType::f32);
  EXPECT_EQ((f16 * 2.5).dtype(), DType::f16);
  EXPECT_EQ((u8 + ones({}, DType::i64)).dtype(), DType::u8);   // 0-d int does not widen
  EXPECT_EQ((u8 + ones({}, DType::f64)).dtype(), DType::f64);  // higher category: its own dtype
  EXPECT_EQ((f16 + ones({}, DType::f64)).dtype(), DType::f16);
  EXPECT_EQ((ones({}, DType::i32) + ones({}, DType::i64)).dtype(), DType::i64);
  EXPECT_EQ((i32 / i32).dtype(), DType::f32);  // true division
  EXPECT_EQ(div(i32, i32, "floor").dtype(), DType::i32);
  EXPECT_EQ(exp(i32).dtype(), DType::f32);
  EXPECT_EQ(abs(i32).dtype(), DType::i32);
  EXPECT_EQ(lt(i32, 0.5).dtype(), DType::b8);
  EXPECT_EQ((tensor<bool>({true}) + tensor<bool>({true})).dtype(), DType::b8);
  EXPECT_EQ((tensor<bool>({true}) + 1).dtype(), DType::i64);
}

TEST(PromotionTest, PyTorchArithmeticSemantics) {
  const Tensor a = tensor<int32_t>({7, -7, 7, -7}), b = tensor<int32_t>({2, 2, -2, -2});
  EXPECT_EQ(remainder(a, b).to_vector<int>(), (std::vector<int>{1, 1, -1, -1}));
  EXPECT_EQ(fmod(a, b).to_vector<int>(), (std::vector<int>{1, -1, 1, -1}));
  EXPECT_EQ(div(a, b, "floor").to_vector<int>(), (std::vector<int>{3, -4, -4, 3}));
  EXPECT_EQ(div(a, b, "trunc").to_vector<int>(), (std::vector<int>{3, -3, -3, 3}));
  EXPECT_EQ(round(tensor<float>({0.5f, 1.5f, 2.5f, -0.5f})).to_vector<float>(),
            (std::vector<float>{0, 2, 2, -0.f}));
  const Tensor fa = tensor<float>({5.5f, -5.5f}), fb = tensor<float>({2.f, 2.f});
  EXPECT_EQ(remainder(fa, fb).to_vector<float>(), (std::vector<float>{1.5f, 0.5f}));
  EXPECT_EQ(div(fa, fb, "floor").to_vector<float>(), (std::vector<float>{2.f, -3.f}));
  EXPECT_TRUE(std::isnan(maximum(tensor<float>({NAN}), tensor<float>({1.f})).item<float>()));
  EXPECT_EQ(bitwise_right_shift(tensor<int8_t>({-16}), tensor<int8_t>({2})).item<int>(), -4);
  EXPECT_EQ(bitwise_left_shift(tensor<int32_t>({1}), tensor<int32_t>({40})).item<int>(), 0);
  EXPECT_EQ(pow(tensor<int64_t>({3}), tensor<int64_t>({4})).item<int64_t>(), 81);
  EXPECT_NEAR(erfinv(tensor<double>({0.5})).item<double>(), 0.4769362762044699, 1e-12);
}

// Integer ops with a Python-style scalar on either side; values and dtypes from torch 1.13
// (`t >> 1`, `1 << t`, `torch.bitwise_left_shift(3, t)`, `t | 300`, `b & True`...).
TEST(PromotionTest, BitwiseAndShiftScalarsMatchTorch) {
  auto i64s = [](const Tensor& t) { return t.to_vector<int64_t>(); };
  using V = std::vector<int64_t>;
  for (const Device dev : {Device::ref(), Device::cpu()}) {
    const Tensor t8 = tensor<int8_t>({1, 2, -3, 100}).to(dev);
    const Tensor s8 = tensor<int8_t>({0, 1, 2, 5}).to(dev);
    const Tensor u8 = tensor<uint8_t>({1, 2, 200, 255}).to(dev);
    const Tensor b = tensor<bool>({true, false}).to(dev);
    EXPECT_EQ((t8 >> 1).dtype(), DType::i8);
    EXPECT_EQ(i64s(t8 >> 1), (V{0, 1, -2, 50}));
    EXPECT_EQ(i64s(t8 << 1), (V{2, 4, -6, -56}));
    EXPECT_EQ(i64s(t8 << true), (V{2, 4, -6, -56}));
    EXPECT_EQ((1 << s8).dtype(), DType::i8);
    EXPECT_EQ(i64s(1 << tensor<int8_t>({0, 1, 6, 7}).to(dev)), (V{1, 2, 64, -128}));
    EXPECT_EQ(i64s(bitwise_left_shift(3, s8)), (V{3, 6, 12, 96}));
    EXPECT_EQ(i64s(bitwise_right_shift(300, s8)), (V{44, 22, 11, 1}));  // 300 wraps to 44
    EXPECT_EQ(i64s(t8 | 300), (V{45, 46, -3, 108}));
    EXPECT_EQ(i64s(t8 ^ -1), (V{-2, -3, 2, -101}));
    EXPECT_EQ(i64s(~t8), (V{-2, -3, 2, -101}));
    EXPECT_EQ(i64s(3 & t8), (V{1, 2, 1, 0}));
    EXPECT_EQ(i64s(bitwise_and(t8, 3)), (V{1, 2, 1, 0}));
    EXPECT_EQ((u8 ^ -1).dtype(), DType::u8);
    EXPECT_EQ(i64s(u8 ^ -1), (V{254, 253, 55, 0}));
    EXPECT_EQ(i64s(u8 & 256), (V{0, 0, 0, 0}));
    EXPECT_EQ(i64s(u8 >> 1), (V{0, 1, 100, 127}));
    EXPECT_EQ(i64s(1 << tensor<uint8_t>({0, 3, 7}).to(dev)), (V{1, 8, 128}));
    const Tensor i64 = tensor<int64_t>({1, 2, -3, 100}).to(dev);
    EXPECT_EQ(i64s(i64 >> 2), (V{0, 0, -1, 25}));
    EXPECT_EQ(i64s(i64 << 62),
              (V{int64_t(1) << 62, std::numeric_limits<int64_t>::min(), int64_t(1) << 62, 0}));
    // bool with a bool stays bool; with an int it is int64.
    EXPECT_EQ((b & true).dtype(), DType::b8);
    EXPECT_EQ(i64s(b & true), (V{1, 0}));
    EXPECT_EQ((true ^ b).dtype(), DType::b8);
    EXPECT_EQ(i64s(true ^ b), (V{0, 1}));
    EXPECT_EQ((~b).dtype(), DType::b8);
    EXPECT_EQ(i64s(~b), (V{0, 1}));
    EXPECT_EQ((b | 2).dtype(), DType::i64);
    EXPECT_EQ(i64s(b | 2), (V{3, 2}));
    EXPECT_EQ((b << 1).dtype(), DType::i64);
    EXPECT_EQ(i64s(b << 1), (V{2, 0}));
    // Out-of-range shift amounts saturate (torch 2's values; 1.13 leaves them to the CPU).
    EXPECT_EQ(i64s(t8 << 8), (V{0, 0, 0, 0}));
    EXPECT_EQ(i64s(t8 >> 9), (V{0, 0, -1, 0}));
    EXPECT_EQ(i64s(t8 >> -1), (V{0, 0, -1, 0}));
    EXPECT_EQ(i64s(i64 << 64), (V{0, 0, 0, 0}));
  }
}
