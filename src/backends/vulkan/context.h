// One logical device: created by Ember on an adapter, or the application's own (init_device).
#pragma once
#include <cstdint>
#include <mutex>
#include <string>

#include "backends/vulkan/loader.h"
#include "codegen/kernel.h"

namespace ember::vk {

/// Descriptors one launch binds at most (storage buffers + the params uniform buffer): the
/// backend records them from fixed arrays of this size.
constexpr uint32_t kMaxBindings = 32;

/// The optional features Ember uses, as enabled on the logical device.
struct Features {
  bool float16 = false, float64 = false, int64 = false, int16 = false, int8 = false;
  bool storage8 = false, storage16 = false;  // storageBuffer{8,16}BitAccess
};

class Context {
 public:
  /// Creates a logical device on `physical` with every feature above the adapter has.
  Context(VkInstance instance, const InstanceFns& ifn, VkPhysicalDevice physical);
  /// Wraps the application's device; `enabled` describes the features it was created with.
  Context(VkInstance instance, const InstanceFns& ifn, VkPhysicalDevice physical, VkDevice device,
          VkQueue queue, uint32_t queue_family, const Features& enabled);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DeviceFns& fn() const { return fn_; }
  VkDevice device() const { return device_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return family_; }
  const VkPhysicalDeviceProperties& props() const { return props_; }
  const VkPhysicalDeviceMemoryProperties& memory() const { return mem_; }
  const Features& features() const { return features_; }
  const codegen::Caps& caps() const { return caps_; }
  uint32_t subgroup_size() const { return subgroup_size_; }
  bool owned() const { return owned_; }
  /// Queue submissions are externally synchronised (the application may share the queue).
  std::mutex& queue_mutex() { return queue_mutex_; }
  /// "<vendor>:<device>:<driver version>:<pipelineCacheUUID>": keys the on-disk kernel cache.
  std::string identity() const;
  /// Memory type for `want` flags among `type_bits`, preferring `prefer` too; -1 when none.
  int memory_type(uint32_t type_bits, VkMemoryPropertyFlags want,
                  VkMemoryPropertyFlags prefer = 0) const;

 private:
  void query(VkPhysicalDevice physical, Features* available);
  void fill_caps();
  const InstanceFns& ifn_;
  VkPhysicalDevice physical_;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t family_ = 0;
  bool owned_ = true;
  DeviceFns fn_;
  VkPhysicalDeviceProperties props_{};
  VkPhysicalDeviceMemoryProperties mem_{};
  Features features_;
  codegen::Caps caps_;
  uint32_t subgroup_size_ = 32;
  std::mutex queue_mutex_;
};

}  // namespace ember::vk
