// Helpers of the `ember` command's tests (tests/cli_*_test.cpp): the command is run as a
// separate process (its path comes from the EMBER_CLI_PATH compile definition) and its outputs
// (exit status, stdout and stderr, summary.json, the files in the run folder) are checked. The
// training tests need Fashion-MNIST (Debian package dataset-fashion-mnist) and skip themselves,
// saying so, when it is absent. One suite per file (CliTest: usage and exit statuses,
// CliTestDevices, CliTestTrain, CliTestImages, CliTestData), so ctest runs each as a group of
// its own (tests/ctest_groups.cmake); --gtest_filter='CliTest*' runs them all.
#pragma once
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace ember::cli_test {

namespace fs = std::filesystem;
using nlohmann::json;

#ifdef EMBER_CLI_PATH
inline const char* const kCli = EMBER_CLI_PATH;
#else
inline const char* const kCli = nullptr;
#endif
inline const char* const kFashion = "/usr/share/datasets/fashion-mnist";

struct Result {
  int status = -1;  // exit status, or -1 when killed by a signal
  std::string output;
};

// Runs `ember <args>` with stdout and stderr captured together; `env`: "NAME=value ..." set for
// the command only.
inline Result run_ember(const std::string& args, const std::string& env = "") {
  Result r;
  const std::string cmd = (env.empty() ? "" : "env " + env + " ") + kCli + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// A test::TempDir whose path is an fs::path (the CLI tests join paths with /).
struct TempDir : test::TempDir {
  fs::path path{test::TempDir::path()};
  TempDir() : test::TempDir("cli") {}
};

inline json read_json(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << path;
  return json::parse(f, nullptr, false);
}

inline bool have_fashion() {
  return fs::exists(fs::path(kFashion) / "train-images-idx3-ubyte.gz") ||
         fs::exists(fs::path(kFashion) / "train-images-idx3-ubyte");
}

#define REQUIRE_CLI() \
  if (!kCli) GTEST_SKIP() << "the ember command is not built (EMBER_BUILD_TOOLS=OFF)"
#define REQUIRE_FASHION()                                          \
  REQUIRE_CLI();                                                   \
  if (!have_fashion())                                             \
  GTEST_SKIP() << "Fashion-MNIST is not installed in " << kFashion \
               << " (Debian package dataset-fashion-mnist); skipping the training test"

// The probabilities `ember predict` prints ("  <i> <name> <p>" lines).
inline std::vector<double> probabilities(const std::string& out) {
  std::vector<double> p;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("  ", 0) != 0) continue;
    p.push_back(std::stod(line.substr(line.find_last_of(' ') + 1)));
  }
  return p;
}

}  // namespace ember::cli_test
