// Ember's own VkInstance (API 1.1+), its adapters, and the validation messenger.
#pragma once
#include <mutex>
#include <string>
#include <vector>

#include "backends/vulkan/loader.h"
#include "ember/device.h"

namespace ember::vk {

struct Adapter {
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties props{};
  DeviceKind::Kind kind = DeviceKind::Kind::Cpu;  // from props.deviceType
  bool usable = false;                            // API >= 1.1 and a compute queue
};

class Instance {
 public:
  /// The process-wide instance, created on first use. Throws ember::Error when there is no
  /// loader, instance creation fails, or (for `require_adapter`) there is no adapter.
  static Instance& get();
  VkInstance handle() const { return instance_; }
  const InstanceFns& fn() const { return fn_; }
  const std::vector<Adapter>& adapters() const { return adapters_; }
  bool validation() const { return validation_; }

  /// Validation errors reported since the last call (empty when none); clears them.
  static std::string take_validation_errors();
  /// Records a validation message (called by the debug messenger).
  static void report(VkDebugUtilsMessageSeverityFlagBitsEXT severity, const char* msg);

  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

 private:
  Instance();
  VkInstance instance_ = VK_NULL_HANDLE;
  InstanceFns fn_;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  bool validation_ = false;
  std::vector<Adapter> adapters_;
};

/// "DiscreteGpu", "IntegratedGpu", "VirtualGpu", "Cpu" or "Other".
const char* kind_name(VkPhysicalDeviceType t);
DeviceKind::Kind kind_of(VkPhysicalDeviceType t);

}  // namespace ember::vk
