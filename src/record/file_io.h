// File helpers shared by ember::record and ember::train (internal).
#pragma once
#include <string>

namespace ember::record::detail {

/// The whole file. Throws "[op] <path>: cannot open (...)" / "is a directory" / "read failed".
std::string read_whole_file(const std::string& path, const char* op);
/// mkdir -p; false when a component exists and is not a directory or cannot be created.
bool make_dirs(const std::string& path);
bool file_exists(const std::string& path);
/// unlink, ignoring errors.
void remove_file(const std::string& path);

}  // namespace ember::record::detail
