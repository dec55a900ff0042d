// ember_dist_probe MODE: one collective under mpirun with a rank that misbehaves, for
// faults.sh. The last rank: "hang" sleeps instead of calling the collective, "die" kills
// itself (SIGKILL); "ok" has every rank take part. The other ranks all_reduce and print the
// error they get ("rank R: [dist::all_reduce] ...") and exit 3, or print "rank R: ok".
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>

#include "ember/dist/dist.h"
#include "ember/error.h"

int main(int argc, char** argv) {
  using namespace ember;
  const char* mode = argc > 1 ? argv[1] : "";
  if (std::strcmp(mode, "hang") != 0 && std::strcmp(mode, "die") != 0 &&
      std::strcmp(mode, "ok") != 0) {
    std::fprintf(stderr, "usage: ember_dist_probe hang|die|ok\n");
    return 2;
  }
  dist::init_process_group();
  const int rank = dist::rank();
  const bool culprit = rank == dist::world_size() - 1 && std::strcmp(mode, "ok") != 0;
  if (culprit && std::strcmp(mode, "die") == 0) std::raise(SIGKILL);
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
