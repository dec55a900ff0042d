// Sub-commands of the `ember` tool; each registers itself on the CLI11 app.
#pragma once
#include <CLI/CLI.hpp>

namespace ember::tools {
void add_devices_command(CLI::App& app);
}  // namespace ember::tools
