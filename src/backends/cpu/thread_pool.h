// The cpu backend's thread pool, sized by env EMBER_NUM_THREADS (default: hardware threads) or
// ember::set_num_threads(): the OpenMP team of the runtime oneDNN loads when there is one (so GEMM
// and the other kernels share one set of threads), else its own workers plus the calling thread.
// parallel_for splits a range into at most num_threads() chunks of at least `grain` items, so
// small ops stay on the calling thread. A parallel_for issued from inside a task, or while
// another thread owns the pool, runs serially (no nesting, no oversubscription). oneDNN (which
// uses OpenMP) is never called from inside a task.
#pragma once
#include <cstdint>
#include <functional>

namespace ember::cpu {

/// Threads the cpu kernels use (>= 1).
int num_threads();
/// Sets the thread count (n <= 0: the default). Waits for running parallel work first.
void set_num_threads(int n);

/// Where parallel_for runs: on the OpenMP runtime's team when oneDNN brought one (libgomp, found
/// at run time; the default: one set of threads for GEMM and the other kernels), else on this
/// pool's own std::threads. Returns whether the OpenMP runtime is now used. For tests/benchmarks.
bool use_openmp_runtime(bool on);

/// True when parallel_for runs on the OpenMP team (so oneDNN called from inside a task runs
/// single-threaded there instead of opening a second team).
bool openmp_runtime_active();

/// Calls fn(b, e) over disjoint sub-ranges covering [begin, end), each at least `grain` long
/// (except when the whole range is shorter). Exceptions thrown by fn are rethrown here (the first).
void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn);

/// Typical grains (items per task): cheap elementwise work and costly per-item work.
inline constexpr int64_t kGrainElementwise = 32768;
inline constexpr int64_t kGrainHeavy = 4096;

}  // namespace ember::cpu
