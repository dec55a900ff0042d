// Low-precision cpu kernels (issue 18): bf16 vs f32 matmul and conv2d through Ember, and
// LibTorch's bf16 (when built with EMBER_BENCH_LIBTORCH) in the same run, on the same threads.
// Prints the CPU's features, each case's median time, and the ratios Ember bf16 / Ember f32 and
// Ember bf16 / LibTorch bf16 (below 1: Ember's bf16 is faster).
// Usage: bench_lowp [--threads N] [--reps N]
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "ember/ember.h"

#ifdef EMBER_BENCH_HAVE_TORCH
#include <torch/torch.h>
#endif

using namespace ember;
namespace F = ember::nn::functional;
using Clock = std::chrono::steady_clock;

namespace {

int g_reps = 10;

// The median of g_reps timed runs after two warm-ups (oneDNN's JIT, the autotuner), in ms.
double median_ms(const std::function<void()>& f) {
  f();
  f();
  std::vector<double> t;
  for (int i = 0; i < g_reps; ++i) {
    const auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  return bench::median(t);
}

std::string cpu_features() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model, out;
  bool flags = false;
  while (std::getline(in, line) && !flags) {
    if (model.empty() && line.rfind("model name", 0) == 0) model = line.substr(line.find(':') + 2);
    if (line.rfind("flags", 0) == 0) {
      std::istringstream ss(line.substr(line.find(':') + 1));
      std::string f;
      while (ss >> f)
        for (const char* want : {"avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16",
                                 "avx512_fp16", "amx_bf16", "amx_tile"})
          if (f == want) out += " " + f;
      flags = true;
    }
  }
  return model + " |" + out;
}

struct Row {
  std::string name;
  double f32 = 0, bf16 = 0, torch_bf16 = 0;
};

void print(const Row& r) {
  std::printf("%-36s %9.3f %9.3f", r.name.c_str(), r.f32, r.bf16);
  if (r.torch_bf16 > 0)
    std::printf(" %9.3f %9.2f %9.2f\n", r.torch_bf16, r.bf16 / r.f32, r.bf16 / r.torch_bf16);
  else
    std::printf(" %9s %9.2f %9s\n", "-", r.bf16 / r.f32, "-");
  std::fflush(stdout);
}

Row matmul_case(int64_t m, int64_t k, int64_t n) {
  Row r;
  r.name = "matmul [" + std::to_string(m) + "," + std::to_string(k) + "]x[" + std::to_string(k) +
           "," + std::to_string(n) + "]";
  manual_seed(1);
  const Tensor a = randn({m, k}), b = randn({k, n});
  const Tensor ab = a.to(DType::bf16), bb = b.to(DType::bf16);
  r.f32 = median_ms([&] {
    (void)matmul(a, b);
    sync(Device::cpu());
  });
  r.bf16 = median_ms([&] {
    (void)matmul(ab, bb);
    sync(Device::cpu());
  });
#ifdef EMBER_BENCH_HAVE_TORCH
  const torch::Tensor ta = torch::randn({m, k}).to(torch::kBFloat16);
  const torch::Tensor tb = torch::randn({k, n}).to(torch::kBFloat16);
  r.torch_bf16 = median_ms([&] { (void)torch::matmul(ta, tb); });
#endif
  return r;
}

Row conv_case(bool channels_last) {
  const int64_t nb = 8, c = 64, hw = 56;
  Row r;
  r.name = std::string("conv2d 3x3 64->64 8x56x56") + (channels_last ? " NHWC" : " NCHW");
  manual_seed(2);
  Tensor x = randn({nb, c, hw, hw}), w = randn({c, c, 3, 3}) * 0.05;
  if (channels_last) x = x.contiguous(MemoryFormat::channels_last);
  const Tensor xb = x.to(DType::bf16), wb = w.to(DType::bf16);
  r.f32 = median_ms([&] {
    (void)F::conv2d(x, w, Tensor(), {1}, {1});
    sync(Device::cpu());
  });
  r.bf16 = median_ms([&] {
    (void)F::conv2d(xb, wb, Tensor(), {1}, {1});
    sync(Device::cpu());
  });
#ifdef EMBER_BENCH_HAVE_TORCH
  torch::Tensor tx = torch::randn({nb, c, hw, hw}).to(torch::kBFloat16);
  if (channels_last) tx = tx.contiguous(at::MemoryFormat::ChannelsLast);
  const torch::Tensor tw = (torch::randn({c, c, 3, 3}) * 0.05).to(torch::kBFloat16);
  r.torch_bf16 = median_ms([&] { (void)at::conv2d(tx, tw, {}, 1, 1); });
#endif
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  bench::parse_options(argc, argv, [&](const std::string& k, const std::string& v) {
    if (k == "--threads")
      threads = std::stoi(v);
    else if (k == "--reps")
      g_reps = std::stoi(v);
    else
      return false;
    return true;
  });
  set_num_threads(threads);
#ifdef EMBER_BENCH_HAVE_TORCH
  torch::set_num_threads(threads);
#endif
  std::printf("cpu: %s\nthreads %d, median of %d runs, times in ms\n", cpu_features().c_str(),
              threads, g_reps);
  std::printf("%-36s %9s %9s %9s %9s %9s\n", "case", "f32", "bf16", "torch16", "bf16/f32",
              "bf16/torch");
  for (int64_t n : {512, 1024, 2048}) print(matmul_case(n, n, n));
  print(matmul_case(256, 1024, 1024));
  print(conv_case(false));
  print(conv_case(true));
  return 0;
}
