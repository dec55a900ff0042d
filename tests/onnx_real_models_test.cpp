// Real models through ember::onnx on every device: scripts/onnx_models.py exports ResNet-18,
// ResNet-50, MobileNetV2, SqueezeNet 1.1, EfficientNet-B0 (SiLU, squeeze-excite), a BERT-style
// encoder with a padding mask and an LSTM classifier from torch 1.13 / torchvision 0.14 with
// fixed random weights, with an input and torch's output. The models are made at test time
// (once per build folder, under flock) and the test skips, saying why, without python3-torch.
// Each output must satisfy |ember - torch| <= 1e-4 |torch| + 1e-4 max|torch| (f32).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "ember/ember.h"
#include "ember/onnx.h"
#include "ember/record/npy.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

const fs::path kModels = fs::path(EMBER_ONNX_MODELS_DIR);

// The exported models, made when missing; "" when ready, else why not.
std::string ensure_models() {
  if (fs::exists(kModels / "COMPLETE")) return "";
  if (std::system("/usr/bin/python3 -c 'import torch, torchvision' >/dev/null 2>&1") != 0)
    return "python3-torch / python3-torchvision are not installed: no models to compare with";
  fs::create_directories(kModels);
  const std::string cmd = "flock " + (kModels / ".lock").string() + " sh -c 'test -f " +
                          (kModels / "COMPLETE").string() + " || /usr/bin/python3 " +
                          EMBER_SOURCE_DIR + "/scripts/onnx_models.py " + kModels.string() + "' >" +
                          (kModels / "export.log").string() + " 2>&1";
  if (std::system(cmd.c_str()) != 0 || !fs::exists(kModels / "COMPLETE"))
    return "scripts/onnx_models.py failed: see " + (kModels / "export.log").string();
  return "";
}

bool device_of(const std::string& backend, Device& out) {
  if (backend == "ref") return out = Device::ref(), true;
  if (backend == "cpu") return out = Device::cpu(), true;
  for (const DeviceInfo& d : available_devices())
    if (d.device.str().rfind(backend, 0) == 0) return out = d.device, true;
  return false;
}

class OnnxRealModels : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(OnnxRealModels, MatchTorch) {
  const auto& [name, backend] = GetParam();
  Device device = Device::ref();
  if (!device_of(backend, device)) GTEST_SKIP() << "no " << backend << " device here";
  const std::string why = ensure_models();
  if (!why.empty()) GTEST_SKIP() << why;
  const fs::path dir = kModels / name;
  const onnx::Model model = onnx::load((dir / "model.onnx").string(), device);
  std::map<std::string, Tensor> feed;
  for (const onnx::ValueInfo& in : model.inputs())
    feed[in.name] = record::load_npy((dir / (in.name + ".npy")).string(), device);
  InferenceMode inference;
  const Tensor got = model.run(feed).at("output_0").to(Device::ref());
  const Tensor want = record::load_npy((dir / "output_0.npy").string(), Device::ref());
  ASSERT_EQ(got.shape(), want.shape());
  const std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
  float scale = 0;
  for (float v : w) scale = std::max(scale, std::fabs(v));
  size_t bad = 0, first = 0;
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double err = std::fabs(double(g[i]) - w[i]), tol = 1e-4 * (std::fabs(w[i]) + scale);
    if (!(err <= tol) && bad++ == 0) first = i;
    worst = std::max(worst, err);
  }
  EXPECT_EQ(bad, 0u) << name << " on " << device.str() << ": " << bad << " of " << g.size()
                     << " outputs differ, first at " << first << " (ember " << g[first]
                     << ", torch " << w[first] << ")";
  std::printf("%s on %s: max |ember - torch| %.3g (max |torch| %.3g)\n", name.c_str(),
              device.str().c_str(), worst, double(scale));
}

std::string param_name(const ::testing::TestParamInfo<OnnxRealModels::ParamType>& p) {
  return std::get<0>(p.param) + "_" + std::get<1>(p.param);
}

INSTANTIATE_TEST_SUITE_P(
    Models, OnnxRealModels,
    ::testing::Combine(::testing::Values("resnet18", "resnet50", "mobilenet_v2", "squeezenet",
                                         "efficientnet_b0", "bert_encoder", "lstm_classifier"),
                       ::testing::Values("ref", "cpu", "vulkan", "opencl")),
    param_name);

}  // namespace
