#include "backends/wasm/wasm_backend.h"

#include <string>

#include "backends/wasm/kernels.h"
#include "ember/device.h"

namespace ember::wasm {

DeviceInfo WasmBackend::info() const {
  DeviceInfo d = RefBackend::info();
  d.device = device();
  d.name = "wasm (WebAssembly)";
#ifdef __wasm_simd128__
  const std::string simd = "SIMD128";
#else
  const std::string simd = "no SIMD";
#endif
  d.details = simd + ", " + std::to_string(num_threads()) + " thread(s); every dtype";
  return d;
}

namespace {
// Which ops have a wasm kernel; each returns false to fall back to the reference.
struct Fast {
  bool operator()(const ir::Copy& o) const { return copy(o); }
  bool operator()(const ir::Fill& o) const { return fill(o); }
  bool operator()(const ir::Unary& o) const { return unary(o); }
  bool operator()(const ir::Binary& o) const { return binary(o); }
  bool operator()(const ir::Reduce& o) const { return reduce(o); }
  bool operator()(const ir::Matmul& o) const { return matmul(o); }
  bool operator()(const ir::Im2col& o) const { return im2col(o); }
  template <typename Op>
  bool operator()(const Op&) const {
    return false;
  }
};

struct FastFused {
  bool operator()(const ir::Conv& o) const { return conv(o); }
  bool operator()(const ir::Pool& o) const { return pool(o); }
  template <typename Op>
  bool operator()(const Op&) const {
    return false;
  }
};
}  // namespace

void WasmBackend::run_op(const ir::Op& op) {
  if (!std::visit(Fast{}, op)) RefBackend::run_op(op);
}

bool WasmBackend::run_fused(const ir::Fused& op) { return std::visit(FastFused{}, op); }

}  // namespace ember::wasm

namespace ember {
// The public thread setting (ember/device.h) is the wasm pool's in this build.
int get_num_threads() { return wasm::num_threads(); }
void set_num_threads(int n) { wasm::set_num_threads(n); }
}  // namespace ember
