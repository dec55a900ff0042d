// The cpu backend: the default device. For now it shares the reference kernels; its own
// threaded, vectorized kernels replace them op by op (issue: cpu backend speed).
#pragma once
#include "backends/ref/ref_backend.h"

namespace ember::cpu {

class CpuBackend : public ref::RefBackend {
 public:
  std::string name() const override { return "cpu"; }
  Device device() const override { return Device::cpu(); }
  DeviceInfo info() const override;
};

}  // namespace ember::cpu
