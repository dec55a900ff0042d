// `ember eval` and `ember predict` on files that are not trusted: model files, checkpoints,
// images and test sets of another dataset (tests/cli_util.h).
#include "cli_util.h"

#include <cmath>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "ember/data/data.h"
#include "ember/ember.h"
#include "ember/nn/functional/interpolate.h"
#include "ember/record/safetensors.h"

using namespace ember::cli_test;

namespace {

// An mlp model file as `ember train` saves it, every weight `value`.
void save_mlp(const std::string& path, float value, const ember::record::Metadata& meta) {
  using namespace ember;
  nn::StateDict d;
  const std::vector<std::pair<std::string, Shape>> shapes = {
      {"fc1.weight", {256, 784}}, {"fc1.bias", {256}},       {"fc2.weight", {128, 256}},
      {"fc2.bias", {128}},        {"fc3.weight", {10, 128}}, {"fc3.bias", {10}}};
  for (const auto& [k, s] : shapes) d.set(k, full(s, value));
  record::save_safetensors(path, d, meta);
}

}  // namespace

TEST(CliTestData, EvalAndPredictRefuseAnotherDatasetThanTheRecordedOne) {
  REQUIRE_CLI();
  TempDir dir;
  // Metadata of a model `ember train` saved on fashion-mnist (the refusal comes before the
  // weights are loaded, so placeholders do).
  ember::record::save_safetensors(dir / "model.safetensors",
                                  [] {
                                    ember::nn::StateDict d;
                                    d.set("w", ember::zeros({2}));
                                    return d;
                                  }(),
                                  {{"ember.dataset", "fashion-mnist"}, {"ember.model", "mlp"}});
  const std::string ck = " --checkpoint " + (dir / "model.safetensors") + " --dataset mnist";
  for (const std::string cmd : {"eval" + ck, "predict" + ck + " " + (dir / "x.png")}) {
    Result r = run_ember(cmd);
    EXPECT_EQ(r.status, 1) << cmd << ": " << r.output;
    EXPECT_EQ(r.output.rfind("error: [" + cmd.substr(0, cmd.find(' ')) + "] --dataset mnist: ", 0),
              0u)
        << cmd << ": " << r.output;
    EXPECT_NE(r.output.find("holds a model trained on fashion-mnist (omit --dataset to use it)"),
              std::string::npos)
        << cmd << ": " << r.output;
  }
}

TEST(CliTestData, MissingOrCorruptCheckpointIsAnError) {
  REQUIRE_CLI();
  TempDir dir;
  Result r = run_ember("eval --checkpoint " + (dir / "nope.safetensors"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(r.output.rfind("error: ", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("nope.safetensors"), std::string::npos) << r.output;

  {
    std::ofstream f(dir / "bad.safetensors", std::ios::binary);
    f << "\x40\x00\x00\x00\x00\x00\x00\x00{\"w\": {\"dtype\": \"F32\", \"shape\": [1000]";
  }
  for (const std::string cmd : {"eval --checkpoint ", "predict --checkpoint "}) {
    r = run_ember(cmd + (dir / "bad.safetensors") + (cmd[0] == 'p' ? " " + (dir / "x.png") : ""));
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_EQ(r.output.rfind("error: ", 0), 0u) << r.output;
    EXPECT_NE(r.output.find("bad.safetensors"), std::string::npos) << r.output;
  }
  // A valid safetensors file that holds no model trained by `ember train`.
  ember::record::save_safetensors(dir / "other.safetensors", [] {
    ember::nn::StateDict d;
    d.set("w", ember::zeros({2}));
    return d;
  }());
  r = run_ember("eval --checkpoint " + (dir / "other.safetensors") + " --dataset fashion-mnist");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("not a model trained by `ember train`"), std::string::npos) << r.output;
}

TEST(CliTestData, PredictOnAPngTheTestWrites) {
  REQUIRE_FASHION();
  TempDir dir;
  Result r = run_ember(
      "train fashion-mnist --model mlp --limit-train 640 --limit-test 100 --epochs 1 "
      "--out " +
      (dir / "run"));
  ASSERT_EQ(r.status, 0) << r.output;
  using namespace ember;
  data::TensorDataset test = data::load_fashion_mnist(kFashion, false);
  Tensor img = test.data()[0].unsqueeze(0).contiguous();  // u8 [1, 28, 28], an ankle boot
  data::save_png(dir / "boot.png", img);
  // The same image at 56x56 (each pixel doubled): resizing by area gives the 28x28 image back.
  Tensor big = nn::functional::interpolate(img.unsqueeze(0), {56, 56})[0].contiguous();
  data::save_png(dir / "boot56.png", big);

  const std::string ck = " --checkpoint " + (dir / "run/checkpoints/best.safetensors") + " ";
  Result p = run_ember("predict" + ck + (dir / "boot.png"));
  ASSERT_EQ(p.status, 0) << p.output;
  EXPECT_EQ(p.output.rfind("class: ", 0), 0u) << p.output;
  const std::vector<double> probs = probabilities(p.output);
  ASSERT_EQ(probs.size(), 10u) << p.output;
  double sum = 0;
  for (double v : probs) sum += v;
  EXPECT_NEAR(sum, 1.0, 1e-3);
  Result p56 = run_ember("predict" + ck + (dir / "boot56.png"));
  ASSERT_EQ(p56.status, 0) << p56.output;
  EXPECT_EQ(p56.output, p.output);

  // Not an image, and a missing one: "error: ..." and status 1.
  {
    std::ofstream f(dir / "text.png");
    f << "not a png";
  }
  for (const std::string bad : {"text.png", "missing.png"}) {
    Result e = run_ember("predict" + ck + (dir / bad));
    EXPECT_EQ(e.status, 1) << e.output;
    EXPECT_EQ(e.output.rfind("error: ", 0), 0u) << e.output;
    EXPECT_NE(e.output.find(bad), std::string::npos) << e.output;
  }
  // A truncated checkpoint.
  {
    std::ifstream in(dir / "run/model.safetensors", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream out(dir / "cut.safetensors", std::ios::binary);
    out << bytes.substr(0, bytes.size() / 2);
  }
  Result t =
      run_ember("predict --checkpoint " + (dir / "cut.safetensors") + " " + (dir / "boot.png"));
  EXPECT_EQ(t.status, 1) << t.output;
  EXPECT_EQ(t.output.rfind("error: ", 0), 0u) << t.output;
}

TEST(CliTestData, EvalRefusesTestImagesOfAnotherDataset) {
  REQUIRE_FASHION();
  using namespace ember;
  TempDir dir;
  // Another dataset with the same shapes and labels: Fashion-MNIST's images inverted (as MNIST
  // and Fashion-MNIST, both u8 [N, 28, 28] with 10 classes).
  fs::create_directories(dir / "other");
  for (bool train : {true, false}) {
    data::TensorDataset ds = data::load_fashion_mnist(kFashion, train);
    const int64_t n = train ? 200 : 500;
    std::vector<uint8_t> px = ds.data().slice(0, 0, n).contiguous().to_vector<uint8_t>();
    for (uint8_t& p : px) p = uint8_t(255 - p);
    std::vector<uint8_t> ys;
    for (int64_t y : ds.targets().slice(0, 0, n).to_vector<int64_t>()) ys.push_back(uint8_t(y));
    const std::string pre = dir / ("other/" + std::string(train ? "train" : "t10k"));
    data::write_idx(pre + "-images-idx3-ubyte", from_vector<uint8_t>(px, {n, 28, 28}));
    data::write_idx(pre + "-labels-idx1-ubyte", from_vector<uint8_t>(ys, {n}));
  }
  Result r = run_ember(
      "train fashion-mnist --model mlp --limit-train 320 --limit-test 100 --epochs 1 --out " +
      (dir / "run"));
  ASSERT_EQ(r.status, 0) << r.output;
  const json s = read_json(dir / "run/summary.json");
  const std::string fp = s["test_data"];
  EXPECT_EQ(fp.rfind("fnv1a64:", 0), 0u) << fp;
  EXPECT_EQ(fp.size(), 24u) << fp;
  fs::create_directories(dir / "copy");
  for (const auto& f : fs::directory_iterator(kFashion)) fs::copy(f.path(), dir / "copy");
  for (const std::string ck : {"run/model.safetensors", "run/checkpoints/best.safetensors"}) {
    // The model's own test images, from another folder: accepted.
    Result ok = run_ember("eval --data " + (dir / "copy") + " --checkpoint " + (dir / ck));
    EXPECT_EQ(ok.status, 0) << ck << ": " << ok.output;
    // Another dataset's: refused, naming both fingerprints (it printed an accuracy before).
    Result bad = run_ember("eval --data " + (dir / "other") + " --checkpoint " + (dir / ck));
    EXPECT_EQ(bad.status, 1) << ck << ": " << bad.output;
    EXPECT_EQ(bad.output.rfind("error: [eval] " + (dir / "other") +
                                   ": these are not the fashion-mnist test images",
                               0),
              0u)
        << ck << ": " << bad.output;
    EXPECT_NE(bad.output.find("the model records " + fp), std::string::npos) << bad.output;
    EXPECT_EQ(bad.output.find("test accuracy"), std::string::npos) << bad.output;
  }
  // A model file from before the fingerprint was recorded is still evaluated.
  record::SafetensorsFile f = record::load_safetensors(dir / "run/model.safetensors");
  f.metadata.erase("ember.test_data");
  record::save_safetensors(dir / "old.safetensors", f.tensors, f.metadata);
  Result old =
      run_ember("eval --data " + (dir / "other") + " --checkpoint " + (dir / "old.safetensors"));
  EXPECT_EQ(old.status, 0) << old.output;
  // Resuming a run on other test images is refused as another dataset's run is.
  Result resumed = run_ember(
      "train fashion-mnist --model mlp --limit-train 320 --limit-test 100 --epochs 2 --resume "
      "--data " +
      (dir / "other") + " --out " + (dir / "run"));
  EXPECT_EQ(resumed.status, 1) << resumed.output;
  EXPECT_NE(resumed.output.find("is from a run with test_data \"" + fp + "\""), std::string::npos)
      << resumed.output;
}

TEST(CliTestData, NanModelWarnsAndExitsWithThree) {
  REQUIRE_CLI();
  TempDir dir;
  const ember::record::Metadata meta = {{"ember.dataset", "fashion-mnist"}, {"ember.model", "mlp"}};
  save_mlp(dir / "nan.safetensors", NAN, meta);
  ember::data::save_png(dir / "x.png", ember::zeros({1, 28, 28}, ember::DType::u8));
  // It printed "class: 0 (T-shirt/top), probability -nan" with exit status 0.
  Result p = run_ember("predict --checkpoint " + (dir / "nan.safetensors") + " " + (dir / "x.png"));
  EXPECT_EQ(p.status, 3) << p.output;
  EXPECT_NE(p.output.find("warning: [predict] " + (dir / "nan.safetensors") +
                          ": 235146 of the model's 235146 weights are NaN or infinite"),
            std::string::npos)
      << p.output;
  EXPECT_NE(p.output.find("class: none (the model's output is not a number)\n"), std::string::npos)
      << p.output;
  EXPECT_NE(p.output.find("  0 T-shirt/top  nan\n"), std::string::npos) << p.output;
  EXPECT_EQ(p.output.find("-nan"), std::string::npos) << p.output;
  EXPECT_NE(p.output.find("outputs NaN or infinity for this image: no class; exit status 3"),
            std::string::npos)
      << p.output;
  // A finite model still exits 0, without a warning.
  save_mlp(dir / "zero.safetensors", 0.0f, meta);
  Result z =
      run_ember("predict --checkpoint " + (dir / "zero.safetensors") + " " + (dir / "x.png"));
  EXPECT_EQ(z.status, 0) << z.output;
  EXPECT_EQ(z.output.find("warning"), std::string::npos) << z.output;
  // Documented in --help (the command's and the tool's).
  for (const char* cmd : {"predict --help", "eval --help", "--help"}) {
    Result h = run_ember(cmd);
    EXPECT_NE(h.output.find("  3    "), std::string::npos) << cmd << ": " << h.output;
    EXPECT_NE(h.output.find("output is not a number"), std::string::npos)
        << cmd << ": " << h.output;
  }
  if (!have_fashion()) GTEST_SKIP() << "Fashion-MNIST is not installed: eval not checked";
  Result e = run_ember("eval --checkpoint " + (dir / "nan.safetensors"));
  EXPECT_EQ(e.status, 3) << e.output;
  EXPECT_NE(e.output.find("test loss: nan\ntest accuracy: not a number"), std::string::npos)
      << e.output;
  EXPECT_NE(e.output.find("warning: [eval] the test loss is not a number"), std::string::npos)
      << e.output;
}

TEST(CliTestData, ModelFileMetadataOutOfRangeNamesTheField) {
  REQUIRE_CLI();
  TempDir dir;
  ember::data::save_png(dir / "x.png", ember::zeros({1, 28, 28}, ember::DType::u8));
  const json good = {{"dir", dir.path.string()},
                     {"classes", {"a", "b"}},
                     {"channels", 1},
                     {"image_size", 28},
                     {"mean", {0.5}},
                     {"std", {0.25}},
                     {"valid_fraction", 0.2},
                     {"seed", 0},
                     {"test_folder", ""}};
  const std::vector<std::pair<std::pair<std::string, json>, std::string>> cases = {
      {{"image_size", 1e300}, "field 'data.image_size' = 1e+300 is not a positive integer"},
      {{"image_size", 2.5}, "field 'data.image_size' = 2.5"},
      {{"image_size", -4}, "field 'data.image_size' = \"-4\""},
      {{"channels", 2}, "the recorded image folder is inconsistent"},
      {{"channels", 1e19}, "field 'data.channels' = 1e+19"},
      {{"std", {0.0}}, "field 'data.std[0]' = 0 is not a standard deviation > 0"},
      {{"mean", {1e308}}, "field 'data.mean[0]' = 1e+308 is not a finite number in [0, 1]"},
      {{"valid_fraction", 7}, "field 'data.valid_fraction' = 7"},
      {{"seed", -1}, "field 'data.seed' = \"-1\" is not a non-negative integer"},
      {{"seed", 1.5}, "field 'data.seed'"},
      // In range, but not the weights' shape: refused before the model is allocated (an mlp
      // for 2^20-pixel sides has 2^40 inputs).
      {{"image_size", 1 << 20},
       "fc1.weight has shape [256, 784], but the mlp for the recorded images (1x1048576x1048576, "
       "2 classes) has [256, 1099511627776]"}};
  for (const auto& [edit, expected] : cases) {
    json data = good;
    data[edit.first] = edit.second;
    save_mlp(dir / "m.safetensors", 0.0f,
             {{"ember.dataset", "images"}, {"ember.model", "mlp"}, {"ember.data", data.dump()}});
    Result r = run_ember("predict --checkpoint " + (dir / "m.safetensors") + " " + (dir / "x.png"));
    EXPECT_EQ(r.status, 1) << edit.first << ": " << r.output;
    EXPECT_EQ(r.output.rfind("error: [", 0), 0u) << r.output;
    EXPECT_NE(r.output.find(expected), std::string::npos) << edit.first << ": " << r.output;
  }
}
