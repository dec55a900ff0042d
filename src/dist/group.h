// The machinery under ProcessGroup (internal): the communication thread and its queue of jobs,
// the Work states it completes, and the failure state that breaks the group.
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "dist/engine.h"

namespace ember::dist::detail {

/// What the communication thread and the waiters share; outlives the group while a detached
/// communication thread is stuck in its engine.
struct Core {
  Core(std::unique_ptr<ProcessGroup::Engine> e, double timeout)
      : engine(std::move(e)), timeout_seconds(timeout) {}
  std::unique_ptr<ProcessGroup::Engine> engine;
  const double timeout_seconds;

  std::mutex mu;
  std::condition_variable work_cv;  // the thread waits for jobs or quit
  std::condition_variable done_cv;  // waiters wait for a job's end, a failure or the thread's end
  std::deque<std::shared_ptr<Work::State>> queue;
  bool quit = false;
  bool thread_exited = false;
  bool broken = false;
  std::string failure;                        // the first failure's message
  std::atomic<bool> failure_reported{false};  // engine->on_failure() was called

  /// Marks the group broken with `message` (the first one is kept) and wakes every waiter; the
  /// caller holds `lk`, which is released. Then report_failure(), unlocked.
  void fail(std::unique_lock<std::mutex>& lk, const std::string& message);
  /// engine->on_failure(), once per group whoever calls it first. The communication thread calls
  /// it before an op's waiter can see that op's error.
  void report_failure() noexcept;
  /// The communication thread's body: runs the queued jobs in order until quit and drained.
  void loop();
  /// Throws "[op] the process group is unusable ..." when it is broken (caller holds mu).
  void check_usable(const char* op) const;
};

}  // namespace ember::dist::detail

namespace ember::dist {

/// One collective: `run` goes to the communication thread (raw host buffers only, no tensor
/// calls); `finish` runs on the thread that waits, once the job succeeded (copies staged
/// results back into the user's tensors). `keep` holds the tensors whose buffers `run` uses.
struct Work::State {
  std::shared_ptr<detail::Core> core;
  const char* op = "";
  std::function<void(ProcessGroup::Engine&)> run;
  std::function<void()> finish;
  std::vector<Tensor> keep;
  // Under core->mu:
  bool done = false;  // run returned or threw, or the job was dropped by a failure
  std::string error;  // empty on success
  // The waiter's own:
  bool waited = false;  // wait() returned or threw once
};

struct ProcessGroup::Impl {
  Impl(std::unique_ptr<Engine> engine, double timeout_seconds);
  ~Impl();
  /// Queues `s` (its run, finish and keep set) after the jobs before it. Throws when broken.
  Work submit(std::shared_ptr<Work::State> s);
  std::shared_ptr<Work::State> make_state(const char* op);

  std::shared_ptr<detail::Core> core;
  std::thread thread;
  std::string backend;
  int rank = 0, size = 1, local_rank = 0, local_size = 1;
};

}  // namespace ember::dist
