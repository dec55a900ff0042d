// The Vulkan loader opened at run time: libvulkan.so.1 is dlopen'ed and every entry point is
// fetched through vkGetInstanceProcAddr / vkGetDeviceProcAddr, so libember has no link-time
// dependency on Vulkan and a machine without it runs everything else.
#pragma once
#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan_core.h>

namespace ember::vk {

#define EMBER_VK_GLOBAL_FNS(X)              \
  X(vkCreateInstance)                       \
  X(vkEnumerateInstanceExtensionProperties) \
  X(vkEnumerateInstanceLayerProperties)     \
  X(vkEnumerateInstanceVersion)

#define EMBER_VK_INSTANCE_FNS(X)              \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures)              \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkEnumerateDeviceExtensionProperties)     \
  X(vkCreateDevice)                           \
  X(vkGetDeviceProcAddr)                      \
  X(vkCreateDebugUtilsMessengerEXT)           \
  X(vkDestroyDebugUtilsMessengerEXT)

#define EMBER_VK_DEVICE_FNS(X)     \
  X(vkDestroyDevice)               \
  X(vkGetDeviceQueue)              \
  X(vkDeviceWaitIdle)              \
  X(vkQueueSubmit)                 \
  X(vkQueueWaitIdle)               \
  X(vkAllocateMemory)              \
  X(vkFreeMemory)                  \
  X(vkMapMemory)                   \
  X(vkUnmapMemory)                 \
  X(vkCreateBuffer)                \
  X(vkDestroyBuffer)               \
  X(vkGetBufferMemoryRequirements) \
  X(vkBindBufferMemory)            \
  X(vkCreateShaderModule)          \
  X(vkDestroyShaderModule)         \
  X(vkCreateDescriptorSetLayout)   \
  X(vkDestroyDescriptorSetLayout)  \
  X(vkCreatePipelineLayout)        \
  X(vkDestroyPipelineLayout)       \
  X(vkCreateComputePipelines)      \
  X(vkDestroyPipeline)             \
  X(vkCreatePipelineCache)         \
  X(vkDestroyPipelineCache)        \
  X(vkCreateDescriptorPool)        \
  X(vkDestroyDescriptorPool)       \
  X(vkResetDescriptorPool)         \
  X(vkAllocateDescriptorSets)      \
  X(vkUpdateDescriptorSets)        \
  X(vkCreateCommandPool)           \
  X(vkDestroyCommandPool)          \
  X(vkAllocateCommandBuffers)      \
  X(vkFreeCommandBuffers)          \
  X(vkBeginCommandBuffer)          \
  X(vkEndCommandBuffer)            \
  X(vkResetCommandBuffer)          \
  X(vkCmdBindPipeline)             \
  X(vkCmdBindDescriptorSets)       \
  X(vkCmdDispatch)                 \
  X(vkCmdPipelineBarrier)          \
  X(vkCmdCopyBuffer)               \
  X(vkCmdFillBuffer)               \
  X(vkCreateFence)                 \
  X(vkDestroyFence)                \
  X(vkResetFences)                 \
  X(vkWaitForFences)               \
  X(vkGetFenceStatus)

#define EMBER_VK_DECLARE(name) PFN_##name name = nullptr;

/// Entry points that need no instance.
struct GlobalFns {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  EMBER_VK_GLOBAL_FNS(EMBER_VK_DECLARE)
};
struct InstanceFns {
  EMBER_VK_INSTANCE_FNS(EMBER_VK_DECLARE)
  void load(VkInstance instance);
};
struct DeviceFns {
  EMBER_VK_DEVICE_FNS(EMBER_VK_DECLARE)
  void load(const InstanceFns& ifn, VkDevice device);
};

/// A zeroed Vulkan struct with its sType set.
template <typename T>
T make(VkStructureType type) {
  T t{};
  t.sType = type;
  return t;
}

/// Opens libvulkan.so.1 once. Throws ember::Error ("no Vulkan loader: ...") when it is absent.
const GlobalFns& loader();

/// "VK_ERROR_OUT_OF_DEVICE_MEMORY" etc.
const char* result_name(VkResult r);
/// Throws ember::Error tagged [vulkan] naming the call and the status.
[[noreturn]] void fail(const char* call, VkResult r);

}  // namespace ember::vk

/// Every Vulkan call that returns a VkResult goes through this: a negative status is an
/// ember::Error carrying the call and the status name.
#define EMBER_VK_CHECK(call)                                    \
  do {                                                          \
    const VkResult ember_vk_r_ = (call);                        \
    if (ember_vk_r_ < 0) ::ember::vk::fail(#call, ember_vk_r_); \
  } while (0)
