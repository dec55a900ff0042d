// The browser's cpu device (the WebAssembly build's Device::cpu()): the reference kernels, with
// SIMD128 paths for the hot ones (element-wise f32, matmul, im2col) and, in the pthreads build,
// work split across the page's threads. Native builds use src/backends/cpu instead.
#pragma once
#include "backends/ref/ref_backend.h"

namespace ember::wasm {

class WasmBackend : public ref::RefBackend {
 public:
  std::string name() const override { return "cpu"; }
  Device device() const override { return Device::cpu(); }
  DeviceInfo info() const override;
};

}  // namespace ember::wasm
