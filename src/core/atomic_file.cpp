// Atomic file writes (POSIX: open, write, fsync, rename); see atomic_file.h.
#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "ember/error.h"

namespace ember {

namespace {

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

}  // namespace ember
