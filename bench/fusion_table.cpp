// Issue 16's fusion table (Burn's backend comparison): each pattern written as user code and run
// on one device with fusion on (set_fusion true) and off (eager), in the same run:
//  1. Conv2D + ReLU:             relu(conv2d(x, w, b, stride 1, pad 1)), x [N, 64, 56, 56],
//                                w [64, 64, 3, 3] (a ResNet-50 stage-1 conv);
//  2. MatMul + Add + GELU:       gelu(matmul(x, w) + b), x [M, 256], w [256, 1024] (a transformer
//                                FFN's first layer, M = batch * seq tokens);
//  3. BatchNorm + residual + ReLU: relu(batch_norm(x, eval) + r), x, r [N, 256, 56, 56];
//  4. Sum(x * y):                sum(x * y) over 16M f32 (a reduction fused into its graph on the
//                                cpu: x * y is never written);
//  5. BN statistics:             mean(x * x, dims {0, 2, 3}), x [N, 256, 56, 56] (batch_norm's
//                                second moment: a reduction over non-trailing dims, fused);
//  6. Sum + epilogue (RMS):      sqrt(mean(x * x, -1) + 1e-5), x [M * 2, 1024] (the element-wise
//                                ops on the reduced value run in the reduction's kernel on the
//                                cpu: fuse-on-write).
// Every time is the median of --reps rounds after --warmup untimed ones; each round runs fused
// then unfused and stops the clock after ember::sync(device). The result is read back once per
// variant and compared (max abs difference), so a fused run that is fast but wrong shows.
//   bench_fusion_table [--device cpu|vulkan|opencl|all] [--threads T] [--reps N] [--warmup N]
//                      [--scale S] [--only NAME]
// --only runs the patterns whose name contains NAME (for a profiler).
// --scale divides the batch (N, M) for slow devices (lavapipe / PoCL run on the same 2 cores).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench_util.h"
#include "ember/ember.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace F = ember::nn::functional;

struct Args {
  std::string device = "all", only;
  int threads = 2, reps = 7, warmup = 2;
  int64_t scale = 1;
};

Args parse(int argc, char** argv) {
  Args a;
  bench::parse_options(argc, argv, [&](const std::string& k, const std::string& v) {
    if (k == "--device")
      a.device = v;
    else if (k == "--threads")
      a.threads = std::stoi(v);
    else if (k == "--reps")
      a.reps = std::stoi(v);
    else if (k == "--warmup")
      a.warmup = std::stoi(v);
    else if (k == "--only")
      a.only = v;
    else if (k == "--scale")
      a.scale = std::max<int64_t>(1, std::stoll(v));
    else
      return false;
    return true;
  });
  return a;
}

double max_abs_diff(const ember::Tensor& a, const ember::Tensor& b) {
  const std::vector<float> x = a.to(ember::Device::cpu()).contiguous().to_vector<float>();
  const std::vector<float> y = b.to(ember::Device::cpu()).contiguous().to_vector<float>();
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, double(std::fabs(x[i] - y[i])));
  return m;
}

struct Pattern {
  std::string name, shape;
  std::function<ember::Tensor()> run;
};

void run_table(const ember::Device& dev, const Args& args) {
  using ember::Shape;
  const ember::TensorOptions o(ember::DType::f32, dev);
  const int64_t n = std::max<int64_t>(1, 8 / args.scale),
                m = std::max<int64_t>(16, 2048 / args.scale);
  ember::manual_seed(1);
  // 1. conv + relu
  const ember::Tensor cx = ember::randn({n, 64, 56, 56}, o);
  const ember::Tensor cw = ember::randn({64, 64, 3, 3}, o) * 0.05;
  const ember::Tensor cb = ember::randn({64}, o);
  // 2. matmul + add + gelu
  const ember::Tensor mx = ember::randn({m, 256}, o);
  const ember::Tensor mw = ember::randn({256, 1024}, o) * 0.06;
  const ember::Tensor mb = ember::randn({1024}, o);
  // 3. batch_norm (eval) + residual + relu
  const ember::Tensor bx = ember::randn({n, 256, 56, 56}, o);
  const ember::Tensor br = ember::randn({n, 256, 56, 56}, o);
  const ember::Tensor mean = ember::randn({256}, o), var = ember::rand({256}, o) + 0.5;
  const ember::Tensor gamma = ember::randn({256}, o), beta = ember::randn({256}, o);
  // 4. sum(x * y)
  const int64_t sn = std::max<int64_t>(1024, (int64_t(1) << 24) / args.scale);
  const ember::Tensor sx = ember::randn({sn}, o), sy = ember::randn({sn}, o);
  // 6. the RMS of each row
  const ember::Tensor rx = ember::randn({2 * m, 1024}, o);
  ember::sync(dev);
  auto dims = [](const ember::Tensor& t) {
    std::string s = "[";
    for (int64_t i = 0; i < t.dim(); ++i) s += (i ? "," : "") + std::to_string(t.size(i));
    return s + "]";
  };
  const std::vector<Pattern> patterns = {
      {"Conv2D + ReLU", dims(cx) + " * " + dims(cw),
       [&] { return F::relu(F::conv2d(cx, cw, cb, {1}, {1})); }},
      {"MatMul + Add + GELU", dims(mx) + " x " + dims(mw),
       [&] { return F::gelu(ember::matmul(mx, mw) + mb); }},
      {"BatchNorm + residual + ReLU", dims(bx),
       [&] { return F::relu(F::batch_norm(bx, mean, var, gamma, beta, false) + br); }},
      {"Sum(x * y)", dims(sx), [&] { return ember::sum(sx * sy); }},
      {"BN stats mean(x*x,{0,2,3})", dims(bx),
       [&] {
         return ember::mean(bx * bx, {0, 2, 3});
       }},
      {"sqrt(mean(x*x,-1)+eps)", dims(rx),
       [&] { return ember::sqrt(ember::mean(rx * rx, {-1}) + 1e-5); }},
  };
  for (const Pattern& p : patterns) {
    if (p.name.find(args.only) == std::string::npos) continue;
    std::vector<double> t_on, t_off;
    ember::Tensor y_on, y_off;
    ember::StreamStats s_on;
    for (int r = 0; r < args.warmup + args.reps; ++r) {
      for (bool on : {true, false}) {
        ember::set_fusion(dev, on);
        ember::reset_stream_stats(dev);
        const auto t0 = Clock::now();
        ember::Tensor y = p.run();
        ember::sync(dev);
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        if (on) s_on = ember::stream_stats(dev);
        if (r >= args.warmup) (on ? t_on : t_off).push_back(s);
        (on ? y_on : y_off) = y;
      }
    }
    ember::set_fusion(dev, true);
    const double a = bench::median(t_on), b = bench::median(t_off);
    std::printf(
        "%-8s %-28s %-28s fused %9.3f ms  unfused %9.3f ms  ratio %5.2fx  "
        "(fused: %lld kernels, %lld graphs; max|diff| %.2g)\n",
        dev.str().c_str(), p.name.c_str(), p.shape.c_str(), a * 1e3, b * 1e3, b / a,
        (long long)s_on.kernels(), (long long)s_on.graphs, max_abs_diff(y_on, y_off));
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  ember::set_num_threads(args.threads);
  std::vector<ember::Device> devs;
  for (const ember::DeviceInfo& d : ember::available_devices()) {
    const std::string s = d.device.str();
    if (s == "ref") continue;
    const std::string kind = s.substr(0, s.find(':'));
    if (args.device == "all" || args.device == kind || args.device == s) devs.push_back(d.device);
  }
  std::printf("fusion table: threads %d, reps %d, warmup %d, scale 1/%lld\n", args.threads,
              args.reps, args.warmup, (long long)args.scale);
  for (const ember::Device& d : devs) {
    try {
      run_table(d, args);
    } catch (const std::exception& e) {
      std::printf("%s: %s\n", d.str().c_str(), e.what());
    }
  }
  return 0;
}
