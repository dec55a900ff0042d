// `ember eval` and `ember predict`: load a model trained by `ember train` (a checkpoint of the
// Learner or DIR/model.safetensors) and evaluate it on a test set or classify one image.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "ember/autograd.h"
#include "ember/data/dataloader.h"
#include "ember/data/io.h"
#include "ember/error.h"
#include "ember/nn/functional/activation.h"
#include "ember/nn/functional/interpolate.h"
#include "ember/ops/elementwise.h"
#include "ember/optim/adam.h"
#include "ember/record/checkpoint.h"
#include "ember/record/safetensors.h"
#include "ember/train/learner.h"
#include "image_data.h"
#include "models.h"
#include "trained.h"

namespace ember::tools {

namespace {

// The weight shapes make_model(name, shape) would create that depend on the shape, checked
// against the file's before the model is built: a recorded image size of 2^20 would otherwise
// allocate terabytes before load_state_dict found the mismatch.
void check_weight_shapes(const char* op, const std::string& path, const std::string& name,
                         const ModelShape& s, const nn::StateDict& w) {
  std::vector<std::pair<std::string, Shape>> want;
  if (name == "cnn") {
    if (s.image_size < 6) return;  // make_model says why
    const int64_t pooled = (s.image_size - 4) / 2;
    want = {{"conv1.weight", {32, s.channels, 3, 3}},
            {"fc1.weight", {128, 64 * pooled * pooled}},
            {"fc2.weight", {s.classes, 128}}};
  } else {
    want = {{"fc1.weight", {256, s.channels * s.image_size * s.image_size}},
            {"fc3.weight", {s.classes, 128}}};
  }
  for (const auto& [key, shape] : want)
    if (w.contains(key) && w.at(key).shape() != shape)
      EMBER_FAIL(op, path, ": ", key, " has shape ", shape_str(w.at(key).shape()), ", but the ",
                 name, " for the recorded images (", s.channels, "x", s.image_size, "x",
                 s.image_size, ", ", s.classes, " classes) has ", shape_str(shape));
}

// How many of the model's parameter values are NaN or infinite.
int64_t non_finite_values(nn::Module& m) {
  int64_t n = 0;
  for (const Tensor& p : m.parameters())
    n += logical_not(isfinite(p)).sum().to(Device::cpu()).item<int64_t>();
  return n;
}

// A warning on stderr (the command's stdout stays its normal output).
void warn(const char* op, const std::string& what) {
  std::fflush(stdout);
  std::fprintf(stderr, "warning: [%s] %s\n", op, what.c_str());
}

}  // namespace

Trained load_trained(const char* op, const std::string& path, const std::string& dataset,
                     const Device& device) {
  record::SafetensorsFile f = record::load_safetensors(path, Device::cpu());
  nn::StateDict weights;
  Trained t;
  auto fmt = f.metadata.find("format");
  if (fmt != f.metadata.end() && fmt->second == "ember.checkpoint.v1") {
    record::CheckpointFile ck = record::read_checkpoint(path);
    weights = ck.model;
    const nlohmann::json user = nlohmann::json::parse(ck.state.user_json, nullptr, false);
    if (user.is_object()) {
      t.model_name = user.value("model", "");
      t.dataset = user.value("dataset", "");
      if (t.dataset == "images")
        t.images = ImageData::from_json(user.value("data", nlohmann::json()), path);
      t.test_data = user.value("test_data", "");
    }
  } else {
    weights = f.tensors;
    if (f.metadata.count("ember.model")) t.model_name = f.metadata.at("ember.model");
    if (f.metadata.count("ember.dataset")) t.dataset = f.metadata.at("ember.dataset");
    if (t.dataset == "images")
      t.images = ImageData::from_json(
          nlohmann::json::parse(f.metadata.count("ember.data") ? f.metadata.at("ember.data") : "",
                                nullptr, false),
          path);
    if (f.metadata.count("ember.test_data")) t.test_data = f.metadata.at("ember.test_data");
  }
  std::vector<std::string> keys;
  for (const auto& [k, v] : weights.items()) keys.push_back(k);
  if (t.model_name.empty()) t.model_name = model_from_keys(keys);
  EMBER_CHECK(t.model_name == "cnn" || t.model_name == "mlp", op, path,
              ": not a model trained by `ember train` (no cnn or mlp weights in it)");
  // --dataset only fills in a dataset the file does not record. Another dataset than the recorded
  // one is refused, as train --resume refuses another dataset's run: mnist and fashion-mnist have
  // the same image size and 10 classes, so the model would run and print meaningless figures (or
  // the other dataset's class names).
  if (!dataset.empty() && !t.dataset.empty() && dataset != t.dataset)
    EMBER_FAIL(op, "--dataset ", dataset, ": ", path, " holds a model trained on ", t.dataset,
               " (omit --dataset to use it)");
  if (!dataset.empty()) t.dataset = dataset;
  EMBER_CHECK(!t.dataset.empty(), op, path, ": the dataset is not recorded; pass --dataset");
  Device::set_default_device(device);
  const ModelShape shape = t.dataset == "images" ? t.images.model_shape() : ModelShape{};
  check_weight_shapes(op, path, t.model_name, shape, weights);
  t.model = make_model(t.model_name, shape);
  t.model->load_state_dict(weights, true);
  t.model->eval();
  int64_t total = 0;
  for (const Tensor& p : t.model->parameters()) total += p.numel();
  if (const int64_t bad = non_finite_values(*t.model))
    warn(op, path + ": " + std::to_string(bad) + " of the model's " + std::to_string(total) +
                 " weights are NaN or infinite; its outputs will not be numbers");
  return t;
}

namespace {

// What `ember eval --help` and `ember predict --help` say about their exit status.
constexpr const char* kNotANumberFooter =
    "Exit status: 0 success, 1 failure, 2 usage error (as every command), and\n"
    "  3    the model's output is not a number (its weights hold NaN or infinity): the\n"
    "       figures printed are meaningless; a warning on stderr says so";

}  // namespace

void add_eval_command(CLI::App& app) {
  struct Args {
    std::string checkpoint, data_dir, dataset, device;
    int64_t batch_size = 256;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("eval", "Test loss and accuracy of a trained model");
  cmd->footer(kNotANumberFooter);
  cmd->add_option("--checkpoint", a->checkpoint,
                  "A checkpoint (DIR/checkpoints/*.safetensors) or DIR/model.safetensors")
      ->required()
      ->check(non_empty_path());
  cmd->add_option("--data", a->data_dir,
                  "Dataset folder (default: the dataset's; for an image folder, the one it was "
                  "trained on: its test folder, or the validation images of its split)")
      ->check(non_empty_path());
  cmd->add_option("--dataset", a->dataset,
                  "mnist or fashion-mnist, for a model file that does not record its dataset "
                  "(another dataset than the recorded one is an error)")
      ->check(CLI::IsMember({"mnist", "fashion-mnist"}));
  add_device_option(cmd, a->device);
  add_max_image_pixels_option(cmd);
  add_int_option(cmd, "--batch-size", a->batch_size,
                 "Evaluation batch size (one larger than the test set is the whole set)",
                 int64_t(1))
      ->capture_default_str();
  cmd->callback([a] {
    const Device device = device_of(a->device);
    Trained t = load_trained("eval", a->checkpoint, a->dataset, device);
    data::DatasetPtr<data::Example> test;
    std::string what = t.dataset;
    if (t.dataset == "images") {
      ImageData d = t.images;
      if (!a->data_dir.empty()) d.dir = a->data_dir;
      ImageSplits s = load_image_folder(d, false, 0);
      test = s.valid;
      what += " " + s.data.dir;
    } else {
      const DatasetSpec spec = dataset_spec(t.dataset);
      const std::string dir = a->data_dir.empty() ? spec.default_dir : a->data_dir;
      std::string fingerprint;
      test = std::make_shared<data::TensorDataset>(load_split(spec, dir, false, &fingerprint));
      // MNIST and Fashion-MNIST have the same shapes: the other one's images would be classified
      // without an error, into meaningless figures. Files from before the fingerprint was
      // recorded are not checked.
      if (!t.test_data.empty() && fingerprint != t.test_data)
        EMBER_FAIL("eval", dir, ": these are not the ", t.dataset, " test images ", a->checkpoint,
                   " was trained with (their fingerprint is ", fingerprint, ", the model records ",
                   t.test_data, "); pass --data the folder of its dataset");
    }
    data::DataLoaderOptions lo;
    // As torch's DataLoader, a batch larger than the set is the whole set.
    lo.batch_size = std::max<int64_t>(1, std::min<int64_t>(a->batch_size, test->size()));
    train::Loader loader(test, lo);
    auto opt = std::make_shared<optim::Adam>(t.model->parameters());  // unused: evaluation only
    train::LearnerOptions o;
    o.device = device;
    o.progress = train::Progress::none;
    train::Learner learner(t.model, opt, train::cross_entropy_loss(), o);
    const auto m = learner.evaluate(loader);
    std::printf("model %s, dataset %s (%lld test images), device %s\n", t.model_name.c_str(),
                what.c_str(), static_cast<long long>(test->size()), device.str().c_str());
    const double loss = m.at("loss");
    if (!std::isfinite(loss)) {
      // A NaN output makes every prediction class 0: the accuracy would look like a result.
      std::printf("test loss: %s\ntest accuracy: not a number (the model's outputs are not)\n",
                  std::isnan(loss) ? "nan"
                  : loss > 0       ? "inf"
                                   : "-inf");
      warn("eval", "the test loss is not a number: the model (" + a->checkpoint +
                       ") outputs NaN or infinity; exit status 3");
      throw CLI::RuntimeError(kExitNotANumber);
    }
    // Rounded as `ember train`'s status line: the loss to 4 significant digits (%.4f printed
    // 0.0000 for a loss of 3e-5), the accuracy as a percentage.
    std::printf("test loss: %.4g\ntest accuracy: %.2f%%\n", loss, 100.0 * m.at("accuracy"));
  });
}

void add_predict_command(CLI::App& app) {
  struct Args {
    std::string checkpoint, image, dataset, device;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "predict",
      "Classify one image (PNG or JPEG; converted to grayscale and resized to 28x28 for MNIST, "
      "read as the training images were for an image folder; prints the class name)");
  cmd->add_option("--checkpoint", a->checkpoint,
                  "A checkpoint (DIR/checkpoints/*.safetensors) or DIR/model.safetensors")
      ->required()
      ->check(non_empty_path());
  cmd->footer(kNotANumberFooter);
  cmd->add_option("image", a->image, "The image file")->required()->check(non_empty_path());
  cmd->add_option("--dataset", a->dataset,
                  "mnist or fashion-mnist, for a model file that does not record its dataset "
                  "(another dataset than the recorded one is an error)")
      ->check(CLI::IsMember({"mnist", "fashion-mnist"}));
  add_device_option(cmd, a->device);
  add_max_image_pixels_option(cmd);
  cmd->callback([a] {
    namespace F = nn::functional;
    const Device device = device_of(a->device);
    Trained t = load_trained("predict", a->checkpoint, a->dataset, device);
    std::vector<std::string> classes;
    Tensor x;
    if (t.dataset == "images") {
      x = image_input(a->image, t.images).to(device);
      classes = t.images.classes;
    } else {
      const DatasetSpec spec = dataset_spec(t.dataset);
      classes = spec.classes;
      Tensor img = data::load_image(a->image, 1);  // u8 [1, H, W]
      const int64_t h = img.shape()[1], w = img.shape()[2];
      EMBER_CHECK(h > 0 && w > 0, "predict", a->image, ": the image is empty");
      x = img.to(DType::f32).unsqueeze(0);  // [1, 1, H, W], 0..255
      if (h != 28 || w != 28) {
        // Shrinking averages the covered pixels (area); enlarging interpolates (bilinear).
        const bool shrink = h >= 28 && w >= 28;
        x = F::interpolate(x, {28, 28}, {}, shrink ? "area" : "bilinear");
      }
      x = ((x * (1.0 / 255.0) - spec.mean) * (1.0 / spec.std)).to(device);
    }
    NoGradGuard ng;
    Tensor p = F::softmax(t.model->forward(x), 1).to(Device::cpu()).contiguous();
    const std::vector<float> probs = p.to_vector<float>();
    const bool numbers =
        std::all_of(probs.begin(), probs.end(), [](float v) { return std::isfinite(v); });
    if (!numbers) {
      // No class: a NaN compares false with everything, so "the best" would be class 0.
      std::printf("class: none (the model's output is not a number)\n");
      for (size_t i = 0; i < probs.size(); ++i) {
        char v[32];
        std::snprintf(v, sizeof v, "%.4f", double(probs[i]));
        std::printf("  %zu %-12s %s\n", i, classes.at(i).c_str(),
                    std::isnan(probs[i]) ? "nan" : v);  // not "-nan"
      }
      warn("predict", "the model (" + a->checkpoint +
                          ") outputs NaN or infinity for this image: no class; exit status 3");
      throw CLI::RuntimeError(kExitNotANumber);
    }
    size_t best = 0;
    for (size_t i = 1; i < probs.size(); ++i)
      if (probs[i] > probs[best]) best = i;
    std::printf("class: %zu (%s), probability %.4f\n", best, classes.at(best).c_str(),
                double(probs[best]));
    for (size_t i = 0; i < probs.size(); ++i)
      std::printf("  %zu %-12s %.4f\n", i, classes.at(i).c_str(), double(probs[i]));
  });
}

}  // namespace ember::tools
