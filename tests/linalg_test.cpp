// matmul / mm / bmm / dot / outer / linear: hand-computed values, torch's shape rules, dtypes,
// strided operands and error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ember/ember.h"

using namespace ember;

namespace {

Tensor f32(std::initializer_list<float> v, Shape s) { return tensor<float>(v, std::move(s)); }

// Naive triple loop in double over contiguous [M, K] x [K, N] host values.
std::vector<double> naive(const std::vector<double>& a, const std::vector<double>& b, int64_t M,
                          int64_t K, int64_t N) {
  std::vector<double> c(size_t(M * N), 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += a[size_t(i * K + k)] * b[size_t(k * N + j)];
      c[size_t(i * N + j)] = s;
    }
  return c;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(MatmulTest, TwoByTwoKnownValues) {
  Tensor a = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = f32({7, 8, 9, 10, 11, 12}, {3, 2});
  Tensor c = matmul(a, b);
  EXPECT_EQ(c.shape(), (Shape{2, 2}));
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{58, 64, 139, 154}));
  EXPECT_EQ(a.matmul(b).to_vector<float>(), c.to_vector<float>());
  EXPECT_EQ(mm(a, b).to_vector<float>(), c.to_vector<float>());
}

TEST(MatmulTest, OneDimOperandsFollowTorch) {
  Tensor m = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  // 1-d x 1-d -> 0-d dot.
  Tensor d = matmul(f32({1, 2, 3}, {3}), f32({4, 5, 6}, {3}));
  EXPECT_EQ(d.dim(), 0);
  EXPECT_FLOAT_EQ(d.item<float>(), 32.f);
  // 1-d x 2-d: a 1 is prepended then removed.
  Tensor v = matmul(f32({1, 2}, {2}), m);
  EXPECT_EQ(v.shape(), (Shape{3}));
  EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{9, 12, 15}));
  // 2-d x 1-d: matrix-vector.
  Tensor mv = matmul(m, f32({1, 1, 1}, {3}));
  EXPECT_EQ(mv.shape(), (Shape{2}));
  EXPECT_EQ(mv.to_vector<float>(), (std::vector<float>{6, 15}));
  // 1-d x 3-d: [4] x [2, 4, 3] -> [2, 3].
  Tensor b3 = arange(24, {DType::f32}).reshape({2, 4, 3});
  Tensor r = matmul(f32({1, 0, 0, 1}, {4}), b3);
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  // Row 0 + row 3 of each batch: batch 0 rows 0 and 3 are [0 1 2] and [9 10 11].
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{9, 11, 13, 33, 35, 37}));
  // 3-d x 1-d: [2, 4, 3] x [3] -> [2, 4].
  Tensor s = matmul(b3, f32({1, 1, 1}, {3}));
  EXPECT_EQ(s.shape(), (Shape{2, 4}));
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{3, 12, 21, 30, 39, 48, 57, 66}));
}

TEST(MatmulTest, BatchBroadcastMatchesTorch) {
  Tensor a = arange(24, {DType::f64}).reshape({2, 1, 3, 4});
  Tensor b = (arange(40, {DType::f64}) - 20).reshape({5, 4, 2});
  Tensor c = matmul(a, b);
  ASSERT_EQ(c.shape(), (Shape{2, 5, 3, 2}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 5; ++j) {
      const auto want = naive(a[i][0].contiguous().to_vector<double>(),
                              b[j].contiguous().to_vector<double>(), 3, 4, 2);
      EXPECT_EQ(c[i][j].contiguous().to_vector<double>(), want) << i << "," << j;
    }
  // A batched matrix times a plain matrix (the folded path) equals the per-batch products.
  Tensor w = (arange(8, {DType::f64}) * 0.5).reshape({4, 2});
  Tensor f = matmul(a, w);
  ASSERT_EQ(f.shape(), (Shape{2, 1, 3, 2}));
  EXPECT_EQ(f[1][0].contiguous().to_vector<double>(),
            naive(a[1][0].contiguous().to_vector<double>(), w.to_vector<double>(), 3, 4, 2));
}

TEST(MatmulTest, StridedAndBroadcastOperands) {
  // Transposed views and a stride-0 batch must give the same values as contiguous copies.
  Tensor at = arange(12, {DType::f32}).reshape({4, 3}).t();       // [3, 4], strides [1, 3]
  Tensor bt = (arange(8, {DType::f32}) - 3).reshape({2, 4}).t();  // [4, 2]
  EXPECT_EQ(matmul(at, bt).to_vector<float>(),
            matmul(at.contiguous(), bt.contiguous()).to_vector<float>());
  Tensor bb = bt.unsqueeze(0).expand({3, 4, 2});  // batch stride 0
  Tensor ab = arange(36, {DType::f32}).reshape({3, 3, 4});
  Tensor got = bmm(ab, bb);
  Tensor want = bmm(ab, bb.contiguous());
  EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>());
  // A stepped slice (every other column).
  Tensor big = arange(24, {DType::f32}).reshape({3, 8});
  Tensor stepped = big.slice(1, 0, 8, 2);  // [3, 4]
  EXPECT_EQ(matmul(stepped, bt).to_vector<float>(),
            matmul(stepped.contiguous(), bt.contiguous()).to_vector<float>());
}

TEST(MatmulTest, LargeProductMatchesNaiveAcrossBlocks) {
  // Sizes past the kernel's K (128) and N (512) blocks, with ragged edges.
  manual_seed(7);
  Tensor a = randn({5, 300}, {DType::f64});
  Tensor b = randn({300, 600}, {DType::f64});
  const auto want = naive(a.to_vector<double>(), b.to_vector<double>(), 5, 300, 600);
  const auto got = matmul(a, b).to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-9) << i;
  // f32 accumulates in float: within a float rounding bound of the double result.
  const auto got32 = matmul(a.to(DType::f32), b.to(DType::f32)).to_vector<float>();
  for (size_t i = 0; i < got32.size(); ++i) ASSERT_NEAR(got32[i], want[i], 1e-3) << i;
}

TEST(MatmulTest, EmptyDims) {
  Tensor z = matmul(zeros({2, 0}), zeros({0, 3}));
  EXPECT_EQ(z.shape(), (Shape{2, 3}));
  EXPECT_EQ(z.to_vector<float>(), std::vector<float>(6, 0.f));
  EXPECT_EQ(matmul(zeros({0, 3}), ones({3, 2})).shape(), (Shape{0, 2}));
  EXPECT_EQ(matmul(ones({2, 3}), ones({3, 0})).shape(), (Shape{2, 0}));
  EXPECT_EQ(matmul(ones({0, 2, 3}), ones({3, 4})).shape(), (Shape{0, 2, 4}));
  EXPECT_EQ(matmul(zeros({0}), zeros({0})).item<float>(), 0.f);
  Tensor kz = matmul(ones({2, 2, 0}, {DType::i32}), ones({2, 0, 1}, {DType::i32}));
  EXPECT_EQ(kz.to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 0, 0}));
}

TEST(MatmulTest, IntegerAccumulatesInTheIntegerType) {
  Tensor a = tensor<int8_t>({100, 1}, {1, 2});
  Tensor b = tensor<int8_t>({3, 2}, {2, 1});
  Tensor c = matmul(a, b);
  EXPECT_EQ(c.dtype(), DType::i8);
  EXPECT_EQ(c.item<int64_t>(), 46);  // 302 wraps to 46 in int8, as torch
  Tensor i = matmul(tensor<int64_t>({1, -2, 3}, {3}), tensor<int64_t>({4, 5, -6}, {3}));
  EXPECT_EQ(i.item<int64_t>(), 4 - 10 - 18);
  Tensor u = matmul(tensor<uint8_t>({200, 100}, {1, 2}), tensor<uint8_t>({1, 1}, {2, 1}));
  EXPECT_EQ(u.item<int64_t>(), 300 - 256);
}

TEST(MatmulTest, HalfAndPromotion) {
  Tensor a = f32({1, 2, 3, 4}, {2, 2});
  Tensor h = matmul(a.to(DType::f16), a.to(DType::f16));
  EXPECT_EQ(h.dtype(), DType::f16);
  EXPECT_EQ(h.to_vector<float>(), (std::vector<float>{7, 10, 15, 22}));
  Tensor bf = matmul(a.to(DType::bf16), a.to(DType::bf16));
  EXPECT_EQ(bf.to_vector<float>(), (std::vector<float>{7, 10, 15, 22}));
  Tensor p = matmul(a.to(DType::i32), a.to(DType::f64));
  EXPECT_EQ(p.dtype(), DType::f64);
  EXPECT_EQ(p.to_vector<double>(), (std::vector<double>{7, 10, 15, 22}));
}

TEST(MatmulTest, ErrorsNameTheOpAndShapes) {
  EXPECT_EQ(message_of([] {
              matmul(ones({2, 3}), ones({4, 5}));
            }),
            "[matmul] shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)");
  EXPECT_EQ(message_of([] { matmul(ones({3}), ones({4})); }),
            "[matmul] shapes [3] and [4] cannot be multiplied (3 != 4)");
  // Batch dims that do not broadcast: both full shapes are named, not only the batch dims.
  EXPECT_EQ(message_of([] {
              matmul(ones({2, 2, 3}), ones({3, 3, 2}));
            }),
            "[matmul] shapes [2, 2, 3] and [3, 3, 2] cannot be multiplied: batch dims [2] and [3] "
            "do not broadcast (2 != 3)");
  EXPECT_EQ(
      message_of([] {
        matmul(ones({4, 2, 5, 3}), ones({3, 3, 2}));
      }),
      "[matmul] shapes [4, 2, 5, 3] and [3, 3, 2] cannot be multiplied: batch dims [4, 2] and "
      "[3] do not broadcast (2 != 3)");
  EXPECT_NE(message_of([] { matmul(scalar_tensor(1.f), ones({3})); }).find("at least 1 dim"),
            std::string::npos);
  EXPECT_NE(message_of([] {
              matmul(ones({2, 2}, {DType::b8}), ones({2, 2}, {DType::b8}));
            }).find("bool"),
            std::string::npos);
  const std::string dev = message_of([] {
    matmul(ones({2, 2}, {Device::ref()}), ones({2, 2}, {Device::cpu()}));
  });
  EXPECT_NE(dev.find("[matmul]"), std::string::npos);
  EXPECT_NE(dev.find("ref"), std::string::npos);
  EXPECT_NE(dev.find("cpu"), std::string::npos);
  EXPECT_NE(message_of([] { matmul(Tensor(), ones({2})); }).find("undefined"), std::string::npos);
}

TEST(LinalgTest, MmBmmRequireTheirRanks) {
  EXPECT_NE(message_of([] {
              mm(ones({2, 3, 4}), ones({4, 2}));
            }).find("[mm] expects 2-d"),
            std::string::npos);
  EXPECT_NE(message_of([] {
              bmm(ones({2, 3}), ones({3, 2}));
            }).find("[bmm] expects 3-d"),
            std::string::npos);
  EXPECT_NE(message_of([] {
              bmm(ones({2, 3, 4}), ones({3, 4, 2}));
            }).find("[bmm] batch sizes"),
            std::string::npos);
  EXPECT_EQ(message_of([] {
              bmm(ones({2, 3, 4}), ones({2, 5, 2}));
            }),
            "[bmm] shapes [2, 3, 4] and [2, 5, 2] cannot be multiplied (4 != 5)");
  Tensor a = arange(12, {DType::f32}).reshape({2, 2, 3});
  Tensor b = ones({2, 3, 1});
  EXPECT_EQ(bmm(a, b).to_vector<float>(), (std::vector<float>{3, 12, 21, 30}));
}

TEST(LinalgTest, DotAndOuter) {
  EXPECT_FLOAT_EQ(dot(f32({1, 2, 3}, {3}), f32({4, 5, 6}, {3})).item<float>(), 32.f);
  EXPECT_EQ(dot(tensor<int32_t>({1, 2}, {2}), tensor<int32_t>({3, 4}, {2})).item<int64_t>(), 11);
  EXPECT_NE(message_of([] {
              dot(ones({2, 2}), ones({2}));
            }).find("[dot] expects 1-d"),
            std::string::npos);
  EXPECT_EQ(message_of([] { dot(ones({2}), ones({3})); }),
            "[dot] shapes [2] and [3] cannot be multiplied (2 != 3)");
  Tensor o = outer(f32({1, 2}, {2}), f32({3, 4, 5}, {3}));
  EXPECT_EQ(o.shape(), (Shape{2, 3}));
  EXPECT_EQ(o.to_vector<float>(), (std::vector<float>{3, 4, 5, 6, 8, 10}));
  Tensor ob = outer(tensor<bool>({true, false}, {2}), tensor<bool>({true, true}, {2}));
  EXPECT_EQ(ob.dtype(), DType::b8);
  EXPECT_EQ(ob.to_vector<int>(), (std::vector<int>{1, 1, 0, 0}));
  EXPECT_NE(message_of([] { outer(ones({2, 1}), ones({2})); }).find("[outer]"), std::string::npos);
}

TEST(LinalgTest, LinearWithAndWithoutBias) {
  Tensor x = f32({1, 2, 3, 4}, {2, 2});
  Tensor w = f32({1, 0, 0, 1, 1, 1}, {3, 2});  // [out 3, in 2]
  Tensor b = f32({10, 20, 30}, {3});
  Tensor y = linear(x, w, b);
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{11, 22, 33, 13, 24, 37}));
  EXPECT_EQ(linear(x, w).to_vector<float>(), (std::vector<float>{1, 2, 3, 3, 4, 7}));
  // Leading batch dims and a 1-d input.
  Tensor xb = x.reshape({2, 1, 2});
  EXPECT_EQ(linear(xb, w, b).shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(linear(f32({1, 2}, {2}), w, b).to_vector<float>(), (std::vector<float>{11, 22, 33}));
  EXPECT_EQ(message_of([] {
              linear(ones({2, 3}), ones({4, 2}));
            }),
            "[linear] input features 3 do not match weight's in_features 2 (input [2, 3], weight "
            "[4, 2])");
  EXPECT_NE(message_of([] {
              linear(ones({2, 2}), ones({4, 2}), ones({3}));
            }).find("[linear] bias"),
            std::string::npos);
}
