// The device strings this build accepts (Device::parse, EMBER_DEVICE, `ember ... --device`).
#pragma once
#include <string>
#include <vector>

namespace ember {

/// The device strings this build accepts (Device::parse, EMBER_DEVICE, `ember ... --device`), in
/// the order errors list them: "cpu", "ref", and for each GPU backend that is built its forms,
/// "vulkan[:N]" and "vulkan:KIND" (KIND a DeviceKind, e.g. "vulkan:IntegratedGpu(1)"),
/// "opencl[:N]" (N a device index; without it, 0 or the default adapter). Device strings match
/// in any case ("CPU", "Vulkan:0"). It says what parses, not what is present:
/// available_devices() (ember/device.h) lists those. Does not throw; opens no device. A bad
/// EMBER_DEVICE and a bad `--device` both list these choices.
std::vector<std::string> device_choices();

}  // namespace ember
