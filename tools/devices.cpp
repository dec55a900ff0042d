// `ember devices`: every device that can run now, with its capabilities.
#include <cstdlib>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <string>

#include "commands.h"
#include "ember/device.h"

namespace ember::tools {

void add_devices_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("devices", "List the devices Ember can run on");
  cmd->callback([] {
    bool vulkan = false;
    for (const DeviceInfo& d : available_devices()) {
      vulkan |= d.device.type() == DeviceType::vulkan;
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
    // Resolved before its heading is printed: a bad EMBER_DEVICE is an error on a line of its own
    // (it was printed after "default device: "), naming the variable it came from.
    std::string def;
    try {
      def = Device::default_device().str();
    } catch (const std::exception& e) {
      const char* env = std::getenv("EMBER_DEVICE");
      if (!env) throw;
      throw std::runtime_error(std::string("EMBER_DEVICE=") + env +
                               " does not name a usable device: " + e.what());
    }
    std::cout << "default device: " << def << "\n";
  });
}

}  // namespace ember::tools
