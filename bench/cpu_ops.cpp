// cpu backend micro-benchmarks against the machine's peers in the same run: elementwise ops
// against a triad bandwidth probe, a fused-in-torch elementwise chain, softmax and layer_norm,
// conv2d, and matmul against oneDNN's sgemm called directly. Prints each benchmark's best
// (minimum over repetitions) time with GB/s or GFLOP/s, then a table of ratios.
//
// Standalone build (until bench/CMakeLists.txt wires it), from the repo root after building
// build-cpu:
//   g++ -O3 -std=c++20 -Iinclude bench/cpu_ops.cpp -o build-cpu/cpu_ops -Lbuild-cpu -lember
//       -ldnnl -lbenchmark -lpthread -Wl,-rpath,$PWD/build-cpu   (one line)
//   build-cpu/cpu_ops --benchmark_repetitions=5
#include <benchmark/benchmark.h>
#include <dnnl.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/functional/activation.h"
#include "ember/nn/functional/conv.h"
#include "ember/nn/functional/norm.h"

namespace {

using namespace ember;
namespace F = ember::nn::functional;

constexpr int64_t kN = int64_t(1) << 24;  // 16M f32 = 64 MiB per operand

// Work per iteration, as rate counters (bytes_per_second, GFLOP/s) the summary reads back.
void note(benchmark::State& st, double bytes, double flops) {
  st.SetBytesProcessed(int64_t(bytes) * int64_t(st.iterations()));
  if (flops > 0)
    st.counters["GFLOP/s"] =
        benchmark::Counter(flops * double(st.iterations()) * 1e-9, benchmark::Counter::kIsRate);
}

Tensor input(Shape s, Device d = Device::cpu()) {
  manual_seed(d, 1);
  return randn(std::move(s), {DType::f32, d});
}

// The probe: a[i] = b[i] + 3 c[i] over the same threads the cpu backend uses (12 bytes/element).
void BM_triad_probe(benchmark::State& st) {
  std::vector<float> a(size_t(kN), 0.f), b(size_t(kN), 1.f), c(size_t(kN), 2.f);
  const int nt = get_num_threads();
  for (auto _ : st) {
    std::vector<std::thread> ts;
    for (int t = 0; t < nt; ++t)
      ts.emplace_back([&, t] {
        const int64_t lo = kN * t / nt, hi = kN * (t + 1) / nt;
        float* pa = a.data();
        const float *pb = b.data(), *pc = c.data();
        for (int64_t i = lo; i < hi; ++i) pa[i] = pb[i] + 3.f * pc[i];
      });
    for (auto& t : ts) t.join();
    benchmark::DoNotOptimize(a.data());
  }
  note(st, 12.0 * kN, 2.0 * kN);
}

template <typename Fn>
void elementwise(benchmark::State& st, Device d, double bytes_per_elem, Fn fn) {
  const Tensor x = input({kN}, d), y = input({kN}, d);
  for (auto _ : st) {
    Tensor z = fn(x, y);
    benchmark::DoNotOptimize(z.raw_data());
  }
  note(st, bytes_per_elem * kN, 0);
}

void BM_add(benchmark::State& st) {
  elementwise(st, Device::cpu(), 12, [](const Tensor& x, const Tensor& y) { return x + y; });
}
void BM_mul(benchmark::State& st) {
  elementwise(st, Device::cpu(), 12, [](const Tensor& x, const Tensor& y) { return x * y; });
}
void BM_exp(benchmark::State& st) {
  elementwise(st, Device::cpu(), 8, [](const Tensor& x, const Tensor&) { return x.exp(); });
}
void BM_add_ref(benchmark::State& st) {
  elementwise(st, Device::ref(), 12, [](const Tensor& x, const Tensor& y) { return x + y; });
}
void BM_exp_ref(benchmark::State& st) {
  elementwise(st, Device::ref(), 8, [](const Tensor& x, const Tensor&) { return x.exp(); });
}
// exp(relu(x * 2 + 1)): four unfused passes here (mul, add, relu, exp), 8 bytes/element each;
// the bytes noted are the one-pass minimum (read x, write the result) a fused kernel would move.
void BM_chain(benchmark::State& st) {
  elementwise(st, Device::cpu(), 8,
              [](const Tensor& x, const Tensor&) { return (x * 2 + 1).relu().exp(); });
}

void BM_softmax(benchmark::State& st) {
  const Tensor x = input({4096, 4096});
  for (auto _ : st) {
    Tensor y = F::softmax(x, -1);
    benchmark::DoNotOptimize(y.raw_data());
  }
  note(st, 8.0 * 4096 * 4096, 0);
}

void BM_layer_norm(benchmark::State& st) {
  const Tensor x = input({4096, 4096});
  const Tensor w = input({4096}), b = input({4096});
  for (auto _ : st) {
    Tensor y = F::layer_norm(x, {4096}, w, b);
    benchmark::DoNotOptimize(y.raw_data());
  }
  note(st, 8.0 * 4096 * 4096, 0);
}

void BM_conv2d(benchmark::State& st) {
  const Tensor x = input({1, 64, 56, 56}), w = input({64, 64, 3, 3});
  for (auto _ : st) {
    Tensor y = F::conv2d(x, w, Tensor(), {1}, {1});
    benchmark::DoNotOptimize(y.raw_data());
  }
  note(st, 0, 2.0 * 64 * 64 * 9 * 56 * 56);
}

void BM_matmul(benchmark::State& st) {
  const int64_t n = st.range(0);
  const Tensor a = input({n, n}), b = input({n, n});
  for (auto _ : st) {
    Tensor c = matmul(a, b);
    benchmark::DoNotOptimize(c.raw_data());
  }
  note(st, 0, 2.0 * double(n) * double(n) * double(n));
}

void BM_dnnl_sgemm(benchmark::State& st) {
  const int64_t n = st.range(0);
  std::vector<float> a(size_t(n * n), 1.f), b(size_t(n * n), 0.5f), c(size_t(n * n));
  for (auto _ : st) {
    dnnl_sgemm('N', 'N', n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  note(st, 0, 2.0 * double(n) * double(n) * double(n));
}

// One training step of the Fashion-MNIST CNN (conv 32 3x3, relu, conv 64 3x3, relu, maxpool 2,
// fc 128, relu, fc 10; batch 64): forward through nn::functional, backward written out with the
// ops autodiff's rules use (matmul, unfold/fold, scatter_add), plain SGD. Reports samples/s.
struct Cnn {
  Tensor w1, b1, w2, b2, w3, b3, w4, b4;
  explicit Cnn(Device d) {
    manual_seed(d, 7);
    auto p = [&](Shape s, double scale) { return randn(std::move(s), {DType::f32, d}) * scale; };
    w1 = p({32, 1, 3, 3}, 0.3);
    b1 = p({32}, 0.01);
    w2 = p({64, 32, 3, 3}, 0.06);
    b2 = p({64}, 0.01);
    w3 = p({128, 9216}, 0.01);
    b3 = p({128}, 0.01);
    w4 = p({10, 128}, 0.09);
    b4 = p({10}, 0.01);
  }
  // Weight and bias gradients of a 3x3 valid conv: dy [N, Co, L], cols = unfold(x) [N, Ci*9, L].
  static void conv_grads(const Tensor& dy, const Tensor& cols, const Tensor& w, Tensor& dw,
                         Tensor& db) {
    dw = sum(matmul(dy, cols.transpose(1, 2)), {0}).reshape(w.shape());
    db = sum(dy, {0, 2});
  }
  double step(const Tensor& x, const Tensor& y, double lr) {
    const int64_t n = x.size(0);
    const Tensor cols1 = F::unfold(x, {3});  // [N, 9, 676]
    const Tensor c1 = F::conv2d(x, w1, b1);  // [N, 32, 26, 26]
    const Tensor a1 = c1.relu();
    const Tensor cols2 = F::unfold(a1, {3});  // [N, 288, 576]
    const Tensor c2 = F::conv2d(a1, w2, b2);  // [N, 64, 24, 24]
    const Tensor a2 = c2.relu();
    auto [p, idx] = F::max_pool2d_with_indices(a2, {2});  // [N, 64, 12, 12]
    const Tensor f = p.flatten(1);                        // [N, 9216]
    const Tensor h = linear(f, w3, b3);
    const Tensor r = h.relu();
    const Tensor o = linear(r, w4, b4);  // [N, 10]
    const Tensor loss = F::cross_entropy(o, y);
    // Backward.
    const Tensor dlogits = (F::softmax(o, 1) - one_hot(y, 10).to(DType::f32)) / double(n);
    const Tensor dw4 = matmul(dlogits.t(), r), db4 = sum(dlogits, {0});
    const Tensor dh = matmul(dlogits, w4) * gt(h, 0).to(DType::f32);
    const Tensor dw3 = matmul(dh.t(), f), db3 = sum(dh, {0});
    const Tensor dp = matmul(dh, w3).view({n, 64, 144});
    const Tensor da2 =
        scatter_add(zeros({n, 64, 576}, {DType::f32, x.device()}), 2, idx.view({n, 64, 144}), dp);
    const Tensor dc2 = da2 * gt(c2, 0).to(DType::f32).view({n, 64, 576});
    Tensor dw2, db2, dw1, db1;
    conv_grads(dc2, cols2, w2, dw2, db2);
    const Tensor dcols2 = matmul(w2.reshape({64, 288}).t(), dc2);  // [N, 288, 576]
    const Tensor da1 = F::fold(dcols2, {26, 26}, {3});
    const Tensor dc1 = (da1 * gt(c1, 0).to(DType::f32)).view({n, 32, 676});
    conv_grads(dc1, cols1, w1, dw1, db1);
    for (auto [w, g] : {std::pair<Tensor*, const Tensor*>{&w1, &dw1},
                        {&b1, &db1},
                        {&w2, &dw2},
                        {&b2, &db2},
                        {&w3, &dw3},
                        {&b3, &db3},
                        {&w4, &dw4},
                        {&b4, &db4}})
      *w = *w - *g * lr;
    return loss.item<float>();
  }
};

void cnn_step(benchmark::State& st, Device d) {
  Cnn net(d);
  manual_seed(d, 3);
  const Tensor x = rand({64, 1, 28, 28}, {DType::f32, d});
  const Tensor y = randint(0, 10, {64}, {DType::i64, d});
  double loss = 0;
  for (auto _ : st) loss = net.step(x, y, 0.05);
  st.counters["loss"] = loss;
  st.counters["samples/s"] =
      benchmark::Counter(64.0 * double(st.iterations()), benchmark::Counter::kIsRate);
  note(st, 0, 0);
}
void BM_cnn_step(benchmark::State& st) { cnn_step(st, Device::cpu()); }

BENCHMARK(BM_triad_probe)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_add)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_mul)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_exp)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_add_ref)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_exp_ref)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_chain)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_softmax)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_layer_norm)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_conv2d)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_matmul)
    ->RangeMultiplier(2)
    ->Range(256, 2048)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_dnnl_sgemm)
    ->RangeMultiplier(2)
    ->Range(256, 2048)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_cnn_step)->Unit(benchmark::kMillisecond)->UseRealTime();

// Keeps the minimum time per benchmark over its repetitions (the machine is shared and noisy)
// with that run's rates.
struct Best {
  double seconds = 0, gbs = 0, gflops = 0;
};
class MinReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, Best> best;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.iterations == 0) continue;
      const std::string name = r.run_name.str();
      const double t = r.real_accumulated_time / double(r.iterations);
      auto it = best.find(name);
      if (it != best.end() && it->second.seconds <= t) continue;
      Best b;
      b.seconds = t;
      auto c = r.counters.find("bytes_per_second");
      if (c != r.counters.end()) b.gbs = double(c->second) * 1e-9;
      c = r.counters.find("GFLOP/s");
      if (c != r.counters.end()) b.gflops = double(c->second);
      best[name] = b;
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  MinReporter rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  std::printf("\n%-26s %10s %10s %10s   (minimum over repetitions; %d threads)\n", "benchmark",
              "ms", "GB/s", "GFLOP/s", get_num_threads());
  for (const auto& [name, b] : rep.best) {
    std::printf("%-34s %10.3f %10.2f %10.2f\n", name.c_str(), b.seconds * 1e3, b.gbs, b.gflops);
    if (name.rfind("BM_cnn_step", 0) == 0)
      std::printf("%-34s %10.1f samples/s\n", "", 64.0 / b.seconds);
  }
  auto ratio = [&](const char* label, const std::string& a, const std::string& b, bool inv) {
    if (!rep.best.count(a) || !rep.best.count(b)) return;
    const double r =
        inv ? rep.best[b].seconds / rep.best[a].seconds : rep.best[a].seconds / rep.best[b].seconds;
    std::printf("%-44s %8.2f\n", label, r);
  };
  std::printf("\nratios (time-based)\n");
  ratio("add GB/s / triad GB/s", "BM_add/real_time", "BM_triad_probe/real_time", true);
  ratio("mul GB/s / triad GB/s", "BM_mul/real_time", "BM_triad_probe/real_time", true);
  ratio("add: cpu speed-up over ref", "BM_add/real_time", "BM_add_ref/iterations:3/real_time",
        true);
  ratio("exp: cpu speed-up over ref", "BM_exp/real_time", "BM_exp_ref/iterations:3/real_time",
        true);
  ratio("chain time / exp time", "BM_chain/real_time", "BM_exp/real_time", false);
  for (int n = 256; n <= 2048; n *= 2)
    ratio(("matmul " + std::to_string(n) + " GFLOP/s / dnnl_sgemm").c_str(),
          "BM_matmul/" + std::to_string(n) + "/real_time",
          "BM_dnnl_sgemm/" + std::to_string(n) + "/real_time", true);
  benchmark::Shutdown();
  return 0;
}
