#include "backends/vulkan/context.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "ember/error.h"

namespace ember::vk {

void Context::query(VkPhysicalDevice physical, Features* available) {
  ifn_.vkGetPhysicalDeviceProperties(physical, &props_);
  ifn_.vkGetPhysicalDeviceMemoryProperties(physical, &mem_);
  auto sub = make<VkPhysicalDeviceSubgroupProperties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
  auto p2 = make<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
  p2.pNext = &sub;
  if (ifn_.vkGetPhysicalDeviceProperties2) {
    ifn_.vkGetPhysicalDeviceProperties2(physical, &p2);
    if (sub.subgroupSize) subgroup_size_ = sub.subgroupSize;
  }
  if (!available) return;
  auto s16 = make<VkPhysicalDevice16BitStorageFeatures>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES);
  auto s8 = make<VkPhysicalDevice8BitStorageFeatures>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES);
  auto f16i8 = make<VkPhysicalDeviceShaderFloat16Int8Features>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES);
  s16.pNext = &s8;
  s8.pNext = &f16i8;
  auto f2 = make<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  f2.pNext = &s16;
  ifn_.vkGetPhysicalDeviceFeatures2(physical, &f2);
  available->float64 = f2.features.shaderFloat64;
  available->int64 = f2.features.shaderInt64;
  available->int16 = f2.features.shaderInt16;
  available->storage16 = s16.storageBuffer16BitAccess;
  // 8-bit storage and float16/int8 arithmetic are Vulkan 1.2 core (extensions before).
  const bool v12 = props_.apiVersion >= VK_API_VERSION_1_2;
  available->storage8 = v12 && s8.storageBuffer8BitAccess;
  available->float16 = v12 && f16i8.shaderFloat16;
  available->int8 = v12 && f16i8.shaderInt8;
}

void Context::fill_caps() {
  const Features& f = features_;
  caps_.f16 = f.float16 && f.storage16;
  caps_.f64 = f.float64;
  caps_.i64 = f.int64;
  caps_.i8 = f.int8 && f.storage8;
  caps_.i16 = f.int16 && f.storage16;
  caps_.cooperative_matrix = false;
  caps_.subgroup_size = subgroup_size_;
  caps_.cpu = props_.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
  caps_.max_workgroup_size = std::min<uint32_t>(props_.limits.maxComputeWorkGroupSize[0],
                                                props_.limits.maxComputeWorkGroupInvocations);
  caps_.max_shared_bytes = props_.limits.maxComputeSharedMemorySize;
  caps_.max_groups_x = props_.limits.maxComputeWorkGroupCount[0];
  // Storage buffers besides the params uniform buffer: within the per-stage and per-set limits
  // (and the per-stage resources, which count the uniform buffer too) and the bindings a launch
  // records.
  const VkPhysicalDeviceLimits& lim = props_.limits;
  caps_.max_buffers =
      std::min({lim.maxPerStageDescriptorStorageBuffers, lim.maxDescriptorSetStorageBuffers,
                lim.maxPerStageResources > 0 ? lim.maxPerStageResources - 1 : 0, kMaxBindings - 1});
}

Context::Context(VkInstance, const InstanceFns& ifn, VkPhysicalDevice physical)
    : ifn_(ifn), physical_(physical) {
  Features avail;
  query(physical, &avail);
  uint32_t qn = 0;
  ifn_.vkGetPhysicalDeviceQueueFamilyProperties(physical, &qn, nullptr);
  std::vector<VkQueueFamilyProperties> qs(qn);
  ifn_.vkGetPhysicalDeviceQueueFamilyProperties(physical, &qn, qs.data());
  // Prefer a compute-only queue (async compute on GPUs), else any compute queue.
  int family = -1;
  for (uint32_t i = 0; i < qn; ++i)
    if ((qs[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(qs[i].queueFlags & VK_QUEUE_GRAPHICS_BIT))
      family = int(i);
  for (uint32_t i = 0; i < qn && family < 0; ++i)
    if (qs[i].queueFlags & VK_QUEUE_COMPUTE_BIT) family = int(i);
  if (family < 0) EMBER_FAIL("vulkan", props_.deviceName, " has no compute queue");
  family_ = uint32_t(family);

  const float priority = 1.0f;
  auto qi = make<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
  qi.queueFamilyIndex = family_;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;

  features_ = avail;
  auto s16 = make<VkPhysicalDevice16BitStorageFeatures>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES);
  s16.storageBuffer16BitAccess = avail.storage16;
  auto s8 = make<VkPhysicalDevice8BitStorageFeatures>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES);
  s8.storageBuffer8BitAccess = avail.storage8;
  auto f16i8 = make<VkPhysicalDeviceShaderFloat16Int8Features>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES);
  f16i8.shaderFloat16 = avail.float16;
  f16i8.shaderInt8 = avail.int8;
  auto f2 = make<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  f2.features.shaderFloat64 = avail.float64;
  f2.features.shaderInt64 = avail.int64;
  f2.features.shaderInt16 = avail.int16;
  f2.pNext = &s16;
  s16.pNext = nullptr;
  // The 1.2 structs are only valid in the chain of a 1.2 device.
  if (props_.apiVersion >= VK_API_VERSION_1_2) {
    s16.pNext = &s8;
    s8.pNext = &f16i8;
  }
  auto ci = make<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
  ci.pNext = &f2;
  ci.queueCreateInfoCount = 1;
  ci.pQueueCreateInfos = &qi;
  EMBER_VK_CHECK(ifn_.vkCreateDevice(physical, &ci, nullptr, &device_));
  fn_.load(ifn_, device_);
  fn_.vkGetDeviceQueue(device_, family_, 0, &queue_);
  fill_caps();
}

Context::Context(VkInstance, const InstanceFns& ifn, VkPhysicalDevice physical, VkDevice device,
                 VkQueue queue, uint32_t queue_family, const Features& enabled)
    : ifn_(ifn),
      physical_(physical),
      device_(device),
      queue_(queue),
      family_(queue_family),
      owned_(false),
      features_(enabled) {
  query(physical, nullptr);
  fn_.load(ifn_, device_);
  fill_caps();
}

Context::~Context() {
  if (owned_ && device_) {
    fn_.vkDeviceWaitIdle(device_);
    fn_.vkDestroyDevice(device_, nullptr);
  }
}

std::string Context::identity() const {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04x-%04x-%08x-", props_.vendorID, props_.deviceID,
                props_.driverVersion);
  std::string s = buf;
  for (uint8_t b : props_.pipelineCacheUUID) {
    std::snprintf(buf, sizeof buf, "%02x", b);
    s += buf;
  }
  return s;
}

int Context::memory_type(uint32_t type_bits, VkMemoryPropertyFlags want,
                         VkMemoryPropertyFlags prefer) const {
  int fallback = -1;
  for (uint32_t i = 0; i < mem_.memoryTypeCount; ++i) {
    if (!(type_bits & (1u << i))) continue;
    const auto f = mem_.memoryTypes[i].propertyFlags;
    if ((f & want) != want) continue;
    if ((f & prefer) == prefer) return int(i);
    if (fallback < 0) fallback = int(i);
  }
  return fallback;
}

}  // namespace ember::vk
