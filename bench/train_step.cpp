// One training step of the Fashion-MNIST CNN (tools/models.h: conv32-conv64-maxpool-fc128-fc10,
// Adam lr 1e-3, batch 64, f32) in Ember (cpu backend) and, when built with
// EMBER_BENCH_LIBTORCH=ON, in LibTorch on the same batch and the same initial weights, in one
// process. Prints samples/s for each and the ratio, by wall time and by process CPU time (the
// latter is steadier on a shared machine: it does not count the time other processes run).
//   bench_train_step [--steps N] [--warmup N] [--batch B] [--threads T] [--device cpu|ref]
//   bench_train_step --step-times N: times each of the first N steps of a fresh process (no
//   warm-up) and prints them, then exits; bench/autotune_warm_cache.sh runs it twice with one
//   autotune cache folder (issue 16: a second process's first step within 10% of the first's
//   tenth).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "bench_util.h"
#include "ember/data/mnist.h"
#include "ember/ember.h"
#include "ember/nn/functional/loss.h"
#include "ember/optim/adam.h"
#include "models.h"

#ifdef EMBER_BENCH_HAVE_TORCH
#include <torch/torch.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  int steps = 20, warmup = 3, batch = 64, threads = 2, step_times = 0;
  std::string device = "cpu";
};

Args parse(int argc, char** argv) {
  Args a;
  bench::parse_options(argc, argv, [&](const std::string& k, const std::string& v) {
    if (k == "--steps")
      a.steps = std::stoi(v);
    else if (k == "--warmup")
      a.warmup = std::stoi(v);
    else if (k == "--batch")
      a.batch = std::stoi(v);
    else if (k == "--threads")
      a.threads = std::stoi(v);
    else if (k == "--device")
      a.device = v;
    else if (k == "--step-times")
      a.step_times = std::stoi(v);
    else
      return false;
    return true;
  });
  return a;
}

// The first `batch` Fashion-MNIST training images (random images when the dataset is absent).
std::pair<ember::Tensor, ember::Tensor> make_batch(int batch) {
  using namespace ember;
  const tools::DatasetSpec spec = tools::dataset_spec("fashion-mnist");
  try {
    data::TensorDataset ds = data::load_fashion_mnist(spec.default_dir, true);
    Tensor x = tools::normalize_images(ds.data().slice(0, 0, batch), spec).contiguous();
    return {x, ds.targets().slice(0, 0, batch).contiguous()};
  } catch (const Error& e) {
    std::printf("(Fashion-MNIST not found, using random images: %s)\n", e.what());
    manual_seed(1);
    return {randn({batch, 1, 28, 28}), randint(0, 10, {batch})};
  }
}

#ifdef EMBER_BENCH_HAVE_TORCH
struct TorchCnn : torch::nn::Module {
  torch::nn::Conv2d conv1{torch::nn::Conv2dOptions(1, 32, 3)};
  torch::nn::Conv2d conv2{torch::nn::Conv2dOptions(32, 64, 3)};
  torch::nn::Linear fc1{64 * 12 * 12, 128}, fc2{128, 10};
  TorchCnn() {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(conv1(x));
    x = torch::relu(conv2(x));
    x = torch::max_pool2d(x, 2);
    x = torch::relu(fc1(x.flatten(1)));
    return fc2(x);
  }
};

torch::Tensor to_torch(const ember::Tensor& t) {
  ember::Tensor c = t.to(ember::Device::cpu()).contiguous();
  const bool is_f32 = c.dtype() == ember::DType::f32;
  auto opts = torch::TensorOptions().dtype(is_f32 ? torch::kFloat32 : torch::kInt64);
  return torch::from_blob(const_cast<void*>(static_cast<const void*>(
                              is_f32 ? static_cast<const void*>(c.data_ptr<float>())
                                     : static_cast<const void*>(c.data_ptr<int64_t>()))),
                          c.shape(), opts)
      .clone();
}
#endif

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  setenv("EMBER_NUM_THREADS", std::to_string(a.threads).c_str(), 0);
  using namespace ember;
  try {
    const Device dev = Device::parse(a.device);
    Device::set_default_device(dev);
    auto [x_host, y_host] = make_batch(a.batch);
    Tensor x = x_host.to(dev), y = y_host.to(dev);
    manual_seed(0);
    auto model = std::make_shared<tools::Cnn>();
    optim::Adam opt(model->parameters(), optim::AdamOptions(1e-3));

    auto ember_step = [&] {
      Tensor loss = nn::functional::cross_entropy(model->forward(x), y);
      opt.zero_grad();
      loss.backward();
      opt.step();
      return loss.item<float>();  // forces the step to finish
    };
    if (a.step_times > 0) {
      for (int i = 0; i < a.step_times; ++i) {
        const auto s0 = Clock::now();
        const std::clock_t c0 = std::clock();
        ember_step();
        std::printf("step %d: %.2f ms (cpu %.2f ms)\n", i + 1,
                    1e3 * std::chrono::duration<double>(Clock::now() - s0).count(),
                    1e3 * double(std::clock() - c0) / CLOCKS_PER_SEC);
      }
      const AutotuneStats st = autotune_stats(dev);
      std::printf("autotune: %lld keys tuned, %lld timed runs, %lld choices loaded, file %s\n",
                  (long long)st.tuned, (long long)st.timed_runs, (long long)st.loaded,
                  st.cache_file.empty() ? "(none)" : st.cache_file.c_str());
      return 0;
    }
    std::printf("Fashion-MNIST CNN training step, batch %d, f32, %d threads, %d timed steps\n",
                a.batch, a.threads, a.steps);
    for (int i = 0; i < a.warmup; ++i) ember_step();
    auto t0 = Clock::now();
    std::clock_t c0 = std::clock();
    float ember_loss = 0;
    for (int i = 0; i < a.steps; ++i) ember_loss = ember_step();
    const double ember_s = std::chrono::duration<double>(Clock::now() - t0).count();
    const double ember_cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
    const double ember_sps = a.batch * a.steps / ember_s;
    std::printf(
        "ember (%s):   %8.1f samples/s  (%.2f ms/step, %.1f samples per CPU-second, "
        "last loss %.4f)\n",
        dev.str().c_str(), ember_sps, 1e3 * ember_s / a.steps, a.batch * a.steps / ember_cpu,
        ember_loss);

#ifdef EMBER_BENCH_HAVE_TORCH
    torch::set_num_threads(a.threads);
    torch::manual_seed(0);
    auto tm = std::make_shared<TorchCnn>();
    {  // the same initial weights as Ember's model
      torch::NoGradGuard ng;
      manual_seed(0);
      auto fresh = std::make_shared<tools::Cnn>();
      for (auto& [name, t] : fresh->named_parameters())
        tm->named_parameters()[name].copy_(to_torch(t));
    }
    torch::optim::Adam topt(tm->parameters(), torch::optim::AdamOptions(1e-3));
    torch::Tensor tx = to_torch(x), ty = to_torch(y);
    auto torch_step = [&] {
      torch::Tensor loss = torch::nn::functional::cross_entropy(tm->forward(tx), ty);
      topt.zero_grad();
      loss.backward();
      topt.step();
      return loss.item<float>();
    };
    for (int i = 0; i < a.warmup; ++i) torch_step();
    t0 = Clock::now();
    c0 = std::clock();
    float torch_loss = 0;
    for (int i = 0; i < a.steps; ++i) torch_loss = torch_step();
    const double torch_s = std::chrono::duration<double>(Clock::now() - t0).count();
    const double torch_cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
    const double torch_sps = a.batch * a.steps / torch_s;
    std::printf(
        "libtorch %s: %8.1f samples/s  (%.2f ms/step, %.1f samples per CPU-second, "
        "last loss %.4f)\n",
        TORCH_VERSION, torch_sps, 1e3 * torch_s / a.steps, a.batch * a.steps / torch_cpu,
        torch_loss);
    std::printf("ratio ember / libtorch: %.3f (wall), %.3f (CPU time)\n", ember_sps / torch_sps,
                torch_cpu / ember_cpu);
#else
    std::printf("(LibTorch comparison not built: configure with -DEMBER_BENCH_LIBTORCH=ON)\n");
#endif
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
