// Sub-commands of the `ember` tool; each registers itself on the CLI11 app.
#pragma once
#include <CLI/CLI.hpp>

namespace ember::tools {
void add_devices_command(CLI::App& app);
/// ember train mnist|fashion-mnist [...]: tools/train.cpp.
void add_train_command(CLI::App& app);
/// ember eval --checkpoint FILE: tools/infer.cpp.
void add_eval_command(CLI::App& app);
/// ember predict --checkpoint FILE IMAGE: tools/infer.cpp.
void add_predict_command(CLI::App& app);
}  // namespace ember::tools
