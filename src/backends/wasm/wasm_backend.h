// The browser's cpu device (the WebAssembly build's Device::cpu()): the reference kernels, with
// SIMD128 paths for the hot f32 ones (kernels.h: matmul, element-wise, last-dim sum/max,
// im2col, convolution and max pooling) and, in the pthreads build, their work split across a
// small pool of threads (thread_pool.h). Every op or layout without such a path runs the
// reference kernel. Native builds use src/backends/cpu instead.
#pragma once
#include "backends/ref/ref_backend.h"

namespace ember::wasm {

class WasmBackend : public ref::RefBackend {
 public:
  std::string name() const override { return "cpu"; }
  Device device() const override { return Device::cpu(); }
  DeviceInfo info() const override;
  /// Runs an op through a SIMD kernel when one applies, else through the reference kernel.
  void run_op(const ir::Op& op) override;
  /// f32 forward convolution (im2col + the SIMD GEMM) and f32 max pooling.
  bool run_fused(const ir::Fused& op) override;
};

/// Threads the wasm kernels use (>= 1; always 1 in the single-threaded build).
int num_threads();
/// Sets the thread count for the pthreads build (n <= 0: the default,
/// std::thread::hardware_concurrency() capped at 8; at most 8). No effect single-threaded.
/// Workers are created when a kernel first needs them and kept.
void set_num_threads(int n);

}  // namespace ember::wasm
