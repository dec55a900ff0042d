// ember::onnx::save (include/ember/onnx.h): models built from nn modules are written, read back
// by ember::onnx on every device (and, through tests/onnx_export_ort.sh, by ONNX Runtime) and
// give the module's outputs; any batch size runs; modules ONNX cannot express are refused with
// the module's path, and a failed export leaves nothing at the path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <sys/stat.h>

#include <csignal>

#include "core/atomic_file.h"
#include "ember/ember.h"
#include "ember/onnx.h"
#include "ember/record/npy.h"
#include "test_util.h"

namespace ember {
namespace {

using namespace nn;

struct Case {
  std::string name;
  std::function<std::shared_ptr<Module>()> make;
  Shape input;           // batch first
  bool integer = false;  // i64 indices in [0, 10) (Embedding)
};

// BatchNorm with running statistics that are not the initial 0 / 1: a few training steps.
void warm_batch_norm(Module& m, const Tensor& x) {
  m.train();
  for (int i = 0; i < 3; ++i) static_cast<UnaryModule&>(m).forward(x * double(i + 1));
  m.eval();
}

std::vector<Case> cases() {
  return {
      {"convnet",
       [] {
         auto s = std::make_shared<Sequential>();
         s->push_back(std::make_shared<Conv2d>(Conv2dOptions(3, 8, 3).padding(1)));
         s->push_back(std::make_shared<BatchNorm2d>(8));
         s->push_back(std::make_shared<ReLU>());
         s->push_back(std::make_shared<MaxPool2d>(MaxPool2dOptions(3).stride(2).padding(1)));
         s->push_back(std::make_shared<Conv2d>(
             Conv2dOptions(8, 8, 3).stride(2).groups(2).dilation(2).padding(2).bias(false)));
         s->push_back(std::make_shared<GroupNorm>(GroupNormOptions(2, 8)));
         s->push_back(std::make_shared<SiLU>());
         s->push_back(std::make_shared<Conv2d>(
             Conv2dOptions(8, 4, 3).padding(functional::PaddingMode{"same"})));
         s->push_back(std::make_shared<AdaptiveAvgPool2d>(1));
         s->push_back(std::make_shared<Flatten>());
         s->push_back(std::make_shared<Dropout>(0.5));
         s->push_back(std::make_shared<Linear>(4, 5));
         s->push_back(std::make_shared<LogSoftmax>(1));
         return s;
       },
       {2, 3, 12, 12}},
      {"activations",
       [] {
         auto s = std::make_shared<Sequential>();
         s->push_back(std::make_shared<Linear>(6, 12));
         for (auto m :
              std::vector<std::shared_ptr<UnaryModule>>{std::make_shared<GELU>(),
                                                        std::make_shared<ELU>(0.7),
                                                        std::make_shared<CELU>(0.5),
                                                        std::make_shared<SELU>(),
                                                        std::make_shared<LeakyReLU>(0.2),
                                                        std::make_shared<PReLU>(12),
                                                        std::make_shared<Mish>(),
                                                        std::make_shared<Softplus>(2.0, 1.0),
                                                        std::make_shared<GELU>("tanh"),
                                                        std::make_shared<Hardswish>(),
                                                        std::make_shared<Hardsigmoid>(),
                                                        std::make_shared<Hardtanh>(-0.5, 0.5),
                                                        std::make_shared<ReLU6>(),
                                                        std::make_shared<Softsign>(),
                                                        std::make_shared<LogSigmoid>(),
                                                        std::make_shared<Tanhshrink>(),
                                                        std::make_shared<Hardshrink>(0.1),
                                                        std::make_shared<Softshrink>(0.05),
                                                        std::make_shared<Threshold>(-0.3, -1.0),
                                                        std::make_shared<Sigmoid>(),
                                                        std::make_shared<Tanh>()}) {
           s->push_back(m);
           s->push_back(std::make_shared<Linear>(12, 12));  // keeps values spread
         }
         s->push_back(std::make_shared<LayerNorm>(LayerNormOptions({12})));
         s->push_back(std::make_shared<RMSNorm>(RMSNormOptions({12})));
         s->push_back(std::make_shared<GLU>(1));
         s->push_back(std::make_shared<Softmin>(1));
         return s;
       },
       {4, 6}},
      {"sequence",  // [N, C, L]: 1-d convolutions and pools, a 3-d Linear, Unflatten
       [] {
         auto s = std::make_shared<Sequential>();
         s->push_back(
             std::make_shared<Conv1d>(Conv1dOptions(4, 6, 3).padding(2).padding_mode("reflect")));
         s->push_back(std::make_shared<BatchNorm1d>(6));
         s->push_back(std::make_shared<AvgPool1d>(
             AvgPool1dOptions(3).stride(2).padding(1).ceil_mode(true).count_include_pad(false)));
         s->push_back(
             std::make_shared<Conv1d>(Conv1dOptions(6, 6, 3).padding(1).padding_mode("replicate")));
         s->push_back(std::make_shared<MaxPool1d>(2));
         s->push_back(std::make_shared<Linear>(5, 3));  // over the last dim
         s->push_back(std::make_shared<Flatten>(0, -1));
         s->push_back(std::make_shared<Unflatten>(0, std::vector<int64_t>{-1, 6}));
         s->push_back(std::make_shared<Softmax>(-1));
         return s;
       },
       {2, 4, 19}},
      {"transposed",
       [] {
         auto s = std::make_shared<Sequential>();
         s->push_back(std::make_shared<ConvTranspose2d>(
             ConvTranspose2dOptions(3, 4, 3).stride(2).padding(1).output_padding(1)));
         s->push_back(std::make_shared<InstanceNorm2d>(InstanceNormOptions(4).affine(true)));
         s->push_back(std::make_shared<AvgPool2d>(2));
         s->push_back(std::make_shared<AdaptiveMaxPool2d>(ExpandingArray<2>({2, 3})));
         s->push_back(std::make_shared<Flatten>(1, 2));
         return s;
       },
       {2, 3, 6, 9}},
      {"volume",
       [] {
         auto s = std::make_shared<Sequential>();
         s->push_back(std::make_shared<Conv3d>(Conv3dOptions(2, 3, 3).padding(1)));
         s->push_back(std::make_shared<MaxPool3d>(2));
         s->push_back(std::make_shared<AvgPool3d>(AvgPool3dOptions(2).stride(1)));
         s->push_back(std::make_shared<Flatten>(2));
         s->push_back(std::make_shared<AdaptiveAvgPool1d>(1));
         return s;
       },
       {1, 2, 6, 6, 6}},
      {"embedding",
       [] {
         auto s = std::make_shared<Sequential>();
         s->push_back(std::make_shared<Embedding>(10, 4));
         s->push_back(std::make_shared<Flatten>());
         s->push_back(std::make_shared<Linear>(12, 2));
         return s;
       },
       {3, 3},
       true},
  };
}

Tensor example_for(const Case& c, int64_t batch) {
  Shape s = c.input;
  s[0] = batch;
  if (c.integer) return randint(0, 10, s, DType::i64);
  return randn(s);
}

Tensor forward(Module& m, const Tensor& x) {
  NoGradGuard g;
  return static_cast<UnaryModule&>(m).forward(x);
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const std::vector<float> g = got.to(Device::cpu()).contiguous().to_vector<float>();
  const std::vector<float> w = want.to(Device::cpu()).contiguous().to_vector<float>();
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], w[i], 2e-5 + 2e-4 * std::fabs(w[i])) << what << " element " << i;
}

std::vector<Device> devices() {
  std::vector<Device> d = {Device::ref(), Device::cpu()};
  for (const Device& g : test::gpu_devices()) d.push_back(g);
  return d;
}

TEST(OnnxExport, ModelsRunOnEveryDeviceAtAnyBatch) {
  test::TempDir dir("onnx-export");
  // With EMBER_EXPORT_ORT_DIR set (tests/onnx_export_ort.sh), each model is also left there with
  // an input and the module's output as .npy files for ONNX Runtime.
  const char* ort_dir = std::getenv("EMBER_EXPORT_ORT_DIR");
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    manual_seed(7);
    auto m = c.make();
    const Tensor x = example_for(c, c.input[0]);
    if (c.integer)
      m->eval();
    else
      warm_batch_norm(*m, x);
    const std::string path = dir / (c.name + ".onnx");
    onnx::save(m, x, path);
    EXPECT_FALSE(m->is_training());  // eval before: restored
    m->train();
    onnx::save(m, x, path);
    EXPECT_TRUE(m->is_training());  // training restored after the export
    m->eval();
    const onnx::Info info = onnx::inspect(path);
    EXPECT_EQ(info.opset, onnx::kExportOpset);
    ASSERT_EQ(info.inputs.size(), 1u);
    EXPECT_EQ(info.inputs[0].dim_params[0], "batch");
    EXPECT_TRUE(info.unsupported.empty());
    const Tensor x5 = example_for(c, 5);  // another batch size than the example's
    const Tensor want = forward(*m, x5);
    for (const Device& d : devices()) {
      const onnx::Model model = onnx::load(path, d);
      expect_close(model.run({{"input", x5}}).at("output"), want, c.name + " on " + d.str());
    }
    if (ort_dir) {
      namespace fs = std::filesystem;
      fs::create_directories(ort_dir);
      fs::copy_file(path, fs::path(ort_dir) / (c.name + ".onnx"),
                    fs::copy_options::overwrite_existing);
      record::save_npy((fs::path(ort_dir) / (c.name + ".input.npy")).string(), x5);
      record::save_npy((fs::path(ort_dir) / (c.name + ".output.npy")).string(), want);
    }
  }
}

TEST(OnnxExport, SharedWeightsAndFixedBatchAndNames) {
  test::TempDir dir("onnx-export");
  auto lin = std::make_shared<Linear>(4, 4);
  auto s = std::make_shared<Sequential>(lin, std::make_shared<Tanh>(), lin);
  onnx::ExportOptions o;
  o.input_name = "x";
  o.output_name = "y";
  o.dynamic_batch = false;
  o.metadata["note"] = "shared";
  const Tensor x = randn({3, 4});
  onnx::save(s, x, dir / "m.onnx", o);
  const onnx::Info info = onnx::inspect(dir / "m.onnx");
  EXPECT_EQ(info.initializers, 2);  // the Linear's weight and bias, once
  EXPECT_EQ(info.inputs[0].name, "x");
  EXPECT_EQ(info.inputs[0].shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(info.outputs[0].name, "y");
  const onnx::Model model = onnx::load(dir / "m.onnx", Device::cpu());
  expect_close(model.run({{"x", x}}).at("y"), forward(*s, x), "shared");
  EXPECT_THROW(model.run({{"x", randn({2, 4})}}), Error);  // the batch is fixed
}

TEST(OnnxExport, IdentityModelGetsAnIdentityNode) {
  test::TempDir dir("onnx-export");
  auto s = std::make_shared<Sequential>(std::make_shared<Dropout>(), std::make_shared<Identity>());
  const Tensor x = randn({2, 3});
  onnx::save(s, x, dir / "id.onnx");
  expect_close(onnx::load(dir / "id.onnx", Device::cpu()).run({{"input", x}}).at("output"), x,
               "identity");
}

struct Doubler : UnaryModule {
  Doubler() : UnaryModule("Doubler") {}
  Tensor forward(const Tensor& x) override { return x * 2.0; }
};

// A Sequential subclass whose forward is not its children chained.
struct Skip : Sequential {
  Skip() : Sequential(std::make_shared<Linear>(3, 3)) {}
  Tensor forward(const Tensor& x) override { return Sequential::forward(x) + x; }
};

using test::error_of;

TEST(OnnxExport, RefusesWhatOnnxCannotSayAndLeavesNoFile) {
  test::TempDir dir("onnx-export");
  const std::string path = dir / "bad.onnx";
  const Tensor x = randn({2, 3});
  auto custom =
      std::make_shared<Sequential>(std::make_shared<Linear>(3, 3), std::make_shared<Doubler>());
  std::string e = error_of([&] { onnx::save(custom, x, path); });
  EXPECT_NE(e.find("module '1' of type Doubler has no ONNX exporter"), std::string::npos) << e;

  auto bn = std::make_shared<Sequential>(
      std::make_shared<BatchNorm1d>(BatchNormOptions(3).track_running_stats(false)));
  e = error_of([&] { onnx::save(bn, x, path); });
  EXPECT_NE(e.find("module '0' (BatchNorm1d)"), std::string::npos) << e;
  EXPECT_NE(e.find("running statistics"), std::string::npos) << e;

  auto circ = std::make_shared<Conv1d>(Conv1dOptions(3, 3, 3).padding(1).padding_mode("circular"));
  e = error_of([&] { onnx::save(circ, randn({1, 3, 8}), path); });
  EXPECT_NE(e.find("circular"), std::string::npos) << e;

  auto pool = std::make_shared<AdaptiveAvgPool2d>(ExpandingArray<2>({3, 3}));
  e = error_of([&] { onnx::save(pool, randn({1, 2, 7, 7}), path); });
  EXPECT_NE(e.find("must divide"), std::string::npos) << e;

  e = error_of([&] { onnx::save(std::make_shared<Skip>(), x, path); });
  EXPECT_NE(e.find("does not reproduce"), std::string::npos) << e;

  e = error_of([&] { onnx::save(std::make_shared<Linear>(3, 3), x, dir / "no/such/dir.onnx"); });
  EXPECT_NE(e.find("onnx::save"), std::string::npos) << e;

  e = error_of([&] { onnx::save(std::make_shared<Linear>(3, 3), Tensor(), path); });
  EXPECT_NE(e.find("undefined"), std::string::npos) << e;

  // A folder or a FIFO at the path is refused before any work (a rename would replace it).
  std::filesystem::create_directory(dir / "folder.onnx");
  e = error_of([&] { onnx::save(std::make_shared<Linear>(3, 3), x, dir / "folder.onnx"); });
  EXPECT_NE(e.find("is a folder"), std::string::npos) << e;
  ASSERT_EQ(::mkfifo((dir / "fifo.onnx").c_str(), 0600), 0);
  e = error_of([&] { onnx::save(std::make_shared<Linear>(3, 3), x, dir / "fifo.onnx"); });
  EXPECT_NE(e.find("not a regular file"), std::string::npos) << e;
  EXPECT_TRUE(std::filesystem::is_fifo(dir / "fifo.onnx"));
  std::filesystem::remove(dir / "fifo.onnx");
  std::filesystem::remove(dir / "folder.onnx");

  // Nothing was left behind: no file at the path, no temporary file beside it.
  EXPECT_TRUE(test::list_dir(dir).empty());

  // An existing file is kept when a later export fails.
  onnx::save(std::make_shared<Linear>(3, 3), x, path);
  const std::string before = test::read_bytes(path);
  EXPECT_THROW(onnx::save(std::make_shared<Skip>(), x, path), Error);
  EXPECT_EQ(test::read_bytes(path), before);
  EXPECT_EQ(test::list_dir(dir), std::vector<std::string>{"bad.onnx"});
}

// An export stopped by SIGTERM (raised in a forked child while the check file is written, as if
// sent from outside) leaves no file and no temporary beside the path.
TEST(OnnxExport, SigtermDuringTheExportLeavesNoFile) {
  GTEST_FLAG_SET(death_test_style, "fast");  // the child writes to this process's folder
  test::TempDir dir("onnx-export-signal");
  const std::string path = dir / "m.onnx";
  auto model = std::make_shared<Linear>(3, 3);
  model->to(Device::ref());  // the ref backend starts no threads (the child has only its own)
  const Tensor x = randn({2, 3}, TensorOptions(DType::f32, Device::ref()));
  EXPECT_EXIT(
      {
        std::signal(SIGTERM, SIG_DFL);
        ember::detail::set_atomic_write_hook([](const char*) { std::raise(SIGTERM); });
        onnx::save(model, x, path);
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGTERM), "");
  EXPECT_TRUE(test::list_dir(dir).empty());
}

struct Halver : UnaryModule {
  Halver() : UnaryModule("Halver") {}
  Tensor forward(const Tensor& x) override { return x * 0.5; }
};

TEST(OnnxExport, RegisteredExporterForACustomModule) {
  test::TempDir dir("onnx-export");
  onnx::register_exporter("Halver", [](Module&, onnx::ExportGraph& g, const std::string& x) {
    const Tensor half = scalar_tensor(0.5, TensorOptions(g.example(x).dtype(), Device::ref()));
    return g.node("Mul", {x, g.constant(half, "half")});
  });
  auto s = std::make_shared<Sequential>(std::make_shared<Linear>(3, 3), std::make_shared<Halver>());
  const Tensor x = randn({2, 3});
  onnx::save(s, x, dir / "d.onnx");
  expect_close(onnx::load(dir / "d.onnx", Device::ref()).run({{"input", x}}).at("output"),
               forward(*s, x), "halver");
}

}  // namespace
}  // namespace ember
