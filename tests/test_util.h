// Helpers shared by the unit tests: value checks, error checks, temporary folders and files.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "ember/device.h"
#include "ember/error.h"
#include "ember/tensor.h"

namespace ember::test {

/// The values of t as doubles (row-major).
inline std::vector<double> d(const Tensor& t) { return t.to_vector<double>(); }

/// Every value of `got` within `tol` of `want` (same count).
inline void expect_near(const Tensor& got, const std::vector<double>& want, double tol = 1e-6) {
  const auto g = d(got);
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tol) << "at " << i;
}

/// Expects `fn` to throw ember::Error whose message contains every piece.
template <typename Fn>
void expect_error(Fn fn, const std::vector<std::string>& pieces) {
  try {
    fn();
    ADD_FAILURE() << "expected an ember::Error containing '" << pieces.front() << "'";
  } catch (const Error& e) {
    for (const auto& p : pieces)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

/// The default Vulkan device when one is available; otherwise false, with the reason in `why`.
bool vulkan_device(Device& dev, std::string& why);
/// opencl:0 when it can run, or false with the reason in `why`.
bool opencl_device(Device& dev, std::string& why);

/// Sets environment variable `name` to `value` (nullptr: unsets it) for the scope, then puts
/// back what was there.
class EnvGuard {
 public:
  EnvGuard(const char* name, const char* value);
  ~EnvGuard();
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

/// A fresh, empty folder under $TMPDIR (or /tmp), removed with its contents when destroyed.
class TempDir {
 public:
  explicit TempDir(const std::string& tag);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  operator const std::string&() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// The names in a folder, sorted ("." and ".." left out).
std::vector<std::string> list_dir(const std::string& dir);
/// A whole file as bytes ("" when it cannot be read).
std::string read_bytes(const std::string& path);
/// Writes bytes to a file, replacing it.
void write_bytes(const std::string& path, const std::string& bytes);

/// The message of the ember::Error that f() throws, or "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

/// The non-host devices this machine has (Vulkan, OpenCL...), in available_devices() order.
inline std::vector<Device> gpu_devices() {
  std::vector<Device> out;
  for (const DeviceInfo& i : available_devices())
    if (!i.device.is_host()) out.push_back(i.device);
  return out;
}

}  // namespace ember::test

/// Declares `dev` as the default Vulkan device, or skips the test saying why there is none.
#define EMBER_VULKAN_OR_SKIP(dev)                                                               \
  ::ember::Device dev;                                                                          \
  {                                                                                             \
    std::string why_;                                                                           \
    if (!::ember::test::vulkan_device(dev, why_)) GTEST_SKIP() << "no Vulkan device: " << why_; \
  }

/// Declares `dev` as opencl:0, or skips the test saying why there is none.
#define EMBER_OPENCL_OR_SKIP(dev)                                                               \
  ::ember::Device dev;                                                                          \
  {                                                                                             \
    std::string why_;                                                                           \
    if (!::ember::test::opencl_device(dev, why_)) GTEST_SKIP() << "no OpenCL device: " << why_; \
  }
