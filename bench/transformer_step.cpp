// Issue 16's transformer target: one training step of a TransformerEncoderLayer (d_model 256,
// 4 heads, dim_feedforward 1024, seq 128, batch 16, post-norm, relu, f32) on the cpu, with
// fusion on and off in Ember, and in LibTorch (when built with EMBER_BENCH_LIBTORCH=ON) from the
// same initial weights and inputs, in one process. A step: y = layer(x); loss = mse_loss(y, t);
// zero_grad; backward; Adam step; loss.item() (so Ember's lazy stream finishes the step).
// Each round runs fused, unfused and LibTorch once, in turn (a change of load hits all three
// alike); every time is the median over --reps rounds after --warmup ones, by wall time and by
// process CPU time. The first step's losses are printed for each variant: with --dropout 0 they
// agree (same weights, same inputs), which shows the three run the same computation.
//   bench_transformer_step [--threads T] [--reps N] [--warmup N] [--dropout P] [--batch B]
//                          [--seq L] [--only fused|unfused|torch]
// --only runs one variant (to profile it: perf record ... --only fused).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "bench_util.h"
#include "ember/ember.h"
#include "ember/nn/functional/loss.h"
#include "ember/optim/adam.h"

#ifdef EMBER_BENCH_HAVE_TORCH
#include <torch/torch.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  int threads = 2, reps = 9, warmup = 2;
  int64_t batch = 16, seq = 128, d_model = 256, heads = 4, ffn = 1024;
  double dropout = 0.0;
  std::string only;  // empty: every variant
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
    else if (k == "--dropout")
      a.dropout = std::stod(v);
    else if (k == "--batch")
      a.batch = std::stoll(v);
    else if (k == "--seq")
      a.seq = std::stoll(v);
    else if (k == "--only" && (v == "fused" || v == "unfused" || v == "torch"))
      a.only = v;
    else
      return false;
    return true;
  });
  return a;
}

// Wall and process CPU seconds of one call.
struct Timing {
  double wall = 0, cpu = 0;
};
template <typename F>
Timing timed(F&& f) {
  const auto t0 = Clock::now();
  const std::clock_t c0 = std::clock();
  f();
  return {std::chrono::duration<double>(Clock::now() - t0).count(),
          double(std::clock() - c0) / CLOCKS_PER_SEC};
}

struct Series {
  std::vector<double> wall, cpu;
  void add(const Timing& t) {
    wall.push_back(t.wall);
    cpu.push_back(t.cpu);
  }
};

#ifdef EMBER_BENCH_HAVE_TORCH
torch::Tensor to_torch(const ember::Tensor& t) {
  ember::Tensor c = t.to(ember::Device::cpu()).contiguous();
  return torch::from_blob(const_cast<float*>(c.data_ptr<float>()), c.shape(),
                          torch::TensorOptions().dtype(torch::kFloat32))
      .clone();
}
#endif

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  using namespace ember;
  namespace F = nn::functional;
  try {
    set_num_threads(a.threads);
    const Device dev = Device::cpu();
    manual_seed(0);
    const auto opts = nn::TransformerEncoderLayerOptions(a.d_model, a.heads)
                          .dim_feedforward(a.ffn)
                          .dropout(a.dropout);
    // Two Ember layers with the same weights: one trained fused, one unfused (each its own Adam
    // state, so neither run's updates leak into the other's).
    auto fused = std::make_shared<nn::TransformerEncoderLayer>(opts);
    auto eager = std::make_shared<nn::TransformerEncoderLayer>(opts);
    eager->load_state_dict(fused->state_dict());
    const Tensor x = randn({a.seq, a.batch, a.d_model});
    const Tensor target = randn({a.seq, a.batch, a.d_model});
    optim::Adam opt_fused(fused->parameters(), optim::AdamOptions(1e-4));
    optim::Adam opt_eager(eager->parameters(), optim::AdamOptions(1e-4));
    auto ember_step = [&](nn::TransformerEncoderLayer& m, optim::Adam& opt, bool fusion) {
      set_fusion(dev, fusion);
      Tensor loss = F::mse_loss(m.forward(x), target);
      opt.zero_grad();
      loss.backward();
      opt.step();
      const float v = loss.item<float>();
      sync(dev);
      return v;
    };
    std::printf(
        "TransformerEncoderLayer training step (d_model %lld, %lld heads, ffn %lld, seq %lld, "
        "batch %lld, dropout %.2f, f32, Adam), %d threads, median of %d rounds\n",
        (long long)a.d_model, (long long)a.heads, (long long)a.ffn, (long long)a.seq,
        (long long)a.batch, a.dropout, a.threads, a.reps);

#ifdef EMBER_BENCH_HAVE_TORCH
    torch::set_num_threads(a.threads);
    torch::nn::TransformerEncoderLayer tl(
        torch::nn::TransformerEncoderLayerOptions(a.d_model, a.heads)
            .dim_feedforward(a.ffn)
            .dropout(a.dropout));
    {  // the same initial weights as Ember's layers (torch's parameter names)
      torch::NoGradGuard ng;
      auto tp = tl->named_parameters();
      size_t copied = 0;
      for (auto& [name, t] : fused->named_parameters()) {
        if (!tp.contains(name)) {
          std::fprintf(stderr, "error: LibTorch has no parameter %s\n", name.c_str());
          return 1;
        }
        tp[name].copy_(to_torch(t));
        ++copied;
      }
      if (copied != tp.size()) {
        std::fprintf(stderr, "error: copied %zu of LibTorch's %zu parameters\n", copied, tp.size());
        return 1;
      }
    }
    torch::optim::Adam topt(tl->parameters(), torch::optim::AdamOptions(1e-4));
    const torch::Tensor tx = to_torch(x), tt = to_torch(target);
    auto torch_step = [&] {
      torch::Tensor loss = torch::nn::functional::mse_loss(tl->forward(tx), tt);
      topt.zero_grad();
      loss.backward();
      topt.step();
      return loss.item<float>();
    };
#endif

    Series s_fused, s_eager, s_torch;
    float first_fused = 0, first_eager = 0, first_torch = 0;
    StreamStats stats;
    for (int r = 0; r < a.warmup + a.reps; ++r) {
      float lf = 0, le = 0;
      reset_stream_stats(dev);
      auto run = [&](const char* v) { return a.only.empty() || a.only == v; };
      Timing tf, te;
      if (run("fused")) tf = timed([&] { lf = ember_step(*fused, opt_fused, true); });
      if (r == a.warmup) stats = stream_stats(dev);
      if (run("unfused")) te = timed([&] { le = ember_step(*eager, opt_eager, false); });
      if (r == 0) first_fused = lf, first_eager = le;
#ifdef EMBER_BENCH_HAVE_TORCH
      float lt = 0;
      Timing tt2;
      if (run("torch")) tt2 = timed([&] { lt = torch_step(); });
      if (r == 0) first_torch = lt;
      if (r >= a.warmup) s_torch.add(tt2);
#endif
      if (r >= a.warmup) {
        s_fused.add(tf);
        s_eager.add(te);
      }
    }
    set_fusion(dev, true);
    auto row = [](const char* name, const Series& s, float first) {
      std::printf("%-22s %8.2f ms/step  (cpu %8.2f ms)  first-step loss %.6f\n", name,
                  1e3 * bench::median(s.wall), 1e3 * bench::median(s.cpu), first);
    };
    row("ember fused", s_fused, first_fused);
    row("ember unfused", s_eager, first_eager);
    std::printf("  fused step: %lld kernels (%lld fused graphs of %lld ops, %lld eager ops)\n",
                (long long)stats.kernels(), (long long)stats.graphs, (long long)stats.fused_ops,
                (long long)stats.eager_ops);
    std::printf("ratio fused / unfused: %.3fx (wall), %.3fx (cpu)\n",
                bench::median(s_eager.wall) / bench::median(s_fused.wall),
                bench::median(s_eager.cpu) / bench::median(s_fused.cpu));
#ifdef EMBER_BENCH_HAVE_TORCH
    row(("libtorch " + std::string(TORCH_VERSION)).c_str(), s_torch, first_torch);
    std::printf("ratio ember fused / libtorch: %.3fx (wall), %.3fx (cpu)\n",
                bench::median(s_torch.wall) / bench::median(s_fused.wall),
                bench::median(s_torch.cpu) / bench::median(s_fused.cpu));
#else
    (void)first_torch;
    std::printf("(LibTorch comparison not built: configure with -DEMBER_BENCH_LIBTORCH=ON)\n");
#endif
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
