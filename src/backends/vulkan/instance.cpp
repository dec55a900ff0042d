#include "backends/vulkan/instance.h"

#include <cstdlib>
#include <cstring>
#include <iostream>

#include "core/env.h"
#include "ember/error.h"

namespace ember::vk {

namespace {
std::mutex& messages_mutex() {
  static std::mutex m;
  return m;
}
std::string& pending_errors() {
  static std::string s;
  return s;
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  Instance::report(severity, data && data->pMessage ? data->pMessage : "(no message)");
  return VK_FALSE;
}

}  // namespace

const char* kind_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "DiscreteGpu";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "IntegratedGpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "VirtualGpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "Cpu";
    default:
      return "Other";
  }
}

DeviceKind::Kind kind_of(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return DeviceKind::Kind::DiscreteGpu;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return DeviceKind::Kind::IntegratedGpu;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return DeviceKind::Kind::VirtualGpu;
    default:
      return DeviceKind::Kind::Cpu;
  }
}

void Instance::report(VkDebugUtilsMessageSeverityFlagBitsEXT severity, const char* msg) {
  if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
    std::lock_guard<std::mutex> lock(messages_mutex());
    std::string& s = pending_errors();
    if (s.size() < 8192) s += std::string(s.empty() ? "" : "\n") + msg;
  } else if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
    std::cerr << "[vulkan validation warning] " << msg << "\n";
  }
}

std::string Instance::take_validation_errors() {
  std::lock_guard<std::mutex> lock(messages_mutex());
  std::string s;
  s.swap(pending_errors());
  return s;
}

Instance& Instance::get() {
  // A failed creation is retried on the next call (it throws each time with its reason).
  static std::mutex m;
  static Instance* instance = nullptr;
  std::lock_guard<std::mutex> lock(m);
  if (!instance) instance = new Instance();  // never destroyed: drivers outlive static dtors
  return *instance;
}

Instance::Instance() {
  const GlobalFns& g = loader();
  uint32_t api = VK_API_VERSION_1_0;
  if (g.vkEnumerateInstanceVersion) g.vkEnumerateInstanceVersion(&api);
  if (api < VK_API_VERSION_1_1)
    EMBER_FAIL("vulkan", "the Vulkan loader offers API 1.0 only; Ember needs 1.1");

  std::vector<const char*> layers, extensions;
  validation_ = env_flag("EMBER_VULKAN_VALIDATION", false);
  if (validation_) {
    uint32_t n = 0;
    g.vkEnumerateInstanceLayerProperties(&n, nullptr);
    std::vector<VkLayerProperties> props(n);
    g.vkEnumerateInstanceLayerProperties(&n, props.data());
    bool found = false;
    for (const auto& p : props)
      if (std::strcmp(p.layerName, "VK_LAYER_KHRONOS_validation") == 0) found = true;
    if (!found) {
      std::cerr << "[vulkan] EMBER_VULKAN_VALIDATION is set but VK_LAYER_KHRONOS_validation is "
                   "not installed (Debian: vulkan-validationlayers); running without it\n";
      validation_ = false;
    } else {
      layers.push_back("VK_LAYER_KHRONOS_validation");
      extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    }
  }

  auto app = make<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
  app.pApplicationName = "ember";
  app.pEngineName = "ember";
  app.apiVersion = api >= VK_API_VERSION_1_2 ? VK_API_VERSION_1_2 : VK_API_VERSION_1_1;
  auto ci = make<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = uint32_t(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = uint32_t(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  auto mi = make<VkDebugUtilsMessengerCreateInfoEXT>(
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT);
  mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  mi.pfnUserCallback = on_message;
  if (validation_) ci.pNext = &mi;  // also catches messages of vkCreate/DestroyInstance
  EMBER_VK_CHECK(g.vkCreateInstance(&ci, nullptr, &instance_));
  fn_.load(instance_);
  if (validation_ && fn_.vkCreateDebugUtilsMessengerEXT)
    EMBER_VK_CHECK(fn_.vkCreateDebugUtilsMessengerEXT(instance_, &mi, nullptr, &messenger_));

  uint32_t n = 0;
  EMBER_VK_CHECK(fn_.vkEnumeratePhysicalDevices(instance_, &n, nullptr));
  std::vector<VkPhysicalDevice> pds(n);
  EMBER_VK_CHECK(fn_.vkEnumeratePhysicalDevices(instance_, &n, pds.data()));
  pds.resize(n);
  for (VkPhysicalDevice pd : pds) {
    Adapter a;
    a.physical = pd;
    fn_.vkGetPhysicalDeviceProperties(pd, &a.props);
    a.kind = kind_of(a.props.deviceType);
    uint32_t qn = 0;
    fn_.vkGetPhysicalDeviceQueueFamilyProperties(pd, &qn, nullptr);
    std::vector<VkQueueFamilyProperties> qs(qn);
    fn_.vkGetPhysicalDeviceQueueFamilyProperties(pd, &qn, qs.data());
    bool compute = false;
    for (const auto& q : qs)
      if (q.queueFlags & VK_QUEUE_COMPUTE_BIT) compute = true;
    a.usable = compute && a.props.apiVersion >= VK_API_VERSION_1_1;
    adapters_.push_back(a);
  }
}

}  // namespace ember::vk
