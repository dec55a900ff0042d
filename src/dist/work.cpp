// The communication thread, its queue, Work's waiting (where timeouts are enforced) and the
// failure state that breaks a group.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "dist/group.h"
#include "ember/error.h"

namespace ember::dist {

namespace {

using Clock = std::chrono::steady_clock;

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

// Drops the communication thread's reference to a job. The last one belongs to a Work whose
// wait() failed (it keeps the tensors for an engine that may still write them) and was
// destroyed: the job is left allocated, not freed here, since this thread may still run while the
// process exits and the backends' allocators are gone (a tensor freed then called a destroyed
// allocator: "pure virtual method called"). Only failed jobs get here.
void drop(std::shared_ptr<Work::State>& s) {
  if (s.use_count() == 1) {
    // Kept reachable (LeakSanitizer knows it is on purpose); never destroyed, as the mutex.
    static auto* mu = new std::mutex;
    static auto* kept = new std::vector<std::shared_ptr<Work::State>>;
    std::lock_guard<std::mutex> lk(*mu);
    kept->push_back(std::move(s));
  }
  s.reset();
}

}  // namespace

namespace detail {

void Core::fail(std::unique_lock<std::mutex>& lk, const std::string& message) {
  const bool first = !broken;
  if (first) {
    broken = true;
    failure = message;
  }
  done_cv.notify_all();
  lk.unlock();
  if (first) report_failure();
}

void Core::report_failure() noexcept {
  if (!failure_reported.exchange(true)) engine->on_failure();
}

void Core::check_usable(const char* op) const {
  if (broken)
    EMBER_FAIL(op, "the process group is unusable after an earlier failure: ", failure,
               " (every rank must stop; start the job again)");
}

void Core::loop() {
  std::unique_lock<std::mutex> lk(mu);
  for (;;) {
    work_cv.wait(lk, [&] { return quit || !queue.empty(); });
    if (queue.empty()) break;  // quit, and every job ran
    std::shared_ptr<Work::State> s = std::move(queue.front());
    queue.pop_front();
    if (broken) {  // a job behind a failure never reaches the engine
      s->done = true;
      s->error = "[" + std::string(s->op) + "] not run: the process group failed before it (" +
                 failure + ")";
      drop(s);
      done_cv.notify_all();
      continue;
    }
    lk.unlock();
    std::string error;
    try {
      s->run(*engine);
    } catch (const std::exception& e) {
      error = e.what();
    } catch (...) {
      error = "[" + std::string(s->op) + "] failed with an unknown exception";
    }
    if (!error.empty()) report_failure();  // before the op's waiter can see its error
    lk.lock();
    if (!s->done) {  // a waiter that timed out has already given it its error
      s->done = true;
      s->error = error;
    }
    drop(s);  // its tensors are released by the waiter, not here
    if (!error.empty()) {
      fail(lk, error);
      lk.lock();
    }
    done_cv.notify_all();
  }
  thread_exited = true;
  done_cv.notify_all();
}

}  // namespace detail

Work::~Work() {
  if (s_ && !s_->waited) try {
      wait();
    } catch (...) {  // the group is broken; the error was the op's own to report
    }
}

Work& Work::operator=(Work&& o) noexcept {
  if (this != &o) {
    Work old(std::move(*this));  // waits for the op this handle held
    s_ = std::move(o.s_);
  }
  return *this;
}

bool Work::is_completed() const {
  if (!s_) return true;
  std::lock_guard<std::mutex> lk(s_->core->mu);
  return s_->done || s_->core->broken;
}

void Work::wait() {
  if (!s_ || s_->waited) return;
  State& s = *s_;
  detail::Core& c = *s.core;
  std::unique_lock<std::mutex> lk(c.mu);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(c.timeout_seconds));
  while (!s.done && !c.broken) {
    if (c.done_cv.wait_until(lk, deadline) == std::cv_status::timeout && !s.done && !c.broken) {
      s.done = true;
      s.error = "[" + std::string(s.op) + "] timed out after " + seconds_text(c.timeout_seconds) +
                " s waiting for the other ranks (one may have died or hang); the process group "
                "is now unusable";
      const std::string message = s.error;
      c.fail(lk, message);
      lk.lock();
    }
  }
  if (!s.done) {  // dropped: the group broke while this job waited in the queue or ran
    s.done = true;
    s.error = "[" + std::string(s.op) + "] the process group failed: " + c.failure;
  }
  const std::string error = s.error;
  lk.unlock();
  s.waited = true;
  if (!error.empty()) throw Error(error);  // keeps the tensors: a stuck engine may still use them
  if (s.finish) s.finish();
  s.finish = nullptr;
  s.keep.clear();
}

ProcessGroup::Impl::Impl(std::unique_ptr<Engine> engine, double timeout_seconds) {
  EMBER_CHECK(engine, "dist::ProcessGroup", "no engine given");
  EMBER_CHECK(timeout_seconds > 0 && std::isfinite(timeout_seconds), "dist::ProcessGroup",
              "timeout must be a positive number of seconds, got ", timeout_seconds);
  backend = engine->name();
  rank = engine->rank();
  size = engine->size();
  local_rank = engine->local_rank();
  local_size = engine->local_size();
  core = std::make_shared<detail::Core>(std::move(engine), timeout_seconds);
  // The thread holds the core: if it is stuck in the engine when the group ends, it is left
  // behind (detached) with everything it uses.
  thread = std::thread([c = core] { c->loop(); });
}

ProcessGroup::Impl::~Impl() {
  std::unique_lock<std::mutex> lk(core->mu);
  core->quit = true;
  core->work_cv.notify_all();
  // Pending jobs get the group's timeout; after a failure, the job in the engine gets a moment
  // to return (a peer's closed connection) before the thread is left behind.
  const double wait_s = core->broken ? std::min(core->timeout_seconds, 2.0) : core->timeout_seconds;
  const bool exited = core->done_cv.wait_for(lk, std::chrono::duration<double>(wait_s),
                                             [&] { return core->thread_exited; });
  if (exited) {
    lk.unlock();
    thread.join();
    return;
  }
  if (!core->broken) {
    core->fail(lk, "[dist::destroy_process_group] timed out after " +
                       seconds_text(core->timeout_seconds) +
                       " s waiting for pending collectives (a rank may have died or hang)");
  }
  thread.detach();
}

std::shared_ptr<Work::State> ProcessGroup::Impl::make_state(const char* op) {
  auto s = std::make_shared<Work::State>();
  s->core = core;
  s->op = op;
  return s;
}

Work ProcessGroup::Impl::submit(std::shared_ptr<Work::State> s) {
  {
    std::lock_guard<std::mutex> lk(core->mu);
    core->check_usable(s->op);
    core->queue.push_back(s);
  }
  core->work_cv.notify_one();
  return Work(std::move(s));
}

}  // namespace ember::dist
