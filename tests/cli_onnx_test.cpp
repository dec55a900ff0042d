// `ember run`, `ember onnx info` and `ember onnx conformance` (tools/onnx.cpp) on models of ONNX's
// backend test data (Debian libonnx-testdata; skipped, saying so, without it).
#include "cli_util.h"

#include <onnx/onnx_pb.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "ember/data/io.h"
#include "ember/ember.h"
#include "ember/record/npy.h"

namespace ember::cli_test {
namespace {

const fs::path kData = fs::path(EMBER_ONNX_TESTDATA_DIR);

// The tensor of a TensorProto .pb file (float data only: the cases used here).
Tensor read_pb(const fs::path& file) {
  std::ifstream f(file, std::ios::binary);
  ::onnx::TensorProto t;
  EXPECT_TRUE(t.ParseFromIstream(&f)) << file;
  Shape shape(t.dims().begin(), t.dims().end());
  EXPECT_EQ(t.data_type(), ::onnx::TensorProto::FLOAT) << file;
  if (t.has_raw_data()) return from_blob(t.raw_data().data(), shape, DType::f32, Device::ref());
  std::vector<float> v(t.float_data().begin(), t.float_data().end());
  return from_vector(v, shape, Device::ref());
}

class CliTestOnnx : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kCli) GTEST_SKIP() << "the ember command is not built";
    if (!fs::is_directory(kData / "pytorch-converted"))
      GTEST_SKIP() << "libonnx-testdata is not installed (" << kData << " missing)";
  }
};

TEST_F(CliTestOnnx, RunReadsAndWritesNpyAndMatchesOnnx) {
  const fs::path c = kData / "pytorch-converted" / "test_Conv2d";
  TempDir tmp;
  const Tensor x = read_pb(c / "test_data_set_0" / "input_0.pb");
  record::save_npy((tmp.path / "x.npy").string(), x);
  for (const char* device : {"cpu", "ref"}) {
    const Result r = run_ember("run " + (c / "model.onnx").string() +
                               " --input 0=" + (tmp.path / "x.npy").string() + " --device " +
                               device + " --output-dir " + (tmp.path / device).string());
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("float32  [2, 4, 5, 4]"), std::string::npos) << r.output;
    const Tensor got = record::load_npy((tmp.path / device / "3.npy").string());
    const Tensor want = read_pb(c / "test_data_set_0" / "output_0.pb");
    ASSERT_EQ(got.shape(), want.shape());
    const std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
    for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], w[i], 1e-4 * (1 + std::fabs(w[i])));
  }
  // The one input may go unnamed.
  const Result bare =
      run_ember("run " + (c / "model.onnx").string() + " --input " + (tmp.path / "x.npy").string());
  EXPECT_EQ(bare.status, 0) << bare.output;
}

TEST_F(CliTestOnnx, RunSaysWhatIsWrongWithItsInputs) {
  const fs::path model = kData / "pytorch-converted" / "test_Conv2d" / "model.onnx";
  TempDir tmp;
  record::save_npy((tmp.path / "wrong.npy").string(), zeros({2, 3, 7, 6}));
  record::save_npy((tmp.path / "f64.npy").string(), zeros({2, 3, 7, 5}, {DType::f64}));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"run " + model.string() + " --input 0=" + (tmp.path / "wrong.npy").string(),
       "has shape [2, 3, 7, 6], the model takes [2, 3, 7, 5]"},
      {"run " + model.string() + " --input 0=" + (tmp.path / "f64.npy").string(),
       "is float64, the model takes float32"},
      {"run " + model.string() + " --input 0=" + (tmp.path / "none.npy").string(), "[load_npy]"},
      {"run " + (tmp.path / "none.onnx").string(), "cannot open"},
      {"run " + (tmp.path / "wrong.npy").string(), "is not an ONNX model"},
      {"run " + (kData / "node" / "test_bernoulli" / "model.onnx").string(),
       "node '#0' (Bernoulli): op not mapped"},
  };
  for (const auto& [args, needle] : cases) {
    const Result r = run_ember(args);
    EXPECT_EQ(r.status, 1) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("error: ["), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << args << "\n" << r.output;
  }
  // Usage errors (exit status 2): an input given twice, --image beside --input, an input the
  // model lacks or leaves out.
  record::save_npy((tmp.path / "ok.npy").string(), zeros({2, 3, 7, 5}));
  data::save_png((tmp.path / "img.png").string(), zeros({1, 7, 5}, DType::u8));
  const std::string ok = (tmp.path / "ok.npy").string();
  const std::vector<std::pair<std::string, std::string>> usage = {
      {"run " + model.string() + " --input 0=" + ok + " --input 0=" + ok, "given twice"},
      {"run " + model.string() + " --input " + ok + " --image " + (tmp.path / "img.png").string(),
       "give one of them"},
      {"run " + model.string(), "the model's input '0' is not given"},
      {"run " + model.string() + " --input 1=" + ok, "the model has no input '1' (its inputs: 0)"},
  };
  for (const auto& [args, needle] : usage) {
    const Result r = run_ember(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << args << "\n" << r.output;
  }
}

TEST_F(CliTestOnnx, RunTakesAnImageScaledTo0To1AndResized) {
  // AveragePool 2x2, stride 2 over x [1, 1, 5, 5]: a 10x10 image is shrunk (area) to 5x5.
  const fs::path model = kData / "node" / "test_averagepool_2d_precomputed_strides" / "model.onnx";
  TempDir tmp;
  std::vector<uint8_t> px(100);
  for (size_t i = 0; i < px.size(); ++i) px[i] = uint8_t(i / 10 < 5 ? 51 : 255);  // rows 0-4
  data::save_png((tmp.path / "img.png").string(), from_vector(px, {1, 10, 10}, Device::ref()));
  const Result r =
      run_ember("run " + model.string() + " --image " + (tmp.path / "img.png").string() +
                " --output-dir " + tmp.path.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const Tensor y = record::load_npy((tmp.path / "y.npy").string());
  ASSERT_EQ(y.shape(), (Shape{1, 1, 2, 2}));
  // The 5x5 input's rows (pairs of image rows averaged): 0.2, 0.2, 0.6, 1, 1 (51 / 255 = 0.2);
  // the pool's windows cover rows 0-1 and 2-3.
  const std::vector<float> v = y.to_vector<float>();
  EXPECT_NEAR(v[0], 0.2, 1e-5);
  EXPECT_NEAR(v[2], 0.8, 1e-5);
  // A model whose input is not an image.
  const Result bad =
      run_ember("run " + (kData / "node" / "test_averagepool_1d_default" / "model.onnx").string() +
                " --image " + (tmp.path / "img.png").string());
  EXPECT_EQ(bad.status, 1) << bad.output;
  EXPECT_NE(bad.output.find("--image needs a model input [N, C, H, W]"), std::string::npos)
      << bad.output;
}

TEST_F(CliTestOnnx, InfoMarksWhatEmberCannotRun) {
  Result r = run_ember("onnx info " +
                       (kData / "pytorch-converted" / "test_Conv2d" / "model.onnx").string());
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* s :
       {"opset 6", "inputs:", "float32  [2, 3, 7, 5]", "1  Conv", "Ember can run this model."})
    EXPECT_NE(r.output.find(s), std::string::npos) << s << "\n" << r.output;
  r = run_ember("onnx info " + (kData / "node" / "test_bernoulli" / "model.onnx").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("Bernoulli                 CANNOT RUN: op not mapped"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("Ember cannot run 1 part"), std::string::npos) << r.output;
}

TEST_F(CliTestOnnx, ConformancePrintsATablePerSuiteAndDevice) {
  const Result r = run_ember("onnx conformance --suite pytorch-operator --device cpu");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(
      r.output.find("pytorch-operator   cpu            35      35       0            0         0"
                    "    100.0%"),
      std::string::npos)
      << r.output;
}

// A bad value on the command line is a usage error (status 2, "error: <what>", the pointer to
// --help) on the ONNX commands as on the others, before any file is read: `onnx conformance
// --device bogus` was a failure (status 1) while `run --device bogus` was a usage error.
TEST(CliTestOnnxUsage, BadValuesAreUsageErrorsAsOnEveryCommand) {
  REQUIRE_CLI();
  TempDir tmp;
  const std::string model = (tmp.path / "none.onnx").string();
  const std::string conformance = "onnx conformance --data " + tmp.path.string();  // no suites
  const std::vector<std::pair<std::string, std::string>> cases = {
      {conformance + " --device bogus", "--device: unknown device 'bogus'"},
      {conformance + " --device cpu bogus", "--device: unknown device 'bogus'"},
      {conformance + " --device cpu:1", "--device: 'cpu:1': the cpu backend has one device"},
      {conformance + " --device ''", "--device: unknown device ''"},
      {"onnx conformance --data '' --device cpu", "--data: the path is empty"},
      {conformance + " --device cpu --device cpu", "--device: cpu given twice"},
      {conformance + " --device cpu --suite simple --suite simple", "--suite: simple given twice"},
      {"onnx conformance --data a --data b", "--data given more than once"},
      {"run " + model + " --device bogus", "--device: unknown device 'bogus'"},
      {"run " + model + " --input 0=", "--input: '0=': the file name is empty"},
      {"run " + model + " --input =x.npy", "--input: '=x.npy': the input name is empty"},
      {"run " + model + " --input x.npy --image x.png", "give one of them"},
      {"export --checkpoint x --onnx y.onnx --device cpu", "not expected"},
      {"onnx info " + model + " --device cpu", "not expected"},
  };
  for (const auto& [args, needle] : cases) {
    const Result r = run_ember(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_EQ(r.output.rfind("error: ", 0), 0u) << args << "\n" << r.output;
    EXPECT_EQ(r.output.rfind("error: [", 0), std::string::npos) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("\nRun with --help for more information.\n"), std::string::npos)
        << args << "\n"
        << r.output;
  }
}

// `ember export`: a cnn trained by `ember train` becomes an ONNX file that `ember run` runs (ONNX
// Runtime runs it too: ctest onnx/export_ort), recording how its input is normalized and its
// classes; bad arguments are errors that leave no file.
TEST(CliTestOnnxExport, ExportsATrainedCnnThatEmberRunRuns) {
  if (!kCli) GTEST_SKIP() << "the ember command is not built";
  REQUIRE_FASHION();
  TempDir tmp;
  const std::string run = (tmp.path / "run").string();
  Result r = run_ember(
      "train fashion-mnist --model cnn --limit-train 64 --limit-test 32 "
      "--epochs 1 --out " +
      run);
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string out = (tmp.path / "cnn.onnx").string();
  r = run_ember("export --checkpoint " + run + "/model.safetensors --onnx " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("float32 [batch, 1, 28, 28]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("logits of T-shirt/top, Trouser"), std::string::npos) << r.output;
  ::onnx::ModelProto m;
  std::ifstream f(out, std::ios::binary);
  ASSERT_TRUE(m.ParseFromIstream(&f));
  std::map<std::string, std::string> meta;
  for (const auto& p : m.metadata_props()) meta[p.key()] = p.value();
  EXPECT_EQ(meta["ember.model"], "cnn");
  EXPECT_EQ(meta["ember.input"], "(pixel / 255 - 0.286) / 0.353");
  EXPECT_EQ(meta["ember.classes"].rfind("[\"T-shirt/top\", \"Trouser\"", 0), 0u)
      << meta["ember.classes"];
  record::save_npy((tmp.path / "x.npy").string(), zeros({3, 1, 28, 28}));
  r = run_ember("run " + out + " --input " + (tmp.path / "x.npy").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("float32  [3, 10]"), std::string::npos) << r.output;
  EXPECT_EQ(meta["ember.mean"], "0.286");
  EXPECT_EQ(meta["ember.std"], "0.353");
  // --image applies the recorded normalization: a black image is the input (0 - mean) / std.
  data::save_png((tmp.path / "black.png").string(), zeros({1, 28, 28}, DType::u8));
  record::save_npy((tmp.path / "black.npy").string(), full({1, 1, 28, 28}, (0.0 - 0.286) / 0.353));
  r = run_ember("run " + out + " --image " + (tmp.path / "black.png").string() + " --output-dir " +
                (tmp.path / "img").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("normalized with the model's recorded mean [0.286] and std [0.353]"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("class: "), std::string::npos) << r.output;
  r = run_ember("run " + out + " --input " + (tmp.path / "black.npy").string() + " --output-dir " +
                (tmp.path / "npy").string());
  ASSERT_EQ(r.status, 0) << r.output;
  const std::vector<float> by_image =
      record::load_npy((tmp.path / "img" / "output.npy").string()).to_vector<float>();
  const std::vector<float> by_npy =
      record::load_npy((tmp.path / "npy" / "output.npy").string()).to_vector<float>();
  ASSERT_EQ(by_image.size(), by_npy.size());
  for (size_t i = 0; i < by_npy.size(); ++i)
    EXPECT_NEAR(by_image[i], by_npy[i], 1e-4 * (1 + std::fabs(by_npy[i])));
  r = run_ember("onnx info " + out);
  EXPECT_NE(r.output.find("ember.classes"), std::string::npos) << r.output;

  const std::vector<std::tuple<std::string, int, std::string>> bad = {
      {"export --checkpoint " + (tmp.path / "none.safetensors").string() + " --onnx " +
           (tmp.path / "a.onnx").string(),
       1, "cannot open"},
      {"export --checkpoint " + (tmp.path / "x.npy").string() + " --onnx " +
           (tmp.path / "a.onnx").string(),
       1, "error: ["},
      {"export --checkpoint " + run + "/model.safetensors --onnx " +
           (tmp.path / "no" / "a.onnx").string(),
       1, "[onnx::save]"},
      {"export --checkpoint " + run + "/model.safetensors", 2, "--onnx is required"},
      {"export --checkpoint " + run + "/model.safetensors --onnx " + run + "/model.safetensors", 1,
       "is the checkpoint itself"},
  };
  for (const auto& [args, status, needle] : bad) {
    r = run_ember(args);
    EXPECT_EQ(r.status, status) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << args << "\n" << r.output;
  }
  EXPECT_FALSE(fs::exists(tmp.path / "a.onnx"));
  EXPECT_FALSE(fs::exists(tmp.path / "no"));
}

}  // namespace
}  // namespace ember::cli_test
