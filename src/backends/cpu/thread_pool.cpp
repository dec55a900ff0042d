#include "backends/cpu/thread_pool.h"

#include "ember/device.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/env.h"

namespace ember::cpu {

namespace {

int hardware_threads() {
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? int(hw) : 1;
}

// More threads than this is a typo, not a plan (and enough of them fail to start).
int max_threads() { return std::max(64, 4 * hardware_threads()); }

// n capped at max_threads() (a warning on stderr naming `what`, the setting as written).
int clamp_threads(long long n, const std::string& what) {
  if (n <= max_threads()) return int(n);
  std::fprintf(
      stderr,
      "warning: [threads] %s asks for more threads than the cap of %d (max(64, 4 x %d hardware "
      "threads)); using %d\n",
      what.c_str(), max_threads(), hardware_threads(), max_threads());
  return max_threads();
}

// EMBER_NUM_THREADS when it is a positive integer (capped, with a warning), else (a warning,
// core/env.h, when set to something else) the hardware's thread count.
int default_threads() {
  const int64_t n =
      env_int("EMBER_NUM_THREADS", hardware_threads(), 1, std::numeric_limits<int64_t>::max());
  return clamp_threads(n, "EMBER_NUM_THREADS=" + env_string("EMBER_NUM_THREADS"));
}

// True on pool workers and on a caller while it runs a parallel_for: nested calls go serial.
thread_local bool t_in_parallel = false;

class Pool {
 public:
  explicit Pool(int n) { start(n); }
  ~Pool() { stop(); }

  int size() const { return size_.load(); }

  void resize(int n) {
    std::lock_guard<std::mutex> own(owner_);
    stop();
    start(n);
  }

  // Runs fn over [begin, end) in `chunks` pieces; the caller takes piece 0. Returns false when
  // the pool is busy (another thread's parallel_for) so the caller runs serially.
  bool run(int64_t begin, int64_t end, int64_t chunks,
           const std::function<void(int64_t, int64_t)>& fn) {
    std::unique_lock<std::mutex> own(owner_, std::try_to_lock);
    if (!own.owns_lock()) return false;
    {
      std::lock_guard<std::mutex> lk(mu_);
      fn_ = &fn;
      begin_ = begin;
      end_ = end;
      chunks_ = chunks;
      next_ = 1;
      pending_ = chunks - 1;
      error_ = nullptr;
      ++generation_;
    }
    cv_.notify_all();
    work(0);
    // Help with remaining chunks, then wait for those taken by workers.
    for (;;) {
      int64_t c;
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (next_ >= chunks_) break;
        c = next_++;
      }
      work(c);
      std::lock_guard<std::mutex> lk(mu_);
      --pending_;
    }
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [&] { return pending_ == 0; });
    fn_ = nullptr;
    if (error_) std::rethrow_exception(error_);
    return true;
  }

 private:
  void start(int n) {
    quit_ = false;
    size_ = std::max(n, 1);
    for (int i = 1; i < n; ++i) workers_.emplace_back([this] { loop(); });
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  // Chunk c of the current job: an even split of [begin_, end_).
  void work(int64_t c) {
    const int64_t n = end_ - begin_;
    const int64_t b = begin_ + n * c / chunks_, e = begin_ + n * (c + 1) / chunks_;
    const bool was = t_in_parallel;
    t_in_parallel = true;
    try {
      (*fn_)(b, e);
    } catch (...) {
      std::lock_guard<std::mutex> lk(mu_);
      if (!error_) error_ = std::current_exception();
    }
    t_in_parallel = was;
  }

  void loop() {
    t_in_parallel = true;
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      cv_.wait(lk, [&] { return quit_ || (generation_ != seen && next_ < chunks_); });
      if (quit_) return;
      seen = generation_;
      while (next_ < chunks_) {
        const int64_t c = next_++;
        lk.unlock();
        work(c);
        lk.lock();
        if (--pending_ == 0) done_cv_.notify_one();
      }
    }
  }

  std::mutex owner_;  // held by the thread that runs a parallel_for (and by resize)
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::vector<std::thread> workers_;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t begin_ = 0, end_ = 0, chunks_ = 0, next_ = 0, pending_ = 0;
  uint64_t generation_ = 0;
  bool quit_ = false;
  std::atomic<int> size_{1};
  std::exception_ptr error_;
};

// The OpenMP runtime oneDNN brings (libgomp), found at run time: weak, so Ember also runs where it
// is absent. When present, parallel_for runs on its team: oneDNN's threads spin for a while
// after each GEMM (OMP_WAIT_POLICY unset), and a second pool of threads competing with them was
// measured 10x slower on a CNN training step than sharing one set of threads.
extern "C" {
void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags)
    __attribute__((weak));
void omp_set_num_threads(int n) __attribute__((weak));
}

std::atomic<bool> g_use_openmp{true};

struct OmpJob {
  const std::function<void(int64_t, int64_t)>* fn;
  int64_t begin, end, chunks;
  std::atomic<int64_t> next{0};
  std::mutex mu;
  std::exception_ptr error;
};

void omp_body(void* p) {
  OmpJob& j = *static_cast<OmpJob*>(p);
  const bool was = t_in_parallel;
  t_in_parallel = true;
  for (;;) {
    const int64_t c = j.next++;
    if (c >= j.chunks) break;
    const int64_t n = j.end - j.begin;
    try {
      (*j.fn)(j.begin + n * c / j.chunks, j.begin + n * (c + 1) / j.chunks);
    } catch (...) {
      std::lock_guard<std::mutex> lk(j.mu);
      if (!j.error) j.error = std::current_exception();
    }
  }
  t_in_parallel = was;
}

std::mutex g_pool_mu;
Pool* g_pool = nullptr;  // leaked on purpose: kernels may run during static destruction

Pool& pool() {
  std::lock_guard<std::mutex> lk(g_pool_mu);
  if (!g_pool) {
    g_pool = new Pool(default_threads());
    if (omp_set_num_threads && !env_string("EMBER_NUM_THREADS").empty())
      omp_set_num_threads(g_pool->size());
  }
  return *g_pool;
}

}  // namespace

int num_threads() { return pool().size(); }

void set_num_threads(int n) {
  if (n <= 0) n = default_threads();
  n = clamp_threads(n, "set_num_threads(" + std::to_string(n) + ")");
  Pool& p = pool();
  if (p.size() != n) p.resize(n);
  // oneDNN's GEMM (called from this thread) follows the same count.
  if (omp_set_num_threads) omp_set_num_threads(n);
}

bool use_openmp_runtime(bool on) {
  g_use_openmp = on;
  return on && GOMP_parallel != nullptr;
}

bool openmp_runtime_active() { return g_use_openmp && GOMP_parallel != nullptr; }

void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  if (!t_in_parallel && n > grain) {
    Pool& p = pool();
    const int64_t chunks = std::min<int64_t>(p.size(), (n + grain - 1) / grain);
    if (chunks > 1 && GOMP_parallel && g_use_openmp) {
      OmpJob job;
      job.fn = &fn;
      job.begin = begin;
      job.end = end;
      job.chunks = chunks;
      GOMP_parallel(omp_body, &job, unsigned(chunks), 0);
      if (job.error) std::rethrow_exception(job.error);
      return;
    }
    if (chunks > 1 && p.run(begin, end, chunks, fn)) return;
  }
  fn(begin, end);
}

}  // namespace ember::cpu

namespace ember {

int get_num_threads() { return cpu::num_threads(); }
void set_num_threads(int n) { cpu::set_num_threads(n); }

}  // namespace ember
