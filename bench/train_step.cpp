// One training step of the Fashion-MNIST CNN (tools/models.h: conv32-conv64-maxpool-fc128-fc10,
// Adam lr 1e-3, batch 64, f32) in Ember (cpu backend) and, when built with
// EMBER_BENCH_LIBTORCH=ON, in LibTorch on the same batch and the same initial weights, in one
// process. Prints samples/s for each and the ratio, by wall time and by process CPU time (the
// latter is steadier on a shared machine: it does not count the time other processes run).
//   bench_train_step [--steps N] [--warmup N] [--batch B] [--threads T] [--device cpu|ref]
//                    [--precision f32|bf16|f16]
//   --precision bf16 (or f16): also runs Ember's step with forward and loss inside
//   ember::autocast(device type, dtype) (backward outside, parameters and Adam state f32), after
//   the f32 step, from the same initial weights; prints the step-time ratio and each precision's
//   activation memory peak (memory_stats(device).peak above what a step keeps between steps:
//   parameters, gradients, Adam state, the batch). The peak cannot be reset, so each precision's
//   is measured in a fresh process (this program re-run with --memory-probe, after this
//   process's timing has filled the autotune cache, so the probe times no kernel variants).
//   bench_train_step --step-times N: times each of the first N steps of a fresh process (no
//   warm-up) and prints them, then exits; bench/autotune_warm_cache.sh runs it twice with one
//   autotune cache folder (issue 16: a second process's first step within 10% of the first's
//   tenth).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
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
  std::string device = "cpu", precision = "f32", memory_probe;
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
    else if (k == "--precision")
      a.precision = v;
    else if (k == "--memory-probe")  // internal: one precision's memory peak, printed
      a.memory_probe = v;
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

ember::DType precision_dtype(const std::string& p) {
  if (p == "f32") return ember::DType::f32;
  if (p == "bf16") return ember::DType::bf16;
  if (p == "f16") return ember::DType::f16;
  std::fprintf(stderr, "error: --precision takes f32, bf16 or f16, got '%s'\n", p.c_str());
  std::exit(2);
}

struct MemoryPeak {
  int64_t kept = 0;  // allocated between steps
  int64_t peak = 0;  // highest allocated during the steps
  int64_t activations() const { return peak - kept; }
};

// Runs `--memory-probe precision` in a fresh process of this program (the allocator's peak cannot
// be reset) and reads its "memory-probe KEPT PEAK" line; {-1, -1} when it fails.
MemoryPeak probe_memory(const Args& a, const std::string& precision) {
  // popen runs a shell, whose /proc/self/exe is the shell: resolve ours first.
  const std::string cmd = "'" + std::filesystem::read_symlink("/proc/self/exe").string() +
                          "' --memory-probe " + precision + " --batch " + std::to_string(a.batch) +
                          " --threads " + std::to_string(a.threads) + " --device " + a.device +
                          " --warmup " + std::to_string(a.warmup);
  MemoryPeak m{-1, -1};
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return m;
  char line[256];
  long long kept = 0, peak = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "memory-probe %lld %lld", &kept, &peak) == 2) m = {kept, peak};
  if (pclose(f) != 0) return {-1, -1};
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  const ember::DType lowp = precision_dtype(a.precision);
  if (!a.memory_probe.empty()) precision_dtype(a.memory_probe);
  setenv("EMBER_NUM_THREADS", std::to_string(a.threads).c_str(), 0);
  using namespace ember;
  try {
    const Device dev = Device::parse(a.device);
    Device::set_default_device(dev);
    auto [x_host, y_host] = make_batch(a.batch);
    Tensor x = x_host.to(dev), y = y_host.to(dev);
    manual_seed(0);
    auto model = std::make_shared<tools::Cnn>();
    auto opt = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions(1e-3));

    // Mixed precision as torch.autocast: forward and loss in the scope, backward outside.
    DType precision = a.memory_probe.empty() ? DType::f32 : precision_dtype(a.memory_probe);
    auto ember_step = [&] {
      Tensor loss;
      {
        autocast ac(dev.type(), precision == DType::f32 ? DType::bf16 : precision,
                    precision != DType::f32);
        loss = nn::functional::cross_entropy(model->forward(x), y);
      }
      opt->zero_grad();
      loss.backward();
      opt->step();
      return loss.item<float>();  // forces the step to finish
    };
    if (!a.memory_probe.empty()) {
      // Steady state: after a warm-up step the gradients and Adam state persist between steps.
      for (int i = 0; i < std::max(a.warmup, 1); ++i) ember_step();
      sync(dev);
      const int64_t kept = memory_stats(dev).allocated;
      ember_step();
      sync(dev);
      std::printf("memory-probe %lld %lld\n", (long long)kept, (long long)memory_stats(dev).peak);
      return 0;
    }
    if (a.step_times > 0) {
      precision = lowp;
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
    std::printf("Fashion-MNIST CNN training step, batch %d, f32%s%s, %d threads, %d timed steps\n",
                a.batch, lowp != DType::f32 ? " and autocast " : "",
                lowp != DType::f32 ? a.precision.c_str() : "", a.threads, a.steps);
    struct Timing {
      double s = 0, cpu = 0;
      float loss = 0;
    };
    auto time_steps = [&] {
      for (int i = 0; i < a.warmup; ++i) ember_step();
      Timing t;
      const auto t0 = Clock::now();
      const std::clock_t c0 = std::clock();
      for (int i = 0; i < a.steps; ++i) t.loss = ember_step();
      t.s = std::chrono::duration<double>(Clock::now() - t0).count();
      t.cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
      std::printf(
          "ember (%s, %s):%*s%8.1f samples/s  (%.2f ms/step, %.1f samples per CPU-second, "
          "last loss %.4f)\n",
          dev.str().c_str(), precision == DType::f32 ? "f32" : a.precision.c_str(),
          precision == DType::f32 ? 1 : 0, "", a.batch * a.steps / t.s, 1e3 * t.s / a.steps,
          a.batch * a.steps / t.cpu, t.loss);
      return t;
    };
    const Timing f32_time = time_steps();
    const double ember_s = f32_time.s, ember_cpu = f32_time.cpu;
    const double ember_sps = a.batch * a.steps / ember_s;
    if (lowp != DType::f32) {
      // The same initial weights and a fresh optimizer.
      manual_seed(0);
      model = std::make_shared<tools::Cnn>();
      opt = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions(1e-3));
      precision = lowp;
      const Timing lp = time_steps();
      std::printf("ratio ember %s / f32 step time: %.3f (wall), %.3f (CPU time)\n",
                  a.precision.c_str(), lp.s / ember_s, lp.cpu / ember_cpu);
      const MemoryPeak m32 = probe_memory(a, "f32"), mlp = probe_memory(a, a.precision);
      if (m32.peak < 0 || mlp.peak < 0) {
        std::printf("(memory probe failed)\n");
      } else if (m32.peak == 0) {
        std::printf("(%s keeps no allocator statistics)\n", dev.str().c_str());
      } else {
        for (const auto& [name, m] : {std::pair{"f32", m32}, std::pair{a.precision.c_str(), mlp}})
          std::printf(
              "activation peak (%s): %.2f MiB above the %.2f MiB kept between steps "
              "(peak %.2f MiB)\n",
              name, m.activations() / 1048576.0, m.kept / 1048576.0, m.peak / 1048576.0);
        std::printf("ratio activation peak %s / f32: %.3f\n", a.precision.c_str(),
                    double(mlp.activations()) / double(m32.activations()));
      }
    }

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
    auto t0 = Clock::now();
    std::clock_t c0 = std::clock();
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
