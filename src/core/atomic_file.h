// Atomic file writes: every file Ember writes (checkpoints, logs, reports, datasets, images,
// kernel caches) goes through here, so a reader sees the old file or the whole new one, never a
// torn write. Internal.
#pragma once
#include <cstddef>
#include <string>

namespace ember {

/// Writes `n` bytes to `path`: a hidden temporary in the same folder (so rename stays on one file
/// system), fsync, rename over `path`, fsync of the folder. Throws ember::Error
/// "[op] <path>: <reason>" on failure, after removing the temporary.
void write_file_atomic(const std::string& path, const void* data, size_t n, const char* op);

/// The same for caches, where a failed write only costs time: creates missing parent folders and
/// returns false instead of throwing, the reason in `*why` when given ("cannot create folder
/// /x/y (Permission denied)", "/x is not a folder", "rename failed (...)").
bool try_write_file_atomic(const std::string& path, const void* data, size_t n,
                           std::string* why = nullptr) noexcept;

/// While it lives, `path` (a temporary file that its writer renames into place or removes) is
/// removed if the process is stopped by SIGINT or SIGTERM: while any guard lives, each of the two
/// signals whose disposition is the default gets a handler that unlinks every guarded path of
/// this process and re-raises the signal with the default action (the process still dies of it).
/// A signal the program handles itself (ember train's Ctrl-C) or ignores is left alone: the
/// write goes on and its owner removes the file. The atomic writes above guard their temporaries;
/// guard a temporary kept after the write (onnx::save's check file) with it. At most 64 paths are
/// guarded at once (more are not). Without POSIX signals (WebAssembly) it does nothing.
class RemoveOnSignal {
 public:
  explicit RemoveOnSignal(const std::string& path) noexcept;
  ~RemoveOnSignal();
  RemoveOnSignal(const RemoveOnSignal&) = delete;
  RemoveOnSignal& operator=(const RemoveOnSignal&) = delete;

 private:
  int slot_ = -1;  // -1: not guarded
};

namespace detail {
/// Test hook: every atomic write calls `hook` with its temporary's path once the temporary holds
/// the data, before the fsync and rename (a test raises a signal there). nullptr: none.
void set_atomic_write_hook(void (*hook)(const char* temp_path));
}  // namespace detail

}  // namespace ember
