// Whole-file reads and folder helpers for ember::record; atomic writes are core/atomic_file.h.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "core/atomic_file.h"
#include "ember/error.h"
#include "ember/record/safetensors.h"
#include "record/file_io.h"

namespace ember::record {

void write_file_atomic(const std::string& path, const std::string& bytes, const char* op) {
  ember::write_file_atomic(path, bytes.data(), bytes.size(), op);
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
