// Issue 16's lazy stream and kernel fusion on the cpu backend, against LibTorch in the same
// process (built with -DEMBER_BUILD_BENCH=ON -DEMBER_BENCH_LIBTORCH=ON, Debian libtorch-dev).
//  1. exp(relu(x * 2 + 1)) on 16M f32 with --threads T: Ember fused (set_fusion on), Ember eager
//     (set_fusion off), LibTorch eager, and a memory bound: a plain one-read-one-write loop
//     y[i] = x[i] * 2 + 1 over the same number of std::threads. Bytes per pass: 2 x 64 MB.
//  2. The per-op cost on tiny tensors, one thread: a = log1p(a * b + b) on [1, 8, 8, 8] f32,
//     --iters iterations (3 ops each): Ember eager, Ember recorded (the loop never reads, so the
//     stream flushes when it reaches its capacity; one sync at the end) and LibTorch, then the
//     same with b.requires_grad (a detached each iteration, so each graph is freed at once).
//  3. The stream's counters (stream_stats) for the fused runs, to show that fusion happened.
// Every time is the median of --reps repetitions after --warmup untimed ones; Ember's stop the
// clock after ember::sync(Device::cpu()).
//   bench_fusion [--threads T] [--reps N] [--warmup N] [--iters N] [--elems N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "ember/ember.h"

#ifdef EMBER_BENCH_HAVE_TORCH
#include <torch/torch.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  int threads = 2, reps = 9, warmup = 2, iters = 20000;
  int64_t elems = int64_t(16) << 20;
};

Args parse(int argc, char** argv) {
  Args a;
  bench::parse_options(argc, argv, [&](const std::string& k, const std::string& v) {
    if (k == "--threads")
      a.threads = std::stoi(v);
    else if (k == "--reps")
      a.reps = std::stoi(v);
    else if (k == "--warmup")
      a.warmup = std::stoi(v);
    else if (k == "--iters")
      a.iters = std::stoi(v);
    else if (k == "--elems")
      a.elems = std::stoll(v);
    else
      return false;
    return true;
  });
  return a;
}

// One variant of a measurement: `setup` runs untimed before each call of `body` (set_fusion).
struct Variant {
  std::function<void()> setup, body;
};

// Median wall time (s) of each variant: `warmup` untimed rounds, then `reps` rounds that run
// every variant once in turn (so a change in the machine's load hits all of them alike).
std::vector<double> interleaved_medians(int warmup, int reps, const std::vector<Variant>& vs) {
  std::vector<std::vector<double>> t(vs.size());
  for (int r = 0; r < warmup + reps; ++r)
    for (size_t v = 0; v < vs.size(); ++v) {
      if (vs[v].setup) vs[v].setup();
      const auto t0 = Clock::now();
      vs[v].body();
      const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
      if (r >= warmup) t[v].push_back(dt);
    }
  std::vector<double> med;
  for (auto& x : t) {
    std::sort(x.begin(), x.end());
    med.push_back(x[x.size() / 2]);
  }
  return med;
}

ember::StreamStats operator-(const ember::StreamStats& a, const ember::StreamStats& b) {
  ember::StreamStats d;
  d.recorded = a.recorded - b.recorded;
  d.graphs = a.graphs - b.graphs;
  d.fused_ops = a.fused_ops - b.fused_ops;
  d.eager_ops = a.eager_ops - b.eager_ops;
  d.dropped = a.dropped - b.dropped;
  d.flushes = a.flushes - b.flushes;
  return d;
}
ember::StreamStats& operator+=(ember::StreamStats& a, const ember::StreamStats& b) {
  a.recorded += b.recorded;
  a.graphs += b.graphs;
  a.fused_ops += b.fused_ops;
  a.eager_ops += b.eager_ops;
  a.dropped += b.dropped;
  a.flushes += b.flushes;
  return a;
}

bool has_flag(const std::string& flags, const std::string& f) {
  std::istringstream in(flags);
  for (std::string w; in >> w;)
    if (w == f) return true;
  return false;
}

void print_machine(const Args& a) {
  std::string model = "?", flags;
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, line.find_first_of(" \t"));
    const std::string val = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (line.rfind("model name", 0) == 0 && model == "?") model = val;
    if (key == "flags" && flags.empty()) flags = val;
  }
  char date[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", std::localtime(&now));
  double load = -1;
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = -1;
    std::fclose(f);
  }
  std::printf("bench_fusion  %s\n", date);
  std::printf("cpu: %s, %u hardware threads, load average %.2f\n", model.c_str(),
              std::thread::hardware_concurrency(), load);
  std::printf("cpu flags: avx2 %s, fma %s, avx512f %s, avx512bw %s, avx512_bf16 %s\n",
              has_flag(flags, "avx2") ? "yes" : "no", has_flag(flags, "fma") ? "yes" : "no",
              has_flag(flags, "avx512f") ? "yes" : "no", has_flag(flags, "avx512bw") ? "yes" : "no",
              has_flag(flags, "avx512_bf16") ? "yes" : "no");
  const char* env = std::getenv("EMBER_FUSION");
  const char* omp = std::getenv("OMP_WAIT_POLICY");
  std::printf("EMBER_FUSION=%s OMP_WAIT_POLICY=%s; %d timed reps (median) after %d warm-up\n",
              env ? env : "(unset)", omp ? omp : "(unset)", a.reps, a.warmup);
#ifdef EMBER_BENCH_HAVE_TORCH
  std::printf("libtorch %s\n", TORCH_VERSION);
#endif
  std::printf("\n");
}

void print_stats(const char* what, const ember::StreamStats& s, int passes) {
  std::printf(
      "  stream_stats (%s, %d calls): recorded %lld, graphs %lld, fused_ops %lld, dropped %lld, "
      "eager_ops %lld, flushes %lld, kernels %lld (%.2f per call)\n",
      what, passes, (long long)s.recorded, (long long)s.graphs, (long long)s.fused_ops,
      (long long)s.dropped, (long long)s.eager_ops, (long long)s.flushes, (long long)s.kernels(),
      double(s.kernels()) / passes);
}

// Largest |a - b| / max(1, |b|) over n floats.
double max_rel_diff(const float* a, const float* b, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i)
    m = std::max(m, double(std::fabs(a[i] - b[i])) / std::max(1.0, double(std::fabs(b[i]))));
  return m;
}

// The memory bound: y[i] = x[i] * 2 + 1 over `threads` std::threads, contiguous chunks.
void plain_loop(const float* __restrict x, float* __restrict y, int64_t n, int threads) {
  auto body = [=](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) y[i] = x[i] * 2.0f + 1.0f;
  };
  const int64_t chunk = ((n + threads - 1) / threads + 63) / 64 * 64;
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) {
    const int64_t lo = std::min(n, t * chunk), hi = std::min(n, lo + chunk);
    pool.emplace_back(body, lo, hi);
  }
  body(0, std::min(n, chunk));
  for (auto& th : pool) th.join();
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  using namespace ember;
  const Device cpu = Device::cpu();
  try {
    print_machine(a);

    // ---- 1. exp(relu(x * 2 + 1)), large ----
    set_num_threads(a.threads);
    const int64_t n = a.elems;
    const double bytes = 2.0 * double(n) * sizeof(float);
    std::printf("1. y = exp(relu(x * 2 + 1)), %lld f32 (%.0f MB in, %.0f MB out), %d threads\n",
                (long long)n, n * 4 / 1e6, n * 4 / 1e6, get_num_threads());
    manual_seed(0);
    Tensor x = randn({n});
    sync(cpu);

    // A copy of the input for the other runs: data_ptr() would keep a pointer into x, and ops
    // on a storage whose pointer is kept are never recorded (they would not fuse).
    const std::vector<float> xv = x.to_vector<float>();
    const float* xp = xv.data();
    std::vector<float> y_plain(size_t(n), 0.0f);  // the bound's output, touched before timing
    Tensor y_fused, y_eager, y_lin;
    // The fused runs' stream counters: the difference around each timed fused call, summed.
    StreamStats s_fused;
    int fused_calls = 0;
    auto on = [&] { set_fusion(cpu, true); };
    auto off = [&] { set_fusion(cpu, false); };
    std::vector<Variant> vs = {
        {on,
         [&] {
           const StreamStats before = stream_stats(cpu);
           y_fused = (x * 2 + 1).relu().exp();
           sync(cpu);
           s_fused += stream_stats(cpu) - before;
           ++fused_calls;
         }},
        {off,
         [&] {
           y_eager = (x * 2 + 1).relu().exp();
           sync(cpu);
         }},
        {nullptr, [&] { plain_loop(xp, y_plain.data(), n, a.threads); }},
        // The bound's own expression through Ember (one fused kernel, or two passes).
        {on,
         [&] {
           y_lin = x * 2 + 1;
           sync(cpu);
         }},
        {off,
         [&] {
           y_lin = x * 2 + 1;
           sync(cpu);
         }},
    };
#ifdef EMBER_BENCH_HAVE_TORCH
    torch::set_num_threads(a.threads);
    torch::Tensor tx = torch::from_blob(const_cast<float*>(xp), {n}, torch::kFloat32).clone();
    torch::Tensor ty;
    vs.push_back({nullptr, [&] { ty = torch::exp(torch::relu(tx * 2 + 1)); }});
#endif
    const std::vector<double> med = interleaved_medians(a.warmup, a.reps, vs);
    set_fusion(cpu, true);
    const double t_fused = med[0], t_eager = med[1], t_plain = med[2], t_lin_fused = med[3],
                 t_lin_eager = med[4];
    const int passes = fused_calls;
    const StreamStats s_fused_total = s_fused;
#ifdef EMBER_BENCH_HAVE_TORCH
    const double t_torch = med[5];
#endif
    y_lin = Tensor();

    std::printf("  %-38s %8.2f ms  %6.1f GB/s\n", "Ember fused (set_fusion on)", 1e3 * t_fused,
                bytes / t_fused / 1e9);
    std::printf("  %-38s %8.2f ms  %6.1f GB/s (4 passes: %.1f GB/s moved)\n",
                "Ember eager (set_fusion off)", 1e3 * t_eager, bytes / t_eager / 1e9,
                4 * bytes / t_eager / 1e9);
#ifdef EMBER_BENCH_HAVE_TORCH
    std::printf(
        "  %-38s %8.2f ms  %6.1f GB/s\n",
        (std::string("LibTorch eager (") + std::to_string(torch::get_num_threads()) + " threads)")
            .c_str(),
        1e3 * t_torch, bytes / t_torch / 1e9);
#endif
    std::printf("  %-38s %8.2f ms  %6.1f GB/s\n", "memory bound: y[i] = x[i] * 2 + 1 loop",
                1e3 * t_plain, bytes / t_plain / 1e9);
    std::printf("  %-38s %8.2f ms  %6.1f GB/s (%.0f%% of the bound)\n",
                "(Ember fused x * 2 + 1, same work)", 1e3 * t_lin_fused, bytes / t_lin_fused / 1e9,
                100.0 * t_plain / t_lin_fused);
    std::printf("  %-38s %8.2f ms  %6.1f GB/s (%.0f%% of the bound)\n",
                "(Ember eager x * 2 + 1, 2 passes)", 1e3 * t_lin_eager, bytes / t_lin_eager / 1e9,
                100.0 * t_plain / t_lin_eager);
    std::printf("  fused vs eager:    %.2fx faster\n", t_eager / t_fused);
#ifdef EMBER_BENCH_HAVE_TORCH
    std::printf("  fused vs LibTorch: %.2fx faster\n", t_torch / t_fused);
#endif
    std::printf("  fused vs memory bound: %.0f%% of the bound's GB/s (bound / fused time)\n",
                100.0 * t_plain / t_fused);
    print_stats("fused exp(relu(x * 2 + 1)) runs, warm-up included", s_fused_total, passes);
    {
      const float* f = y_fused.data_ptr<float>();
      std::printf("  check: max rel diff fused vs eager %.2g",
                  max_rel_diff(f, y_eager.data_ptr<float>(), n));
#ifdef EMBER_BENCH_HAVE_TORCH
      std::printf(", fused vs LibTorch %.2g", max_rel_diff(f, ty.data_ptr<float>(), n));
#endif
      std::printf("\n\n");
    }
    y_fused = Tensor();
    y_eager = Tensor();
    x = Tensor();
    std::vector<float>().swap(y_plain);

    // ---- 2. per-op cost, tiny tensors, one thread ----
    {
      set_num_threads(1);
      const int iters = a.iters;
      const double ops = 3.0 * iters;
      std::printf(
          "2. a = log1p(a * b + b) on [1, 8, 8, 8] f32, %d iterations (3 ops each), 1 thread\n",
          iters);
      manual_seed(1);
      const Tensor a0 = rand({1, 8, 8, 8}), b = rand({1, 8, 8, 8});
      Tensor bg = b.detach().clone();  // b's values, as a leaf that requires grad
      bg.requires_grad_();
      auto ember_loop = [&](const Tensor& bb, bool detach) {
        Tensor v = a0;
        for (int i = 0; i < iters; ++i) {
          v = log1p(v * bb + bb);
          if (detach) v = v.detach();
        }
        sync(cpu);
        return v;
      };
      Tensor last_eager, last_rec, last_eager_g, last_rec_g;
      StreamStats s_rec, s_rec_g;  // one recorded loop's counters (the last timed one)
      std::vector<Variant> vs = {
          {off, [&] { last_eager = ember_loop(b, false); }},
          {on,
           [&] {
             const StreamStats before = stream_stats(cpu);
             last_rec = ember_loop(b, false);
             s_rec = stream_stats(cpu) - before;
           }},
          {off, [&] { last_eager_g = ember_loop(bg, true); }},
          {on,
           [&] {
             const StreamStats before = stream_stats(cpu);
             last_rec_g = ember_loop(bg, true);
             s_rec_g = stream_stats(cpu) - before;
           }},
      };
#ifdef EMBER_BENCH_HAVE_TORCH
      torch::set_num_threads(1);
      auto to_torch = [](const Tensor& t) {  // a copy (a kept data_ptr would stop recording)
        std::vector<float> v = t.to_vector<float>();
        return torch::from_blob(v.data(), t.shape(), torch::kFloat32).clone();
      };
      const torch::Tensor ta0 = to_torch(a0), tb = to_torch(b);
      const torch::Tensor tbg = tb.clone().requires_grad_();
      auto torch_loop = [&](const torch::Tensor& bb, bool detach) {
        torch::Tensor v = ta0;
        for (int i = 0; i < iters; ++i) {
          v = torch::log1p(v * bb + bb);
          if (detach) v = v.detach();
        }
        return v;
      };
      torch::Tensor tlast, tlast_g;
      vs.push_back({nullptr, [&] { tlast = torch_loop(tb, false); }});
      vs.push_back({nullptr, [&] { tlast_g = torch_loop(tbg, true); }});
#endif
      const std::vector<double> med = interleaved_medians(a.warmup, a.reps, vs);
      set_fusion(cpu, true);
      auto us = [&](double t) { return 1e6 * t / ops; };
      std::printf("  %-44s %7.3f us/op\n", "Ember eager (fusion off)", us(med[0]));
      std::printf("  %-44s %7.3f us/op\n", "Ember recorded (fusion on, one sync at end)",
                  us(med[1]));
#ifdef EMBER_BENCH_HAVE_TORCH
      std::printf("  %-44s %7.3f us/op\n", "LibTorch", us(med[4]));
#endif
      std::printf("  with b.requires_grad (a.detach() each iteration, so each graph is freed):\n");
      std::printf("  %-44s %7.3f us/op\n", "Ember eager (fusion off)", us(med[2]));
      std::printf("  %-44s %7.3f us/op\n", "Ember recorded (fusion on)", us(med[3]));
#ifdef EMBER_BENCH_HAVE_TORCH
      std::printf("  %-44s %7.3f us/op\n", "LibTorch", us(med[5]));
#endif
      print_stats("one recorded loop", s_rec, 1);
      print_stats("one recorded loop, requires_grad", s_rec_g, 1);
      std::printf(
          "  check: a[0] after the loop: Ember eager %.6g, recorded %.6g, requires_grad %.6g / "
          "%.6g",
          last_eager.data_ptr<float>()[0], last_rec.data_ptr<float>()[0],
          last_eager_g.detach().data_ptr<float>()[0], last_rec_g.detach().data_ptr<float>()[0]);
#ifdef EMBER_BENCH_HAVE_TORCH
      std::printf("; LibTorch %.6g, requires_grad %.6g", tlast.data_ptr<float>()[0],
                  tlast_g.detach().data_ptr<float>()[0]);
#endif
      std::printf("\n");
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
