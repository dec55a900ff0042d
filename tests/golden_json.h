// Golden values from PyTorch (tests/golden/*.py -> tests/data/golden/*.json), read once per file.
#pragma once
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace ember::test {

/// tests/data/golden/<file>, parsed once; throws naming `script`, which makes it, when missing.
inline const nlohmann::json& golden_json(const std::string& file, const std::string& script) {
  static std::map<std::string, nlohmann::json> cache;
  auto it = cache.find(file);
  if (it != cache.end()) return it->second;
  const std::string path = std::string(EMBER_TEST_DATA_DIR) + "/golden/" + file;
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot open " + path + " (run " + script + ")");
  return cache.emplace(file, nlohmann::json::parse(f)).first->second;
}

}  // namespace ember::test
