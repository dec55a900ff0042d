// Fuzz targets for Ember's file readers, run by tests/fuzz/driver.cpp (ember_fuzz).
//
// A target takes the bytes of one file and feeds them to a reader. An ember::Error is a clean
// rejection; anything else that escapes (another exception), a crash, a sanitizer report, an
// allocation over the budget or an input running past the time limit is a failure.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ember::fuzz {

struct Target {
  const char* name;
  /// Reads one input. `dir` is a scratch folder the target may write files to.
  void (*run)(const std::string& bytes, const std::string& dir);
  /// Valid files made by Ember's own writers (the seed corpus), written under `dir` if needed.
  std::vector<std::string> (*seeds)(const std::string& dir);
  /// Text format: mutations also insert tokens (digits, quotes, separators).
  bool text;
};

/// Every target, in a fixed order.
const std::vector<Target>& targets();

/// Writes `bytes` to `path` (plain, not atomic: scratch files only).
void write_file(const std::string& path, const std::string& bytes);
/// The bytes of `path`.
std::string read_file(const std::string& path);

}  // namespace ember::fuzz
