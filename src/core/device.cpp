#include "ember/device.h"

#include <cctype>
#include <mutex>
#include <optional>

#include "core/env.h"
#include "ember/device_choices.h"
#include "ember/error.h"

namespace ember {

// The registry (src/runtime/registry.cpp): a Vulkan device by index, checked to exist.
Device vulkan_at(int64_t index);

namespace {
std::optional<Device>& default_override() {
  static std::optional<Device> d;
  return d;
}
std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
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
  // In any case, as device strings ("integratedgpu(1)" is IntegratedGpu(1)).
  const std::string l = lower(s);
  for (const auto& n : kNames) {
    const std::string name = lower(n.n);
    if (l == name) return {n.k, 0};
    if (l.size() > name.size() + 2 && l.compare(0, name.size(), name) == 0 &&
        l[name.size()] == '(' && l.back() == ')')
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

namespace {
// device_choices() as a list in words: "cpu, ref, vulkan[:N], vulkan:KIND or opencl[:N]" (the
// ember command's --device says the same, tools/devices.cpp).
std::string device_choices_text() {
  std::string s;
  const std::vector<std::string> c = device_choices();
  for (size_t i = 0; i < c.size(); ++i)
    s += (i == 0 ? "" : i + 1 == c.size() ? " or " : ", ") + c[i];
  return s;
}
}  // namespace

Device Device::parse(const std::string& given) {
  // In any case: "CPU", "Vulkan:0". The backend names are lower-case; a DeviceKind after
  // "vulkan:" matches in any case too. Errors quote the string as given.
  const std::string s = lower(given);
  // "cpu:0" and "ref:0" are what torch.device("cpu:0") means: the one host device.
  for (const char* host : {"cpu", "ref"}) {
    const std::string h = host;
    if (s != h && s.rfind(h + ":", 0) != 0) continue;
    if (s != h && parse_index(s.substr(h.size() + 1), "device") != 0)
      EMBER_FAIL("device", "'", given, "': the ", h, " backend has one device, index 0");
    return h == "cpu" ? cpu() : ref();
  }
  if (s == "vulkan") return vulkan();
  if (s.rfind("vulkan:", 0) == 0) {
    const std::string k = s.substr(7);
    // "vulkan:0" is the index Device::str() prints; anything else is a DeviceKind.
    if (!k.empty() && k.find_first_not_of("0123456789") == std::string::npos) {
      return vulkan_at(parse_index(k, "device"));
    }
    return vulkan(DeviceKind::parse(given.substr(7)));
  }
  if (s == "cuda") return cuda(0);
  if (s.rfind("cuda:", 0) == 0) return cuda(parse_index(s.substr(5), "device"));
  if (s == "opencl") return opencl(0);
  if (s.rfind("opencl:", 0) == 0) return opencl(parse_index(s.substr(7), "device"));
  if (s == "webgpu" || s == "webgpu:0") return webgpu();
  EMBER_FAIL("device", "unknown device '", given, "' (expected ", device_choices_text(), ")");
}

Device Device::default_device() {
  if (default_override()) return *default_override();
  static const Device from_env = [] {
    const std::string e = env_string("EMBER_DEVICE");
    if (e.empty()) return Device::cpu();
    try {
      return Device::parse(e);
    } catch (const std::exception& err) {
      // Name the variable the bad value came from; the parse error without its "[tag] ". One
      // that names its own variable (EMBER_DEVICE=vulkan with EMBER_VULKAN_DEFAULT_DEVICE) is
      // that variable's fault.
      std::string why = err.what();
      if (why.find("EMBER_VULKAN_DEFAULT_DEVICE=") != std::string::npos) throw;
      if (!why.empty() && why[0] == '[' && why.find("] ") != std::string::npos)
        why = why.substr(why.find("] ") + 2);
      EMBER_FAIL("device", "EMBER_DEVICE=", e, " does not name a usable device: ", why);
    }
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
    case DeviceType::opencl:
      return "opencl:" + std::to_string(index_);
    case DeviceType::webgpu:
      return "webgpu";
  }
  return "?";
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace ember
