// Bad input gets a readable ember::Error naming the op and the shapes.
#include <gtest/gtest.h>

#include "ember/ember.h"

using namespace ember;

namespace {
// Runs f, expects an ember::Error whose message contains every fragment.
template <typename F>
void expect_error(F&& f, std::vector<std::string> fragments) {
  try {
    f();
    ADD_FAILURE() << "expected an ember::Error containing '" << fragments[0] << "'";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& frag : fragments)
      EXPECT_NE(msg.find(frag), std::string::npos)
          << "message '" << msg << "' lacks '" << frag << "'";
  }
}
}  // namespace

TEST(ErrorsTest, BroadcastMismatchNamesOpAndShapes) {
  expect_error([] { add(zeros({2, 3}), zeros({4})); }, {"[add]", "[2, 3]", "[4]"});
  expect_error([] { mul(zeros({2}), zeros({3})); }, {"[mul]", "[2]", "[3]"});
}

TEST(ErrorsTest, MixedDevicesNameBoth) {
  expect_error([] { add(zeros({2}, Device::cpu()), zeros({2}, Device::ref())); },
               {"[add]", "cpu", "ref"});
}

TEST(ErrorsTest, UnbuiltBackendsAndBadNames) {
#ifndef EMBER_HAVE_VULKAN
  expect_error([] { Device::vulkan(); }, {"backend not built", "vulkan"});
#else
  // Built with Vulkan: an adapter index that does not exist is the error.
  expect_error([] { Device::vulkan(DeviceKind::DiscreteGpu(99)); },
               {"Vulkan adapter", "DiscreteGpu(99)"});
#endif
  expect_error([] { Device::cuda(0); }, {"backend not built", "cuda"});
  expect_error([] { Device::parse("tpu"); }, {"[device]", "tpu"});
  expect_error([] { DeviceKind::parse("IntegratedGpu(x)"); }, {"[device]"});
  expect_error([] { dtype_from_name("float128"); }, {"[dtype]", "float128"});
}

TEST(ErrorsTest, ViewsAndIndicesOutOfRange) {
  expect_error([] { zeros({2, 3}).select(1, 3); }, {"[select]", "index 3", "size 3"});
  expect_error([] { zeros({2, 3}).transpose(0, 2); }, {"[transpose]", "dim 2"});
  expect_error([] { zeros({2, 3}).view({4}); }, {"[view]", "[4]", "6"});
  expect_error([] { zeros({2, 3}).expand({4, 3}); }, {"[expand]", "[2, 3]", "[4, 3]"});
  expect_error([] { zeros({2, 3}).narrow(1, 2, 2); }, {"[narrow]"});
  expect_error([] { zeros({2, 3}).permute({0}); }, {"[permute]"});
  expect_error([] { zeros({2}).slice(0, 0, 2, 0); }, {"[slice]", "step"});
  expect_error([] { zeros({3}).item<float>(); }, {"[item]", "3 elements"});
  expect_error([] { zeros({-1}); }, {"negative dimension"});
  expect_error(
      [] {
        zeros({int64_t(1) << 32, int64_t(1) << 32});
      },
      {"[empty]", "too many elements"});
  expect_error(
      [] {
        ones({1, 1}).expand({int64_t(1) << 40, int64_t(1) << 40});
      },
      {"[expand]", "too many elements"});
}

TEST(ErrorsTest, DtypeRulesAndUndefinedTensors) {
  expect_error([] { sub(tensor<bool>({true}), tensor<bool>({false})); }, {"[sub]", "bool"});
  expect_error([] { bitwise_and(zeros({2}), zeros({2})); }, {"[bitwise_and]", "float32"});
  expect_error([] { bitwise_left_shift(zeros({2}, DType::b8), zeros({2}, DType::b8)); },
               {"[bitwise_left_shift]"});
  expect_error([] { div(ones({2}, DType::i64), zeros({2}, DType::i64), "floor"); },
               {"division by zero"});
  expect_error([] { pow(ones({2}, DType::i32), -1); }, {"[pow]", "negative"});
  expect_error([] { frac(ones({2}, DType::i32)); }, {"[frac]"});
  expect_error([] { exp(Tensor()); }, {"[exp]", "undefined"});
  expect_error([] { Tensor().shape(); }, {"undefined"});
  expect_error([] { where(zeros({2}), zeros({2}), zeros({2})); }, {"[where]", "bool"});
  expect_error([] { div(zeros({2}), zeros({2}), "round"); }, {"[div]", "rounding_mode"});
  expect_error([] { zeros({2}).data_ptr<int32_t>(); }, {"[data_ptr]", "int32"});
  expect_error([] { arange(0, 5, 0); }, {"[arange]", "step"});
  expect_error([] { randint(5, 5, {2}); }, {"[randint]"});
}

TEST(ErrorsTest, EmptyTensorsWork) {
  Tensor e = zeros({0, 3});
  EXPECT_EQ(add(e, ones({3})).shape(), (Shape{0, 3}));
  EXPECT_EQ(exp(e).numel(), 0);
  EXPECT_EQ(e.t().contiguous().shape(), (Shape{3, 0}));
  EXPECT_EQ(e.reshape({0, 1, 3}).shape(), (Shape{0, 1, 3}));
  EXPECT_EQ(e.str(), "tensor([], size=[0, 3])");
}
