// Autocast (ember/autocast.h): each op's dtype decision and values against torch 1.13's CPU
// autocast (tests/golden/make_autocast_golden.py), the GPU lists on the GPU devices, the scope's
// state rules, and gradients of an autocast model against f32 gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "ember/autocast.h"
#include "ember/ember.h"
#include "golden_json.h"
#include "test_util.h"

using json = nlohmann::json;
using namespace ember;
namespace F = ember::nn::functional;

namespace {

const json& golden() {
  return test::golden_json("autocast.json", "tests/golden/make_autocast_golden.py");
}

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
using V = const std::vector<Tensor>&;

// Ember's call for each op of the golden cases (the part of the case name before '/').
const std::map<std::string, Fn>& ops() {
  static const std::map<std::string, Fn> m = {
      {"matmul", [](V t) { return matmul(t[0], t[1]); }},
      {"mm", [](V t) { return mm(t[0], t[1]); }},
      {"bmm", [](V t) { return bmm(t[0], t[1]); }},
      {"baddbmm", [](V t) { return baddbmm(t[0], t[1], t[2], 0.5, 2.0); }},
      {"addmm", [](V t) { return addmm(t[0], t[1], t[2], 0.5, 2.0); }},
      {"linear", [](V t) { return linear(t[0], t[1], t[2]); }},
      {"conv1d", [](V t) { return F::conv1d(t[0], t[1], t[2], {1}, {1}); }},
      {"conv2d", [](V t) { return F::conv2d(t[0], t[1], t[2], {1}, {1}); }},
      {"conv3d", [](V t) { return F::conv3d(t[0], t[1]); }},
      {"conv_transpose1d", [](V t) { return F::conv_transpose1d(t[0], t[1]); }},
      {"conv_transpose2d", [](V t) { return F::conv_transpose2d(t[0], t[1]); }},
      {"conv_transpose3d", [](V t) { return F::conv_transpose3d(t[0], t[1]); }},
      {"prelu", [](V t) { return F::prelu(t[0], t[1]); }},
      {"mse_loss", [](V t) { return F::mse_loss(t[0], t[1]); }},
      {"l1_loss", [](V t) { return F::l1_loss(t[0], t[1]); }},
      {"smooth_l1_loss", [](V t) { return F::smooth_l1_loss(t[0], t[1]); }},
      {"huber_loss", [](V t) { return F::huber_loss(t[0], t[1]); }},
      {"cross_entropy", [](V t) { return F::cross_entropy(t[0], t[1]); }},
      {"nll_loss", [](V t) { return F::nll_loss(t[0], t[1]); }},
      {"binary_cross_entropy", [](V t) { return F::binary_cross_entropy(t[0], t[1]); }},
      {"binary_cross_entropy_with_logits",
       [](V t) { return F::binary_cross_entropy_with_logits(t[0], t[1]); }},
      {"kl_div", [](V t) { return F::kl_div(t[0], t[1], "batchmean"); }},
      {"prod", [](V t) { return prod(t[0]); }},
      {"softmax", [](V t) { return F::softmax(t[0], 1); }},
      {"log_softmax", [](V t) { return F::log_softmax(t[0], 1); }},
      {"layer_norm", [](V t) { return F::layer_norm(t[0], {8}); }},
      {"group_norm", [](V t) { return F::group_norm(t[0], 2); }},
      {"exp", [](V t) { return exp(t[0]); }},
      {"expm1", [](V t) { return expm1(t[0]); }},
      {"log", [](V t) { return log(t[0]); }},
      {"log2", [](V t) { return log2(t[0]); }},
      {"log10", [](V t) { return log10(t[0]); }},
      {"log1p", [](V t) { return log1p(t[0]); }},
      {"rsqrt", [](V t) { return rsqrt(t[0]); }},
      {"reciprocal", [](V t) { return reciprocal(t[0]); }},
      {"acos", [](V t) { return acos(t[0]); }},
      {"asin", [](V t) { return asin(t[0]); }},
      {"cosh", [](V t) { return cosh(t[0]); }},
      {"sinh", [](V t) { return sinh(t[0]); }},
      {"tan", [](V t) { return tan(t[0]); }},
      {"erfinv", [](V t) { return erfinv(t[0]); }},
      {"softplus", [](V t) { return F::softplus(t[0]); }},
      {"pow", [](V t) { return pow(t[0], 3.0); }},
      {"sum", [](V t) { return sum(t[0]); }},
      {"mean", [](V t) { return mean(t[0]); }},
      {"cumsum", [](V t) { return cumsum(t[0], 1); }},
      {"cumprod", [](V t) { return cumprod(t[0], 1); }},
      {"logsumexp", [](V t) { return logsumexp(t[0], {1}); }},
      {"norm", [](V t) { return norm(t[0]); }},
      {"relu", [](V t) { return F::relu(t[0]); }},
      {"gelu", [](V t) { return F::gelu(t[0]); }},
      {"add", [](V t) { return add(t[0], t[1]); }},
      {"mul", [](V t) { return mul(t[0], t[1]); }},
      {"cat",
       [](V t) {
         return cat({t[0], t[1]});
       }},
      {"stack",
       [](V t) {
         return stack({t[0], t[1]});
       }},
  };
  return m;
}

std::string op_of(const std::string& case_name) { return case_name.substr(0, case_name.find('/')); }

std::vector<Tensor> inputs(const json& c, const Device& dev) {
  std::vector<Tensor> ts;
  for (const auto& in : c["inputs"]) {
    const Shape shape = in["shape"].get<Shape>();
    const auto vals = in["values"].get<std::vector<double>>();
    const std::string dt = in["dtype"];
    if (in["kind"] == "c") {
      std::vector<int64_t> iv(vals.begin(), vals.end());
      ts.push_back(from_vector(iv, {shape[0]}, dev));
    } else {
      ts.push_back(from_vector(vals, shape, dev).to(dtype_from_name(dt)));
    }
  }
  return ts;
}

std::vector<Device> host_devices() { return {Device::ref(), Device::cpu()}; }

// Each golden case under autocast(bf16) on the host devices: torch's dtype, shape and values.
TEST(Autocast, EveryOpTakesTorchsCpuDecisionAndValues) {
  const json& g = golden();
  ASSERT_GE(g["cases"].size(), 50u);
  for (const Device& dev : host_devices()) {
    for (const auto& c : g["cases"]) {
      const std::string name = c["name"];
      SCOPED_TRACE(name + " on " + dev.str());
      auto it = ops().find(op_of(name));
      ASSERT_NE(it, ops().end()) << "no Ember call for " << name;
      const std::vector<Tensor> in = inputs(c, dev);
      Tensor y;
      {
        autocast guard(DType::bf16);
        y = it->second(in);
      }
      EXPECT_EQ(y.dtype(), dtype_from_name(c["dtype"].get<std::string>()));
      EXPECT_EQ(y.shape(), c["shape"].get<Shape>());
      const auto want = c["values"].get<std::vector<double>>();
      const auto got = y.to_vector<double>();
      ASSERT_EQ(got.size(), want.size());
      // bf16 results: both round an f32 result of the same bf16 inputs once, 2 ulps apart at
      // most; f32 results (losses, conv_transpose) see the same inputs and agree closely.
      const double rel = y.dtype() == DType::bf16 ? 1.0 / 64 : 1e-4;
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], want[i], rel * std::max(1.0, std::fabs(want[i]))) << "at " << i;
    }
  }
}

// The same calls outside autocast keep their inputs' dtypes (the scope is what changed them).
TEST(Autocast, OffByDefaultAndOutsideTheScope) {
  for (const auto& c : golden()["cases"]) {
    const std::string name = c["name"];
    if (name != "matmul/f32_f32" && name != "linear/f32" && name != "conv2d/f32" &&
        name != "cross_entropy/bf16" && name != "prod/bf16")
      continue;
    SCOPED_TRACE(name);
    EXPECT_FALSE(is_autocast_enabled(DeviceType::cpu));
    const std::vector<Tensor> in = inputs(c, Device::cpu());
    EXPECT_EQ(ops().at(op_of(name))(in).dtype(), in[0].dtype());
  }
}

// f16 on the cpu: the low-precision list gives f16, the f32 list f32.
TEST(Autocast, F16OnTheCpu) {
  const Tensor a = ones({4, 8}), b = ones({8, 3});
  autocast guard(DeviceType::cpu, DType::f16);
  const Tensor y = matmul(a, b);
  EXPECT_EQ(y.dtype(), DType::f16);
  test::expect_near(y, std::vector<double>(12, 8.0));
  EXPECT_EQ(F::mse_loss(y, zeros({4, 3}, {DType::f16})).dtype(), DType::f32);
  // An f16 input of a matmul under a bf16 scope becomes bf16 (as torch's eligible casts).
  autocast inner(DeviceType::cpu, DType::bf16);
  EXPECT_EQ(matmul(y, ones({3, 2})).dtype(), DType::bf16);
  // f64 is never lowered, and an op with an f64 input keeps the others' full precision too
  // (torch refuses f64 x bf16; Ember promotes, so nothing may be rounded to 16 bits first).
  EXPECT_EQ(matmul(a.to(DType::f64), b.to(DType::f64)).dtype(), DType::f64);
  const Tensor fine = full({1, 1}, 1.0010766, {DType::f32});
  EXPECT_EQ(matmul(ones({1, 1}, {DType::f64}), fine).item<double>(), double(1.0010766f));
  EXPECT_EQ(linear(ones({1, 1}, {DType::f64}), fine).item<double>(), double(1.0010766f));
}

TEST(Autocast, ScopesNestRestoreAndStayOnTheirThreadAndDeviceType) {
  EXPECT_FALSE(is_autocast_enabled(DeviceType::cpu));
  EXPECT_EQ(get_autocast_dtype(DeviceType::cpu), DType::bf16);
  EXPECT_EQ(get_autocast_dtype(DeviceType::vulkan), DType::f16);
  {
    autocast outer(DeviceType::cpu, DType::bf16);
    EXPECT_TRUE(is_autocast_enabled(DeviceType::cpu));
    EXPECT_FALSE(is_autocast_enabled(DeviceType::vulkan));
    EXPECT_FALSE(is_autocast_enabled(DeviceType::ref));
    // ref is another device type: its ops are untouched by the cpu's scope.
    EXPECT_EQ(matmul(ones({2, 2}, {Device::ref()}), ones({2, 2}, {Device::ref()})).dtype(),
              DType::f32);
    {
      autocast off(DeviceType::cpu, DType::bf16, false);
      EXPECT_FALSE(is_autocast_enabled(DeviceType::cpu));
      EXPECT_EQ(matmul(ones({2, 2}), ones({2, 2})).dtype(), DType::f32);
      autocast f16(DType::f16);
      EXPECT_EQ(matmul(ones({2, 2}), ones({2, 2})).dtype(), DType::f16);
    }
    EXPECT_TRUE(is_autocast_enabled(DeviceType::cpu));
    EXPECT_EQ(get_autocast_dtype(DeviceType::cpu), DType::bf16);
    bool other_thread = true;
    std::thread([&] { other_thread = is_autocast_enabled(DeviceType::cpu); }).join();
    EXPECT_FALSE(other_thread);
  }
  EXPECT_FALSE(is_autocast_enabled(DeviceType::cpu));
  EXPECT_EQ(get_autocast_dtype(DeviceType::vulkan), DType::f16);
  test::expect_error([] { autocast bad(DType::f32); }, {"[autocast]", "float32"});
  test::expect_error([] { set_autocast_dtype(DeviceType::cpu, DType::i64); }, {"[autocast]"});
  EXPECT_FALSE(is_autocast_enabled(DeviceType::cpu));
  EXPECT_EQ(get_autocast_dtype(DeviceType::cpu), DType::bf16);
}

// Gradients reach f32 parameters as f32 (torch's dtypes: golden "linear_grad"), and a backward
// pass run inside a scope computes in the forward's dtypes.
TEST(Autocast, GradientsComeBackInTheParametersDtype) {
  const json& lg = golden()["linear_grad"];
  for (const Device& dev : host_devices()) {
    nn::Linear lin(8, 5);
    lin.to(dev);
    const Tensor x = rand({3, 8}, {dev});
    Tensor y;
    {
      autocast guard(DType::bf16);
      y = lin.forward(x);
    }
    EXPECT_EQ(dtype_name(y.dtype()), std::string("bfloat16"));
    EXPECT_EQ(lg["forward_dtype"], "bf16");
    y.to(DType::f32).sum().backward();
    EXPECT_EQ(lin.weight.grad().dtype(), DType::f32);
    EXPECT_EQ(lin.bias.grad().dtype(), DType::f32);
    EXPECT_EQ(lg["weight_grad_dtype"], "f32");
  }
  // Built outside autocast, differentiated inside one: the backward's matmuls stay f32, so the
  // gradient is what it is outside.
  const Tensor w0 = rand({16, 16}, {Device::cpu()});
  const Tensor x = rand({4, 16}, {Device::cpu()});
  auto grad_of = [&](bool scope) {
    Tensor w = w0.clone().requires_grad_(true);
    Tensor loss = matmul(x, w).sum();
    if (scope) {
      autocast guard(DType::bf16);
      loss.backward();
    } else {
      loss.backward();
    }
    return w.grad().to_vector<float>();
  };
  EXPECT_EQ(grad_of(true), grad_of(false));
}

// A small CNN + MLP (tanh: smooth, so no ReLU mask flips on a rounding near 0 moves a whole
// gradient term): the gradients under autocast(bf16) against f32 ones, within bf16's
// precision, and f32 like the parameters; channels-last input keeps its layout.
TEST(Autocast, AutocastModelGradientsTrackF32) {
  for (const Device& dev : host_devices()) {
    SCOPED_TRACE(dev.str());
    manual_seed(3);
    auto net =
        nn::make_sequential(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(3, 8, 3).padding(1)),
                            std::make_shared<nn::Tanh>(), std::make_shared<nn::Flatten>(),
                            std::make_shared<nn::Linear>(8 * 6 * 6, 10));
    net->to(dev);
    const Tensor x = randn({4, 3, 6, 6}, {dev}).contiguous(MemoryFormat::channels_last);
    const Tensor t = from_vector(std::vector<int64_t>{1, 2, 3, 4}, {4}, dev);
    auto grads = [&](bool amp) {
      net->zero_grad();
      std::optional<autocast> guard;
      if (amp) guard.emplace(DType::bf16);
      Tensor h = net->forward(x);
      EXPECT_EQ(h.dtype(), amp ? DType::bf16 : DType::f32);
      Tensor loss = F::cross_entropy(h, t);
      EXPECT_EQ(loss.dtype(), DType::f32);
      guard.reset();
      loss.backward();
      std::vector<Tensor> g;
      for (auto& p : net->parameters()) {
        EXPECT_EQ(p.grad().dtype(), DType::f32);
        g.push_back(p.grad().clone());
      }
      return g;
    };
    const auto g32 = grads(false);
    const auto g16 = grads(true);
    ASSERT_EQ(g32.size(), g16.size());
    for (size_t i = 0; i < g32.size(); ++i) {
      // Relative to the gradient's size: bf16 keeps 8 bits, products of a few dozen terms.
      const double scale = amax(abs(g32[i])).item<double>();
      const double err = amax(abs(g16[i] - g32[i])).item<double>();
      EXPECT_LE(err, 0.05 * scale) << "parameter " << i;
      EXPECT_GT(err, 0.0) << "parameter " << i << ": autocast changed nothing";
    }
    // The convolution under autocast keeps a channels-last input's layout.
    autocast guard(DType::bf16);
    const Tensor y = F::conv2d(x, rand({8, 3, 3, 3}, {dev}));
    EXPECT_EQ(y.dtype(), DType::bf16);
    EXPECT_TRUE(y.is_contiguous(MemoryFormat::channels_last));
  }
}

// On the GPU devices, torch's CUDA lists (golden "gpu_lists"): the low list gives the low dtype
// from f32 inputs, the f32 list f32 from low-dtype inputs.
void check_gpu_lists(const Device& dev, DType low) {
  const json& g = golden();
  std::map<std::string, const json*> first_case;
  for (const auto& c : g["cases"]) first_case.emplace(op_of(c["name"]), &c);
  auto run = [&](const std::string& op, DType in_dtype) {
    const json& c = *first_case.at(op);
    std::vector<Tensor> in = inputs(c, dev);
    for (auto& t : in)
      if (is_floating(t.dtype())) t = t.to(in_dtype);
    autocast guard(dev.type(), low);
    return ops().at(op)(in).dtype();
  };
  for (const auto& op : g["gpu_lists"]["lower"]) {
    SCOPED_TRACE(op.get<std::string>() + " on " + dev.str());
    EXPECT_EQ(run(op, DType::f32), low);
  }
  for (const auto& op : g["gpu_lists"]["f32"]) {
    SCOPED_TRACE(op.get<std::string>() + " on " + dev.str());
    EXPECT_EQ(run(op, low), DType::f32);
  }
  // Not listed: keeps its dtype.
  EXPECT_EQ(run("relu", low), low);
}

TEST(Autocast, GpuListsOnVulkan) {
  Device dev;
  std::string why;
  if (!test::vulkan_device(dev, why)) GTEST_SKIP() << why;
  check_gpu_lists(dev, DType::f16);
}

TEST(Autocast, GpuListsOnOpenCL) {
  Device dev;
  std::string why;
  if (!test::opencl_device(dev, why)) GTEST_SKIP() << why;
  // PoCL has no f16 here: autocast to f16 there is an error naming the device and the way out.
  if (!supports_dtype(dev, DType::f16)) {
    const Tensor a = ones({2, 2}, {dev});
    test::expect_error(
        [&] {
          autocast guard(DeviceType::opencl, DType::f16);
          matmul(a, a);
        },
        {"[autocast]", dev.str(), "float16", "bf16"});
  }
  check_gpu_lists(dev, supports_dtype(dev, DType::f16) ? DType::f16 : DType::bf16);
}

}  // namespace
