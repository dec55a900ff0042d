// `ember devices`: every device that can run now, with its capabilities.
#include <iostream>

#include "commands.h"
#include "ember/device.h"

namespace ember::tools {

void add_devices_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("devices", "List the devices Ember can run on");
  cmd->callback([] {
    for (const DeviceInfo& d : available_devices()) {
      std::cout << d.device.str() << "\n  name:    " << d.name << "\n  kind:    " << d.kind
                << "\n  dtypes: ";
      for (DType t : d.dtypes) std::cout << ' ' << dtype_name(t);
      std::cout << "\n  details: " << d.details << "\n";
    }
    std::cout << "default device: " << Device::default_device().str() << "\n";
  });
}

}  // namespace ember::tools
