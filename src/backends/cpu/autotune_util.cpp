// The cpu backend's autotuning helpers (autotune_util.h).
#include "backends/cpu/autotune_util.h"

#include <fstream>
#include <sstream>
#include <thread>

#include "backends/ref/dispatch.h"
#include "core/dispatch.h"

namespace ember::cpu {

autotune::Autotuner& tuner() {
  static autotune::Autotuner& t = autotune::for_device(Device::cpu());
  return t;
}

std::string cpu_identity() {
  std::string model = "unknown cpu", flags;
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  bool have_model = false, have_flags = false;
  while (std::getline(in, line) && !(have_model && have_flags)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, line.find_first_of(" \t"));
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (!have_model && key == "model" && line.compare(0, 10, "model name") == 0) {
      model = value;
      have_model = true;
    } else if (!have_flags && key == "flags") {
      std::istringstream ss(value);
      std::string f;
      std::vector<std::string> got;
      while (ss >> f) got.push_back(f);
      for (const char* want : {"avx2", "fma", "avx512f", "avx512_bf16", "amx_tile"})
        for (const std::string& g : got)
          if (g == want) flags += (flags.empty() ? "" : " ") + g;
      have_flags = true;
    }
  }
  return "cpu | " + model + " | " + (flags.empty() ? "no avx2" : flags) + " | " +
         std::to_string(std::thread::hardware_concurrency()) + " hardware threads";
}

std::vector<double> host_values(const Tensor& t) {
  std::vector<double> out;
  out.reserve(size_t(t.numel()));
  if (t.numel() == 0) return out;
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = ref::ptr<T>(t);
    const int64_t nd = t.dim();
    std::vector<int64_t> idx(size_t(nd), 0);
    for (int64_t n = 0; n < t.numel(); ++n) {
      int64_t off = 0;
      for (int64_t d = 0; d < nd; ++d) off += idx[size_t(d)] * t.stride(d);
      out.push_back(scalar_cast<double>(p[off]));
      for (int64_t d = nd - 1; d >= 0; --d) {
        if (++idx[size_t(d)] < t.size(d)) break;
        idx[size_t(d)] = 0;
      }
    }
  });
  return out;
}

std::string describe(const Tensor& t) {
  std::string s = std::string(dtype_name(t.dtype())) + " [";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

}  // namespace ember::cpu
