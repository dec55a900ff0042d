// The Vulkan device registry and the public functions of ember/vulkan.h.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/vulkan/instance.h"
#include "backends/vulkan/vulkan_backend.h"
#include "core/env.h"
#include "ember/error.h"
#include "ember/vulkan.h"

namespace ember::vk {

namespace {
struct Entry {
  int adapter = -1;  // index into Instance::adapters(), -1 for the application's devices
  // An application's device (init_device).
  VkInstance instance = VK_NULL_HANDLE;
  std::unique_ptr<InstanceFns> ifn;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t family = 0;
  Features features;
  bool released = false;
  std::unique_ptr<VulkanBackend> backend;
};

struct Registry {
  std::mutex mutex;
  bool scanned = false;
  std::string error;  // why there are no adapters
  std::vector<std::unique_ptr<Entry>> entries;

  // Lists Ember's adapters once (the application's devices come after them).
  void scan() {
    if (scanned) return;
    scanned = true;
    try {
      const Instance& inst = Instance::get();
      for (size_t i = 0; i < inst.adapters().size(); ++i) {
        if (!inst.adapters()[i].usable) continue;
        auto e = std::make_unique<Entry>();
        e->adapter = int(i);
        entries.push_back(std::move(e));
      }
      if (entries.empty()) error = "no Vulkan device (the loader found no adapter with compute)";
    } catch (const Error& e) {
      error = e.what();
    }
  }
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: backends outlive static tensors
  return *r;
}

void quiesce_all() {
  Registry& r = registry();
  std::unique_lock<std::mutex> lock(r.mutex, std::try_to_lock);
  if (!lock.owns_lock()) return;  // exit() from inside a registry call: nothing safe to do
  for (const auto& e : r.entries)
    if (e->backend && !e->released) e->backend->quiesce();
}

std::string adapter_list() {
  std::string s;
  Registry& r = registry();
  for (const auto& e : r.entries) {
    if (e->adapter < 0) continue;
    const Adapter& a = Instance::get().adapters()[size_t(e->adapter)];
    s += std::string(s.empty() ? "" : ", ") + a.props.deviceName + " (" +
         kind_name(a.props.deviceType) + ")";
  }
  return s.empty() ? "none" : s;
}

int64_t resolve_locked(const DeviceKind& kind) {
  Registry& r = registry();
  r.scan();
  using K = DeviceKind::Kind;
  if (kind.kind == K::Existing) {
    const int64_t id = kind.index;
    if (id < 0 || size_t(id) >= r.entries.size() || r.entries[size_t(id)]->adapter >= 0 ||
        r.entries[size_t(id)]->released)
      EMBER_FAIL("device", "no Vulkan device registered as Existing(", id,
                 ") (init_device returns the device to use)");
    return id;
  }
  if (r.entries.empty() ||
      std::all_of(r.entries.begin(), r.entries.end(), [](const auto& e) { return e->adapter < 0; }))
    EMBER_FAIL("device", "no Vulkan device/loader: ", r.error.empty() ? "no adapter" : r.error);
  const auto& adapters = Instance::get().adapters();
  auto nth = [&](K k, int64_t n) -> int64_t {
    for (size_t i = 0; i < r.entries.size(); ++i) {
      const int a = r.entries[i]->adapter;
      if (a >= 0 && adapters[size_t(a)].kind == k && n-- == 0) return int64_t(i);
    }
    return -1;
  };
  if (kind.kind == K::DefaultDevice) {
    for (K k : {K::DiscreteGpu, K::IntegratedGpu, K::VirtualGpu, K::Cpu})
      if (int64_t i = nth(k, 0); i >= 0) return i;
    return 0;
  }
  const int64_t i = nth(kind.kind, kind.kind == K::Cpu ? 0 : kind.index);
  if (i < 0)
    EMBER_FAIL("device", "no Vulkan adapter ", kind.str(),
               " on this machine (adapters: ", adapter_list(), ")");
  return i;
}
}  // namespace

Device resolve(const DeviceKind& kind) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  const std::string e = env_string("EMBER_VULKAN_DEFAULT_DEVICE");
  if (kind.kind != DeviceKind::Kind::DefaultDevice || e.empty())
    return Device(DeviceType::vulkan, resolve_locked(kind));
  // A device that is not there is an error (core/env.h), blamed on the variable that named it.
  try {
    return Device(DeviceType::vulkan, resolve_locked(DeviceKind::parse(e)));
  } catch (const Error& err) {
    std::string why = err.what();  // without its "[device] "
    if (why.rfind("[", 0) == 0 && why.find("] ") != std::string::npos)
      why = why.substr(why.find("] ") + 2);
    EMBER_FAIL("device", "EMBER_VULKAN_DEFAULT_DEVICE=", e,
               " does not name a usable device: ", why);
  }
}

std::vector<Device> devices() {
  std::lock_guard<std::mutex> lock(registry().mutex);
  Registry& r = registry();
  r.scan();
  std::vector<Device> out;
  for (size_t i = 0; i < r.entries.size(); ++i)
    if (!r.entries[i]->released) out.emplace_back(DeviceType::vulkan, int64_t(i));
  return out;
}

void quiesce_at_exit() {
  static const bool registered = std::atexit(quiesce_all) == 0;
  (void)registered;
}

VulkanBackend& backend(int64_t index) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  Registry& r = registry();
  r.scan();
  if (index < 0 || size_t(index) >= r.entries.size())
    EMBER_FAIL("device", "no Vulkan device vulkan:", index, " (",
               r.entries.empty() ? "no Vulkan device/loader: " + r.error
                                 : std::to_string(r.entries.size()) + " registered",
               ")");
  Entry& e = *r.entries[size_t(index)];
  if (e.released) EMBER_FAIL("device", "vulkan:", index, " was released (release_device)");
  if (!e.backend) {
    if (e.adapter >= 0) {
      Instance& inst = Instance::get();
      const Adapter& a = inst.adapters()[size_t(e.adapter)];
      e.backend = std::make_unique<VulkanBackend>(
          index, std::make_unique<Context>(inst.handle(), inst.fn(), a.physical),
          kind_name(a.props.deviceType));
    } else {
      e.backend = std::make_unique<VulkanBackend>(
          index,
          std::make_unique<Context>(e.instance, *e.ifn, e.physical, e.device, e.queue, e.family,
                                    e.features),
          "Existing");
    }
  }
  return *e.backend;
}

}  // namespace ember::vk

namespace ember::vulkan {

namespace {
vk::VulkanBackend& backend_of(const Device& d, const char* op) {
  if (d.type() != DeviceType::vulkan) EMBER_FAIL(op, d.str(), " is not a Vulkan device");
  return vk::backend(d.index());
}
}  // namespace

Device init_device(VkInstance instance, VkPhysicalDevice physical, VkDevice device, VkQueue queue,
                   uint32_t queue_family, const VkPhysicalDeviceFeatures2* enabled) {
  EMBER_CHECK(instance && physical && device && queue, "init_device",
              "instance, physical device, device and queue must all be given");
  vk::loader();
  auto e = std::make_unique<vk::Entry>();
  e->instance = instance;
  e->ifn = std::make_unique<vk::InstanceFns>();
  e->ifn->load(instance);
  e->physical = physical;
  e->device = device;
  e->queue = queue;
  e->family = queue_family;
  // Read the features the application enabled from its create-info chain.
  for (const auto* p = reinterpret_cast<const VkBaseInStructure*>(enabled); p; p = p->pNext) {
    switch (p->sType) {
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2: {
        const auto* f = reinterpret_cast<const VkPhysicalDeviceFeatures2*>(p);
        e->features.float64 = f->features.shaderFloat64;
        e->features.int64 = f->features.shaderInt64;
        e->features.int16 = f->features.shaderInt16;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES:
        e->features.storage16 = reinterpret_cast<const VkPhysicalDevice16BitStorageFeatures*>(p)
                                    ->storageBuffer16BitAccess;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES:
        e->features.storage8 = reinterpret_cast<const VkPhysicalDevice8BitStorageFeatures*>(p)
                                   ->storageBuffer8BitAccess;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES: {
        const auto* f = reinterpret_cast<const VkPhysicalDeviceShaderFloat16Int8Features*>(p);
        e->features.float16 = f->shaderFloat16;
        e->features.int8 = f->shaderInt8;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES: {
        const auto* f = reinterpret_cast<const VkPhysicalDeviceVulkan12Features*>(p);
        e->features.storage8 = f->storageBuffer8BitAccess;
        e->features.float16 = f->shaderFloat16;
        e->features.int8 = f->shaderInt8;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES:
        e->features.storage16 =
            reinterpret_cast<const VkPhysicalDeviceVulkan11Features*>(p)->storageBuffer16BitAccess;
        break;
      default:
        break;
    }
  }
  auto& r = vk::registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.scan();
  r.entries.push_back(std::move(e));
  return Device(DeviceType::vulkan, int64_t(r.entries.size()) - 1);
}

void release_device(const Device& device) {
  vk::VulkanBackend& b = backend_of(device, "release_device");
  b.release();
  auto& r = vk::registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto& e = *r.entries[size_t(device.index())];
  e.released = true;
  e.backend.reset();
}

void init_setup(const Device& device, const RuntimeOptions& options) {
  backend_of(device, "init_setup").configure(options);
}

int64_t max_tasks(const Device& device) { return backend_of(device, "max_tasks").max_tasks(); }

KernelCacheStats kernel_cache_stats(const Device& device) {
  vk::VulkanBackend& b = backend_of(device, "kernel_cache_stats");
  if (!b.used()) return {};
  const auto& s = b.pipelines().stats();
  return {s.compiled, s.loaded_from_disk, s.memory_hits};
}

}  // namespace ember::vulkan
