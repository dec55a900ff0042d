// ResNet-50 inference (torchvision's resnet50, v1.5: Bottleneck blocks [3, 4, 6, 3], the stride
// on the 3x3 conv, downsample = conv1x1 + BatchNorm) in Ember (cpu backend), NCHW and
// channels-last, and, when built with EMBER_BENCH_LIBTORCH=ON, in LibTorch with the same weights
// and BatchNorm running stats, NCHW and channels_last, all in one process (issue 5).
//   bench_resnet50 [--batch 8] [--size 224] [--iters 6] [--warmup 2] [--threads 2]
//                  [--json FILE] [--profile] [--profile-rounds 2] [--only ember]
//                  [--cl-nchw-weights] [--dtype f32|bf16|f16] [--torch-lowp autocast|to]
// --dtype bf16 (or f16) adds Ember's model converted with Module::to(dtype) (input in that dtype,
// BatchNorm statistics kept f32), NCHW and channels-last, and LibTorch in bf16: by default its CPU
// autocast (at::autocast::set_cpu_enabled + set_autocast_cpu_dtype(kBFloat16): f32 weights,
// convs and linears in bf16, the weight casts cached for the forward), with --torch-lowp to its
// model.to(kBFloat16) (bf16 weights and input, as Ember's). LibTorch 1.13's CPU autocast and
// convolutions take no f16, so --dtype f16 has no LibTorch low-precision variant. Low-precision
// logits are checked against Ember f32's with looser bounds (bf16 0.25, f16 5e-2).
// Random init with a fixed seed; the BatchNorm running stats are calibrated by one training-mode
// forward (cumulative average: running stats = that batch's statistics) so every layer sees
// normalized activations. The logits of every variant are checked against Ember NCHW's (max abs
// difference / max abs logit < 1e-3; exit 1 otherwise). Timing: interleaved rounds (each round
// runs every variant once, in rotating order), best and median per variant, img/s = batch / time,
// and images per process-CPU-second (steadier on a shared machine: other processes don't count).
// --profile: per layer type (conv 1x1 / 3x3 / 7x7 stem, batch_norm, relu, maxpool, add, avgpool,
// linear) wall time per forward, for every variant (the same timers wrap the LibTorch layers),
// and how many 4-d layer outputs are channels-last (shows whether the layout propagates).
// Run with OMP_WAIT_POLICY=passive: LibTorch's OpenMP threads otherwise spin after each of its
// forwards while Ember's run.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/modules/activation.h"
#include "ember/nn/modules/container.h"
#include "ember/nn/modules/conv.h"
#include "ember/nn/modules/linear.h"
#include "ember/nn/modules/normalization.h"
#include "ember/nn/modules/pooling.h"

#ifdef EMBER_BENCH_HAVE_TORCH
#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ---- per layer type timers (--profile) ----
enum Kind { kConv1x1, kConv3x3, kConv7x7, kBn, kRelu, kMaxPool, kAdd, kAvgPool, kLinear, kKinds };
const char* const kKindNames[kKinds] = {"conv1x1", "conv3x3", "conv7x7", "batch_norm", "relu",
                                        "maxpool", "add",     "avgpool", "linear"};
struct Profile {
  double s[kKinds] = {};
  int64_t calls[kKinds] = {};
  int64_t outputs = 0, channels_last_outputs = 0;  // 4-d op outputs and how many are NHWC
};
Profile* g_prof = nullptr;

void count_layout(const ember::Tensor& y) {
  if (y.dim() != 4) return;
  ++g_prof->outputs;
  g_prof->channels_last_outputs +=
      y.is_contiguous(ember::MemoryFormat::channels_last) && !y.is_contiguous();
}
#ifdef EMBER_BENCH_HAVE_TORCH
void count_layout(const torch::Tensor& y) {
  if (y.dim() != 4) return;
  ++g_prof->outputs;
  g_prof->channels_last_outputs +=
      y.is_contiguous(at::MemoryFormat::ChannelsLast) && !y.is_contiguous();
}
#endif

// Runs f() and, when profiling, adds its wall time to `k` (both backends are synchronous on the
// host, so the time is the op's).
template <typename F>
auto timed(Kind k, F&& f) {
  if (!g_prof) return f();
  const auto t0 = Clock::now();
  auto y = f();
  g_prof->s[k] += since(t0);
  ++g_prof->calls[k];
  count_layout(y);
  return y;
}

// ---- Ember ResNet-50 ----
namespace nn = ember::nn;
using ember::Tensor;

std::shared_ptr<nn::Conv2d> conv(int64_t in, int64_t out, int64_t k, int64_t stride) {
  return std::make_shared<nn::Conv2d>(
      nn::Conv2dOptions(in, out, k).stride(stride).padding(k / 2).bias(false));
}
// Cumulative-average momentum: one training-mode forward sets the running stats to that batch's.
std::shared_ptr<nn::BatchNorm2d> bn(int64_t c) {
  return std::make_shared<nn::BatchNorm2d>(nn::BatchNorm2dOptions(c).momentum(std::nullopt));
}

class Bottleneck : public nn::UnaryModule {
 public:
  Bottleneck(int64_t in, int64_t width, int64_t stride) : UnaryModule("Bottleneck") {
    conv1 = register_module("conv1", conv(in, width, 1, 1));
    bn1 = register_module("bn1", bn(width));
    conv2 = register_module("conv2", conv(width, width, 3, stride));
    bn2 = register_module("bn2", bn(width));
    conv3 = register_module("conv3", conv(width, width * 4, 1, 1));
    bn3 = register_module("bn3", bn(width * 4));
    if (stride != 1 || in != width * 4) {
      ds_conv = conv(in, width * 4, 1, stride);
      ds_bn = bn(width * 4);
      register_module("downsample", nn::make_sequential(ds_conv, ds_bn));
    }
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = timed(kConv1x1, [&] { return conv1->forward(x); });
    y = timed(kBn, [&] { return bn1->forward(y); });
    y = timed(kRelu, [&] { return y.relu(); });
    y = timed(kConv3x3, [&] { return conv2->forward(y); });
    y = timed(kBn, [&] { return bn2->forward(y); });
    y = timed(kRelu, [&] { return y.relu(); });
    y = timed(kConv1x1, [&] { return conv3->forward(y); });
    y = timed(kBn, [&] { return bn3->forward(y); });
    Tensor identity = x;
    if (ds_conv) {
      identity = timed(kConv1x1, [&] { return ds_conv->forward(x); });
      identity = timed(kBn, [&] { return ds_bn->forward(identity); });
    }
    y = timed(kAdd, [&] { return Tensor(y.add_(identity)); });  // torchvision: out += identity
    return timed(kRelu, [&] { return y.relu(); });
  }

  std::shared_ptr<nn::Conv2d> conv1, conv2, conv3, ds_conv;
  std::shared_ptr<nn::BatchNorm2d> bn1, bn2, bn3, ds_bn;
};

class ResNet50 : public nn::UnaryModule {
 public:
  ResNet50() : UnaryModule("ResNet50") {
    conv1 = register_module("conv1", conv(3, 64, 7, 2));
    bn1 = register_module("bn1", bn(64));
    maxpool = std::make_shared<nn::MaxPool2d>(nn::MaxPool2dOptions(3).stride(2).padding(1));
    const int64_t blocks[4] = {3, 4, 6, 3};
    int64_t in = 64;
    for (int l = 0; l < 4; ++l) {
      auto layer = std::make_shared<nn::Sequential>();
      const int64_t width = 64 << l;
      for (int64_t b = 0; b < blocks[l]; ++b) {
        layer->push_back(std::make_shared<Bottleneck>(in, width, b == 0 && l > 0 ? 2 : 1));
        in = width * 4;
      }
      layers.push_back(register_module("layer" + std::to_string(l + 1), layer));
    }
    avgpool = std::make_shared<nn::AdaptiveAvgPool2d>(1);
    fc = register_module("fc", std::make_shared<nn::Linear>(2048, 1000));
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = timed(kConv7x7, [&] { return conv1->forward(x); });
    y = timed(kBn, [&] { return bn1->forward(y); });
    y = timed(kRelu, [&] { return y.relu(); });
    y = timed(kMaxPool, [&] { return maxpool->forward(y); });
    for (auto& layer : layers) y = layer->forward(y);
    y = timed(kAvgPool, [&] { return avgpool->forward(y); });
    return timed(kLinear, [&] { return fc->forward(y.flatten(1)); });
  }
  /// Every 4-d conv weight laid out channels-last (the forward uses the members).
  void conv_weights_channels_last() {
    auto cl = [](const std::shared_ptr<nn::Conv2d>& c) {
      c->weight = c->weight.contiguous(ember::MemoryFormat::channels_last);
    };
    cl(conv1);
    for (auto& layer : layers)
      for (auto& m : *layer) {
        auto b = std::dynamic_pointer_cast<Bottleneck>(m.ptr());
        for (auto& c : {b->conv1, b->conv2, b->conv3, b->ds_conv})
          if (c) cl(c);
      }
  }

  std::shared_ptr<nn::Conv2d> conv1;
  std::shared_ptr<nn::BatchNorm2d> bn1;
  std::shared_ptr<nn::MaxPool2d> maxpool;
  std::vector<std::shared_ptr<nn::Sequential>> layers;
  std::shared_ptr<nn::AdaptiveAvgPool2d> avgpool;
  std::shared_ptr<nn::Linear> fc;
};

std::vector<float> host_values(const Tensor& t) {
  Tensor c = t.to(ember::Device::cpu()).to(ember::DType::f32).contiguous();
  const float* p = c.data_ptr<float>();
  return std::vector<float>(p, p + c.numel());
}

// ---- LibTorch ResNet-50 (the same parameter and buffer names as torchvision's) ----
#ifdef EMBER_BENCH_HAVE_TORCH
namespace tnn = torch::nn;

tnn::Conv2d tconv(int64_t in, int64_t out, int64_t k, int64_t stride) {
  return tnn::Conv2d(tnn::Conv2dOptions(in, out, k).stride(stride).padding(k / 2).bias(false));
}

struct TorchBottleneckImpl : tnn::Module {
  TorchBottleneckImpl(int64_t in, int64_t width, int64_t stride)
      : conv1(tconv(in, width, 1, 1)),
        bn1(width),
        conv2(tconv(width, width, 3, stride)),
        bn2(width),
        conv3(tconv(width, width * 4, 1, 1)),
        bn3(width * 4) {
    register_module("conv1", conv1);
    register_module("bn1", bn1);
    register_module("conv2", conv2);
    register_module("bn2", bn2);
    register_module("conv3", conv3);
    register_module("bn3", bn3);
    if (stride != 1 || in != width * 4) {
      ds_conv = tconv(in, width * 4, 1, stride);
      ds_bn = tnn::BatchNorm2d(width * 4);
      register_module("downsample", tnn::Sequential(ds_conv, ds_bn));
    }
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = timed(kConv1x1, [&] { return conv1(x); });
    y = timed(kBn, [&] { return bn1(y); });
    y = timed(kRelu, [&] { return torch::relu_(y); });
    y = timed(kConv3x3, [&] { return conv2(y); });
    y = timed(kBn, [&] { return bn2(y); });
    y = timed(kRelu, [&] { return torch::relu_(y); });
    y = timed(kConv1x1, [&] { return conv3(y); });
    y = timed(kBn, [&] { return bn3(y); });
    torch::Tensor identity = x;
    if (!ds_conv.is_empty()) {
      identity = timed(kConv1x1, [&] { return ds_conv(x); });
      identity = timed(kBn, [&] { return ds_bn(identity); });
    }
    y = timed(kAdd, [&] { return y.add_(identity); });
    return timed(kRelu, [&] { return torch::relu_(y); });
  }
  tnn::Conv2d conv1, ds_conv{nullptr};
  tnn::BatchNorm2d bn1;
  tnn::Conv2d conv2;
  tnn::BatchNorm2d bn2;
  tnn::Conv2d conv3;
  tnn::BatchNorm2d bn3, ds_bn{nullptr};
};
TORCH_MODULE(TorchBottleneck);

struct TorchResNet50Impl : tnn::Module {
  TorchResNet50Impl()
      : conv1(tconv(3, 64, 7, 2)),
        bn1(64),
        maxpool(tnn::MaxPool2dOptions(3).stride(2).padding(1)),
        fc(2048, 1000) {
    register_module("conv1", conv1);
    register_module("bn1", bn1);
    const int64_t blocks[4] = {3, 4, 6, 3};
    int64_t in = 64;
    for (int l = 0; l < 4; ++l) {
      std::vector<TorchBottleneck> layer;
      const int64_t width = 64 << l;
      for (int64_t b = 0; b < blocks[l]; ++b) {
        layer.push_back(TorchBottleneck(in, width, b == 0 && l > 0 ? 2 : 1));
        in = width * 4;
      }
      auto seq = tnn::Sequential();
      for (auto& b : layer) seq->push_back(b);
      layers.push_back(seq);
      blocks_.push_back(layer);
      register_module("layer" + std::to_string(l + 1), seq);
    }
    register_module("fc", fc);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = timed(kConv7x7, [&] { return conv1(x); });
    y = timed(kBn, [&] { return bn1(y); });
    y = timed(kRelu, [&] { return torch::relu_(y); });
    y = timed(kMaxPool, [&] { return maxpool(y); });
    for (auto& layer : blocks_)
      for (auto& b : layer) y = b->forward(y);
    y = timed(kAvgPool, [&] { return torch::adaptive_avg_pool2d(y, {1, 1}); });
    return timed(kLinear, [&] { return fc(y.flatten(1)); });
  }
  tnn::Conv2d conv1;
  tnn::BatchNorm2d bn1;
  tnn::MaxPool2d maxpool;
  std::vector<tnn::Sequential> layers;
  std::vector<std::vector<TorchBottleneck>> blocks_;
  tnn::Linear fc;
};
TORCH_MODULE(TorchResNet50);

torch::Tensor to_torch(const Tensor& t) {
  Tensor c = t.to(ember::Device::cpu()).contiguous();
  if (c.dtype() == ember::DType::bf16 || c.dtype() == ember::DType::f16)
    c = c.to(ember::DType::f32);
  const bool is_f32 = c.dtype() == ember::DType::f32;
  auto opts = torch::TensorOptions().dtype(is_f32 ? torch::kFloat32 : torch::kInt64);
  void* p =
      is_f32 ? static_cast<void*>(c.data_ptr<float>()) : static_cast<void*>(c.data_ptr<int64_t>());
  return torch::from_blob(p, c.shape(), opts).clone();
}

// A LibTorch ResNet-50 holding the Ember model's parameters and buffers (every name must match).
TorchResNet50 torch_copy(const ResNet50& model, bool channels_last) {
  TorchResNet50 tm;
  torch::NoGradGuard ng;
  auto params = tm->named_parameters(), buffers = tm->named_buffers();
  size_t copied = 0;
  const nn::StateDict state = model.state_dict();
  for (const auto& [name, t] : state.items()) {
    torch::Tensor* dst = params.find(name);
    if (!dst) dst = buffers.find(name);
    if (!dst) {
      std::fprintf(stderr, "error: LibTorch model has no tensor '%s'\n", name.c_str());
      std::exit(1);
    }
    dst->copy_(to_torch(t));
    ++copied;
  }
  if (copied != params.size() + buffers.size()) {
    std::fprintf(stderr, "error: copied %zu tensors, LibTorch has %zu\n", copied,
                 params.size() + buffers.size());
    std::exit(1);
  }
  if (channels_last)  // 1.13's C++ Module::to has no memory format: convert each 4-d parameter
    for (auto& p : tm->parameters())
      if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
  tm->eval();
  return tm;
}

std::vector<float> host_values(const torch::Tensor& t) {
  torch::Tensor c = t.to(torch::kFloat32).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}
#endif

// max |a - b| / max |ref|
double rel_diff(const std::vector<float>& ref, const std::vector<float>& b) {
  double d = 0, m = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    d = std::max(d, double(std::fabs(ref[i] - b[i])));
    m = std::max(m, double(std::fabs(ref[i])));
  }
  return m > 0 ? d / m : d;
}

struct Variant {
  std::string name, framework, format, dtype = "f32";
  std::function<std::vector<float>()> logits;  // one forward, host logits
  std::function<void()> run;                   // one forward, result dropped
  std::vector<double> times, cpu_times;        // wall and process CPU seconds per forward
  double best() const { return *std::min_element(times.begin(), times.end()); }
  double median() const { return median_of(times); }
  double cpu_median() const { return median_of(cpu_times); }
  static double median_of(std::vector<double> t) {
    std::sort(t.begin(), t.end());
    return t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
  }
};

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ResNet-50 inference: Ember (NCHW, channels-last) vs LibTorch in one process"};
  int batch = 8, size = 224, iters = 6, warmup = 2, threads = 2, profile_rounds = 2;
  std::string json_path, only, dtype_arg = "f32", torch_lowp = "autocast";
  bool profile = false, cl_nchw_weights = false;
  app.add_option("--batch", batch, "images per forward")->check(CLI::PositiveNumber);
  app.add_option("--size", size, "image height and width")->check(CLI::Range(32, 1024));
  app.add_option("--iters", iters, "timed rounds (each runs every variant once)")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed forwards per variant")->check(CLI::NonNegativeNumber);
  app.add_option("--threads", threads, "threads for both frameworks")->check(CLI::PositiveNumber);
  app.add_option("--json", json_path, "write the results as JSON to FILE");
  app.add_option("--only", only, "time only the variants whose name contains this (\"ember\")");
  app.add_flag("--profile", profile, "time each layer type after the timed rounds");
  app.add_flag("--cl-nchw-weights", cl_nchw_weights,
               "also time ember's channels-last input with NCHW conv weights");
  app.add_option("--profile-rounds", profile_rounds, "profiled forwards per variant")
      ->check(CLI::PositiveNumber);
  app.add_option("--dtype", dtype_arg, "also time Ember converted with Module::to(dtype)")
      ->check(CLI::IsMember({"f32", "bf16", "f16"}));
  app.add_option("--torch-lowp", torch_lowp,
                 "LibTorch's bf16 variant: its CPU autocast, or model.to(kBFloat16)")
      ->check(CLI::IsMember({"autocast", "to"}));
  CLI11_PARSE(app, argc, argv);
  setenv("EMBER_NUM_THREADS", std::to_string(threads).c_str(), 0);

  using namespace ember;
  try {
    NoGradGuard no_grad;
    manual_seed(0);
    auto model = std::make_shared<ResNet50>();
    for (auto& [name, t] : model->named_parameters())  // non-trivial affine BatchNorm
      if (name.find("bn") != std::string::npos || name.find("downsample.1") != std::string::npos)
        t.uniform_(name.ends_with("weight") ? 0.5 : -0.2, name.ends_with("weight") ? 1.5 : 0.2);
    Tensor x = randn({batch, 3, size, size});
    model->train();
    model->forward(x);  // calibrates the running stats
    model->eval();

    std::vector<Variant> v;
    auto add = [&](const std::string& name, const char* framework, const char* format,
                   std::function<std::vector<float>()> logits, std::function<void()> run,
                   const std::string& dt = "f32") {
      Variant var;
      var.dtype = dt;
      var.name = name;
      var.framework = framework;
      var.format = format;
      var.logits = std::move(logits);
      var.run = std::move(run);
      v.push_back(std::move(var));
    };
    add(
        "ember nchw", "ember", "nchw", [&] { return host_values(model->forward(x)); },
        [&] { model->forward(x); });
    auto model_cl = std::make_shared<ResNet50>();
    model_cl->load_state_dict(model->state_dict());
    model_cl->conv_weights_channels_last();
    model_cl->eval();
    Tensor x_cl = x.contiguous(MemoryFormat::channels_last);
    add(
        "ember channels_last", "ember", "channels_last",
        [&] { return host_values(model_cl->forward(x_cl)); }, [&] { model_cl->forward(x_cl); });
    // A/B of the weights' layout: the channels-last input through NCHW-laid conv weights.
    if (cl_nchw_weights)
      add(
          "ember cl, nchw weights", "ember", "channels_last_nchw_weights",
          [&] { return host_values(model->forward(x_cl)); }, [&] { model->forward(x_cl); });
    // The same weights converted with Module::to (BatchNorm statistics stay f32).
    const DType lowp = dtype_from_name(dtype_arg == "bf16"  ? "bfloat16"
                                       : dtype_arg == "f16" ? "float16"
                                                            : "float32");
    std::shared_ptr<ResNet50> model_lp, model_lp_cl;
    Tensor x_lp, x_lp_cl;
    if (lowp != DType::f32) {
      model_lp = std::make_shared<ResNet50>();
      model_lp->load_state_dict(model->state_dict());
      model_lp->to(lowp);
      model_lp->eval();
      model_lp_cl = std::make_shared<ResNet50>();
      model_lp_cl->load_state_dict(model->state_dict());
      model_lp_cl->to(lowp);
      model_lp_cl->conv_weights_channels_last();
      model_lp_cl->eval();
      x_lp = x.to(lowp);
      x_lp_cl = x_lp.contiguous(MemoryFormat::channels_last);
      add(
          "ember " + dtype_arg + " nchw", "ember", "nchw",
          [&] { return host_values(model_lp->forward(x_lp)); }, [&] { model_lp->forward(x_lp); },
          dtype_arg);
      add(
          "ember " + dtype_arg + " channels_last", "ember", "channels_last",
          [&] { return host_values(model_lp_cl->forward(x_lp_cl)); },
          [&] { model_lp_cl->forward(x_lp_cl); }, dtype_arg);
    }
#ifdef EMBER_BENCH_HAVE_TORCH
    torch::set_num_threads(threads);
    torch::NoGradGuard torch_no_grad;
    TorchResNet50 tm = torch_copy(*model, false), tm_cl = torch_copy(*model, true);
    torch::Tensor tx = to_torch(x), tx_cl = tx.contiguous(at::MemoryFormat::ChannelsLast);
    add(
        "libtorch nchw", "libtorch", "nchw", [&] { return host_values(tm(tx)); }, [&] { tm(tx); });
    add(
        "libtorch channels_last", "libtorch", "channels_last",
        [&] { return host_values(tm_cl(tx_cl)); }, [&] { tm_cl(tx_cl); });
    // LibTorch in bf16 (1.13 has no f16 CPU autocast or f16 CPU convolution).
    TorchResNet50 tm_lp{nullptr}, tm_lp_cl{nullptr};
    torch::Tensor tx_lp, tx_lp_cl;
    if (lowp == DType::bf16) {
      tm_lp = torch_copy(*model, false);
      tm_lp_cl = torch_copy(*model, true);
      tx_lp = tx;
      tx_lp_cl = tx_cl;
      if (torch_lowp == "to") {  // 1.13's Module::to(dtype) keeps each tensor's layout
        tm_lp->to(torch::kBFloat16);
        tm_lp_cl->to(torch::kBFloat16);
        tx_lp = tx.to(torch::kBFloat16);
        tx_lp_cl = tx_cl.to(torch::kBFloat16);
      }
      // As torch.autocast("cpu", torch.bfloat16) around each forward: the cast weights are cached
      // for the forward and dropped when the scope closes.
      auto lowp_run = [autocast = torch_lowp == "autocast"](TorchResNet50& m,
                                                            const torch::Tensor& in) {
        if (!autocast) return m(in);
        at::autocast::set_cpu_enabled(true);
        at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
        at::autocast::increment_nesting();
        torch::Tensor y = m(in);
        if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
        at::autocast::set_cpu_enabled(false);
        return y;
      };
      const std::string tag = torch_lowp == "autocast" ? "libtorch bf16 autocast" : "libtorch bf16";
      add(
          tag + " nchw", "libtorch", "nchw",
          [&, lowp_run] { return host_values(lowp_run(tm_lp, tx_lp)); },
          [&, lowp_run] { lowp_run(tm_lp, tx_lp); }, "bf16");
      add(
          tag + " channels_last", "libtorch", "channels_last",
          [&, lowp_run] { return host_values(lowp_run(tm_lp_cl, tx_lp_cl)); },
          [&, lowp_run] { lowp_run(tm_lp_cl, tx_lp_cl); }, "bf16");
    }
#endif

    std::printf("ResNet-50 inference, batch %d, %dx%d, f32%s%s, %d threads, %d warmup, %d rounds\n",
                batch, size, size, lowp != DType::f32 ? " and " : "",
                lowp != DType::f32 ? dtype_arg.c_str() : "", threads, warmup, iters);
    if (lowp == DType::bf16)
      std::printf("LibTorch bf16: %s\n", torch_lowp == "autocast"
                                             ? "CPU autocast (f32 model and input)"
                                             : "model.to(kBFloat16), bf16 input");
#ifdef EMBER_BENCH_HAVE_TORCH
    std::printf("LibTorch %s\n", TORCH_VERSION);
#else
    std::printf("(LibTorch comparison not built: configure with -DEMBER_BENCH_LIBTORCH=ON)\n");
#endif
    std::printf("load average before: %s\n", load_average().c_str());
    if (!std::getenv("OMP_WAIT_POLICY"))
      std::printf("(OMP_WAIT_POLICY unset: LibTorch's idle OpenMP threads may spin)\n");

    // Agreement: every variant's logits against Ember NCHW's.
    nlohmann::json agreement = nlohmann::json::object();
    bool agree = true;
    const std::vector<float> ref = v[0].logits();
    double max_logit = 0;
    for (float f : ref) max_logit = std::max(max_logit, double(std::fabs(f)));
    std::printf("agreement with ember nchw (max |diff| / max |logit|, max |logit| = %.4g):\n",
                max_logit);
    for (size_t i = 1; i < v.size(); ++i) {
      const double d = rel_diff(ref, v[i].logits());
      // bf16 keeps 8 significant bits, f16 11, and 50 layers round their outputs: on this
      // random-init model both Ember's and LibTorch's bf16 logits are ~15% off f32's.
      const double bound = v[i].dtype == "f32" ? 1e-3 : v[i].dtype == "f16" ? 5e-2 : 0.25;
      const bool ok = d < bound && std::isfinite(d);
      agree = agree && ok;
      agreement[v[i].name] = d;
      std::printf("  %-34s %.3e  %s (bound %.2g)\n", v[i].name.c_str(), d, ok ? "ok" : "MISMATCH",
                  bound);
    }
    if (!agree || !(max_logit > 0) || !std::isfinite(max_logit)) {
      std::fprintf(stderr, "error: the variants do not compute the same logits\n");
      return 1;
    }

    if (!only.empty()) {  // timing and profile of the matching variants only
      std::erase_if(v,
                    [&](const Variant& var) { return var.name.find(only) == std::string::npos; });
      if (v.empty()) {
        std::fprintf(stderr, "error: no variant name contains '%s'\n", only.c_str());
        return 2;
      }
    }
    for (auto& var : v)
      for (int i = 0; i < warmup; ++i) var.run();
    for (int r = 0; r < iters; ++r)
      for (size_t j = 0; j < v.size(); ++j) {
        Variant& var = v[(j + size_t(r)) % v.size()];
        const auto t0 = Clock::now();
        const std::clock_t c0 = std::clock();
        var.run();
        var.times.push_back(since(t0));
        var.cpu_times.push_back(double(std::clock() - c0) / CLOCKS_PER_SEC);
      }

    nlohmann::json out = {{"benchmark", "resnet50"},      {"batch", batch}, {"size", size},
                          {"threads", threads},           {"iters", iters}, {"warmup", warmup},
                          {"load_before", load_average()}};
    out["agreement"] = agreement;
#ifdef EMBER_BENCH_HAVE_TORCH
    out["libtorch_version"] = TORCH_VERSION;
#endif
    std::printf("%-38s %10s %10s %10s %10s %10s\n", "variant", "best ms", "median ms", "best img/s",
                "med img/s", "img/CPU-s");
    for (auto& var : v) {
      std::printf("%-38s %10.1f %10.1f %10.2f %10.2f %10.2f\n", var.name.c_str(), 1e3 * var.best(),
                  1e3 * var.median(), batch / var.best(), batch / var.median(),
                  batch / var.cpu_median());
      out["variants"][var.name] = {{"best_ms", 1e3 * var.best()},
                                   {"median_ms", 1e3 * var.median()},
                                   {"best_img_s", batch / var.best()},
                                   {"median_img_s", batch / var.median()},
                                   {"img_per_cpu_s", batch / var.cpu_median()},
                                   {"times_ms", var.times},
                                   {"cpu_times_s", var.cpu_times}};
    }
#ifdef EMBER_BENCH_HAVE_TORCH
    auto ratio = [&](const char* name, const Variant* e, const Variant* t) {
      if (!e || !t) return;
      const double best = t->best() / e->best(), med = t->median() / e->median(),
                   cpu = t->cpu_median() / e->cpu_median();
      std::printf("ratio %-34s %.3f (best)  %.3f (median)  %.3f (CPU time)\n", name, best, med,
                  cpu);
      out["ratios"][name] = {{"best", best}, {"median", med}, {"cpu_time", cpu}};
    };
#endif
    auto find = [&](const std::string& framework, const std::string& format,
                    const std::string& dt = "f32") -> const Variant* {
      for (const auto& var : v)
        if (var.framework == framework && var.format == format && var.dtype == dt) return &var;
      return nullptr;
    };
    auto fastest = [&](const std::string& framework, const std::string& dt = "f32") {
      const Variant* b = nullptr;
      for (const auto& var : v)
        if (var.framework == framework && var.dtype == dt && (!b || var.best() < b->best()))
          b = &var;
      return b;
    };
#ifdef EMBER_BENCH_HAVE_TORCH
    ratio("ember/libtorch nchw", find("ember", "nchw"), find("libtorch", "nchw"));
    ratio("ember/libtorch channels_last", find("ember", "channels_last"),
          find("libtorch", "channels_last"));
    const Variant *eb = fastest("ember"), *tb = fastest("libtorch");
    if (eb && tb)
      std::printf("best ember: %s, best libtorch: %s\n", eb->name.c_str(), tb->name.c_str());
    ratio("ember-best/libtorch-best", eb, tb);
#endif
    if (lowp != DType::f32) {
      // Throughput ratios (> 1: the first is faster), time(second) / time(first).
      auto speedup = [&](const std::string& name, const Variant* a, const Variant* b) {
        if (!a || !b) return;
        const double best = b->best() / a->best(), med = b->median() / a->median(),
                     cpu = b->cpu_median() / a->cpu_median();
        std::printf("ratio %-44s %.3f (best)  %.3f (median)  %.3f (CPU time)\n", name.c_str(), best,
                    med, cpu);
        out["ratios"][name] = {{"best", best}, {"median", med}, {"cpu_time", cpu}};
      };
      const std::string d = dtype_arg;
      std::printf("low-precision ratios, throughput of the first / of the second:\n");
      speedup("ember " + d + " / ember f32 nchw", find("ember", "nchw", d), find("ember", "nchw"));
      speedup("ember " + d + " / ember f32 channels_last", find("ember", "channels_last", d),
              find("ember", "channels_last"));
      speedup("ember " + d + " best / ember f32 best", fastest("ember", d), fastest("ember"));
      speedup("ember " + d + " / libtorch " + d + " nchw", find("ember", "nchw", d),
              find("libtorch", "nchw", d));
      speedup("ember " + d + " / libtorch " + d + " channels_last",
              find("ember", "channels_last", d), find("libtorch", "channels_last", d));
      speedup("ember " + d + " best / libtorch " + d + " best", fastest("ember", d),
              fastest("libtorch", d));
      speedup("libtorch " + d + " best / libtorch f32 best", fastest("libtorch", d),
              fastest("libtorch"));
    }
    out["load_after"] = load_average();
    std::printf("load average after: %s\n", out["load_after"].get<std::string>().c_str());

    if (profile) {
      // Interleaved rounds as above; ms per forward averaged over the rounds.
      std::vector<Profile> prof(v.size());
      std::vector<double> total(v.size(), 0.0);
      for (int r = 0; r < profile_rounds; ++r)
        for (size_t j = 0; j < v.size(); ++j) {
          const size_t i = (j + size_t(r)) % v.size();
          g_prof = &prof[i];
          const auto t0 = Clock::now();
          v[i].run();
          total[i] += since(t0);
          g_prof = nullptr;
        }
      std::printf("per layer type, ms per forward (mean of %d profiled forwards), %% of total:\n",
                  profile_rounds);
      std::printf("%-23s", "variant");
      for (const char* k : kKindNames) std::printf(" %10s", k);
      std::printf(" %8s %9s\n", "total", "NHWC out");
      for (size_t i = 0; i < v.size(); ++i) {
        const Profile& p = prof[i];
        const double n = profile_rounds, t = total[i] / n;
        nlohmann::json pj = {{"total_ms", 1e3 * t},
                             {"channels_last_outputs", p.channels_last_outputs / profile_rounds},
                             {"outputs_4d", p.outputs / profile_rounds}};
        std::printf("%-23s", v[i].name.c_str());
        for (int k = 0; k < kKinds; ++k) {
          std::printf(" %10.1f", 1e3 * p.s[k] / n);
          pj[kKindNames[k]] = {{"ms", 1e3 * p.s[k] / n}, {"calls", p.calls[k] / profile_rounds}};
        }
        std::printf(" %8.1f %4lld/%-4lld\n", 1e3 * t,
                    (long long)(p.channels_last_outputs / profile_rounds),
                    (long long)(p.outputs / profile_rounds));
        std::printf("%-23s", "");
        for (int k = 0; k < kKinds; ++k) std::printf(" %9.1f%%", 100 * p.s[k] / n / t);
        std::printf("\n");
        out["profile"][v[i].name] = pj;
      }
    }
    if (!json_path.empty()) {
      std::ofstream f(json_path);
      f << out.dump(2) << "\n";
      if (!f) {
        std::fprintf(stderr, "error: cannot write %s\n", json_path.c_str());
        return 1;
      }
    }
  } catch (const ember::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
