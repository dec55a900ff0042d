#include "backends/vulkan/loader.h"

#include <dlfcn.h>

#include <string>

#include "ember/error.h"

namespace ember::vk {

const GlobalFns& loader() {
  struct Loaded {
    GlobalFns fns;
    std::string error;
  };
  static const Loaded loaded = [] {
    Loaded l;
    void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      l.error = e ? e : "libvulkan.so.1 not found";
      return l;
    }
    // Never dlclose: drivers register atexit handlers inside the loaded objects.
    l.fns.vkGetInstanceProcAddr =
        reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
    if (!l.fns.vkGetInstanceProcAddr) {
      l.error = "libvulkan.so.1 has no vkGetInstanceProcAddr";
      return l;
    }
#define EMBER_VK_LOAD_GLOBAL(name) \
  l.fns.name = reinterpret_cast<PFN_##name>(l.fns.vkGetInstanceProcAddr(nullptr, #name));
    EMBER_VK_GLOBAL_FNS(EMBER_VK_LOAD_GLOBAL)
#undef EMBER_VK_LOAD_GLOBAL
    if (!l.fns.vkCreateInstance) l.error = "libvulkan.so.1 has no vkCreateInstance";
    return l;
  }();
  if (!loaded.error.empty())
    EMBER_FAIL("vulkan", "no Vulkan loader (", loaded.error,
               "); install libvulkan1 and a driver (e.g. mesa-vulkan-drivers)");
  return loaded.fns;
}

void InstanceFns::load(VkInstance instance) {
  const auto gipa = loader().vkGetInstanceProcAddr;
#define EMBER_VK_LOAD_INSTANCE(name) name = reinterpret_cast<PFN_##name>(gipa(instance, #name));
  EMBER_VK_INSTANCE_FNS(EMBER_VK_LOAD_INSTANCE)
#undef EMBER_VK_LOAD_INSTANCE
  if (!vkEnumeratePhysicalDevices || !vkCreateDevice || !vkGetDeviceProcAddr)
    EMBER_FAIL("vulkan", "the Vulkan loader returned no instance entry points");
}

void DeviceFns::load(const InstanceFns& ifn, VkDevice device) {
  const auto gdpa = ifn.vkGetDeviceProcAddr;
#define EMBER_VK_LOAD_DEVICE(name)                          \
  name = reinterpret_cast<PFN_##name>(gdpa(device, #name)); \
  if (!name) EMBER_FAIL("vulkan", "the driver has no entry point " #name);
  EMBER_VK_DEVICE_FNS(EMBER_VK_LOAD_DEVICE)
#undef EMBER_VK_LOAD_DEVICE
}

const char* result_name(VkResult r) {
  switch (r) {
#define EMBER_VK_RESULT(x) \
  case x:                  \
    return #x;
    EMBER_VK_RESULT(VK_SUCCESS)
    EMBER_VK_RESULT(VK_NOT_READY)
    EMBER_VK_RESULT(VK_TIMEOUT)
    EMBER_VK_RESULT(VK_INCOMPLETE)
    EMBER_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    EMBER_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    EMBER_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    EMBER_VK_RESULT(VK_ERROR_DEVICE_LOST)
    EMBER_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    EMBER_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    EMBER_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    EMBER_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    EMBER_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    EMBER_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    EMBER_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    EMBER_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
    EMBER_VK_RESULT(VK_ERROR_UNKNOWN)
    EMBER_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    EMBER_VK_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    EMBER_VK_RESULT(VK_ERROR_FRAGMENTATION)
    EMBER_VK_RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    EMBER_VK_RESULT(VK_PIPELINE_COMPILE_REQUIRED)
#undef EMBER_VK_RESULT
    default:
      return "VK_ERROR_(unnamed)";
  }
}

void fail(const char* call, VkResult r) {
  EMBER_FAIL("vulkan", call, " failed: ", result_name(r), " (", int(r), ")",
             r == VK_ERROR_DEVICE_LOST ? "; the device is lost and can no longer be used" : "");
}

}  // namespace ember::vk
