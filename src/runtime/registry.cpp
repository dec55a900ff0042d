// The device registry: which Backend object owns a Device, and the device-level functions of
// ember/device.h that need one (available_devices, supports_dtype, sync, memory_stats).
// The one place that knows every backend; core and the frontend only see runtime/backend.h.
#include <string>
#include <vector>

#include "backends/ref/ref_backend.h"
#ifdef __EMSCRIPTEN__
#include "backends/wasm/wasm_backend.h"
#else
#include "backends/cpu/cpu_backend.h"
#endif
#include "ember/device_choices.h"
#include "ember/error.h"
#include "runtime/backend.h"
#ifdef EMBER_HAVE_VULKAN
#include "backends/vulkan/vulkan_backend.h"
#endif
#ifdef EMBER_HAVE_OPENCL
#include "backends/opencl/opencl_backend.h"
#endif
#ifdef EMBER_HAVE_WEBGPU
#include "backends/webgpu/webgpu_backend.h"
#endif

namespace ember {

Backend& backend_for(const Device& device) {
  static ref::RefBackend ref_backend;
#ifdef __EMSCRIPTEN__
  static wasm::WasmBackend cpu_backend;  // the browser's cpu: SIMD128 (+ threads) over ref
#else
  static cpu::CpuBackend cpu_backend;
#endif
  switch (device.type()) {
    case DeviceType::ref:
      return ref_backend;
    case DeviceType::cpu:
      return cpu_backend;
    case DeviceType::vulkan:
#ifdef EMBER_HAVE_VULKAN
      return vk::backend(device.index());
#else
      EMBER_FAIL("device",
                 "backend not built: vulkan (Ember was built without EMBER_BACKEND_VULKAN)");
#endif
    case DeviceType::opencl:
#ifdef EMBER_HAVE_OPENCL
      return cl::backend(device.index());
#else
      EMBER_FAIL("device",
                 "backend not built: opencl (Ember was built without EMBER_BACKEND_OPENCL)");
#endif
    case DeviceType::webgpu:
#ifdef EMBER_HAVE_WEBGPU
      return webgpu::backend();
#else
      EMBER_FAIL("device",
                 "backend not built: webgpu (only the WebAssembly build has it: "
                 "scripts/build-wasm.sh)");
#endif
    case DeviceType::cuda:
      EMBER_FAIL("device",
                 "backend not built: cuda (Ember has no CUDA backend yet; use cpu, vulkan or "
                 "opencl)");
  }
  EMBER_FAIL("device", "unknown device ", device.str());
}

// Device::parse("vulkan:N"): the index must name a device.
Device vulkan_at(int64_t index) {
  const Device d(DeviceType::vulkan, index);
  backend_for(d);
  return d;
}

Device Device::vulkan(DeviceKind kind) {
#ifdef EMBER_HAVE_VULKAN
  return vk::resolve(kind);
#else
  EMBER_FAIL("device", "backend not built: vulkan (requested ", kind.str(),
             "); rebuild with -DEMBER_BACKEND_VULKAN=ON");
#endif
}

Device Device::cuda(int64_t index) {
  EMBER_FAIL("device", "backend not built: cuda (requested cuda:", index,
             "): Ember has no CUDA backend yet (use Device::vulkan() or Device::opencl() on an "
             "NVIDIA GPU, or cpu)");
}

Device Device::webgpu() {
  const Device d(DeviceType::webgpu, 0);
  backend_for(d);  // throws without the backend or an adapter
  return d;
}

Device Device::opencl(int64_t index) {
#ifdef EMBER_HAVE_OPENCL
  const Device d(DeviceType::opencl, index);
  backend_for(d);  // throws for an index that names no device
  return d;
#else
  EMBER_FAIL("device", "backend not built: opencl (requested opencl:", index,
             "); rebuild with -DEMBER_BACKEND_OPENCL=ON");
#endif
}

std::vector<std::string> device_choices() {
  std::vector<std::string> c = {"cpu", "ref"};
#ifdef EMBER_HAVE_VULKAN
  c.push_back("vulkan[:N]");
  c.push_back("vulkan:KIND");
#endif
#ifdef EMBER_HAVE_OPENCL
  c.push_back("opencl[:N]");
#endif
#ifdef EMBER_HAVE_WEBGPU
  c.push_back("webgpu");
#endif
  return c;
}

std::vector<DeviceInfo> available_devices() {
  std::vector<DeviceInfo> out = {backend_for(Device::cpu()).info(),
                                 backend_for(Device::ref()).info()};
  std::vector<Device> gpus;
#ifdef EMBER_HAVE_VULKAN
  for (const Device& d : vk::devices()) gpus.push_back(d);
#endif
#ifdef EMBER_HAVE_OPENCL
  for (const Device& d : cl::devices()) gpus.push_back(d);
#endif
#ifdef EMBER_HAVE_WEBGPU
  if (webgpu::available()) gpus.push_back(Device(DeviceType::webgpu, 0));
#endif
  // Every usable device; none (and no error) without a loader or a device.
  for (const Device& d : gpus) {
    try {
      out.push_back(backend_for(d).info());
    } catch (const Error&) {
      // A device whose context cannot be created is not available.
    }
  }
  return out;
}

bool supports_dtype(const Device& device, DType dtype) {
  return backend_for(device).supports_dtype(dtype);
}

void sync(const Device& device) { backend_for(device).sync(); }

void set_fusion(const Device& device, bool on) { backend_for(device).set_fusion(on); }
bool fusion_enabled(const Device& device) { return backend_for(device).fusion_enabled(); }
StreamStats stream_stats(const Device& device) { return backend_for(device).stream_stats(); }
void reset_stream_stats(const Device& device) { backend_for(device).reset_stream_stats(); }

MemoryStats memory_stats(const Device& device) { return backend_for(device).memory_stats(); }

void empty_cache(const Device& device) { backend_for(device).empty_cache(); }

}  // namespace ember
