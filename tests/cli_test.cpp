// The `ember` command end to end: it is run as a separate process (its path comes from the
// EMBER_CLI_PATH compile definition) on short trainings, and its outputs (exit status, stdout,
// summary.json, the files in the run folder) are checked. The training tests need Fashion-MNIST
// (Debian package dataset-fashion-mnist) and skip themselves, saying so, when it is absent.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "ember/data/data.h"
#include "ember/ember.h"
#include "ember/nn/functional/interpolate.h"
#include "ember/record/safetensors.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

#ifdef EMBER_CLI_PATH
const char* const kCli = EMBER_CLI_PATH;
#else
const char* const kCli = nullptr;
#endif
const char* const kFashion = "/usr/share/datasets/fashion-mnist";

struct Result {
  int status = -1;  // exit status, or -1 when killed by a signal
  std::string output;
};

// Runs `ember <args>` with stdout and stderr captured together; `env`: "NAME=value ..." set for
// the command only.
Result run_ember(const std::string& args, const std::string& env = "") {
  Result r;
  const std::string cmd = (env.empty() ? "" : "env " + env + " ") + kCli + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

struct TempDir {
  fs::path path;
  TempDir() {
    static std::atomic<int> counter{0};
    path = fs::temp_directory_path() /
           ("ember_cli_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

json read_json(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << path;
  return json::parse(f, nullptr, false);
}

bool have_fashion() {
  return fs::exists(fs::path(kFashion) / "train-images-idx3-ubyte.gz") ||
         fs::exists(fs::path(kFashion) / "train-images-idx3-ubyte");
}

#define REQUIRE_CLI() \
  if (!kCli) GTEST_SKIP() << "the ember command is not built (EMBER_BUILD_TOOLS=OFF)"
#define REQUIRE_FASHION()                                          \
  REQUIRE_CLI();                                                   \
  if (!have_fashion())                                             \
  GTEST_SKIP() << "Fashion-MNIST is not installed in " << kFashion \
               << " (Debian package dataset-fashion-mnist); skipping the training test"

// The 10 probabilities `ember predict` prints ("  <i> <name> <p>" lines).
std::vector<double> probabilities(const std::string& out) {
  std::vector<double> p;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("  ", 0) != 0) continue;
    p.push_back(std::stod(line.substr(line.find_last_of(' ') + 1)));
  }
  return p;
}

}  // namespace

TEST(CliTest, HelpForEveryCommand) {
  REQUIRE_CLI();
  for (const char* c : {"", "train ", "eval ", "predict ", "devices "}) {
    Result r = run_ember(std::string(c) + "--help");
    EXPECT_EQ(r.status, 0) << c << r.output;
    EXPECT_NE(r.output.find("Usage"), std::string::npos) << c << r.output;
  }
  Result t = run_ember("train --help");
  for (const char* opt : {"--model", "--epochs", "--batch-size", "--lr", "--device", "--out",
                          "--resume", "--data", "--workers", "--seed", "--limit-train"})
    EXPECT_NE(t.output.find(opt), std::string::npos) << opt;
}

TEST(CliTest, UsageErrorsExitWithTwo) {
  REQUIRE_CLI();
  Result r = run_ember("train cifar10");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(r.output.rfind("error: ", 0), 0u) << r.output;
  EXPECT_EQ(run_ember("train fashion-mnist --model resnet").status, 2);
  EXPECT_EQ(run_ember("").status, 2);
  // An explicit 0 or negative epoch count is a usage error, not the default.
  for (const char* e : {"0", "-1"}) {
    Result bad = run_ember(std::string("train fashion-mnist --limit-train 64 --epochs ") + e);
    EXPECT_EQ(bad.status, 2) << bad.output;
    EXPECT_EQ(
        bad.output.rfind(
            std::string("error: --epochs: value ") + e + " is out of range (must be >= 1)\n", 0),
        0u)
        << bad.output;
  }
}

TEST(CliTest, UnknownOptionIsNamed) {
  REQUIRE_CLI();
  // CLI11 reported the missing command or dataset instead ("A subcommand is required").
  for (const char* args : {"--frob", "train --frob", "train fashion-mnist --frob", "eval --frob"}) {
    Result r = run_ember(args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.output;
    EXPECT_EQ(r.output.rfind("error: ", 0), 0u) << args << ": " << r.output;
    EXPECT_NE(r.output.find("not expected: --frob"), std::string::npos) << args << ": " << r.output;
  }
}

TEST(CliTest, BadEmberDeviceIsAnErrorOnItsOwnLine) {
  REQUIRE_CLI();
  Result r = run_ember("devices", "EMBER_DEVICE=bogus");
  EXPECT_EQ(r.status, 1) << r.output;
  // The devices are still listed, then the error on a line of its own that names the variable.
  EXPECT_EQ(r.output.rfind("cpu\n", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("\nerror: [device] EMBER_DEVICE=bogus does not name a usable device: "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("'bogus'"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("default device:"), std::string::npos) << r.output;
  // A good value is listed as the default.
  Result ok = run_ember("devices", "EMBER_DEVICE=ref");
  EXPECT_EQ(ok.status, 0) << ok.output;
  EXPECT_NE(ok.output.find("\ndefault device: ref\n"), std::string::npos) << ok.output;
}

TEST(CliTest, TestOnlyFlagIsHiddenFromHelpButAccepted) {
  REQUIRE_CLI();
  Result h = run_ember("train --help");
  EXPECT_EQ(h.status, 0) << h.output;
  EXPECT_NE(h.output.find("--limit-test"), std::string::npos) << h.output;
  EXPECT_EQ(h.output.find("--interrupt-after"), std::string::npos) << h.output;
  // Still parsed: the run gets as far as checking --epochs.
  Result r = run_ember("train fashion-mnist --interrupt-after 3 --epochs 0");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--epochs: value 0 is out of range"), std::string::npos) << r.output;
}

TEST(CliTest, IntegersOutOfRangeAreUsageErrorsNamingTheFlag) {
  REQUIRE_CLI();
  // CLI11 clamped these to INT64_MAX / UINT64_MAX or wrapped -1 to 2^64 - 1.
  for (const char* args :
       {"--epochs 99999999999999999999", "--epochs -99999999999999999999",
        "--seed 99999999999999999999", "--seed 18446744073709551616", "--seed -1",
        "--batch-size 9223372036854775808", "--limit-train 1e3", "--epochs 3x"}) {
    Result r = run_ember(std::string("train fashion-mnist ") + args);
    const std::string flag = std::string(args).substr(0, std::string(args).find(' '));
    EXPECT_EQ(r.status, 2) << args << ": " << r.output;
    EXPECT_EQ(r.output.rfind("error: " + flag + ": value ", 0), 0u) << args << ": " << r.output;
  }
  Result e = run_ember("eval --checkpoint x --batch-size 99999999999999999999");
  EXPECT_EQ(e.status, 2) << e.output;
  EXPECT_NE(e.output.find("--batch-size: value 99999999999999999999 is out of range"),
            std::string::npos)
      << e.output;
  // The ends of the ranges are accepted, read as decimal: the run gets as far as loading the
  // data (from a folder that does not exist).
  for (const char* args : {"--seed 18446744073709551615", "--seed 0", "--workers 010",
                           "--workers 256", "--batch-size 9223372036854775807"}) {
    Result r = run_ember(std::string("train fashion-mnist --data /nonexistent-ember ") + args);
    EXPECT_EQ(r.status, 1) << args << ": " << r.output;
    EXPECT_EQ(r.output.rfind("error: [", 0), 0u) << args << ": " << r.output;
    EXPECT_NE(r.output.find("/nonexistent-ember"), std::string::npos) << args << r.output;
  }
  Result low = run_ember("train fashion-mnist --epochs -9223372036854775808");
  EXPECT_EQ(low.status, 2) << low.output;
  EXPECT_NE(low.output.find("--epochs: value -9223372036854775808 is out of range (must be >= 1)"),
            std::string::npos)
      << low.output;
  // --workers near 2^63 started threads until the system gave out: refused.
  for (const char* w : {"9223372036854775807", "257"}) {
    Result r = run_ember(std::string("train fashion-mnist --workers ") + w);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_EQ(
        r.output.rfind(
            std::string("error: --workers: value ") + w + " is out of range (must be 0 to 256)", 0),
        0u)
        << r.output;
  }
}

TEST(CliTest, EvalAndPredictRefuseAnotherDatasetThanTheRecordedOne) {
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

TEST(CliTest, MissingOrCorruptCheckpointIsAnError) {
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

TEST(CliTest, ShortMlpRunWritesSummaryAndLearns) {
  REQUIRE_FASHION();
  TempDir dir;
  Result r = run_ember("train fashion-mnist --limit-train 2000 --epochs 1 --model mlp --out " +
                       (dir / "run"));
  ASSERT_EQ(r.status, 0) << r.output;
  const json s = read_json(dir / "run/summary.json");
  ASSERT_TRUE(s.is_object());
  EXPECT_EQ(s["dataset"], "fashion-mnist");
  EXPECT_EQ(s["model"], "mlp");
  EXPECT_EQ(s["device"], "cpu");
  EXPECT_EQ(s["status"], "completed");
  EXPECT_EQ(s["epochs"], 1);
  EXPECT_EQ(s["steps"], 32);  // ceil(2000 / 64)
  EXPECT_EQ(s["train_samples"], 2000);
  EXPECT_EQ(s["test_samples"], 10000);
  // Chance is 10% accuracy and a loss of ln(10) = 2.30; 2,000 images reach about 75% / 0.7.
  EXPECT_GT(s["test_accuracy"].get<double>(), 0.6);
  EXPECT_LE(s["test_accuracy"].get<double>(), 1.0);
  EXPECT_LT(s["test_loss"].get<double>(), 1.2);
  EXPECT_GT(s["train_samples_per_second"].get<double>(), 0.0);
  EXPECT_GT(s["wall_seconds"].get<double>(), 0.0);
  ASSERT_EQ(s["history"].size(), 1u);
  for (const char* f : {"metrics.csv", "metrics.json", "report.html", "model.safetensors",
                        "checkpoints/best.safetensors"})
    EXPECT_TRUE(fs::exists(dir / ("run/" + std::string(f)))) << f;

  // eval of the saved model reproduces the test accuracy of the last epoch.
  r = run_ember("eval --checkpoint " + (dir / "run/model.safetensors"));
  ASSERT_EQ(r.status, 0) << r.output;
  std::ostringstream acc;
  acc.setf(std::ios::fixed);
  acc.precision(4);
  acc << s["test_accuracy"].get<double>();
  EXPECT_NE(r.output.find("test accuracy: " + acc.str()), std::string::npos) << r.output;
  // --dataset naming the recorded dataset is accepted (another one: EvalAndPredictRefuse...).
  r = run_ember("eval --dataset fashion-mnist --checkpoint " + (dir / "run/model.safetensors"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("test accuracy: " + acc.str()), std::string::npos) << r.output;
}

TEST(CliTest, CnnLossDecreasesOnATinyRun) {
  REQUIRE_FASHION();
  TempDir dir;
  Result r = run_ember(
      "train fashion-mnist --model cnn --limit-train 192 --limit-test 128 --epochs 2 "
      "--batch-size 32 --out " +
      (dir / "run"));
  ASSERT_EQ(r.status, 0) << r.output;
  const json s = read_json(dir / "run/summary.json");
  ASSERT_EQ(s["history"].size(), 2u) << s.dump();
  const double l0 = s["history"][0]["train_loss"], l1 = s["history"][1]["train_loss"];
  EXPECT_LT(l1, l0);
  EXPECT_LT(l1, 2.0);  // below chance (ln 10 = 2.30)
  EXPECT_EQ(s["model"], "cnn");
  EXPECT_EQ(s["steps"], 12);  // 2 x 192 / 32
}

TEST(CliTest, ResumeAfterInterruptionMatchesAnUninterruptedRun) {
  REQUIRE_FASHION();
  TempDir dir;
  const std::string common =
      "train fashion-mnist --model mlp --limit-train 640 --limit-test 500 --epochs 2 --seed 7 ";
  Result full = run_ember(common + "--out " + (dir / "full"));
  ASSERT_EQ(full.status, 0) << full.output;

  Result cut = run_ember(common + "--interrupt-after 13 --out " + (dir / "cut"));
  EXPECT_EQ(cut.status, 130) << cut.output;
  EXPECT_TRUE(fs::exists(dir / "cut/checkpoints/interrupted.safetensors"));
  EXPECT_EQ(read_json(dir / "cut/summary.json")["status"], "interrupted");

  Result resumed = run_ember(common + "--resume --out " + (dir / "cut"));
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  const json a = read_json(dir / "full/summary.json"), b = read_json(dir / "cut/summary.json");
  EXPECT_EQ(b["status"], "completed");
  EXPECT_EQ(b["epochs"], 2);
  EXPECT_EQ(b["steps"], a["steps"]);
  ASSERT_EQ(b["history"].size(), 2u);
  // The weights after each epoch are the same, so are the test metrics. (The resumed epoch's
  // train_loss covers only the batches run after the resume, so it is not compared.)
  for (int e = 0; e < 2; ++e)
    for (const char* m : {"valid_loss", "valid_accuracy"})
      EXPECT_EQ(a["history"][e][m].get<double>(), b["history"][e][m].get<double>())
          << "epoch " << e << " " << m;
  EXPECT_EQ(a["history"][0]["train_loss"].get<double>(),
            b["history"][0]["train_loss"].get<double>());

  // Interrupted in the first epoch: the checkpoint folder exists already, so nothing is lost.
  Result early = run_ember(common + "--interrupt-after 3 --out " + (dir / "early"));
  EXPECT_EQ(early.status, 130) << early.output;
  EXPECT_TRUE(fs::exists(dir / "early/checkpoints/interrupted.safetensors")) << early.output;

  // Resuming another model's run is an error naming it.
  Result other =
      run_ember("train fashion-mnist --model cnn --limit-train 640 --epochs 2 --resume --out " +
                (dir / "cut"));
  EXPECT_EQ(other.status, 1) << other.output;
  EXPECT_NE(other.output.find("cannot load into Cnn"), std::string::npos) << other.output;

  // --resume without a checkpoint is an error.
  Result none = run_ember(common + "--resume --out " + (dir / "empty"));
  EXPECT_EQ(none.status, 1) << none.output;
  EXPECT_EQ(none.output.rfind("error: ", 0), 0u) << none.output;
}

TEST(CliTest, PredictOnAPngTheTestWrites) {
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

// ---- `ember train --data DIR`: the user's own images ----

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

std::string fixed4(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

}  // namespace

TEST(CliTest, ImageFolderTrainsEvaluatesAndPredicts) {
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
    EXPECT_NE(e.output.find("test accuracy: " + fixed4(s["test_accuracy"].get<double>())),
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
TEST(CliTest, TrainEvalAndPredictTakeMaxImagePixels) {
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

TEST(CliTest, TrainNeverWritesIntoTheDataFolder) {
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

TEST(CliTest, ImageFolderWithTestFolderGrayscaleResumes) {
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
  EXPECT_NE(e.output.find("test accuracy: " + fixed4(a["test_accuracy"].get<double>())),
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

TEST(CliTest, ImageFolderErrorsNameTheProblem) {
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
  expect("train --data x --image-size 0", 2, "--image-size: must be >= 1");
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
  expect("train --data " + (dir / "two") + " --valid-fraction 1" + out, 1,
         "--valid-fraction must be in (0, 1)");
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

TEST(CliTest, ExitStatusesAndMessagesAreTheSameForEveryCommand) {
  REQUIRE_CLI();
  // Usage errors: status 2, "error: <what>" and the pointer to --help, on every command.
  for (const char* args :
       {"train fashion-mnist --device nonsense", "train fashion-mnist --lr 0",
        "train fashion-mnist --lr abc", "train fashion-mnist --limit-test -1", "eval",
        "eval --checkpoint x --device nonsense", "eval --checkpoint x --batch-size 0",
        "predict --checkpoint x", "predict --checkpoint x y.png --device vulkan:Bogus",
        "predict --checkpoint x y.png --dataset cifar", "devices extra",
        "eval --checkpoint x --device cpu:1"}) {
    Result r = run_ember(args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.output;
    EXPECT_EQ(r.output.rfind("error: ", 0), 0u) << args << ": " << r.output;
    EXPECT_EQ(r.output.rfind("error: [", 0), std::string::npos) << args << ": " << r.output;
    EXPECT_NE(r.output.find("\nRun with --help for more information.\n"), std::string::npos)
        << args << ": " << r.output;
  }
  Result dev = run_ember("train fashion-mnist --device nonsense");
  EXPECT_NE(
      dev.output.find("--device: unknown device 'nonsense' (expected cpu, cpu:0, ref, vulkan"),
      std::string::npos)
      << dev.output;
  // cpu:0 is the cpu, as torch.device("cpu:0"): past the parser, the missing file is the error.
  Result cpu0 = run_ember("eval --checkpoint x.safetensors --device cpu:0");
  EXPECT_EQ(cpu0.status, 1) << cpu0.output;
  Result cpu1 = run_ember("eval --checkpoint x --device cpu:1");
  EXPECT_NE(cpu1.output.find("--device: 'cpu:1': the cpu backend has one device, index 0"),
            std::string::npos)
      << cpu1.output;
  Result lr = run_ember("train fashion-mnist --lr 0");
  EXPECT_NE(lr.output.find("--lr: value 0 is out of range (must be a finite number > 0)"),
            std::string::npos)
      << lr.output;
  // Failures: status 1 and one line "error: [tag] <what>", the tag naming where it failed.
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> failures = {
      {"train fashion-mnist --data " + (dir / "none"), ""},
      {"eval --checkpoint " + (dir / "none.safetensors"), ""},
      {"predict --checkpoint " + (dir / "none.safetensors") + " " + (dir / "x.png"), ""},
      {"devices", "EMBER_DEVICE=bogus"}};
  for (const auto& [args, env] : failures) {
    Result r = run_ember(args, env);
    EXPECT_EQ(r.status, 1) << args << ": " << r.output;
    const size_t at = r.output.find("error: [");
    ASSERT_NE(at, std::string::npos) << args << ": " << r.output;
    EXPECT_TRUE(at == 0 || r.output[at - 1] == '\n') << args << ": " << r.output;
    EXPECT_EQ(r.output.find("Run with --help"), std::string::npos) << args << ": " << r.output;
  }
  // The statuses are documented in --help.
  Result help = run_ember("--help");
  EXPECT_EQ(help.status, 0);
  for (const char* s : {"Exit status", "  0    success", "  1    the command failed",
                        "  2    usage error", "  130  `ember train` was interrupted"})
    EXPECT_NE(help.output.find(s), std::string::npos) << s << "\n" << help.output;
}

TEST(CliTest, BatchLargerThanTheSetIsTheWholeSet) {
  REQUIRE_FASHION();
  TempDir dir;
  // As torch's DataLoader(batch_size=2**63 - 1): one batch. The loader's arithmetic overflowed.
  Result r = run_ember(
      "train fashion-mnist --model mlp --limit-train 100 --limit-test 50 --epochs 1 "
      "--batch-size 9223372036854775807 --out " +
      (dir / "run"));
  ASSERT_EQ(r.status, 0) << r.output;
  const json s = read_json(dir / "run/summary.json");
  EXPECT_EQ(s["steps"], 1);
  EXPECT_EQ(s["batch_size"], 9223372036854775807LL);
  Result e = run_ember("eval --batch-size 9223372036854775807 --checkpoint " +
                       (dir / "run/model.safetensors"));
  EXPECT_EQ(e.status, 0) << e.output;
  EXPECT_NE(e.output.find("(10000 test images)"), std::string::npos) << e.output;
}

TEST(CliTest, EvalRefusesTestImagesOfAnotherDataset) {
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

// ---- Files are not trusted (issue 13 items 1, 5, 6) ----

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

TEST(CliTest, NanModelWarnsAndExitsWithThree) {
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

TEST(CliTest, ModelFileMetadataOutOfRangeNamesTheField) {
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

// --resume keeps the checkpoint's learning rate (torch's optimizer.load_state_dict) unless --lr
// is given; what is reported is what ran.
TEST(CliTest, ResumeKeepsTheCheckpointsLearningRateUnlessLrIsGiven) {
  REQUIRE_FASHION();
  TempDir dir;
  const std::string common = "train fashion-mnist --model mlp --limit-train 320 --limit-test 100 ";
  Result r = run_ember(common + "--epochs 1 --lr 0.01 --out " + (dir / "a"));
  ASSERT_EQ(r.status, 0) << r.output;
  fs::copy(dir / "a", dir / "b", fs::copy_options::recursive);
  auto epoch_lrs = [&](const std::string& run) {
    std::ifstream f(dir / (run + "/summary.json"));
    const nlohmann::json s = nlohmann::json::parse(f);
    std::vector<double> lrs;
    for (const auto& e : s["history"]) lrs.push_back(e["lr"].get<double>());
    return std::make_pair(s["lr"].get<double>(), lrs);
  };
  Result kept = run_ember(common + "--epochs 2 --resume --out " + (dir / "a"));
  ASSERT_EQ(kept.status, 0) << kept.output;
  EXPECT_NE(kept.output.find("Adam lr 0.01,"), std::string::npos) << kept.output;
  EXPECT_EQ(epoch_lrs("a"), std::make_pair(0.01, std::vector<double>{0.01, 0.01}));
  Result changed = run_ember(common + "--epochs 2 --resume --lr 0.5 --out " + (dir / "b"));
  ASSERT_EQ(changed.status, 0) << changed.output;
  EXPECT_NE(changed.output.find("Adam lr 0.5,"), std::string::npos) << changed.output;
  EXPECT_EQ(epoch_lrs("b"), std::make_pair(0.5, std::vector<double>{0.01, 0.5}));
}

TEST(CliTest, ResumingACopiedRunFolderLeavesTheOriginalAlone) {
  REQUIRE_FASHION();
  TempDir dir;
  const std::string common =
      "train fashion-mnist --model mlp --limit-train 320 --limit-test 100 --seed 3 ";
  Result r = run_ember(common + "--epochs 2 --out " + (dir / "a"));
  ASSERT_EQ(r.status, 0) << r.output;
  const std::vector<std::string> names = {"epoch-0001.safetensors", "epoch-0002.safetensors"};
  std::vector<std::string> bytes;
  for (const auto& n : names) {
    std::ifstream f(dir / ("a/checkpoints/" + n), std::ios::binary);
    bytes.emplace_back((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(bytes.back().empty()) << n;
  }
  fs::copy(dir / "a", dir / "b", fs::copy_options::recursive);
  // Resuming the copy for two more epochs rotated the original's epoch-0001 and epoch-0002 out.
  Result b = run_ember(common + "--epochs 4 --resume --out " + (dir / "b"));
  ASSERT_EQ(b.status, 0) << b.output;
  for (size_t i = 0; i < names.size(); ++i) {
    std::ifstream f(dir / ("a/checkpoints/" + names[i]), std::ios::binary);
    const std::string now((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_EQ(now, bytes[i]) << names[i];
  }
  EXPECT_FALSE(fs::exists(dir / "b/checkpoints/epoch-0001.safetensors"));
  EXPECT_TRUE(fs::exists(dir / "b/checkpoints/epoch-0004.safetensors"));

  // A checkpoint with a negative epoch is refused, naming the file and the field (it resumed
  // into epochs labelled -2..2).
  fs::copy(dir / "a", dir / "c", fs::copy_options::recursive);
  const std::string ck = dir / "c/checkpoints/epoch-0002.safetensors";
  ember::record::SafetensorsFile f = ember::record::load_safetensors(ck);
  f.metadata["epoch"] = "-3";
  ember::record::save_safetensors(ck, f.tensors, f.metadata);
  Result neg = run_ember(common + "--epochs 4 --resume --out " + (dir / "c"));
  EXPECT_EQ(neg.status, 1) << neg.output;
  EXPECT_EQ(neg.output.rfind("error: [load_checkpoint] " + ck +
                                 ": field 'epoch' = \"-3\" is not a non-negative integer",
                             0),
            0u)
      << neg.output;
}
