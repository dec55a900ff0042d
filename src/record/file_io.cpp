// Atomic file writes and whole-file reads for ember::record (POSIX: open, fsync, rename).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "ember/error.h"
#include "ember/record/safetensors.h"
#include "record/file_io.h"

namespace ember::record {

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
}  // namespace

void write_file_atomic(const std::string& path, const std::string& bytes, const char* op) {
  if (path.empty()) EMBER_FAIL(op, "empty file name");
  static std::atomic<uint64_t> counter{0};
  const std::string dir = dir_of(path);
  // A hidden name in the same directory, so rename() stays on one file system.
  const std::string tmp = dir + "/." + base_of(path) + ".tmp." + std::to_string(::getpid()) + "." +
                          std::to_string(counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) EMBER_FAIL(op, path, ": cannot create a temporary file (", std::strerror(errno), ")");
  auto fail = [&](const char* what) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    EMBER_FAIL(op, path, ": ", what, " (", std::strerror(err), ")");
  };
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write failed");
    }
    done += size_t(n);
  }
  if (::fsync(fd) != 0) fail("fsync failed");
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    EMBER_FAIL(op, path, ": close failed (", std::strerror(err), ")");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    EMBER_FAIL(op, path, ": rename failed (", std::strerror(err), ")");
  }
  // Make the rename itself durable.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

namespace detail {
std::string read_whole_file(const std::string& path, const char* op) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    EMBER_FAIL(op, path, ": cannot open (", std::strerror(errno), ")");
  if (S_ISDIR(st.st_mode)) EMBER_FAIL(op, path, ": is a directory");
  // A FIFO, socket or device would block the open or the read (a FIFO without a writer: forever).
  if (!S_ISREG(st.st_mode)) EMBER_FAIL(op, path, ": not a regular file (a FIFO, socket or device)");
  std::ifstream in(path, std::ios::binary);
  if (!in) EMBER_FAIL(op, path, ": cannot open (", std::strerror(errno), ")");
  std::string bytes;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) EMBER_FAIL(op, path, ": cannot determine the file size");
  bytes.resize(size_t(size));
  in.seekg(0, std::ios::beg);
  if (size > 0 && !in.read(bytes.data(), size)) EMBER_FAIL(op, path, ": read failed");
  return bytes;
}

bool make_dirs(const std::string& path) {
  if (path.empty()) return true;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return S_ISDIR(st.st_mode);
  const size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0 && !make_dirs(path.substr(0, slash))) return false;
  return ::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST;
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

void remove_file(const std::string& path) { ::unlink(path.c_str()); }
}  // namespace detail

}  // namespace ember::record
