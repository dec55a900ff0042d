// PyTorch's type promotion (torch.result_type / torch.promote_types), hand-checked cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

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
