// MNIST CNN inference (tools/models.h's cnn: conv 1->32 3x3, relu, conv 32->64 3x3, relu,
// maxpool 2, flatten, fc 9216->128, relu, fc 128->10; f32, random weights) at batch 1 (one digit)
// and batch 256 on the default cpu device: the cpu backend in a native build, the wasm backend
// (SIMD128, threads in the pthreads flavour) in the WebAssembly build, where node runs it
// (bench/wasm_inference.sh runs all three and prints the wasm/native ratios).
//   bench_wasm_inference [--threads T] [--reps N] [--batch B] [--device cpu|ref]
//   (B: only that batch size; ref: the reference kernels, the wasm build's cpu before SIMD)
// Prints one line per batch size: "batch B: X ms per batch, Y ms per digit (median of N)".
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"
#include "ember/ember.h"

namespace {

std::shared_ptr<ember::nn::Sequential> mnist_cnn() {
  using namespace ember::nn;
  auto net = std::make_shared<Sequential>();
  net->push_back(std::make_shared<Conv2d>(1, 32, 3));
  net->push_back(std::make_shared<ReLU>());
  net->push_back(std::make_shared<Conv2d>(32, 64, 3));
  net->push_back(std::make_shared<ReLU>());
  net->push_back(std::make_shared<MaxPool2d>(2));
  net->push_back(std::make_shared<Flatten>());
  net->push_back(std::make_shared<Linear>(9216, 128));
  net->push_back(std::make_shared<ReLU>());
  net->push_back(std::make_shared<Linear>(128, 10));
  return net;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 0, reps = 0, only = 0;
  std::string device = "cpu";
  bench::parse_options(argc, argv, [&](const std::string& k, const std::string& v) {
    if (k == "--threads")
      threads = std::stoi(v);
    else if (k == "--reps")
      reps = std::stoi(v);
    else if (k == "--batch")
      only = std::stoi(v);
    else if (k == "--device" && (v == "cpu" || v == "ref"))
      device = v;
    else
      return false;
    return true;
  });
  if (threads > 0) ember::set_num_threads(threads);
  ember::manual_seed(1);
  const ember::Device dev = device == "ref" ? ember::Device::ref() : ember::Device::cpu();
  auto net = mnist_cnn();
  net->to(dev);
  net->eval();
  ember::NoGradGuard no_grad;
  for (const ember::DeviceInfo& d : ember::available_devices())
    if (d.device == dev)
      std::printf("device: %s (%s), %d threads\n", d.name.c_str(), d.details.c_str(),
                  ember::get_num_threads());
  for (int batch : {1, 256}) {
    if (only && batch != only) continue;
    ember::Tensor x = ember::randn({batch, 1, 28, 28}).to(dev);
    const int n = reps > 0 ? reps : (batch == 1 ? 200 : 8);
    float sink = 0;
    for (int i = 0; i < 2; ++i) sink += (*net)(x).sum().item<float>();  // warm-up
    std::vector<double> ms;
    for (int i = 0; i < n; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      sink += (*net)(x).sum().item<float>();
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    const double m = bench::median(ms);
    std::printf("batch %d: %.3f ms per batch, %.4f ms per digit (median of %d; checksum %g)\n",
                batch, m, m / batch, n, double(sink));
  }
  return 0;
}
