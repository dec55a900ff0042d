// One fuzz target per reader, each with a seed corpus written by Ember's own writers.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "ember/data/io.h"
#include "ember/data/mnist.h"
#include "ember/ember.h"
#include "ember/optim/adam.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/sgd.h"
#include "ember/record/checkpoint.h"
#include "ember/record/npy.h"
#include "ember/record/safetensors.h"
#include "fuzz/fuzz.h"
#ifdef EMBER_HAVE_ONNX
#include <map>

#include "ember/onnx.h"
#endif

namespace ember::fuzz {

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  if (!f) throw std::runtime_error("fuzz: cannot write " + path);
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("fuzz: cannot read " + path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

namespace {

// A model with a parameter matrix, a bias and an integer buffer (as a checkpoint holds).
struct Net : nn::Module {
  Tensor w, b, count;
  Net() : nn::Module("Net") {
    w = register_parameter("w", zeros({3, 4}));
    b = register_parameter("b", zeros({3}));
    count = register_buffer("count", zeros({1}, DType::i64));
  }
};

// Writes a seed with `write(path)` and returns its bytes.
template <class F>
std::string written(const std::string& dir, const std::string& name, F write) {
  const std::string path = dir + "/" + name;
  write(path);
  std::string bytes = read_file(path);
  std::remove(path.c_str());
  return bytes;
}

// ---- safetensors (deserialize_safetensors: the bytes of a model file) ----
void run_safetensors(const std::string& bytes, const std::string&) {
  (void)record::deserialize_safetensors(bytes, "fuzz.safetensors", Device::cpu());
}
std::vector<std::string> seeds_safetensors(const std::string&) {
  nn::StateDict a;
  a.set("w", arange(6, DType::f32).reshape({2, 3}));
  a.set("i", tensor<int64_t>({-1, 7}));
  a.set("empty", zeros({0, 4}, DType::u8));
  a.set("h", ones({3}, DType::bf16));
  a.set("s", full({}, 2.5, DType::f64));
  nn::StateDict b;
  b.set("flag", tensor<bool>({true, false, true}));
  return {record::serialize_safetensors(a, {{"format", "pt"}, {"note", "seed"}}),
          record::serialize_safetensors(b), record::serialize_safetensors(nn::StateDict{})};
}

// ---- model files read into a module (load_into, as `ember eval/predict` do) ----
void run_model(const std::string& bytes, const std::string& dir) {
  const std::string path = dir + "/model.safetensors";
  write_file(path, bytes);
  Net net;
  record::Metadata meta;
  (void)record::load_into(net, path, true, &meta);
}
std::vector<std::string> seeds_model(const std::string& dir) {
  Net net;
  return {written(dir, "m.safetensors", [&](const std::string& p) {
    record::save_module(p, net, {{"ember.model", "net"}, {"classes", "a,b,c"}});
  })};
}

// ---- training checkpoints (load_checkpoint into a model, Adam or SGD, a scheduler) ----
void run_checkpoint(const std::string& bytes, const std::string& dir) {
  const std::string path = dir + "/ckpt.safetensors";
  write_file(path, bytes);
  Net net;
  auto adam = std::make_shared<optim::Adam>(net.parameters(), optim::AdamOptions(1e-3));
  optim::StepLR sched(adam, 2, 0.5);
  try {
    (void)record::load_checkpoint(path, {&net, adam.get(), &sched}, true);
  } catch (const Error&) {
    // The SGD seed does not fit Adam: read it into SGD too, so its fields are reached.
    Net net2;
    auto sgd =
        std::make_shared<optim::SGD>(net2.parameters(), optim::SGDOptions(0.1).momentum(0.9));
    (void)record::load_checkpoint(path, {&net2, sgd.get()}, false);
  }
}
std::vector<std::string> seeds_checkpoint(const std::string& dir) {
  std::vector<std::string> out;
  for (int kind = 0; kind < 2; ++kind) {
    manual_seed(3);
    Net net;
    {
      NoGradGuard g;
      net.w.copy_(randn({3, 4}));
    }
    auto step = [&](optim::Optimizer& opt) {
      for (int i = 0; i < 2; ++i) {
        (net.w * net.w).sum().backward();
        opt.step();
        opt.zero_grad();
      }
    };
    record::TrainingState st;
    st.epoch = 2;
    st.step = 6;
    st.batch = 1;
    st.best_metric = 0.5;
    st.best_metric_name = "valid_loss";
    st.best_epoch = 1;
    st.loader_epoch = 2;
    st.loader_seed = 42;
    st.rng = record::capture_random_states({Device::cpu()});
    st.user_json = R"({"kept": ["epoch-0001.safetensors"]})";
    if (kind == 0) {
      auto adam = std::make_shared<optim::Adam>(net.parameters(), optim::AdamOptions(1e-3));
      optim::StepLR sched(adam, 2, 0.5);
      step(*adam);
      sched.step();
      out.push_back(written(dir, "c.safetensors", [&](const std::string& p) {
        record::save_checkpoint(p, {&net, adam.get(), &sched}, st);
      }));
    } else {
      auto sgd =
          std::make_shared<optim::SGD>(net.parameters(), optim::SGDOptions(0.1).momentum(0.9));
      step(*sgd);
      out.push_back(written(dir, "c.safetensors", [&](const std::string& p) {
        record::save_checkpoint(p, {&net, sgd.get()}, st);
      }));
    }
  }
  return out;
}

// ---- IDX, plain and gzip ----
void run_idx_at(const std::string& bytes, const std::string& path) {
  write_file(path, bytes);
  (void)data::read_idx(path);
}
void run_idx(const std::string& bytes, const std::string& dir) {
  run_idx_at(bytes, dir + "/x.idx");
}
void run_idx_gz(const std::string& bytes, const std::string& dir) {
  run_idx_at(bytes, dir + "/x.idx.gz");
}
std::vector<std::string> idx_seeds(const std::string& dir, const std::string& ext) {
  const std::vector<Tensor> ts = {
      arange(60, DType::u8).reshape({3, 4, 5}), arange(6, DType::f32) * 0.5,
      arange(4, DType::i32).reshape({2, 2}), arange(3, DType::i16), zeros({0, 3}, DType::u8)};
  std::vector<std::string> out;
  for (const Tensor& t : ts)
    out.push_back(written(dir, "s" + ext, [&](const std::string& p) { data::write_idx(p, t); }));
  return out;
}
std::vector<std::string> seeds_idx(const std::string& dir) { return idx_seeds(dir, ".idx"); }
std::vector<std::string> seeds_idx_gz(const std::string& dir) { return idx_seeds(dir, ".idx.gz"); }

// ---- the MNIST loader (the input is the images file; its labels file is valid) ----
void run_mnist(const std::string& bytes, const std::string& dir) {
  const std::string images = dir + "/train-images-idx3-ubyte";
  const std::string labels = dir + "/train-labels-idx1-ubyte";
  write_file(images, bytes);
  data::write_idx(labels, arange(4, DType::u8));
  (void)data::load_mnist(dir, true);
  std::remove(images.c_str());
  std::remove(labels.c_str());
}
std::vector<std::string> seeds_mnist(const std::string& dir) {
  return {written(dir, "i.idx", [&](const std::string& p) {
    data::write_idx(p, arange(4 * 28 * 28, DType::i32).to(DType::u8).reshape({4, 28, 28}));
  })};
}

// ---- images: read_image_info, then load_image in every channel mode ----
void run_image_at(const std::string& bytes, const std::string& path) {
  write_file(path, bytes);
  try {
    (void)data::read_image_info(path);
  } catch (const Error&) {
  }
  for (int c : {0, 1, 3}) (void)data::load_image(path, c);
}
void run_png(const std::string& bytes, const std::string& dir) {
  run_image_at(bytes, dir + "/x.png");
}
void run_jpeg(const std::string& bytes, const std::string& dir) {
  run_image_at(bytes, dir + "/x.jpg");
}
std::vector<Tensor> seed_images() {
  return {(arange(35, DType::i32) * 7).to(DType::u8).reshape({1, 5, 7}),
          (arange(3 * 8 * 6, DType::i32) * 5).to(DType::u8).reshape({3, 8, 6}),
          arange(17 * 9, DType::i32).to(DType::u8).reshape({17, 9})};
}
std::vector<std::string> seeds_png(const std::string& dir) {
  std::vector<std::string> out;
  for (const Tensor& t : seed_images())
    out.push_back(written(dir, "s.png", [&](const std::string& p) { data::save_png(p, t); }));
  return out;
}
std::vector<std::string> seeds_jpeg(const std::string& dir) {
  std::vector<std::string> out;
  for (const Tensor& t : seed_images())
    for (int q : {50, 95})
      out.push_back(written(dir, "s.jpg", [&](const std::string& p) { data::save_jpeg(p, t, q); }));
  return out;
}

// ---- CSV ----
void run_csv(const std::string& bytes, const std::string& dir) {
  const std::string path = dir + "/x.csv";
  write_file(path, bytes);
  (void)data::read_csv(path);
  data::CsvOptions o;
  o.header = data::CsvHeader::Yes;
  o.label_name = "label";
  o.num_classes = 3;
  (void)data::read_csv(path, o);
}
std::vector<std::string> seeds_csv(const std::string&) {
  // Each fits both reads: a header with a "label" column, labels in [0, 3).
  return {"a,b,label\n1.5,2,0\n-3e2,4,1\n5,\"6\",2\n", "x,label\r\n0.1,1\r\n0.3,2\r\n",
          "x,y,label\n1,2,0\n\n3,4,1\n"};
}

// ---- npy (deserialize_npy: the bytes of a NumPy array file) ----
void run_npy(const std::string& bytes, const std::string&) {
  (void)record::deserialize_npy(bytes, "fuzz.npy", Device::cpu());
}
std::vector<std::string> seeds_npy(const std::string&) {
  const Tensor a = arange(Scalar(0), Scalar(12), Scalar(1), {DType::f32}).reshape({3, 4});
  return {record::serialize_npy(a), record::serialize_npy(a.to(DType::i64).t()),
          record::serialize_npy(scalar_tensor(Scalar(true), {DType::b8})),
          record::serialize_npy(zeros({0, 2}, {DType::f16}))};
}

#ifdef EMBER_HAVE_ONNX
// ---- onnx (ember::onnx::load, then one run on zeros of the declared shapes) ----
void run_onnx(const std::string& bytes, const std::string& dir) {
  const std::string path = dir + "/model.onnx";
  write_file(path, bytes);
  const onnx::Model m = onnx::load(path, Device::cpu());
  std::map<std::string, Tensor> feed;
  for (const onnx::ValueInfo& v : m.inputs()) {
    Shape s;
    for (int64_t d : v.shape) s.push_back(d < 0 ? 1 : std::min<int64_t>(d, 64));
    feed[v.name] = zeros(s, {v.dtype});
  }
  (void)m.run(feed);
}
std::vector<std::string> seeds_onnx(const std::string&) {
  std::vector<std::string> out;
  // Small models of ONNX's backend test data (Debian libonnx-testdata), when installed.
  for (const char* c :
       {"pytorch-converted/test_Conv2d", "pytorch-converted/test_BatchNorm2d_eval",
        "node/test_gemm_default_scalar_bias", "node/test_maxpool_2d_pads", "node/test_gru_defaults",
        "node/test_softmax_axis_1", "pytorch-operator/test_operator_permute2"}) {
    const std::string f = std::string(EMBER_ONNX_TESTDATA_DIR) + "/" + c + "/model.onnx";
    if (std::ifstream(f).good()) out.push_back(read_file(f));
  }
  if (out.empty()) throw std::runtime_error("fuzz onnx: no seed (install libonnx-testdata)");
  return out;
}
#endif

}  // namespace

const std::vector<Target>& targets() {
  static const std::vector<Target> t = {
      {"safetensors", run_safetensors, seeds_safetensors, true},
      {"model", run_model, seeds_model, true},
      {"checkpoint", run_checkpoint, seeds_checkpoint, true},
      {"idx", run_idx, seeds_idx, false},
      {"idx_gz", run_idx_gz, seeds_idx_gz, false},
      {"mnist", run_mnist, seeds_mnist, false},
      {"png", run_png, seeds_png, false},
      {"jpeg", run_jpeg, seeds_jpeg, false},
      {"csv", run_csv, seeds_csv, true},
      {"npy", run_npy, seeds_npy, false},
#ifdef EMBER_HAVE_ONNX
      {"onnx", run_onnx, seeds_onnx, false},
#endif
  };
  return t;
}

}  // namespace ember::fuzz
