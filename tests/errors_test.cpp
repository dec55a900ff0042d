// Bad input gets a readable ember::Error naming the op and the shapes.
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>

#include "ember/ember.h"
#include "ember/record/checkpoint.h"
#include "ember/record/safetensors.h"

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
  expect_error([] { Device::parse("cpu:1"); }, {"[device]", "'cpu:1'", "index 0"});
  expect_error([] { Device::parse("cpu "); }, {"[device]", "'cpu '"});
  expect_error([] { Device::parse("ref:x"); }, {"[device]", "'x'"});
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
  // Each factory names itself and the shape (they all said [empty]).
  expect_error([] { zeros({-2, 3}); }, {"[zeros] negative dimension in shape [-2, 3]"});
  expect_error([] { ones({2, -3}); }, {"[ones] negative dimension in shape [2, -3]"});
  expect_error([] { full({-1}, 2.0); }, {"[full] negative dimension in shape [-1]"});
  expect_error([] { empty({-1}); }, {"[empty] negative dimension in shape [-1]"});
  expect_error([] { rand({-4}); }, {"[rand] negative dimension in shape [-4]"});
  expect_error([] { randn({-4}); }, {"[randn] negative dimension in shape [-4]"});
  expect_error([] { randint(0, 5, {-4}); }, {"[randint] negative dimension in shape [-4]"});
  expect_error(
      [] {
        zeros({int64_t(1) << 32, int64_t(1) << 32});
      },
      {"[zeros]", "too many elements"});
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

namespace {
// The message of the ember::Error f throws ("" when it throws none).
template <typename F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

// Errors name the op the user called (div with its rounding_mode, floor_divide, one_hot...), never
// an IR name such as div_floor / div_trunc, and give the operands' dtypes and shapes.
TEST(ErrorsTest, MessagesUseThePublicOpNames) {
  for (const Device dev : {Device::ref(), Device::cpu()}) {
    const Tensor i64 = ones({2}, {DType::i64, dev}), z64 = zeros({2}, {DType::i64, dev});
    const Tensor b = ones({3}, {DType::b8, dev});
    std::string m = message_of([&] { div(b, b, "floor"); });
    EXPECT_EQ(m,
              "[div] with rounding_mode='floor' is not supported for bool tensors (bool [3] on " +
                  dev.str() + " and bool [3] on " + dev.str() + ")");
    m = message_of([&] { div(i64, z64, "floor"); });
    EXPECT_EQ(m, "[div] integer division by zero with rounding_mode='floor' (int64 [2] on " +
                     dev.str() + " and int64 [2] on " + dev.str() + ")");
    m = message_of([&] { div(i64, z64, "trunc"); });
    EXPECT_EQ(m.rfind("[div] integer division by zero with rounding_mode='trunc' (int64 [2]", 0),
              0u)
        << m;
    m = message_of([&] { div(i64, 0, "trunc"); });
    EXPECT_EQ(m.rfind("[div] integer division by zero with rounding_mode='trunc' (int64 [2]", 0),
              0u)
        << m;
    m = message_of([&] { floor_divide(i64, z64); });
    EXPECT_EQ(m.rfind("[floor_divide] integer division by zero (int64 [2]", 0), 0u) << m;
    m = message_of([&] { floor_divide(b, b); });
    EXPECT_EQ(m.rfind("[floor_divide] is not supported for bool tensors (bool [3]", 0), 0u) << m;
    m = message_of([&] { remainder(i64, z64); });
    EXPECT_EQ(m.rfind("[remainder] integer division by zero (int64 [2]", 0), 0u) << m;
    m = message_of([&] { fmod(i64, 0); });
    EXPECT_EQ(m.rfind("[fmod] integer division by zero (int64 [2]", 0), 0u) << m;
    m = message_of([&] { remainder(b, b); });
    EXPECT_EQ(m, "[remainder] is not supported for bool tensors (bool [3] on " + dev.str() +
                     " and bool [3] on " + dev.str() + ")");
    m = message_of([&] { remainder(b, true); });
    EXPECT_EQ(m.rfind("[remainder] is not supported for bool tensors (bool [3]", 0), 0u) << m;
    m = message_of([&] { b << true; });
    EXPECT_EQ(m.rfind("[bitwise_left_shift] is only supported for integer tensors (bool [3]", 0),
              0u)
        << m;
    m = message_of([&] { ones({2}, {DType::f32, dev}) >> 1; });
    EXPECT_EQ(
        m.rfind("[bitwise_right_shift] is only supported for integer tensors (float32 [2]", 0), 0u)
        << m;
    m = message_of([&] { bitwise_left_shift(i64, 1.5); });
    EXPECT_EQ(m.rfind("[bitwise_left_shift] is only supported for integer tensors (int64 [2]", 0),
              0u)
        << m;
    m = message_of([&] { 1.5 & i64; });
    EXPECT_EQ(
        m.rfind("[bitwise_and] is only supported for integer and bool tensors (float32 []", 0), 0u)
        << m;
    m = message_of([&] { one_hot(tensor<int64_t>({0, 3, 1}).to(dev), 3); });
    EXPECT_EQ(m,
              "[one_hot] class value 3 is out of range for num_classes=3 (valid: [0, 3); int64 "
              "[3] on " +
                  dev.str() + ")");
    m = message_of([&] { one_hot(tensor<int64_t>({0, -1}).to(dev), 3); });
    EXPECT_EQ(m.rfind("[one_hot] class value -1 is negative", 0), 0u) << m;
    m = message_of([&] { one_hot(tensor<int64_t>({2, -1}).to(dev), -1); });
    EXPECT_EQ(m.rfind("[one_hot] class value -1 is negative", 0), 0u) << m;
    // In-place arithmetic on a leaf that requires grad names the op called, as torch's message
    // names it; the leaf is unchanged.
    Tensor leaf = ones({3}, {DType::f32, dev}).requires_grad_();
    const std::string refused = " a leaf tensor that requires grad (shape [3]) is being used";
    EXPECT_EQ(message_of([&] { leaf.mul_(2); }).rfind("[mul_]" + refused, 0), 0u);
    EXPECT_EQ(message_of([&] { leaf.add_(1); }).rfind("[add_]" + refused, 0), 0u);
    EXPECT_EQ(message_of([&] { leaf.clamp_(0, 0.5); }).rfind("[clamp_]" + refused, 0), 0u);
    EXPECT_EQ(message_of([&] { leaf.copy_(zeros({3})); }).rfind("[copy_]" + refused, 0), 0u);
    EXPECT_EQ(leaf.detach().to_vector<float>(), (std::vector<float>{1, 1, 1}));
  }
}

TEST(ErrorsTest, AsStridedChecksAgainstTheStorage) {
  const Tensor x = arange(5, DType::f32);
  // torch: "setStorage: sizes [3, 3], strides [1, 1], storage offset 1, and itemsize 4
  // requiring a storage size of 24 are out of bounds for storage of size 20"
  EXPECT_EQ(message_of([&] {
              x.as_strided({3, 3}, {1, 1}, 1);
            }),
            "[as_strided] sizes [3, 3], strides [1, 1], storage offset 1, and itemsize 4 requiring "
            "a storage size of 24 are out of bounds for storage of size 20 (tensor [5])");
  expect_error([&] { x.as_strided({3, 3}, {1, 2}); }, {"[as_strided]", "storage size of 28"});
  expect_error([&] { x.narrow(0, 3, 2).as_strided({3}, {1}); },
               {"[as_strided]", "storage offset 3", "storage size of 24", "size 20"});
  expect_error([&] { x.as_strided({3}, {1, 1}); }, {"[as_strided]", "[3]", "[1, 1]", "length"});
  expect_error([&] { x.as_strided({3}, {-1}, 3); }, {"[as_strided]", "negative strides"});
  expect_error([&] { x.as_strided({-1}, {1}); }, {"[as_strided]", "negative size", "[-1]"});
  expect_error([&] { x.as_strided({2}, {1}, -1); }, {"[as_strided]", "invalid storage offset -1"});
  expect_error([&] { x.as_strided({int64_t(1) << 40}, {int64_t(1) << 40}); },
               {"[as_strided]", "out of bounds"});
  expect_error([&] { as_strided(Tensor(), {1}, {1}); }, {"[as_strided]", "undefined"});
  // An empty result needs no storage, as torch.
  EXPECT_EQ(x.as_strided({0, 3}, {100, 100}, 5).shape(), (Shape{0, 3}));
}

// Issue 14's messages: what a LibTorch user meets first.
TEST(ErrorsTest, ClassTargetsMustBeLongAsInTorch) {
  namespace F = nn::functional;
  const Tensor logits = randn({3, 5});
  // Float labels are a dtype error (torch: "expected scalar type Long but found Float"), not a
  // shape mismatch; i32 labels are refused as torch refuses them.
  expect_error(
      [&] {
        F::cross_entropy(logits, tensor({1.f, 2.f, 3.f}));
      },
      {"[cross_entropy]", "must be int64", "float32", "[3]", "[3, 5]", "to(DType::i64)"});
  expect_error(
      [&] {
        F::cross_entropy(logits, tensor({1, 2, 3}));
      },
      {"[cross_entropy]", "must be int64", "int32"});
  expect_error(
      [&] {
        F::nll_loss(logits, tensor({1.f, 2.f, 3.f}));
      },
      {"[nll_loss]", "must be int64", "float32"});
  expect_error(
      [&] {
        F::nll_loss(logits, tensor({true, false, true}));
      },
      {"[nll_loss]", "must be int64", "bool"});
  // i64 and u8 (torch accepts Byte) give the same loss; class probabilities still work.
  const Tensor t64 = tensor<int64_t>({1, 0, 4});
  const float ref = F::cross_entropy(logits, t64).item<float>();
  EXPECT_FLOAT_EQ(F::cross_entropy(logits, t64.to(DType::u8)).item<float>(), ref);
  EXPECT_FLOAT_EQ(F::cross_entropy(logits, one_hot(t64, 5).to(DType::f32)).item<float>(), ref);
}

TEST(ErrorsTest, LoadIntoACheckpointPointsToLoadCheckpoint) {
  const std::string dir = ::testing::TempDir() + "/errors_load_into";
  std::filesystem::create_directories(dir);
  auto model = std::make_shared<nn::Linear>(4, 3);
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.1));
  record::save_checkpoint(dir + "/ckpt.safetensors", {model.get(), &opt}, {});
  expect_error([&] { record::load_into(*model, dir + "/ckpt.safetensors"); },
               {"[load_into]", "training checkpoint", "load_checkpoint"});
  expect_error([&] { record::load_into(*model, dir + "/ckpt.safetensors", /*strict=*/false); },
               {"load_checkpoint"});
  // A model file still loads.
  record::save_module(dir + "/model.safetensors", *model);
  EXPECT_EQ(record::load_into(*model, dir + "/model.safetensors"), "");
}

TEST(ErrorsTest, MessagesUseCppSpellings) {
  Tensor w = ones({2}).requires_grad_();
  (w * std::numeric_limits<float>::infinity()).sum().backward();
  try {
    nn::clip_grad_norm_({w}, 1.0, 2.0, /*error_if_nonfinite=*/true);
    ADD_FAILURE() << "expected an error for a non-finite norm";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("error_if_nonfinite = false"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("False"), std::string::npos) << msg;  // Python's spelling
  }
  // CUDA is not built yet: the message says so instead of naming a build option.
  try {
    Device::cuda(0);
    ADD_FAILURE() << "Device::cuda() should throw";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("no CUDA backend yet"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("EMBER_BACKEND_CUDA"), std::string::npos) << msg;
  }
}
