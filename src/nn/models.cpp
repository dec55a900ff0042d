#include "ember/nn/models.h"

#include <algorithm>
#include <cmath>

#include "ember/error.h"
#include "ember/nn/modules/activation.h"
#include "ember/nn/modules/pooling.h"

namespace ember::nn {

Cnn::Cnn(const ModelShape& s) : Sequential("Cnn") {
  const int64_t pooled = (s.image_size - 4) / 2;  // 28 -> 26 -> 24 -> 12
  conv1 = std::make_shared<Conv2d>(s.channels, 32, 3);
  conv2 = std::make_shared<Conv2d>(32, 64, 3);
  fc1 = std::make_shared<Linear>(64 * pooled * pooled, 128);
  fc2 = std::make_shared<Linear>(128, s.classes);
  push_back("conv1", conv1);                          // [N, 32, 26, 26]
  push_back("relu1", std::make_shared<ReLU>());       //
  push_back("conv2", conv2);                          // [N, 64, 24, 24]
  push_back("relu2", std::make_shared<ReLU>());       //
  push_back("pool", std::make_shared<MaxPool2d>(2));  // [N, 64, 12, 12]
  push_back("flatten", std::make_shared<Flatten>());  // [N, 9216]
  push_back("fc1", fc1);
  push_back("relu3", std::make_shared<ReLU>());
  push_back("fc2", fc2);
}

Mlp::Mlp(const ModelShape& s) : Sequential("Mlp") {
  fc1 = std::make_shared<Linear>(s.channels * s.image_size * s.image_size, 256);
  fc2 = std::make_shared<Linear>(256, 128);
  fc3 = std::make_shared<Linear>(128, s.classes);
  push_back("flatten", std::make_shared<Flatten>());
  push_back("fc1", fc1);
  push_back("relu1", std::make_shared<ReLU>());
  push_back("fc2", fc2);
  push_back("relu2", std::make_shared<ReLU>());
  push_back("fc3", fc3);
}

std::shared_ptr<UnaryModule> make_model(const std::string& name, const ModelShape& shape) {
  EMBER_CHECK(shape.channels >= 1 && shape.image_size >= 1 && shape.classes >= 1, "model",
              "images need >= 1 channel, size and class, got ", shape.channels, " channels, size ",
              shape.image_size, ", ", shape.classes, " classes");
  if (name == "cnn") {
    EMBER_CHECK(shape.image_size >= 6, "model", "the cnn needs images of at least 6x6 (two 3x3 ",
                "convolutions and a 2x2 pooling), got ", shape.image_size, "x", shape.image_size,
                " (--image-size)");
    return std::make_shared<Cnn>(shape);
  }
  if (name == "mlp") return std::make_shared<Mlp>(shape);
  EMBER_FAIL("model", "unknown model '", name, "' (expected cnn or mlp)");
}

std::string model_from_keys(const std::vector<std::string>& keys) {
  auto has = [&](const char* k) { return std::find(keys.begin(), keys.end(), k) != keys.end(); };
  if (has("conv1.weight") && has("fc2.weight")) return "cnn";
  if (has("fc1.weight") && has("fc3.weight")) return "mlp";
  return "";
}

namespace {

constexpr const char* kOp = "model_from_state_dict";

// weights[key]'s shape, checked to be rank 2 or 4 with the sizes `want` gives (-1: any >= 1).
Shape checked_shape(const StateDict& w, const char* key, const Shape& want) {
  const Shape& s = w.at(key).shape();
  bool ok = s.size() == want.size();
  for (size_t i = 0; ok && i < s.size(); ++i) ok = want[i] == -1 ? s[i] >= 1 : s[i] == want[i];
  if (!ok)
    EMBER_FAIL(kOp, key, " has shape ", shape_str(s), ", expected ", shape_str(want),
               " (-1: any size) as the cnn / mlp of `ember train` make");
  return s;
}

// The integer square root of n, or -1 when n is not a square.
int64_t exact_sqrt(int64_t n) {
  const auto r = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(n))));
  return r * r == n ? r : -1;
}

}  // namespace

ModelSpec infer_model_spec(const StateDict& weights) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : weights) keys.push_back(k);
  ModelSpec m;
  m.name = model_from_keys(keys);
  if (m.name == "cnn") {
    m.shape.channels = checked_shape(weights, "conv1.weight", {32, -1, 3, 3})[1];
    const int64_t in = checked_shape(weights, "fc1.weight", {128, -1})[1];
    const int64_t pooled = in % 64 == 0 ? exact_sqrt(in / 64) : -1;
    EMBER_CHECK(pooled >= 1, kOp, "fc1.weight has ", in,
                " inputs; the cnn's are 64 * p^2 (p: the pooled image size)");
    m.shape.image_size = 2 * pooled + 4;
    m.shape.classes = checked_shape(weights, "fc2.weight", {-1, 128})[0];
  } else if (m.name == "mlp") {
    const int64_t in = checked_shape(weights, "fc1.weight", {256, -1})[1];
    m.shape.channels = exact_sqrt(in) > 0 ? 1 : 3;
    m.shape.image_size = in % m.shape.channels == 0 ? exact_sqrt(in / m.shape.channels) : -1;
    EMBER_CHECK(m.shape.image_size >= 1, kOp, "fc1.weight has ", in,
                " inputs; the mlp's are C * S^2 for 1 or 3 channels and S x S images");
    m.shape.classes = checked_shape(weights, "fc3.weight", {-1, 128})[0];
  } else {
    std::string names;
    for (size_t i = 0; i < keys.size() && i < 6; ++i) names += (i ? ", " : "") + keys[i];
    if (keys.size() > 6) names += ", ...";
    EMBER_FAIL(kOp, "not the weights of a cnn (conv1.weight, fc2.weight) or an mlp (fc1.weight, ",
               "fc3.weight); the ", keys.size(), " tensors are: ", names.empty() ? "none" : names);
  }
  return m;
}

std::shared_ptr<UnaryModule> model_from_state_dict(const StateDict& weights) {
  const ModelSpec spec = infer_model_spec(weights);
  std::shared_ptr<UnaryModule> model = make_model(spec.name, spec.shape);
  model->load_state_dict(weights, true);
  model->eval();
  return model;
}

}  // namespace ember::nn
