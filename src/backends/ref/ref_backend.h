// The reference backend: host memory and the plain-loop kernels of kernels.h.
#pragma once
#include "runtime/backend.h"

namespace ember::ref {

class RefBackend : public Backend {
 public:
  RefBackend() = default;
  ~RefBackend() override { drop_stream(); }
  std::string name() const override { return "ref"; }
  Device device() const override { return Device::ref(); }
  void* allocate(int64_t nbytes) override;
  void deallocate(void* ptr, int64_t nbytes) override;
  void write_bytes(void* dst, int64_t dst_offset, const void* src, int64_t nbytes) override;
  void read_bytes(const void* src, int64_t src_offset, void* dst, int64_t nbytes) override;
  void run_op(const ir::Op& op) override;
  bool supports_dtype(DType) const override { return true; }
  DeviceInfo info() const override;
};

}  // namespace ember::ref
