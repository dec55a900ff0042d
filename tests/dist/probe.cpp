// ember_dist_probe: one process of a multi-process scenario the gtest suite cannot hold (a rank
// that dies or hangs, a measured transfer). Every rank runs the same mode; the exit status says
// whether this rank saw what it should. Run under a launcher (tests/dist/launch.sh, mpirun):
//   allreduce MB   all_reduce of MB MiB of f32 (rank r holds r + 1), checks the sum
//   kill VICTIM    rank VICTIM dies (SIGKILL) after one all_reduce; the others' next all_reduce
//                  must throw "rank VICTIM closed its connection" within 20 s (not the timeout)
//   hang           rank 1 sleeps past the others' timeout (EMBER_DIST_TIMEOUT); they must throw
//                  "timed out after" within the timeout + 30 s; rank 1's next collective, once
//                  awake, must throw too
//   bench [ITERS]  times a 40 MB f32 all_reduce (ITERS times, 20 by default), prints GB/s
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "ember/dist/dist.h"
#include "ember/error.h"

using namespace ember;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int check_allreduce(int64_t mib) {
  const int n = dist::world_size();
  Tensor x = full({mib << 18}, float(dist::rank() + 1), {DType::f32, Device::cpu()});
  dist::all_reduce(x);
  const float want = float(n * (n + 1) / 2);
  int64_t bad = 0;
  for (float v : x.to_vector<float>()) bad += v != want;
  std::printf("rank %d: all_reduce of %lld MiB: %lld wrong values (want %g)\n", dist::rank(),
              (long long)mib, (long long)bad, double(want));
  return bad == 0 ? 0 : 1;
}

// Calls all_reduce until it throws; the error must contain `want` and come within `limit_s`.
int expect_failure(const std::string& want, double limit_s) {
  Tensor x = full({1000}, 1.0f, Device::cpu());
  const auto t0 = Clock::now();
  try {
    for (int i = 0; i < 1000; ++i) dist::all_reduce(x);
    std::printf("rank %d: FAILED: no error\n", dist::rank());
    return 1;
  } catch (const Error& e) {
    const double s = since(t0);
    const bool ok = std::string(e.what()).find(want) != std::string::npos && s <= limit_s;
    std::printf("rank %d: %s: error after %.2f s (limit %.0f s): %s\n", dist::rank(),
                ok ? "ok" : "FAILED", s, limit_s, e.what());
    return ok ? 0 : 1;
  }
}

int kill_mode(int victim) {
  Tensor x = full({1000}, 1.0f, Device::cpu());
  dist::all_reduce(x);
  if (dist::rank() == victim) std::raise(SIGKILL);
  return expect_failure("rank " + std::to_string(victim) + " closed its connection", 20);
}

int hang_mode() {
  const double timeout = dist::default_group().timeout_seconds();
  Tensor x = full({1000}, 1.0f, Device::cpu());
  dist::all_reduce(x);
  if (dist::rank() != 1) return expect_failure("timed out after", timeout + 30);
  std::this_thread::sleep_for(std::chrono::duration<double>(3 * timeout + 5));
  try {
    dist::all_reduce(x);
    std::printf("rank 1: FAILED: all_reduce after the others gave up did not throw\n");
    return 1;
  } catch (const Error& e) {
    std::printf("rank 1: ok: woke up to: %s\n", e.what());
    return 0;
  }
}

int bench(int iters) {
  Tensor x = full({10'000'000}, 1.0f, Device::cpu());  // 40 MB
  for (int i = 0; i < 3; ++i) dist::all_reduce(x);
  dist::barrier();
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) dist::all_reduce(x);
  const double s = since(t0) / iters;
  const int n = dist::world_size();
  std::printf(
      "rank %d of %d (%s): 40 MB f32 all_reduce: %.2f ms, %.2f GB/s (bytes / time), bus "
      "%.2f GB/s\n",
      dist::rank(), n, dist::default_group().backend().c_str(), s * 1e3, 0.04 / s,
      0.04 / s * 2 * (n - 1) / n);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    dist::init_process_group();
    int rc = 2;
    if (mode == "allreduce" && argc > 2) rc = check_allreduce(std::atoll(argv[2]));
    if (mode == "kill" && argc > 2) rc = kill_mode(std::atoi(argv[2]));
    if (mode == "hang") rc = hang_mode();
    if (mode == "bench") rc = bench(argc > 2 ? std::atoi(argv[2]) : 20);
    if (rc == 2)
      std::fprintf(stderr, "usage: ember_dist_probe allreduce MB|kill VICTIM|hang|bench [ITERS]\n");
    std::fflush(stdout);
    // After a failure the group is broken; ending it must not hang either.
    dist::destroy_process_group();
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", dist::rank(), e.what());
    return 1;
  }
}
