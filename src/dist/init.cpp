// The default process group: engine selection from the launcher's environment, threads per
// process, the free functions, and the factories of engines this build lacks.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "core/env.h"
#include "dist/engine.h"
#include "ember/device.h"
#include "ember/error.h"

namespace ember::dist {

namespace {

constexpr const char* kInit = "dist::init_process_group";

std::mutex g_mu;
std::unique_ptr<ProcessGroup> g_group;

// "auto": EMBER_DIST_BACKEND, else the launcher's variables.
std::string choose_backend(const std::string& asked) {
  std::string b = asked;
  std::string from = "InitOptions::backend";
  if (b == "auto" && !env_string("EMBER_DIST_BACKEND").empty()) {
    b = env_string("EMBER_DIST_BACKEND");
    from = "EMBER_DIST_BACKEND";
  }
  if (b == "auto") {
    if (!env_string("OMPI_COMM_WORLD_SIZE").empty()) return "mpi";
    // RANK alone is a torchrun-style launch missing WORLD_SIZE: gloo's engine says so (training
    // alone would overwrite rank 0's run folder).
    if (!env_string("WORLD_SIZE").empty() || !env_string("RANK").empty()) return "gloo";
    return "local";
  }
  if (b != "mpi" && b != "gloo" && b != "local")
    EMBER_FAIL(kInit, from, "=", b, " is not a backend: use auto, mpi, gloo or local");
  return b;
}

double choose_timeout(double asked) {
  if (asked > 0) return asked;
  const std::string s = env_string("EMBER_DIST_TIMEOUT");
  if (s.empty()) return 300;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size() || !(v > 0) || !std::isfinite(v))
    EMBER_FAIL(kInit, "EMBER_DIST_TIMEOUT=", s, " is not a positive number of seconds");
  return v;
}

// A world size the launcher gives that the local engine cannot serve.
void check_single_process() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "WORLD_SIZE"}) {
    const std::string v = env_string(var);
    if (!v.empty() && v != "1")
      EMBER_FAIL(kInit, "the local backend runs one process, but ", var, "=", v,
                 "; use backend mpi or gloo (or auto)");
  }
}

void destroy_at_exit() {
  try {
    destroy_process_group();
  } catch (...) {  // exiting: nothing left to report to
  }
}

}  // namespace

void init_process_group(const InitOptions& options) {
  std::lock_guard<std::mutex> lk(g_mu);
  if (g_group)
    EMBER_FAIL(kInit, "the default process group already exists (backend ", g_group->backend(),
               ", rank ", g_group->rank(), " of ", g_group->world_size(),
               "); call dist::destroy_process_group() first");
  const std::string backend = choose_backend(options.backend);
  const double timeout = choose_timeout(options.timeout_seconds);
  std::unique_ptr<ProcessGroup::Engine> engine;
  if (backend == "mpi") {
    engine = detail::make_mpi_engine(timeout);
  } else if (backend == "gloo") {
    engine = detail::make_gloo_engine(timeout);
  } else {
    check_single_process();
    engine = detail::make_local_engine();
  }
  g_group = std::make_unique<ProcessGroup>(std::move(engine), timeout);
  // Ranks sharing a machine share its cores (oneDNN's OpenMP threads follow set_num_threads).
  if (options.set_threads && env_string("EMBER_NUM_THREADS").empty() &&
      env_string("OMP_NUM_THREADS").empty()) {
#ifdef EMBER_HAVE_CPU
    const int hw = int(std::max(1u, std::thread::hardware_concurrency()));
    set_num_threads(std::max(1, hw / std::max(1, g_group->local_world_size())));
#endif
  }
  // The group ends before the process does (MPI must be finalized, or aborted after a failure).
  static const bool registered = (std::atexit(destroy_at_exit), true);
  (void)registered;
}

void abort_process_group(const std::string& reason) {
  std::lock_guard<std::mutex> lk(g_mu);
  if (g_group) g_group->abort(reason);
}

bool is_initialized() {
  std::lock_guard<std::mutex> lk(g_mu);
  return g_group != nullptr;
}

void destroy_process_group() {
  std::unique_ptr<ProcessGroup> g;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    g = std::move(g_group);
  }
  g.reset();  // waits for its pending ops, outside the lock
}

bool is_available(const std::string& backend) {
  if (backend == "local") return true;
#ifdef EMBER_HAVE_MPI
  if (backend == "mpi") return true;
#endif
#ifdef EMBER_HAVE_GLOO
  if (backend == "gloo") return true;
#endif
  return false;
}

ProcessGroup& default_group() {
  std::lock_guard<std::mutex> lk(g_mu);
  if (!g_group) EMBER_FAIL("dist", "no process group: call dist::init_process_group() first");
  return *g_group;
}

namespace {
ProcessGroup* group_or_null() {
  std::lock_guard<std::mutex> lk(g_mu);
  return g_group.get();
}
}  // namespace

int rank() {
  ProcessGroup* g = group_or_null();
  return g ? g->rank() : 0;
}
int world_size() {
  ProcessGroup* g = group_or_null();
  return g ? g->world_size() : 1;
}
int local_rank() {
  ProcessGroup* g = group_or_null();
  return g ? g->local_rank() : 0;
}
int local_world_size() {
  ProcessGroup* g = group_or_null();
  return g ? g->local_world_size() : 1;
}

Work all_reduce(const Tensor& tensor, ReduceOp op, bool async_op) {
  return default_group().all_reduce(tensor, op, async_op);
}
Work broadcast(const Tensor& tensor, int src, bool async_op) {
  return default_group().broadcast(tensor, src, async_op);
}
Work all_gather(const std::vector<Tensor>& outputs, const Tensor& input, bool async_op) {
  return default_group().all_gather(outputs, input, async_op);
}
Work all_gather_into_tensor(const Tensor& output, const Tensor& input, bool async_op) {
  return default_group().all_gather_into_tensor(output, input, async_op);
}
Work reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op,
                    bool async_op) {
  return default_group().reduce_scatter(output, inputs, op, async_op);
}
Work reduce_scatter_tensor(const Tensor& output, const Tensor& input, ReduceOp op, bool async_op) {
  return default_group().reduce_scatter_tensor(output, input, op, async_op);
}
void barrier() { default_group().barrier(); }

namespace detail {
#ifndef EMBER_HAVE_MPI
std::unique_ptr<ProcessGroup::Engine> make_mpi_engine(double) {
  EMBER_FAIL(kInit,
             "the mpi backend was not built: install Open MPI (Debian packages "
             "libopenmpi-dev and openmpi-bin) and build Ember again");
}
#endif
#ifndef EMBER_HAVE_GLOO
std::unique_ptr<ProcessGroup::Engine> make_gloo_engine(double) {
  EMBER_FAIL(kInit,
             "the gloo backend was not built: install Gloo (Debian package libgloo-dev) "
             "and build Ember again");
}
#endif
}  // namespace detail

}  // namespace ember::dist
