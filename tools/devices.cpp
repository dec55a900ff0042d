// `ember devices`: every device that can run now, with its capabilities.
#include <charconv>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <string>

#include "commands.h"
#include "ember/device.h"
#include "ember/error.h"

namespace ember::tools {

namespace {
bool is_index(const std::string& s) {
  int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size() && v >= 0;
}
}  // namespace

CLI::Option* add_device_option(CLI::App* cmd, std::string& value) {
  CLI::Option* opt = cmd->add_option("--device", value,
                                     "cpu, ref, vulkan, opencl, ... (see `ember devices`; default: "
                                     "$EMBER_DEVICE, else cpu)");
  opt->check(CLI::Validator(
      [](std::string& s) -> std::string {
        if (s == "cpu" || s == "ref" || s == "vulkan" || s == "opencl" || s == "cuda") return "";
        if (s.rfind("cpu:", 0) == 0 || s.rfind("ref:", 0) == 0) {
          try {
            (void)Device::parse(s);  // host devices: opens nothing
            return "";
          } catch (const Error& e) {
            const std::string m = e.what();  // "[device] 'cpu:1': the cpu backend has ..."
            return m.substr(m.find("] ") == std::string::npos ? 0 : m.find("] ") + 2);
          }
        }
        if (s.rfind("cuda:", 0) == 0 && is_index(s.substr(5))) return "";
        if (s.rfind("opencl:", 0) == 0 && is_index(s.substr(7))) return "";
        if (s.rfind("vulkan:", 0) == 0) {
          if (is_index(s.substr(7))) return "";
          try {
            (void)DeviceKind::parse(s.substr(7));  // only parses: opens no device
            return "";
          } catch (const Error& e) {
            const std::string m = e.what();  // "[device] unknown device kind ..."
            return m.substr(m.find("] ") == std::string::npos ? 0 : m.find("] ") + 2);
          }
        }
        return "unknown device '" + s +
               "' (expected cpu, cpu:0, ref, vulkan, vulkan:N, vulkan:KIND, opencl, opencl:N or "
               "cuda:N; "
               "see `ember "
               "devices`)";
      },
      "", ""));
  return opt;
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
