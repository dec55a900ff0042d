// `ember devices`: every device that can run now, with its capabilities.
#include <exception>
#include <iostream>

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
    std::cout << "default device: " << Device::default_device().str() << "\n";
  });
}

}  // namespace ember::tools
