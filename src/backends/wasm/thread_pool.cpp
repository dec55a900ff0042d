#include "backends/wasm/thread_pool.h"

#include <algorithm>

#ifdef __EMSCRIPTEN_PTHREADS__
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>
#endif

namespace ember::wasm {

#ifdef __EMSCRIPTEN_PTHREADS__

namespace {

constexpr int kMaxThreads = 8;

int default_threads() {
  const int hw = int(std::thread::hardware_concurrency());
  return std::clamp(hw, 1, kMaxThreads);
}

// One parallel_for: chunks claimed by whoever comes (the caller first), counted when done.
struct Job {
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  int64_t n = 0, chunks = 0;
  int max_workers = 0;  // workers that may join (num_threads() - 1)
  int joined = 0;       // guarded by Pool::mu_
  std::atomic<int64_t> next{0}, done{0};
  std::atomic<int> users{0};  // workers holding a pointer to this job
  std::mutex error_mu;
  std::exception_ptr error;

  void work() {
    for (int64_t c; (c = next.fetch_add(1, std::memory_order_relaxed)) < chunks;) {
      try {
        (*fn)(n * c / chunks, n * (c + 1) / chunks);
      } catch (...) {
        std::lock_guard<std::mutex> l(error_mu);
        if (!error) error = std::current_exception();
      }
      done.fetch_add(1, std::memory_order_release);
    }
  }
};

thread_local bool t_inside = false;  // inside a parallel_for (a worker, or the caller's share)

class Pool {
 public:
  std::atomic<int> threads{default_threads()};

  void run(int64_t n, int64_t chunks, int nt, const std::function<void(int64_t, int64_t)>& fn) {
    while (int(workers_.size()) < nt - 1) workers_.emplace_back([this] { loop(); });
    Job job;
    job.fn = &fn;
    job.n = n;
    job.chunks = chunks;
    job.max_workers = nt - 1;
    {
      std::lock_guard<std::mutex> l(mu_);
      job_ = &job;
      ++generation_;
    }
    cv_.notify_all();
    t_inside = true;
    job.work();
    t_inside = false;
    // Short waits only: what is left is chunks other threads are running now.
    while (job.done.load(std::memory_order_acquire) < chunks) std::this_thread::yield();
    {
      std::lock_guard<std::mutex> l(mu_);
      job_ = nullptr;
    }
    while (job.users.load(std::memory_order_acquire) > 0) std::this_thread::yield();
    if (job.error) std::rethrow_exception(job.error);
  }

  std::mutex run_mu;  // one parallel_for at a time

 private:
  void loop() {
    t_inside = true;
    uint64_t seen = 0;
    for (;;) {
      Job* job = nullptr;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return generation_ != seen; });
        seen = generation_;
        if (!job_ || job_->joined >= job_->max_workers) continue;
        job = job_;
        ++job->joined;
        job->users.fetch_add(1, std::memory_order_relaxed);
      }
      job->work();
      job->users.fetch_sub(1, std::memory_order_release);
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  Job* job_ = nullptr;
  uint64_t generation_ = 0;
  std::vector<std::thread> workers_;  // never joined: the pool lives until the process ends
};

Pool& pool() {
  static Pool* p = new Pool;  // leaked: workers block in loop() until exit
  return *p;
}

}  // namespace

int num_threads() { return pool().threads.load(std::memory_order_relaxed); }

void set_num_threads(int n) {
  pool().threads.store(n <= 0 ? default_threads() : std::min(n, kMaxThreads),
                       std::memory_order_relaxed);
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int nt = num_threads();
  if (nt == 1 || t_inside || n <= grain) {
    fn(0, n);
    return;
  }
  std::unique_lock<std::mutex> busy(pool().run_mu, std::try_to_lock);
  if (!busy.owns_lock()) {
    fn(0, n);
    return;
  }
  // A few chunks per thread, so a thread slowed by the machine's other work holds back less.
  const int64_t chunks = std::min<int64_t>((n + grain - 1) / grain, 4 * int64_t(nt));
  pool().run(n, chunks, nt, fn);
}

#else  // single-threaded build

int num_threads() { return 1; }
void set_num_threads(int) {}
void parallel_for(int64_t n, int64_t, const std::function<void(int64_t, int64_t)>& fn) {
  if (n > 0) fn(0, n);
}

#endif

}  // namespace ember::wasm
