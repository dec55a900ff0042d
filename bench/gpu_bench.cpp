// GPU micro-benchmarks for bench/gpu_check.sh: elementwise add (GB/s moved) and matmul
// (GFLOP/s) on one device, f32 and f16, plus the max_tasks sweep of a chain of small ops.
// Usage: gpu_bench DEVICE [--quick | --medium | --chain | --ops] (DEVICE as Device::parse: vulkan,
// vulkan:Cpu). --quick: 1M-element add, 256^3 matmul; --medium (a CPU driver such as
// lavapipe): 4M, 512^3 and the CNN's conv2-shaped batched matmul; default: 16M, 2048^3 and the
// batched matmul.
// --chain: only the chain of 1,000 small ops (us/op), for choosing EMBER_VULKAN_MAX_TASKS.
// --ops: one op of each kernel family (ms each), to compare two builds of the kernel generator.
// --lowp [N...]: f16 vs f32 square matmul (default N = 1024, 2048, 4096; one timed run after a
// warm-up, as a CPU driver takes seconds at 4096), printing f16 / f32.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ember/ember.h"

using namespace ember;
using Clock = std::chrono::steady_clock;

namespace {
template <typename F>
double seconds_per_run(const Device& d, F&& f, int reps) {
  f();  // warm-up: compiles kernels
  sync(d);
  const auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) f();
  sync(d);
  return std::chrono::duration<double>(Clock::now() - t0).count() / reps;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(
        stderr, "usage: gpu_bench DEVICE [--quick | --medium | --chain | --ops | --lowp [N...]]\n");
    return 2;
  }
  const Device d = Device::parse(argv[1]);
  const bool quick = argc > 2 && std::strcmp(argv[2], "--quick") == 0;
  const bool medium = argc > 2 && std::strcmp(argv[2], "--medium") == 0;
  if (argc > 2 && std::strcmp(argv[2], "--ops") == 0) {
    // One op of each kernel family on [256, 1024] f32 (conv and pooling on [8, 16, 64, 64]), to
    // compare builds op by op (kernel generator changes): run two builds alternately.
    namespace F = ember::nn::functional;
    const TensorOptions f(DType::f32, d);
    Tensor x = randn({256, 1024}, f), y = randn({256, 1024}, f);
    Tensor idx = randint(0, 1024, {256, 1024}, TensorOptions(DType::i64, d));
    Tensor rows = randint(0, 256, {256}, TensorOptions(DType::i64, d));
    Tensor img = randn({8, 16, 64, 64}, f), w = randn({16, 16, 3, 3}, f);
    Tensor mask = gt(x, 0);
    const std::pair<const char*, std::function<void()>> ops[] = {
        {"exp", [&] { (void)exp(x); }},
        {"x * y + 1", [&] { (void)(x * y + 1); }},
        {"where(x > 0, x, y)", [&] { (void)where(mask, x, y); }},
        {"to(f16)", [&] { (void)x.to(DType::f16); }},
        {"transpose contiguous", [&] { (void)x.t().contiguous(); }},
        {"sum(dim 1)", [&] { (void)sum(x, {1}); }},
        {"sum(dim 0)", [&] { (void)sum(x, {0}); }},
        {"argmax(dim 1)", [&] { (void)argmax(x, 1); }},
        {"softmax(dim 1)", [&] { (void)F::softmax(x, 1); }},
        {"layer_norm(1024)", [&] { (void)F::layer_norm(x, {1024}); }},
        {"cumsum(dim 1)", [&] { (void)cumsum(x, 1); }},
        {"sort(dim 1)", [&] { (void)sort(x, 1); }},
        {"gather(dim 1)", [&] { (void)gather(x, 1, idx); }},
        {"index_select(dim 0)", [&] { (void)index_select(x, 0, rows); }},
        {"nonzero", [&] { (void)nonzero(mask); }},
        {"conv2d 3x3 16->16", [&] { (void)F::conv2d(img, w, Tensor(), {1}, {1}); }},
        {"max_pool2d 2x2",
         [&] {
           (void)F::max_pool2d(img, {2, 2});
         }},
        {"interpolate bilinear x2",
         [&] {
           (void)F::interpolate(img, {}, {2.0, 2.0}, "bilinear", false);
         }},
        {"dropout p=0.5", [&] { (void)F::dropout(x, 0.5, true); }},
    };
    std::printf("%-34s %12s\n", ("op on " + d.str()).c_str(), "time (ms)");
    for (const auto& [name, fn] : ops) {
      try {
        std::printf("%-34s %12.3f\n", name, seconds_per_run(d, fn, 5) * 1e3);
      } catch (const std::exception& e) {
        std::printf("%-34s failed: %s\n", name, e.what());
      }
      std::fflush(stdout);
    }
    return 0;
  }
  if (argc > 2 && std::strcmp(argv[2], "--lowp") == 0) {
    std::vector<int64_t> sizes;
    for (int i = 3; i < argc; ++i) sizes.push_back(std::atoll(argv[i]));
    if (sizes.empty()) sizes = {1024, 2048, 4096};
    std::printf("%-22s %12s %12s %8s\n", ("matmul on " + d.str()).c_str(), "f32 (ms)", "f16 (ms)",
                "f16/f32");
    for (int64_t n : sizes) {
      double ms[2] = {0, 0};
      for (int i = 0; i < 2; ++i) {
        const DType t = i ? DType::f16 : DType::f32;
        if (!supports_dtype(d, t)) continue;
        Tensor a = randn({n, n}, {DType::f32, d}).to(t), b = randn({n, n}, {DType::f32, d}).to(t);
        ms[i] = seconds_per_run(
                    d, [&] { (void)matmul(a, b); }, 1) *
                1e3;
      }
      std::printf("%-22s %12.1f %12.1f %8.2f\n", ("N = " + std::to_string(n)).c_str(), ms[0], ms[1],
                  ms[0] > 0 ? ms[1] / ms[0] : 0.0);
      std::fflush(stdout);
    }
    return 0;
  }
  if (argc > 2 && std::strcmp(argv[2], "--chain") == 0) {
    Tensor x = ones({1024}, {DType::f32, d});
    const double s = seconds_per_run(
        d,
        [&] {
          for (int i = 0; i < 1000; ++i) x = x * 0.5 + 1;
        },
        3);
    const char* mt = std::getenv("EMBER_VULKAN_MAX_TASKS");
    std::printf("chain of 1000 ops on 1024 floats, max_tasks %s: %.1f us/op\n", mt ? mt : "default",
                s * 1e6 / 2000);
    return 0;
  }
  std::printf("%-34s %12s %10s\n", ("benchmark on " + d.str()).c_str(), "time (ms)", "rate");
  for (DType t : {DType::f32, DType::f16}) {
    if (!supports_dtype(d, t)) continue;
    try {
      const int64_t n = quick    ? (int64_t(1) << 20)
                        : medium ? (int64_t(1) << 22)
                                 : (int64_t(1) << 24);
      Tensor a = ones({n}, {t, d}), b = ones({n}, {t, d});
      const double s = seconds_per_run(
          d, [&] { (void)(a + b); }, quick || medium ? 5 : 20);
      std::printf("%-34s %12.3f %7.2f GB/s\n",
                  ("add " + std::to_string(n) + " " + dtype_name(t)).c_str(), s * 1e3,
                  3.0 * double(n) * double(dtype_size(t)) / s / 1e9);
    } catch (const std::exception& e) {
      std::printf("%-34s failed: %s\n", "add", e.what());
    }
    try {
      const int64_t m = quick ? 256 : medium ? 512 : 2048;
      Tensor a = ones({m, m}, {t, d}), b = ones({m, m}, {t, d});
      const double s = seconds_per_run(
          d, [&] { (void)matmul(a, b); }, quick || medium ? 2 : 10);
      std::printf("%-34s %12.3f %7.2f GFLOP/s\n",
                  ("matmul " + std::to_string(m) + "^3 " + dtype_name(t)).c_str(), s * 1e3,
                  2.0 * double(m) * double(m) * double(m) / s / 1e9);
      if (!quick) {
        // The CNN's conv2 as im2col + batched matmul: 64 x [64, 288] @ [288, 576].
        Tensor w = ones({64, 64, 288}, {t, d}), cols = ones({64, 288, 576}, {t, d});
        const double sb = seconds_per_run(
            d, [&] { (void)matmul(w, cols); }, 2);
        std::printf("%-34s %12.3f %7.2f GFLOP/s\n",
                    ("matmul 64x[64,288]@[288,576] " + std::string(dtype_name(t))).c_str(),
                    sb * 1e3, 2.0 * 64 * 64 * 288 * 576 / sb / 1e9);
      }
    } catch (const std::exception& e) {
      std::printf("%-34s failed: %s\n", "matmul", e.what());
    }
  }
  return 0;
}
