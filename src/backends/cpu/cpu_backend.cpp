#include "backends/cpu/cpu_backend.h"

#include <thread>

namespace ember::cpu {

DeviceInfo CpuBackend::info() const {
  DeviceInfo d = RefBackend::info();
  d.device = device();
  d.name = "cpu (host)";
  d.details = std::to_string(std::thread::hardware_concurrency()) + " hardware threads; every dtype";
  return d;
}

}  // namespace ember::cpu
