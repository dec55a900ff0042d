#include "backends/wasm/wasm_backend.h"

namespace ember::wasm {

DeviceInfo WasmBackend::info() const {
  DeviceInfo d = RefBackend::info();
  d.device = device();
  d.name = "wasm (WebAssembly)";
  d.details = "single-threaded; every dtype";
  return d;
}

}  // namespace ember::wasm
