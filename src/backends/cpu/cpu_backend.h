// The cpu backend: the default device. Threaded, vectorised kernels (kernels.h) for the ops a
// training step spends its time in, oneDNN's sgemm for f32 matmul, a caching host allocator; the
// reference kernels for everything else.
#pragma once
#include "backends/ref/ref_backend.h"

namespace ember::cpu {

class CpuBackend : public ref::RefBackend {
 public:
  CpuBackend();
  ~CpuBackend() override { drop_stream(); }
  std::string name() const override { return "cpu"; }
  Device device() const override { return Device::cpu(); }
  DeviceInfo info() const override;
  /// The CPU model and vector features (autotune_util.h: cpu_identity).
  std::string autotune_identity() const override;
  void* allocate(int64_t nbytes) override;
  void deallocate(void* ptr, int64_t nbytes) override;
  MemoryStats memory_stats() const override;
  void empty_cache() override;
  /// Runs an op through the cpu kernels when one applies, else through the reference kernels.
  void run_op(const ir::Op& op) override;
  /// Softmax, layer/rms norm (f32/f64) and convolution (f32, oneDNN) as one kernel (fused.cpp).
  bool run_fused(const ir::Fused& op) override;

 protected:
  /// Element-wise graphs evaluated tile by tile (fused_graph.cpp).
  bool fusible(const ir::Op& op) const override;
  bool execute_graph(const ir::FusedGraph& g) override;
  bool reducible(const ir::Reduce& op) const override;
  /// An f32 matmul anchors its epilogue (bias, activation, residual, scale), run as one oneDNN
  /// matmul with post-ops when it maps onto them (epilogue.cpp).
  bool anchorable(const ir::Op& op) const override;
  /// An f32 forward convolution oneDNN runs on its tensors as they are anchors one too
  /// (conv.cpp: the convolution primitive with the same post-ops).
  bool conv_anchorable(const ir::Conv& op) const override;
  bool execute_conv_anchored(const ir::Conv& anchor, const ir::FusedGraph& epilogue,
                             int32_t anchor_input) override;
  bool execute_anchored(const ir::Op& anchor, const ir::FusedGraph& epilogue,
                        int32_t anchor_input) override;
};

}  // namespace ember::cpu
