#include "backends/vulkan/profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

#include "backends/vulkan/pipeline_cache.h"
#include "core/env.h"

namespace ember::vk::profile {

namespace {

struct Row {
  double seconds = 0;
  int64_t calls = 0;
};

// Printed by the destructor of a function-local static (at exit).
struct Table {
  std::mutex mutex;
  std::map<std::string, Row> rows;
  std::map<int64_t, CacheStats> caches;
  ~Table() {
    if (rows.empty()) return;
    std::vector<std::pair<std::string, Row>> v(rows.begin(), rows.end());
    std::sort(v.begin(), v.end(),
              [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
    double total = 0;
    for (const auto& r : v) total += r.second.seconds;
    std::fprintf(stderr, "\nEMBER_VULKAN_PROFILE: %.3f s in %zu rows (op time includes sync)\n",
                 total, v.size());
    std::fprintf(stderr, "%10s %6s %9s %10s  %s\n", "ms", "%", "calls", "us/call", "row");
    for (const auto& [name, r] : v)
      std::fprintf(stderr, "%10.1f %6.2f %9lld %10.1f  %s\n", r.seconds * 1e3,
                   100.0 * r.seconds / std::max(total, 1e-12), static_cast<long long>(r.calls),
                   r.seconds * 1e6 / double(std::max<int64_t>(r.calls, 1)), name.c_str());
    for (const auto& [dev, s] : caches)
      std::fprintf(
          stderr, "pipeline cache vulkan:%lld: %lld compiled, %lld from disk, %lld memory hits\n",
          static_cast<long long>(dev), static_cast<long long>(s.compiled),
          static_cast<long long>(s.loaded_from_disk), static_cast<long long>(s.memory_hits));
  }
};

Table& table() {
  static Table t;
  return t;
}

}  // namespace

int level() {
  static const int l = int(env_int("EMBER_VULKAN_PROFILE", 0, 0, 2));
  return l;
}

std::string row(const char* op_name, const codegen::Lowering& l) {
  std::ostringstream os;
  os << op_name << ":";
  for (size_t i = 0; i < l.launches.size(); ++i)
    os << (i ? "+" : " ") << (l.launches[i].kernel ? l.launches[i].kernel->name : "?");
  if (level() >= 2 && !l.launches.empty()) {
    for (const auto& b : l.launches.front().bindings) {
      if (b.scratch >= 0 || !b.tensor.defined()) continue;
      os << " [";
      for (int64_t d = 0; d < b.tensor.dim(); ++d) os << (d ? "," : "") << b.tensor.size(d);
      os << "]";
    }
  }
  return os.str();
}

void add(const std::string& name, double seconds) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  Row& r = t.rows[name];
  r.seconds += seconds;
  r.calls++;
}

void set_cache(int64_t device, const CacheStats& s) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.caches[device] = s;
}

}  // namespace ember::vk::profile
