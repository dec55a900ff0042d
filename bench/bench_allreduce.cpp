// all_reduce bandwidth between processes (issue 19's target: 40 MB f32 between 2 local
// processes >= 2.4 GB/s, Gloo's loopback figure). Run under mpirun (the mpi engine) or with
// torchrun-style RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT (gloo); bench/bench_allreduce.sh
// runs both and PyTorch's gloo on the same sizes.
//   bench_allreduce [--mb 40] [--iters 20] [--warmup 5]
// Algorithm bandwidth = bytes / seconds of one all_reduce (torch's convention), the median of
// `iters` after `warmup`, each started together by a barrier. Rank 0 prints
//   ember <backend> all_reduce <MB> MB f32, <N> ranks: median <ms> ms, <GB/s> GB/s
#include <chrono>
#include <cstdio>

#include "bench_util.h"
#include "ember/dist/dist.h"
#include "ember/error.h"
#include "ember/tensor.h"

namespace {

int run(int argc, char** argv) {
  using namespace ember;
  double mb = 40;
  int iters = 20, warmup = 5;
  bench::parse_options(argc, argv, [&](const std::string& k, const std::string& v) {
    if (k == "--mb")
      mb = std::atof(v.c_str());
    else if (k == "--iters")
      iters = std::atoi(v.c_str());
    else if (k == "--warmup")
      warmup = std::atoi(v.c_str());
    else
      return false;
    return mb > 0 && iters > 0 && warmup >= 0;
  });
  dist::init_process_group();
  const int64_t n = int64_t(mb * 1e6 / 4);
  Tensor x = ones({n}, {DType::f32, Device::cpu()});
  std::vector<double> secs;
  for (int i = 0; i < warmup + iters; ++i) {
    x.fill_(1.0f / float(dist::world_size()));  // stays 1 after each sum
    (void)x.raw_data();                         // the fill runs now, not inside the timing
    dist::barrier();
    const auto t0 = std::chrono::steady_clock::now();
    dist::all_reduce(x);
    const auto t1 = std::chrono::steady_clock::now();
    if (i >= warmup) secs.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  const double med = bench::median(secs);
  const double bytes = double(n) * 4;
  if (x.max().item<float>() != 1.0f || x.min().item<float>() != 1.0f) {
    std::fprintf(stderr, "rank %d: wrong all_reduce result\n", dist::rank());
    return 1;
  }
  if (dist::rank() == 0)
    std::printf("ember %s all_reduce %.1f MB f32, %d ranks: median %.2f ms, %.2f GB/s\n",
                dist::default_group().backend().c_str(), bytes / 1e6, dist::world_size(), med * 1e3,
                bytes / med / 1e9);
  dist::destroy_process_group();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const ember::Error& e) {
    std::fprintf(stderr, "bench_allreduce: %s\n", e.what());
    return 1;
  }
}
