#include "test_util.h"

#include <unistd.h>
#include <algorithm>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace ember::test {

namespace fs = std::filesystem;

bool vulkan_device(Device& dev, std::string& why) {
  try {
    for (const auto& d : available_devices())
      if (d.device.type() == DeviceType::vulkan) {
        dev = Device::vulkan();
        return true;
      }
    (void)supports_dtype(Device::vulkan(), DType::f32);  // opens the device: its error
    why = "none in available_devices()";
  } catch (const std::exception& e) {
    why = e.what();
  }
  return false;
}

bool opencl_device(Device& dev, std::string& why) {
  try {
    for (const auto& d : available_devices())
      if (d.device.type() == DeviceType::opencl) {
        dev = d.device;
        return true;
      }
    (void)supports_dtype(Device::opencl(0), DType::f32);  // its error
    why = "none in available_devices()";
  } catch (const std::exception& e) {
    why = e.what();
  }
  return false;
}

EnvGuard::EnvGuard(const char* name, const char* value) : name_(name) {
  const char* o = std::getenv(name);
  had_ = o != nullptr;
  if (had_) old_ = o;
  if (value)
    setenv(name, value, 1);
  else
    unsetenv(name);
}

EnvGuard::~EnvGuard() {
  if (had_)
    setenv(name_.c_str(), old_.c_str(), 1);
  else
    unsetenv(name_.c_str());
}

TempDir::TempDir(const std::string& tag) {
  const char* tmp = std::getenv("TMPDIR");
  const fs::path base = (tmp && *tmp) ? fs::path(tmp) : fs::path("/tmp");
  for (unsigned i = 0;; ++i) {
    const fs::path p =
        base / ("ember_test_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(i));
    std::error_code ec;
    if (fs::create_directory(p, ec)) {
      path_ = p.string();
      return;
    }
    if (i > 100) ADD_FAILURE() << "cannot create a folder under " << base << ": " << ec.message();
    if (i > 100) return;
  }
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) fs::remove_all(path_, ec);
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace ember::test
