// Vulkan interop and runtime options (as Burn's wgpu init_device / init_setup). Include this
// header only where the Vulkan headers are available (it uses VkInstance etc.); ember.h does not
// include it. See docs/vulkan.md.
#pragma once
#include <cstdint>

#include <vulkan/vulkan_core.h>

#include "ember/device.h"

namespace ember::vulkan {

/// How tensors' device memory is obtained.
struct MemoryConfiguration {
  enum class Kind : uint8_t {
    SubSlices,       // small allocations share pages of `page_size` bytes (the default)
    ExclusivePages,  // every allocation has its own VkDeviceMemory (rounded to a size class)
  };
  Kind kind = Kind::SubSlices;
  int64_t page_size = int64_t(64) << 20;       // bytes per shared page (SubSlices)
  int64_t max_slice_size = int64_t(16) << 20;  // larger allocations get their own page
};

struct RuntimeOptions {
  /// Ops recorded into one command buffer before it is submitted (reads and sync() submit
  /// earlier). 0 = env EMBER_VULKAN_MAX_TASKS, else the measured default (docs/vulkan.md).
  int64_t max_tasks = 0;
  MemoryConfiguration memory;
};

/// Registers a device the application created (to share it with a renderer). `instance` must be
/// API 1.1+; `queue` (of `queue_family`, with compute) is used by Ember for its submissions: the
/// application must not submit to it from another thread at the same time. `enabled` is the
/// VkPhysicalDeviceFeatures2 chain the device was created with (null: none of the optional
/// features, so only f32/i32/u32/bool). Returns Device::vulkan(DeviceKind::Existing(id)).
/// The application keeps ownership: destroy the device only after the last Vulkan tensor.
Device init_device(VkInstance instance, VkPhysicalDevice physical, VkDevice device, VkQueue queue,
                   uint32_t queue_family, const VkPhysicalDeviceFeatures2* enabled = nullptr);

/// Waits for `device` and destroys every Vulkan object Ember created on it, so that the
/// application can destroy its VkDevice (init_device). Throws ember::Error while tensors on it
/// are alive. The device cannot be used afterwards.
void release_device(const Device& device);

/// Sets the runtime options of `device` before its first use. Throws ember::Error when the
/// device has already allocated or run anything, or for invalid options.
void init_setup(const Device& device, const RuntimeOptions& options);

/// The max_tasks in effect for `device` (after env and defaults).
int64_t max_tasks(const Device& device);

/// Number of kernels compiled (by shaderc) and loaded from the on-disk cache since start.
struct KernelCacheStats {
  int64_t compiled = 0;
  int64_t loaded_from_disk = 0;
  int64_t memory_hits = 0;
};
KernelCacheStats kernel_cache_stats(const Device& device);

}  // namespace ember::vulkan
