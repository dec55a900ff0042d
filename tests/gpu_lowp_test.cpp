// f16/bf16 matmul and convolution on the GPU backends (codegen/matmul.cpp; conv2d is im2col +
// that matmul) accumulate in f32 and round once at the store: sums of 4,096 ones, which an f16
// accumulator stops at 2,048 (2,048 + 1 rounds back to 2,048) and a bf16 one at 256, come out
// whole; random products match ref (which also sums in f32) within one unit in the last place.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "test_util.h"

namespace ember {
namespace {

namespace F = nn::functional;

void on_each_gpu_dtype(const std::function<void(const Device&, DType)>& body) {
  const std::vector<Device> gpus = test::gpu_devices();
  if (gpus.empty()) GTEST_SKIP() << "no GPU device";
  for (const Device& d : gpus)
    for (DType t : {DType::f16, DType::bf16}) {
      if (!supports_dtype(d, t)) continue;
      SCOPED_TRACE(d.str() + " " + dtype_name(t));
      body(d, t);
    }
}

// The value n has in dtype t (n rounded once).
double in_dtype(double n, DType t) {
  return full({1}, n, {DType::f32, Device::cpu()}).to(t).item<double>();
}

TEST(GpuLowp, MatmulOfOnesSumsInF32) {
  on_each_gpu_dtype([](const Device& d, DType t) {
    const int64_t k = 4096;
    const Tensor a = ones({3, k}, {t, d}), b = ones({k, 2}, {t, d});
    for (double v : matmul(a, b).to(DType::f64).to_vector<double>()) EXPECT_EQ(v, double(k));
    // A sum past the dtype's integers: 4,100 rounds once (to 4,096 in bf16, 4,100 in f16).
    const Tensor a2 = ones({2, k + 4}, {t, d}), b2 = ones({k + 4, 3}, {t, d});
    for (double v : matmul(a2, b2).to(DType::f64).to_vector<double>())
      EXPECT_EQ(v, in_dtype(double(k + 4), t));
  });
}

TEST(GpuLowp, MatmulMatchesRefWithinOneRounding) {
  on_each_gpu_dtype([](const Device& d, DType t) {
    manual_seed(Device::cpu(), 3);
    const Tensor a = randn({8, 4096}).to(t), b = randn({4096, 8}).to(t);
    const auto got = matmul(a.to(d), b.to(d)).to(DType::f64).to_vector<double>();
    const auto want =
        matmul(a.to(Device::ref()), b.to(Device::ref())).to(DType::f64).to_vector<double>();
    const auto mag = matmul(a.to(DType::f32).abs(), b.to(DType::f32).abs()).to_vector<double>();
    const int mant = t == DType::bf16 ? 7 : 10;
    ASSERT_EQ(got.size(), want.size());
    int bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const double ulp =
          std::ldexp(1.0, int(std::floor(std::log2(std::fabs(want[i]) + 1e-30))) - mant);
      if (!(std::fabs(got[i] - want[i]) <= ulp + 1e-6 * mag[i])) ++bad;
    }
    EXPECT_EQ(bad, 0);
  });
}

// conv2d over 456 channels x 3 x 3 taps of ones: each output sums 4,104 ones.
TEST(GpuLowp, Conv2dOfOnesSumsInF32) {
  on_each_gpu_dtype([](const Device& d, DType t) {
    const Tensor x = ones({1, 456, 4, 4}, {t, d}), w = ones({2, 456, 3, 3}, {t, d});
    const Tensor y = F::conv2d(x, w);
    EXPECT_EQ(y.shape(), (Shape{1, 2, 2, 2}));
    for (double v : y.to(DType::f64).to_vector<double>()) EXPECT_EQ(v, in_dtype(4104, t));
  });
}

}  // namespace
}  // namespace ember
