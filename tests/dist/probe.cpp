// ember_dist_probe MODE: one process of a multi-process scenario the gtest suite cannot hold. Every
// rank runs the same mode; the exit status says whether this rank saw what it should.
// Under mpirun (tests/dist/faults.sh), the last rank misbehaves and the job must end:
//   hang           the last rank sleeps instead of calling the collective
//   die            the last rank kills itself (SIGKILL)
//   ok             every rank takes part
//   The other ranks all_reduce and print the error they get ("rank R: [dist::all_reduce] ...")
//   and exit 3, or print "rank R: ok".
// Under tests/dist/launch.sh or netns_test.sh (gloo), every rank must end as expected:
//   allreduce MB   all_reduce of MB MiB of f32 (rank r holds r + 1); checks the sum
//   kill VICTIM    rank VICTIM dies (SIGKILL) after one all_reduce; the others' next all_reduce
//                  must throw "rank VICTIM closed its connection" within 20 s (not the timeout)
//   stall          rank 1 sleeps past the others' timeout (EMBER_DIST_TIMEOUT); they must throw
//                  "timed out after" within the timeout + 30 s; rank 1's next collective, once
//                  awake, must throw too
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

// faults.sh's modes: hang, die, ok; mismatch (the last rank all-reduces 4,000,000 elements, the
// others 4); error (rank 0 fails outside any collective and exits, as `ember` does on an error).
int mpi_fault(const std::string& mode) {
  const int rank = dist::rank();
  const bool culprit = rank == dist::world_size() - 1 && mode != "ok";
  if (mode == "error" && rank == 0) {
    std::fprintf(stderr, "rank 0: failing on its own\n");
    dist::abort_process_group("failing on its own");
    return 1;
  }
  if (mode == "mismatch") {
    try {
      Tensor x = ones({culprit ? 4000000 : 4});
      dist::all_reduce(x);
      std::printf("rank %d: the mismatch went unnoticed\n", rank);
      return 0;
    } catch (const Error& e) {
      std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
      return 3;
    }
  }
  if (culprit && mode == "die") std::raise(SIGKILL);
  if (culprit) {  // hang: far longer than the test's timeout; mpirun ends it
    std::this_thread::sleep_for(std::chrono::seconds(600));
    return 0;
  }
  try {
    Tensor x = ones({1000});
    dist::all_reduce(x);
    std::printf("rank %d: ok, sum %g\n", rank, x.sum().item<double>());
  } catch (const Error& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 3;
  }
  return 0;
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
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
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

int stall_mode() {
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

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const bool mpi_mode =
      mode == "hang" || mode == "die" || mode == "ok" || mode == "mismatch" || mode == "error";
  if (!mpi_mode && !(mode == "stall") && !((mode == "allreduce" || mode == "kill") && argc > 2)) {
    std::fprintf(
        stderr,
        "usage: ember_dist_probe hang|die|ok|mismatch|error|allreduce MB|kill VICTIM|stall\n");
    return 2;
  }
  try {
    dist::init_process_group();
    if (mpi_mode) return mpi_fault(mode);
    int rc = mode == "allreduce" ? check_allreduce(std::atoll(argv[2]))
             : mode == "kill"    ? kill_mode(std::atoi(argv[2]))
                                 : stall_mode();
    std::fflush(stdout);
    // After a failure the group is broken; ending it must not hang either.
    dist::destroy_process_group();
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", dist::rank(), e.what());
    return 1;
  }
}
