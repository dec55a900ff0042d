// Atomic file writes (POSIX: open, write, fsync, rename) and the removal of their temporaries
// on SIGINT / SIGTERM; see atomic_file.h.
#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "ember/error.h"

// Signals come from outside only on POSIX systems; the WebAssembly build has none to receive.
#if (defined(__unix__) || defined(__APPLE__)) && !defined(__EMSCRIPTEN__) && !defined(__wasi__)
#define EMBER_REMOVE_ON_SIGNAL 1
#include <signal.h>
#else
#define EMBER_REMOVE_ON_SIGNAL 0
#endif

namespace ember {

namespace {

std::atomic<void (*)(const char*)> g_write_hook{nullptr};

#if EMBER_REMOVE_ON_SIGNAL
// The guarded paths, which the handler reads without a lock. A slot is free, being filled (by
// its guard), guarded, or claimed by the handler, which then owns it (the process is dying).
// Fixed buffers: nothing the handler reads is ever freed.
enum : int { kFree, kFilling, kGuarded, kClaimed };
constexpr int kSlots = 64;
constexpr size_t kPathMax = 4096;
struct Slot {
  std::atomic<int> state{kFree};
  pid_t pid = 0;  // a child forked without exec leaves its parent's files alone
  char path[kPathMax];
};
static_assert(std::atomic<int>::is_always_lock_free, "the handler needs lock-free atomics");
Slot g_slots[kSlots];
constexpr int kSignals[2] = {SIGINT, SIGTERM};
std::mutex g_mu;                 // the guards' count and the dispositions; never the handler's
int g_guards = 0;                // guards alive
bool g_installed[2] = {};        // the handler is ours to restore, per signal
struct sigaction g_previous[2];  // what it replaced (the default action)

// Async-signal-safe only: atomics, getpid, unlink, sigaction, raise.
extern "C" void remove_guarded_and_reraise(int sig) {
  const int saved_errno = errno;
  const pid_t me = ::getpid();
  for (Slot& s : g_slots) {
    int expected = kGuarded;
    if (s.state.compare_exchange_strong(expected, kClaimed, std::memory_order_acquire) &&
        s.pid == me)
      ::unlink(s.path);
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);  // blocked in here: delivered with the default action when the handler returns
  errno = saved_errno;
}

bool is_ours(const struct sigaction& sa) {
  return !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == remove_guarded_and_reraise;
}

// The first guard: the handler takes each signal whose disposition is the default (or ours,
// left by a program handler that restored what it found).
void install_handler() {
  for (int k = 0; k < 2; ++k) {
    struct sigaction now {};
    g_installed[k] = false;
    if (::sigaction(kSignals[k], nullptr, &now) != 0) continue;
    const bool dfl = !(now.sa_flags & SA_SIGINFO) && now.sa_handler == SIG_DFL;
    if (!dfl && !is_ours(now)) continue;  // ignored, or the program's own handler
    struct sigaction sa {};
    sa.sa_handler = remove_guarded_and_reraise;
    sigemptyset(&sa.sa_mask);
    for (int sig : kSignals) sigaddset(&sa.sa_mask, sig);
    g_previous[k] = {};
    g_previous[k].sa_handler = SIG_DFL;
    sigemptyset(&g_previous[k].sa_mask);
    g_installed[k] = ::sigaction(kSignals[k], &sa, nullptr) == 0;
  }
}

// The last guard gone: the default action again, unless the program installed a handler since.
void restore_handler() {
  for (int k = 0; k < 2; ++k) {
    struct sigaction now {};
    if (g_installed[k] && ::sigaction(kSignals[k], nullptr, &now) == 0 && is_ours(now))
      ::sigaction(kSignals[k], &g_previous[k], nullptr);
    g_installed[k] = false;
  }
}
#endif

std::string dir_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Creates `path` and its missing parents; on failure says which folder and why in `why`.
bool make_dirs(const std::string& path, std::string& why) {
  if (path.empty()) return true;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return true;
    why = path + " is not a folder";
    return false;
  }
  const size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0 && !make_dirs(path.substr(0, slash), why))
    return false;
  if (::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return true;
  why = "cannot create folder " + path + " (" + std::strerror(errno) + ")";
  return false;
}

// Writes and renames; on failure returns the reason (errno kept in `err`) with the temporary
// removed, else nullptr.
const char* write_atomic(const std::string& path, const void* data, size_t n, int& err) {
  static std::atomic<uint64_t> counter{0};
  const std::string dir = dir_of(path);
  const std::string tmp = dir + "/." + base_of(path) + ".tmp." + std::to_string(::getpid()) + "." +
                          std::to_string(counter++);
  const RemoveOnSignal guard(tmp);  // before the file exists: a signal then finds nothing
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    err = errno;
    return "cannot create a temporary file";
  }
  const char* why = nullptr;
  const char* p = static_cast<const char*>(data);
  for (size_t done = 0; done < n && !why;) {
    const ssize_t w = ::write(fd, p + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0)
      why = "write failed";
    else
      done += size_t(w);
  }
  if (!why)
    if (auto* hook = g_write_hook.load()) hook(tmp.c_str());
  if (!why && ::fsync(fd) != 0) why = "fsync failed";
  if (why) err = errno;
  if (::close(fd) != 0 && !why) {
    err = errno;
    why = "close failed";
  }
  if (!why && ::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    why = "rename failed";
  }
  if (why) {
    ::unlink(tmp.c_str());
    return why;
  }
  // make the rename itself durable
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return nullptr;
}

}  // namespace

void write_file_atomic(const std::string& path, const void* data, size_t n, const char* op) {
  if (path.empty()) EMBER_FAIL(op, "empty file name");
  int err = 0;
  if (const char* why = write_atomic(path, data, n, err))
    EMBER_FAIL(op, path, ": ", why, " (", std::strerror(err), ")");
}

bool try_write_file_atomic(const std::string& path, const void* data, size_t n,
                           std::string* why) noexcept {
  try {
    std::string reason = path.empty() ? "empty file name" : "";
    if (reason.empty() && make_dirs(dir_of(path), reason)) {
      int err = 0;
      const char* w = write_atomic(path, data, n, err);
      if (!w) return true;
      reason = std::string(w) + " (" + std::strerror(err) + ")";
    }
    if (why) *why = reason;
    return false;
  } catch (...) {  // std::string allocation
    return false;
  }
}

RemoveOnSignal::RemoveOnSignal(const std::string& path) noexcept {
#if EMBER_REMOVE_ON_SIGNAL
  if (path.empty() || path.size() >= kPathMax) return;
  try {
    std::lock_guard<std::mutex> lock(g_mu);
    for (int i = 0; i < kSlots && slot_ < 0; ++i) {
      int expected = kFree;
      if (g_slots[i].state.compare_exchange_strong(expected, kFilling)) slot_ = i;
    }
    if (slot_ < 0) return;  // all taken: this one is not guarded
    Slot& s = g_slots[slot_];
    std::memcpy(s.path, path.c_str(), path.size() + 1);
    s.pid = ::getpid();
    s.state.store(kGuarded, std::memory_order_release);
    if (g_guards++ == 0) install_handler();
  } catch (...) {  // the lock failed: not guarded
  }
#else
  (void)path;
#endif
}

RemoveOnSignal::~RemoveOnSignal() {
#if EMBER_REMOVE_ON_SIGNAL
  if (slot_ < 0) return;
  std::lock_guard<std::mutex> lock(g_mu);
  // Claimed: the handler is removing the file on its way out; the slot stays its.
  int expected = kGuarded;
  g_slots[slot_].state.compare_exchange_strong(expected, kFree, std::memory_order_release);
  if (--g_guards == 0) restore_handler();
#endif
}

namespace detail {
void set_atomic_write_hook(void (*hook)(const char* temp_path)) { g_write_hook.store(hook); }
}  // namespace detail

}  // namespace ember
