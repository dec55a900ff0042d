#include "ember/device.h"

#include <cstdlib>
#include <mutex>
#include <optional>

#include "ember/error.h"
#include "runtime/backend.h"
#ifdef EMBER_HAVE_VULKAN
#include "backends/vulkan/vulkan_backend.h"
#endif

namespace ember {

namespace {
std::optional<Device>& default_override() {
  static std::optional<Device> d;
  return d;
}
int64_t parse_index(const std::string& s, const char* op) {
  try {
    size_t used = 0;
    const long long v = std::stoll(s, &used);
    if (used == s.size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  EMBER_FAIL(op, "expected a non-negative index, got '", s, "'");
}
}  // namespace

DeviceKind DeviceKind::parse(const std::string& s) {
  struct Name {
    const char* n;
    Kind k;
  };
  static const Name kNames[] = {
      {"DiscreteGpu", Kind::DiscreteGpu},     {"IntegratedGpu", Kind::IntegratedGpu},
      {"VirtualGpu", Kind::VirtualGpu},       {"Cpu", Kind::Cpu},
      {"DefaultDevice", Kind::DefaultDevice}, {"Existing", Kind::Existing}};
  for (const auto& n : kNames) {
    const std::string name = n.n;
    if (s == name) return {n.k, 0};
    if (s.size() > name.size() + 2 && s.compare(0, name.size(), name) == 0 &&
        s[name.size()] == '(' && s.back() == ')')
      return {n.k, parse_index(s.substr(name.size() + 1, s.size() - name.size() - 2), "device")};
  }
  EMBER_FAIL("device", "unknown device kind '", s,
             "' (expected DiscreteGpu(i), IntegratedGpu(i), VirtualGpu(i), Cpu, DefaultDevice or "
             "Existing(id))");
}

std::string DeviceKind::str() const {
  switch (kind) {
    case Kind::DiscreteGpu:
      return "DiscreteGpu(" + std::to_string(index) + ")";
    case Kind::IntegratedGpu:
      return "IntegratedGpu(" + std::to_string(index) + ")";
    case Kind::VirtualGpu:
      return "VirtualGpu(" + std::to_string(index) + ")";
    case Kind::Cpu:
      return "Cpu";
    case Kind::DefaultDevice:
      return "DefaultDevice";
    case Kind::Existing:
      return "Existing(" + std::to_string(index) + ")";
  }
  return "?";
}

Device Device::cpu() { return Device(DeviceType::cpu, 0); }
Device Device::ref() { return Device(DeviceType::ref, 0); }

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
             "): Ember has no CUDA backend yet (use Device::vulkan() on an NVIDIA GPU, or cpu)");
}

Device Device::parse(const std::string& s) {
  if (s == "cpu") return cpu();
  if (s == "ref") return ref();
  if (s == "vulkan") return vulkan();
  if (s.rfind("vulkan:", 0) == 0) {
    const std::string k = s.substr(7);
    // "vulkan:0" is the index Device::str() prints; anything else is a DeviceKind.
    if (!k.empty() && k.find_first_not_of("0123456789") == std::string::npos) {
      const Device d(DeviceType::vulkan, parse_index(k, "device"));
      backend_for(d);  // throws for an index that names no device
      return d;
    }
    return vulkan(DeviceKind::parse(k));
  }
  if (s == "cuda") return cuda(0);
  if (s.rfind("cuda:", 0) == 0) return cuda(parse_index(s.substr(5), "device"));
  EMBER_FAIL("device", "unknown device '", s,
             "' (expected cpu, ref, vulkan, vulkan:IntegratedGpu(1), cuda:0)");
}

Device Device::default_device() {
  if (default_override()) return *default_override();
  static const Device from_env = [] {
    const char* e = std::getenv("EMBER_DEVICE");
    return (e && *e) ? Device::parse(e) : Device::cpu();
  }();
  return from_env;
}

void Device::set_default_device(const Device& d) { default_override() = d; }

std::string Device::str() const {
  switch (type_) {
    case DeviceType::cpu:
      return "cpu";
    case DeviceType::ref:
      return "ref";
    case DeviceType::vulkan:
      return "vulkan:" + std::to_string(index_);
    case DeviceType::cuda:
      return "cuda:" + std::to_string(index_);
  }
  return "?";
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

std::vector<DeviceInfo> available_devices() {
  std::vector<DeviceInfo> out = {backend_for(Device::cpu()).info(),
                                 backend_for(Device::ref()).info()};
#ifdef EMBER_HAVE_VULKAN
  // Every usable adapter; none (and no error) without a loader or a device.
  for (const Device& d : vk::devices()) {
    try {
      out.push_back(backend_for(d).info());
    } catch (const Error&) {
      // An adapter whose logical device cannot be created is not available.
    }
  }
#endif
  return out;
}

bool supports_dtype(const Device& device, DType dtype) {
  return backend_for(device).supports_dtype(dtype);
}

void sync(const Device& device) { backend_for(device).sync(); }

}  // namespace ember
