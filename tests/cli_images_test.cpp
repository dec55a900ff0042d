// `ember train --data DIR`: the user's own images, then eval and predict on them
// (tests/cli_util.h).
#include "cli_util.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ember/data/data.h"
#include "ember/ember.h"

using namespace ember::cli_test;

namespace {

// A noisy image of pattern `kind` (0 horizontal stripes, 1 vertical stripes, 2 a checkerboard),
// u8 [channels, h, w]; in colour each pattern also has its own tint.
ember::Tensor pattern_image(int kind, int64_t channels, int64_t h, int64_t w, uint32_t& rng) {
  std::vector<uint8_t> v(size_t(channels * h * w));
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        const bool on = kind == 0   ? (y / 2) % 2 == 0
                        : kind == 1 ? (x / 2) % 2 == 0
                                    : (y / 3 + x / 3) % 2 == 0;
        const int tint = channels == 3 && c == kind ? 60 : 0;
        rng = rng * 1664525u + 1013904223u;
        const int noise = int(rng >> 27) - 16;  // -16..15
        v[size_t((c * h + y) * w + x)] =
            uint8_t(std::clamp((on ? 170 : 40) + tint + noise, 0, 255));
      }
  return ember::from_vector<uint8_t>(v, {channels, h, w}, ember::Device::cpu());
}

// root/<names[k]>/<i>.png with pattern k: mostly 12x16, every fifth image 20x14, the last a JPEG.
void make_image_folder(const fs::path& root, const std::vector<std::string>& names, int per_class,
                       int64_t channels, uint32_t seed) {
  uint32_t rng = seed;
  for (size_t k = 0; k < names.size(); ++k) {
    fs::create_directories(root / names[k]);
    for (int i = 0; i < per_class; ++i) {
      const bool odd = i % 5 == 4;
      const ember::Tensor img = pattern_image(int(k), channels, odd ? 20 : 12, odd ? 14 : 16, rng);
      const std::string name = std::to_string(100 + i);
      if (i == per_class - 1)
        ember::data::save_jpeg((root / names[k] / (name + ".jpg")).string(), img, 95);
      else
        ember::data::save_png((root / names[k] / (name + ".png")).string(), img);
    }
  }
}

// Pattern k is class kPatterns[k]; sorted, the labels are checks 0, stripes_h 1, stripes_v 2.
const std::vector<std::string> kPatterns = {"stripes_h", "stripes_v", "checks"};

// An accuracy as `ember eval` prints it: a percentage with 2 decimals.
std::string percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100 * v);
  return buf;
}

}  // namespace

TEST(CliTestImages, ImageFolderTrainsEvaluatesAndPredicts) {
  REQUIRE_CLI();
  TempDir dir;
  make_image_folder(dir.path / "shapes", kPatterns, 20, 3, 1);
  Result r = run_ember("train --data " + (dir / "shapes") + " --epochs 3 --batch-size 16 --out " +
                       (dir / "run"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("(3 classes, 3x32x32) (48 training, 12 validation images)"),
            std::string::npos)
      << r.output;
  const json s = read_json(dir / "run/summary.json");
  ASSERT_TRUE(s.is_object());
  EXPECT_EQ(s["dataset"], "images");
  EXPECT_EQ(s["model"], "cnn");
  EXPECT_EQ(s["status"], "completed");
  EXPECT_EQ(s["epochs"], 3);
  EXPECT_EQ(s["steps"], 9);  // 3 x ceil(48 / 16)
  // Stratified: 20% of each class's 20 images is held out.
  EXPECT_EQ(s["train_samples"], 48);
  EXPECT_EQ(s["test_samples"], 12);
  const json& d = s["data"];
  EXPECT_EQ(d["classes"], json({"checks", "stripes_h", "stripes_v"}));
  EXPECT_EQ(d["channels"], 3);      // colour images
  EXPECT_EQ(d["image_size"], 32);   // the colour default
  EXPECT_EQ(d["test_folder"], "");  // split
  EXPECT_EQ(d["mean"].size(), 3u);
  EXPECT_EQ(d["dir"], fs::absolute(dir.path / "shapes").lexically_normal().string());
  // Chance is 1/3; the patterns are easy.
  EXPECT_GE(s["test_accuracy"].get<double>(), 0.9) << s.dump();
  for (const char* f : {"metrics.csv", "metrics.json", "report.html", "model.safetensors",
                        "checkpoints/best.safetensors"})
    EXPECT_TRUE(fs::exists(dir / ("run/" + std::string(f)))) << f;

  // eval re-reads the same validation images (the recorded split) from the model file or the
  // Learner's checkpoint.
  for (const char* f : {"model.safetensors", "checkpoints/epoch-0003.safetensors"}) {
    Result e = run_ember("eval --checkpoint " + (dir / ("run/" + std::string(f))));
    ASSERT_EQ(e.status, 0) << f << ": " << e.output;
    EXPECT_NE(e.output.find("(12 test images)"), std::string::npos) << e.output;
    EXPECT_NE(e.output.find("test accuracy: " + percent(s["test_accuracy"].get<double>())),
              std::string::npos)
        << f << ": " << e.output;
  }

  // predict names the class of new images of each pattern, of another size.
  uint32_t rng = 99;
  for (int k = 0; k < 3; ++k) {
    const std::string img = dir / (kPatterns[size_t(k)] + ".png");
    ember::data::save_png(img, pattern_image(k, 3, 24, 30, rng));
    Result p = run_ember("predict --checkpoint " + (dir / "run/model.safetensors") + " " + img);
    ASSERT_EQ(p.status, 0) << p.output;
    const int label = k == 2 ? 0 : k + 1;  // the sorted class order
    EXPECT_EQ(
        p.output.rfind("class: " + std::to_string(label) + " (" + kPatterns[size_t(k)] + ")", 0),
        0u)
        << p.output;
    EXPECT_EQ(probabilities(p.output).size(), 3u) << p.output;
  }
}

// train --data, eval and predict read images under the budget --max-image-pixels sets.
TEST(CliTestImages, TrainEvalAndPredictTakeMaxImagePixels) {
  REQUIRE_CLI();
  TempDir dir;
  uint32_t rng = 3;
  for (int k = 0; k < 2; ++k) {
    const fs::path cls = dir.path / "imgs" / (k ? "b" : "a");
    fs::create_directories(cls);
    for (int i = 0; i < 5; ++i)  // 8 x 8 = 64 pixels
      ember::data::save_png((cls / (std::to_string(i) + ".png")).string(),
                            pattern_image(k, 1, 8, 8, rng));
  }
  const std::string data = " --data " + (dir / "imgs"), out = " --out " + (dir / "run");
  Result r = run_ember("train" + data + out + " --epochs 1 --max-image-pixels 63");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("declares 8x8 = 64 pixels, more than the limit of 63"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(".png"), std::string::npos) << r.output;
  r = run_ember("train" + data + out + " --epochs 1 --max-image-pixels 64");
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string model = " --checkpoint " + (dir / "run/model.safetensors");
  const std::string image = " " + (dir / "imgs/a/0.png");
  r = run_ember("predict" + model + image + " --max-image-pixels 10");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("limit of 10"), std::string::npos) << r.output;
  r = run_ember("predict" + model + image);  // the default budget
  EXPECT_EQ(r.status, 0) << r.output;
  r = run_ember("eval" + model + " --max-image-pixels 10");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("limit of 10"), std::string::npos) << r.output;
  r = run_ember("predict" + model + image + " --max-image-pixels -1");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--max-image-pixels"), std::string::npos) << r.output;
}

TEST(CliTestImages, TrainNeverWritesIntoTheDataFolder) {
  REQUIRE_CLI();
  TempDir dir;
  make_image_folder(dir.path / "shapes", kPatterns, 4, 3, 1);
  for (const std::string& out : {dir / "shapes", dir / "shapes/run", dir / "shapes/checks/run"}) {
    const Result r = run_ember("train --data " + (dir / "shapes") + " --epochs 1 --out " + out);
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find("lies inside the image folder"), std::string::npos) << r.output;
  }
  EXPECT_FALSE(fs::exists(dir.path / "shapes/run"));
  EXPECT_FALSE(fs::exists(dir.path / "shapes/summary.json"));
  // MNIST digits are not fetched into a folder of other files (they were, beside the images).
  const Result m = run_ember("train mnist --data " + (dir / "shapes") + " --epochs 1");
  EXPECT_EQ(m.status, 1) << m.output;
  EXPECT_NE(m.output.find("holds other files"), std::string::npos) << m.output;
  EXPECT_FALSE(fs::exists(dir.path / "shapes/train-images-idx3-ubyte"));
  // Nor into a --data folder that does not exist (a mistyped path made a new folder and fetched).
  const Result t = run_ember("train mnist --data " + (dir / "typo/mnist") + " --epochs 1");
  EXPECT_EQ(t.status, 1) << t.output;
  EXPECT_NE(t.output.find("does not exist"), std::string::npos) << t.output;
  EXPECT_EQ(t.output.find("fetching"), std::string::npos) << t.output;
  EXPECT_FALSE(fs::exists(dir.path / "typo"));
}

TEST(CliTestImages, ImageFolderWithTestFolderGrayscaleResumes) {
  REQUIRE_CLI();
  TempDir dir;
  make_image_folder(dir.path / "g/train", kPatterns, 12, 1, 2);
  make_image_folder(dir.path / "g/test", kPatterns, 4, 1, 3);
  const std::string common = "train --data " + (dir / "g") +
                             " --model mlp --image-size 12 --epochs 2 --batch-size 8 --seed 3 ";
  Result full = run_ember(common + "--out " + (dir / "full"));
  ASSERT_EQ(full.status, 0) << full.output;
  EXPECT_NE(full.output.find("(3 classes, 1x12x12) (36 training, 12 test images)"),
            std::string::npos)
      << full.output;
  const json a = read_json(dir / "full/summary.json");
  EXPECT_EQ(a["data"]["channels"], 1);  // every image is grayscale
  EXPECT_EQ(a["data"]["image_size"], 12);
  EXPECT_EQ(a["data"]["test_folder"], "test");
  EXPECT_EQ(a["train_samples"], 36);
  EXPECT_EQ(a["test_samples"], 12);
  EXPECT_GT(a["test_accuracy"].get<double>(), 0.6) << a.dump();

  Result cut = run_ember(common + "--interrupt-after 5 --out " + (dir / "cut"));
  EXPECT_EQ(cut.status, 130) << cut.output;
  Result resumed = run_ember(common + "--resume --out " + (dir / "cut"));
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  const json b = read_json(dir / "cut/summary.json");
  EXPECT_EQ(b["status"], "completed");
  EXPECT_EQ(b["steps"], a["steps"]);
  ASSERT_EQ(b["history"].size(), 2u);
  for (int e = 0; e < 2; ++e)
    for (const char* m : {"valid_loss", "valid_accuracy"})
      EXPECT_EQ(a["history"][e][m].get<double>(), b["history"][e][m].get<double>())
          << "epoch " << e << " " << m;
  EXPECT_EQ(b["data"], a["data"]);

  // eval reads the test folder.
  Result e = run_ember("eval --checkpoint " + (dir / "full/model.safetensors"));
  ASSERT_EQ(e.status, 0) << e.output;
  EXPECT_NE(e.output.find("test accuracy: " + percent(a["test_accuracy"].get<double>())),
            std::string::npos)
      << e.output;

  // Resuming on a folder whose classes changed is refused, naming them.
  fs::rename(dir.path / "g/train/checks", dir.path / "g/train/grid");
  fs::rename(dir.path / "g/test/checks", dir.path / "g/test/grid");
  Result other = run_ember(common + "--resume --out " + (dir / "cut"));
  EXPECT_EQ(other.status, 1) << other.output;
  EXPECT_NE(other.output.find("is from a run with classes [\"checks\""), std::string::npos)
      << other.output;
  // eval too: the folder no longer holds the classes the model was trained on.
  Result moved = run_ember("eval --checkpoint " + (dir / "full/model.safetensors"));
  EXPECT_EQ(moved.status, 1) << moved.output;
  EXPECT_NE(moved.output.find("differ from those the model was trained on"), std::string::npos)
      << moved.output;
}

TEST(CliTestImages, ImageFolderErrorsNameTheProblem) {
  REQUIRE_CLI();
  TempDir dir;
  auto expect = [&](const std::string& args, int status, const std::string& text) {
    Result r = run_ember(args);
    EXPECT_EQ(r.status, status) << args << ": " << r.output;
    EXPECT_EQ(r.output.rfind("error: ", 0), 0u) << args << ": " << r.output;
    EXPECT_NE(r.output.find(text), std::string::npos) << args << ": " << r.output;
  };
  const std::string out = " --out " + (dir / "run");
  // Usage errors.
  expect("train", 2, "give --data DIR");
  expect("train images", 2, "--data DIR is required");
  expect("train fashion-mnist --image-size 32", 2, "--image-size: applies to an image folder");
  expect("train --data x --channels 2", 2, "--channels: must be 1 or 3");
  expect("train --data x --image-size 0", 2,
         "--image-size: value 0 is out of range (must be 1 to 4096)");
  // The folder.
  expect("train --data " + (dir / "missing") + out, 1, "no such folder");
  fs::create_directories(dir.path / "empty");
  expect("train --data " + (dir / "empty") + out, 1, "no class folders");
  make_image_folder(dir.path / "one", {"only"}, 3, 1, 4);
  expect("train --data " + (dir / "one") + out, 1, "one class folder only ('only')");
  make_image_folder(dir.path / "two", {"a", "b"}, 3, 1, 5);
  fs::create_directories(dir.path / "two/c");
  expect("train --data " + (dir / "two") + out, 1, "class folder 'c' holds no .png/.jpg/.jpeg");
  fs::remove(dir.path / "two/c");
  fs::remove(dir.path / "two/b/101.png");
  fs::remove(dir.path / "two/b/102.jpg");
  expect("train --data " + (dir / "two") + out, 1, "1 image; a class needs at least 2");
  make_image_folder(dir.path / "two", {"a", "b"}, 3, 1, 5);  // whole again
  expect("train --data " + (dir / "two") + " --valid-fraction 1" + out, 2,
         "--valid-fraction: value 1 is out of range (must be > 0 and < 1)");
  expect("train --data " + (dir / "two") + " --image-size 5" + out, 1, "at least 6x6");
  // A corrupt image is named, whether found by the grayscale probe or by the decoder.
  {
    std::ofstream f(dir.path / "two/a/bad.png", std::ios::binary);
    f << "\x89PNG\r\n\x1a\n garbage";
  }
  const std::string bad = (dir.path / "two/a/bad.png").string();
  expect("train --data " + (dir / "two") + out, 1, bad);
  expect("train --data " + (dir / "two") + " --channels 1" + out, 1, bad + ": corrupt");
  fs::remove(bad);
  // A test folder with other classes.
  make_image_folder(dir.path / "tt/train", {"a", "b"}, 2, 1, 7);
  make_image_folder(dir.path / "tt/test", {"a", "c"}, 2, 1, 8);
  expect("train --data " + (dir / "tt") + out, 1, "differ from the training folder's ('a', 'b')");
  // Grayscale images default to 28x28 (the run itself is tiny).
  Result ok = run_ember("train --data " + (dir / "two") + " --epochs 1" + out);
  EXPECT_EQ(ok.status, 0) << ok.output;
  EXPECT_NE(ok.output.find("(2 classes, 1x28x28)"), std::string::npos) << ok.output;
}
