// Module::to(DType) for inference in bf16 / f16: which tensors change dtype (norm statistics stay
// f32), the round trip back to f32, and every built-in module's forward in bf16 against the same
// model in f32, on ref, cpu and the GPU backends present.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/functional/norm.h"
#include "test_util.h"

namespace ember {
namespace {

using namespace ember::nn;

std::shared_ptr<Sequential> cnn() {
  return std::make_shared<Sequential>(
      std::make_shared<Conv2d>(Conv2dOptions(3, 8, 3).padding(1)), std::make_shared<BatchNorm2d>(8),
      std::make_shared<ReLU>(), std::make_shared<GroupNorm>(GroupNormOptions(2, 8)),
      std::make_shared<AdaptiveAvgPool2d>(1), std::make_shared<Flatten>(),
      std::make_shared<LayerNorm>(LayerNormOptions({8})), std::make_shared<Linear>(8, 4));
}

std::map<std::string, DType> dtypes(const Module& m) {
  std::map<std::string, DType> out;
  for (const auto& [k, t] : m.state_dict()) out[k] = t.dtype();
  return out;
}

TEST(ModuleDtypeTest, Bf16KeepsBatchNormStatisticsInF32) {
  for (DType low : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(dtype_name(low));
    auto m = cnn();
    m->to(low);
    const auto got = dtypes(*m);
    EXPECT_EQ(got.at("1.running_mean"), DType::f32);
    EXPECT_EQ(got.at("1.running_var"), DType::f32);
    EXPECT_EQ(got.at("1.num_batches_tracked"), DType::i64);
    // Everything else (norm weights and biases included, as torch) takes the new dtype.
    for (const auto& [k, dt] : got)
      if (k.find("running_") == std::string::npos && k != "1.num_batches_tracked")
        EXPECT_EQ(dt, low) << k;
    for (const Tensor& p : m->parameters()) EXPECT_TRUE(p.requires_grad());
    // The members the modules hold follow (they share the registered tensors).
    EXPECT_EQ(m->at<BatchNorm2d>(1)->running_var.dtype(), DType::f32);
    EXPECT_EQ(m->at<BatchNorm2d>(1)->weight.dtype(), low);
  }
}

TEST(ModuleDtypeTest, F64ThenBf16ThenF32) {
  auto m = cnn();
  m->to(DType::f64);
  EXPECT_EQ(dtypes(*m).at("1.running_mean"), DType::f64);  // statistics follow f32 / f64
  m->to(DType::bf16);
  EXPECT_EQ(dtypes(*m).at("1.running_mean"), DType::f32);
  m->to(DType::f32);
  for (const auto& [k, dt] : dtypes(*m))
    EXPECT_EQ(dt, k == "1.num_batches_tracked" ? DType::i64 : DType::f32) << k;
}

TEST(ModuleDtypeTest, BackToF32KeepsStatisticsExactlyAndRoundsWeightsOnce) {
  manual_seed(2);
  auto m = cnn();
  auto bn = m->at<BatchNorm2d>(1);
  {
    NoGradGuard g;
    bn->running_mean.copy_(randn({8}) * 0.1);  // values bf16 cannot hold exactly
    bn->running_var.copy_(rand({8}) + 1.0001);
  }
  const auto mean0 = bn->running_mean.to_vector<float>();
  const auto var0 = bn->running_var.to_vector<float>();
  const auto w0 = m->at<Linear>(7)->weight.to_vector<float>();
  m->to(DType::bf16);
  m->to(DType::f32);
  EXPECT_EQ(bn->running_mean.to_vector<float>(), mean0);
  EXPECT_EQ(bn->running_var.to_vector<float>(), var0);
  const auto w1 = m->at<Linear>(7)->weight.to_vector<float>();
  const auto w0_bf16 = from_vector<float>(w0, {int64_t(w0.size())}).to(DType::bf16);
  EXPECT_EQ(w1, w0_bf16.to(DType::f32).to_vector<float>());
  EXPECT_NE(w1, w0);  // the weights went through bf16
  EXPECT_TRUE(m->at<Linear>(7)->weight.requires_grad());
}

TEST(ModuleDtypeTest, NonFloatingDtypeThrowsAndChangesNothing) {
  auto m = cnn();
  for (DType t : {DType::i64, DType::i32, DType::u8, DType::b8}) {
    test::expect_error([&] { m->to(t); },
                       {"[Module.to]", "only accepts floating point dtypes", dtype_name(t)});
  }
  for (const auto& [k, dt] : dtypes(*m))
    EXPECT_EQ(dt, k == "1.num_batches_tracked" ? DType::i64 : DType::f32) << k;
}

TEST(ModuleDtypeTest, LoadStateDictKeepsTheConvertedDtypes) {
  auto f32 = cnn();
  auto m = cnn();
  m->to(DType::bf16);
  EXPECT_EQ(m->load_state_dict(f32->state_dict()), "");
  const auto got = dtypes(*m);
  EXPECT_EQ(got.at("0.weight"), DType::bf16);
  EXPECT_EQ(got.at("1.running_mean"), DType::f32);
}

// ---- forward in bf16 against f32, per device ----

Device device_named(const std::string& name, std::string& why) {
  if (name == "ref") return Device::ref();
  if (name == "cpu") return Device::cpu();
  Device d;
  if (name == "vulkan" && test::vulkan_device(d, why)) return d;
  if (name == "opencl" && test::opencl_device(d, why)) return d;
  if (why.empty()) why = name + " is not built";
  return Device();
}

// One module, its input and how to run it (tuple outputs: the first tensor).
struct Case {
  std::shared_ptr<Module> module;
  std::function<Tensor(const Tensor&)> run;
  Shape input;
  bool indices = false;  // integer input (Embedding)
};

template <typename M>
Case unary(std::shared_ptr<M> m, Shape input) {
  return {m, [m](const Tensor& x) { return (*m)(x); }, std::move(input)};
}

std::vector<std::pair<std::string, std::function<Case()>>> cases() {
  std::vector<std::pair<std::string, std::function<Case()>>> c;
  c.emplace_back("Linear", [] { return unary(std::make_shared<Linear>(16, 8), {4, 16}); });
  c.emplace_back("Conv1d", [] {
    return unary(std::make_shared<Conv1d>(Conv1dOptions(3, 4, 3).padding(1)), {2, 3, 10});
  });
  c.emplace_back("Conv2d", [] {
    return unary(std::make_shared<Conv2d>(Conv2dOptions(3, 4, 3).stride(2)), {2, 3, 9, 9});
  });
  c.emplace_back("Conv3d", [] {
    return unary(std::make_shared<Conv3d>(Conv3dOptions(2, 3, 3)), {1, 2, 5, 5, 5});
  });
  c.emplace_back("ConvTranspose1d", [] {
    return unary(std::make_shared<ConvTranspose1d>(ConvTranspose1dOptions(3, 2, 3).stride(2)),
                 {2, 3, 6});
  });
  c.emplace_back("ConvTranspose2d", [] {
    return unary(std::make_shared<ConvTranspose2d>(ConvTranspose2dOptions(3, 2, 3).stride(2)),
                 {2, 3, 5, 5});
  });
  c.emplace_back("CnnEval", [] {
    auto m = cnn();
    NoGradGuard g;
    auto bn = m->at<BatchNorm2d>(1);
    bn->running_mean.copy_(randn({8}) * 0.1);
    bn->running_var.copy_(rand({8}) + 0.5);
    bn->weight.copy_(rand({8}) + 0.5);
    m->eval();
    return unary(m, {2, 3, 8, 8});
  });
  c.emplace_back("BatchNorm1dTrain", [] {
    return unary(std::make_shared<BatchNorm1d>(6), {8, 6});
  });
  c.emplace_back("InstanceNorm2d", [] {
    return unary(std::make_shared<InstanceNorm2d>(
                     InstanceNormOptions(4).affine(true).track_running_stats(true)),
                 {2, 4, 5, 5});
  });
  c.emplace_back("LayerNorm", [] {
    return unary(std::make_shared<LayerNorm>(LayerNormOptions({12})), {3, 5, 12});
  });
  c.emplace_back("GroupNorm", [] {
    return unary(std::make_shared<GroupNorm>(GroupNormOptions(2, 8)), {2, 8, 4, 4});
  });
  c.emplace_back("Embedding", [] {
    Case k = unary(std::make_shared<Embedding>(10, 6), {3, 4});
    k.indices = true;
    return k;
  });
  c.emplace_back("LSTM", [] {
    auto m = std::make_shared<LSTM>(6, 8, 2);
    return Case{m, [m](const Tensor& x) { return std::get<0>(m->forward(x)); }, {5, 2, 6}};
  });
  c.emplace_back("GRU", [] {
    auto m = std::make_shared<GRU>(6, 8);
    return Case{m, [m](const Tensor& x) { return std::get<0>(m->forward(x)); }, {5, 2, 6}};
  });
  c.emplace_back("MultiheadAttention", [] {
    auto m = std::make_shared<MultiheadAttention>(8, 2);
    return Case{m, [m](const Tensor& x) { return std::get<0>(m->forward(x, x, x)); }, {4, 2, 8}};
  });
  c.emplace_back("TransformerEncoderLayer", [] {
    auto m = std::make_shared<TransformerEncoderLayer>(
        TransformerEncoderLayerOptions(8, 2).dim_feedforward(16));
    m->eval();
    return Case{m, [m](const Tensor& x) { return m->forward(x); }, {4, 2, 8}};
  });
  c.emplace_back("TransformerDecoderLayer", [] {
    auto m = std::make_shared<TransformerDecoderLayer>(
        TransformerDecoderLayerOptions(8, 2).dim_feedforward(16));
    m->eval();
    return Case{m, [m](const Tensor& x) { return m->forward(x, x * 0.5); }, {4, 2, 8}};
  });
  c.emplace_back("Pooling", [] {
    return unary(std::make_shared<Sequential>(
                     std::make_shared<MaxPool2d>(MaxPool2dOptions(3).stride(2).padding(1)),
                     std::make_shared<AvgPool2d>(2), std::make_shared<AdaptiveAvgPool2d>(1)),
                 {2, 3, 9, 9});
  });
  c.emplace_back("Activations", [] {
    return unary(
        std::make_shared<Sequential>(std::make_shared<Linear>(12, 12), std::make_shared<GELU>(),
                                     std::make_shared<PReLU>(12), std::make_shared<Tanh>(),
                                     std::make_shared<Linear>(12, 12), std::make_shared<SiLU>(),
                                     std::make_shared<Sigmoid>(), std::make_shared<LogSoftmax>(1)),
        {4, 12});
  });
  return c;
}

// Largest |a - b| over the largest |b| (at least 1): bf16 keeps 8 significant bits, and each
// of these models rounds its input, weights and a few intermediates once.
double scaled_error(const Tensor& got, const Tensor& want) {
  const auto g = got.to(Device::cpu()).to(DType::f64).to_vector<double>();
  const auto w = want.to(Device::cpu()).to(DType::f64).to_vector<double>();
  EXPECT_EQ(g.size(), w.size());
  double err = 0, scale = 1;
  for (size_t i = 0; i < std::min(g.size(), w.size()); ++i) {
    err = std::max(err, std::isfinite(g[i]) ? std::abs(g[i] - w[i]) : INFINITY);
    scale = std::max(scale, std::abs(w[i]));
  }
  return err / scale;
}

constexpr double kBf16Tol = 0.02;

StateDict copy_of(const StateDict& d) {
  StateDict out;
  for (const auto& [k, t] : d) out.set(k, t.clone());
  return out;
}

class ModuleBf16Forward : public ::testing::TestWithParam<std::string> {};

TEST_P(ModuleBf16Forward, MatchesF32) {
  std::string why;
  const Device dev = device_named(GetParam(), why);
  if (why.size()) GTEST_SKIP() << why;
  if (!supports_dtype(dev, DType::bf16)) GTEST_SKIP() << dev.str() << " has no bf16";
  for (const auto& [name, make] : cases()) {
    SCOPED_TRACE(name);
    manual_seed(7);
    Case c = make();
    c.module->to(dev);
    Tensor x = c.indices ? randint(0, 10, c.input) : randn(c.input);
    x = x.to(dev);
    const Tensor xb = c.indices ? x : x.to(DType::bf16);
    // A training-mode norm updates its statistics: both runs start from the same ones.
    const StateDict init = copy_of(c.module->state_dict());
    Tensor want, got;
    {
      NoGradGuard g;
      // The f32 run sees the bf16-rounded input, so the difference is the model's rounding.
      want = c.run(c.indices ? x : xb.to(DType::f32));
    }
    const StateDict after_f32 = copy_of(c.module->state_dict());
    c.module->to(DType::bf16);
    ASSERT_EQ(c.module->load_state_dict(init), "");
    {
      NoGradGuard g;
      got = c.run(xb);
    }
    EXPECT_EQ(got.dtype(), DType::bf16);
    EXPECT_EQ(got.device(), dev);
    EXPECT_EQ(got.shape(), want.shape());
    EXPECT_LT(scaled_error(got, want), kBf16Tol);
    // Statistics stay f32; updated in a bf16 training step they match the f32 model's update.
    for (const auto& [k, t] : c.module->state_dict()) {
      if (k.find("running_") == std::string::npos) continue;
      EXPECT_EQ(t.dtype(), DType::f32) << k;
      EXPECT_LT(scaled_error(t, after_f32.at(k)), 0.01) << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, ModuleBf16Forward,
                         ::testing::Values("ref", "cpu", "vulkan", "opencl"),
                         [](const auto& info) { return info.param; });

// The norm functionals take bf16 input with f32 statistics and bf16 or f32 affine parameters,
// and return bf16.
class NormMixedDtypes : public ::testing::TestWithParam<std::string> {};

TEST_P(NormMixedDtypes, Bf16InputWithF32StatisticsReturnsBf16) {
  namespace F = ember::nn::functional;
  std::string why;
  const Device dev = device_named(GetParam(), why);
  if (why.size()) GTEST_SKIP() << why;
  if (!supports_dtype(dev, DType::bf16)) GTEST_SKIP() << dev.str() << " has no bf16";
  manual_seed(11);
  const Tensor x32 = randn({3, 4, 5, 5}).to(DType::bf16).to(DType::f32).to(dev);
  const Tensor x = x32.to(DType::bf16);
  const Tensor rm = (randn({4}) * 0.2).to(dev), rv = (rand({4}) + 0.5).to(dev);
  const Tensor w = (rand({4}) + 0.5).to(DType::bf16).to(DType::f32).to(dev);
  const Tensor b = randn({4}).to(DType::bf16).to(DType::f32).to(dev);
  const Tensor lw = (rand({5}) + 0.5).to(DType::bf16).to(DType::f32).to(dev);
  for (DType affine : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(dtype_name(affine));
    const Tensor wa = w.to(affine), ba = b.to(affine), lwa = lw.to(affine);
    const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> fns = {
        {"batch_norm eval",
         [&](const Tensor& in) { return F::batch_norm(in, rm, rv, wa, ba, false, 0.1, 1e-5); }},
        {"batch_norm train",
         [&](const Tensor& in) {
           Tensor m = rm.clone(), v = rv.clone();
           return F::batch_norm(in, m, v, wa, ba, true, 0.1, 1e-5);
         }},
        {"layer_norm", [&](const Tensor& in) { return F::layer_norm(in, {5}, lwa, lwa, 1e-5); }},
        {"group_norm", [&](const Tensor& in) { return F::group_norm(in, 2, wa, ba, 1e-5); }},
        {"instance_norm",
         [&](const Tensor& in) { return F::instance_norm(in, rm, rv, wa, ba, false, 0.1, 1e-5); }}};
    for (const auto& [name, fn] : fns) {
      SCOPED_TRACE(name);
      const Tensor got = fn(x);
      EXPECT_EQ(got.dtype(), DType::bf16);
      EXPECT_EQ(got.device(), dev);
      // Normalized in f32 and rounded once: within one bf16 rounding of the f32 result.
      EXPECT_LT(scaled_error(got, fn(x32)), 1.0 / 128);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, NormMixedDtypes,
                         ::testing::Values("ref", "cpu", "vulkan", "opencl"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ember
