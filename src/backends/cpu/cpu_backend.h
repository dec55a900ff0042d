// The cpu backend: the default device. It shares the reference kernels except where it has a
// faster one (matmul through oneDNN); its own threaded, vectorized kernels replace the rest op by
// op (issue: cpu backend speed).
#pragma once
#include "backends/ref/ref_backend.h"

namespace ember::cpu {

class CpuBackend : public ref::RefBackend {
 public:
  std::string name() const override { return "cpu"; }
  Device device() const override { return Device::cpu(); }
  DeviceInfo info() const override;
  /// Runs matmul through oneDNN (f32); everything else through the shared reference kernels.
  void execute(const ir::Op& op) override;
};

/// f32 batched matmul through oneDNN's sgemm; false when the op is not f32.
bool sgemm_matmul(const ir::Matmul& op);

}  // namespace ember::cpu
