// `ember devices`: every device that can run now, with its capabilities.
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.h"
#include "ember/device.h"
#include "ember/device_choices.h"
#include "ember/error.h"

namespace ember::tools {

namespace {
bool is_index(const std::string& s) {
  int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size() && v >= 0;
}
}  // namespace

// device_choices() in words, as Device::parse's error says them ("cpu, ref, vulkan[:N], ... or
// opencl[:N]").
static std::string choices_text() {
  std::string s;
  const std::vector<std::string> c = device_choices();
  for (size_t i = 0; i < c.size(); ++i)
    s += (i == 0 ? "" : i + 1 == c.size() ? " or " : ", ") + c[i];
  return s;
}

// Whether this build accepts backend `name` (device_choices() has an entry for it).
static bool built(const std::string& name) {
  for (const std::string& c : device_choices())
    if (c.compare(0, name.size(), name) == 0) return true;
  return false;
}

// --device's check (each value of a list): a name Device::parse knows, else a usage error.
static CLI::Validator device_check() {
  return CLI::Validator(
      [](std::string& given) -> std::string {
        std::string s = given;  // in any case, as Device::parse
        for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
        const auto after = [&](const std::string& b) {
          return s == b ? std::string() : s.substr(b.size() + 1);
        };
        for (const char* b : {"vulkan", "opencl", "cuda"})
          if ((s == b || s.rfind(std::string(b) + ":", 0) == 0) && !built(b))
            return std::string("backend ") + b + " is not built (this build accepts " +
                   choices_text() + ")";
        if (s == "cpu" || s == "ref" || s == "vulkan" || s == "opencl") return "";
        if (s.rfind("cpu:", 0) == 0 || s.rfind("ref:", 0) == 0) {
          try {
            (void)Device::parse(given);  // host devices: opens nothing
            return "";
          } catch (const Error& e) {
            const std::string m = e.what();  // "[device] 'cpu:1': the cpu backend has ..."
            return m.substr(m.find("] ") == std::string::npos ? 0 : m.find("] ") + 2);
          }
        }
        if (s.rfind("opencl:", 0) == 0 && is_index(after("opencl"))) return "";
        if (s.rfind("vulkan:", 0) == 0) {
          if (is_index(after("vulkan"))) return "";
          try {
            (void)DeviceKind::parse(given.substr(7));  // only parses: opens no device
            return "";
          } catch (const Error& e) {
            const std::string m = e.what();  // "[device] unknown device kind ..."
            return m.substr(m.find("] ") == std::string::npos ? 0 : m.find("] ") + 2);
          }
        }
        return "unknown device '" + given + "' (expected " + choices_text() +
               "; see `ember devices`)";
      },
      "", "");
}

CLI::Option* add_device_option(CLI::App* cmd, std::string& value) {
  return cmd
      ->add_option(
          "--device", value,
          choices_text() + ", in any case (see `ember devices`; default: $EMBER_DEVICE, else cpu)")
      ->check(device_check());
}

CLI::Option* add_devices_option(CLI::App* cmd, std::vector<std::string>& values,
                                const std::string& what) {
  return cmd->add_option("--device", values, what + ": " + choices_text() + ", in any case")
      ->check(device_check());
}

Device device_of(const std::string& value) {
  return value.empty() ? Device::default_device() : Device::parse(value);
}

void add_devices_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("devices", "List the devices Ember can run on");
  cmd->callback([] {
    bool vulkan = false, opencl = false;
    for (const DeviceInfo& d : available_devices()) {
      vulkan |= d.device.type() == DeviceType::vulkan;
      opencl |= d.device.type() == DeviceType::opencl;
      std::cout << d.device.str() << "\n  name:    " << d.name << "\n  kind:    " << d.kind
                << "\n  dtypes: ";
      for (DType t : d.dtypes) std::cout << ' ' << dtype_name(t);
      std::cout << "\n  details: " << d.details << "\n";
    }
    if (!vulkan) {
      // Say why no Vulkan device is listed (not built, no driver, a bad EMBER_VULKAN_* value).
      try {
        (void)supports_dtype(Device::vulkan(), DType::f32);  // opens the device: its error
      } catch (const std::exception& e) {
        std::cout << "vulkan: not available: " << e.what() << "\n";
      }
    }
    if (!opencl) {
      try {
        (void)supports_dtype(Device::opencl(0), DType::f32);  // not built, no loader, no device
      } catch (const std::exception& e) {
        std::cout << "opencl: not available: " << e.what() << "\n";
      }
    }
    // Resolved before its heading is printed: a bad EMBER_DEVICE is an error on a line of its own
    // (default_device() names the variable).
    const std::string def = Device::default_device().str();
    std::cout << "default device: " << def << "\n";
  });
}

}  // namespace ember::tools
