// Helpers shared by the benchmarks: command-line options and medians.
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace bench {

// Reads "--name value" pairs: set(name, value) applies one and returns false for an unknown
// name. An unknown option, or an option without its value, prints why and exits with status 2.
template <typename Set>
void parse_options(int argc, char** argv, Set&& set) {
  if ((argc - 1) % 2 != 0) {
    std::fprintf(stderr, "options take a value: %s\n", argv[argc - 1]);
    std::exit(2);
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!set(std::string(argv[i]), std::string(argv[i + 1]))) {
      std::fprintf(stderr, "unknown option %s (or bad value %s)\n", argv[i], argv[i + 1]);
      std::exit(2);
    }
  }
}

// The median of v (the upper one of an even count); v must not be empty.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace bench
