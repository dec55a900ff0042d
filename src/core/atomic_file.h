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

}  // namespace ember
