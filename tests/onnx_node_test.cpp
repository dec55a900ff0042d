// ONNX conformance: every case of the four suites of Debian's libonnx-testdata (node,
// pytorch-converted, pytorch-operator, simple) through ember::onnx::run_test_case on each built
// device. A case is unsupported when load() rejects the model (an op, attribute or type Ember
// does not map, an opset outside 1-17) or the device lacks a dtype; a supported case must give
// ONNX's outputs (rtol 1e-3, atol 1e-7; exact for integers): any failure fails the test. The
// table `ember onnx conformance` prints comes from the same function.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "ember/ember.h"
#include "ember/onnx.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

// The device of a backend name, or why there is none here.
bool device_of(const std::string& backend, Device& out, std::string& why) {
  if (backend == "ref") return out = Device::ref(), true;
  if (backend == "cpu") return out = Device::cpu(), true;
  for (const DeviceInfo& d : available_devices())
    if (d.device.str().rfind(backend, 0) == 0) return out = d.device, true;
  why = "no " + backend + " device here";
  return false;
}

class OnnxConformance : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(OnnxConformance, SupportedCasesMatchOnnx) {
  const auto& [suite, backend] = GetParam();
  const fs::path root = fs::path(EMBER_ONNX_TESTDATA_DIR) / suite;
  if (!fs::is_directory(root))
    GTEST_SKIP() << "libonnx-testdata is not installed (" << root << " missing)";
  Device device = Device::ref();
  std::string why;
  if (!device_of(backend, device, why)) GTEST_SKIP() << why;
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory() && fs::exists(e.path() / "model.onnx")) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  int passed = 0, failed = 0, unsupported = 0, excluded = 0;
  int lacks_dtype = 0;  // unsupported because the device has no such dtype (OpenCL: float16)
  std::map<std::string, std::map<std::string, std::vector<std::string>>> reasons;
  for (const fs::path& dir : cases) {
    const onnx::CaseResult r = onnx::run_test_case(dir.string(), device);
    const std::string name = dir.filename().string();
    switch (r.status) {
      case onnx::CaseResult::Status::passed:
        ++passed;
        break;
      case onnx::CaseResult::Status::failed:
        ++failed;
        ADD_FAILURE() << suite << "/" << name << " on " << device.str() << ": " << r.detail;
        break;
      case onnx::CaseResult::Status::unsupported:
        ++unsupported;
        if (r.detail.rfind("dtype ", 0) == 0 && r.detail.find(" not on ") != std::string::npos)
          ++lacks_dtype;
        reasons[r.op_type.empty() ? "<model>" : r.op_type][r.detail].push_back(name);
        break;
      case onnx::CaseResult::Status::excluded:
        ++excluded;
        break;
    }
  }
  std::printf("unsupported in %s on %s, by op type:\n", suite.c_str(), device.str().c_str());
  for (const auto& [op, by_reason] : reasons)
    for (const auto& [reason, names] : by_reason)
      std::printf("  %-26s %3zu  %s (e.g. %s)\n", op.c_str(), names.size(), reason.c_str(),
                  names.front().c_str());
  std::printf(
      "onnx %s on %s: %zu cases, %d passed, %d failed, %d unsupported, %d excluded (strings, "
      "sequences, optionals, training ops)\n",
      suite.c_str(), device.str().c_str(), cases.size(), passed, failed, unsupported, excluded);
  EXPECT_FALSE(cases.empty());
  // Issue 17's targets, as floors: >= 95% of the node tests whose types Ember and the device
  // have (98% today: what is left is random ops and bfloat16 test data stored as UINT16), and
  // every such case of the other three suites.
  const int in_scope = int(cases.size()) - excluded - lacks_dtype;
  if (suite == "node")
    EXPECT_GE(passed, 0.95 * in_scope) << passed << " of " << in_scope;
  else
    EXPECT_EQ(passed, in_scope);
}

std::string param_name(const ::testing::TestParamInfo<OnnxConformance::ParamType>& p) {
  std::string s = std::get<0>(p.param) + "_" + std::get<1>(p.param);
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Suites, OnnxConformance,
                         ::testing::Combine(::testing::Values("node", "pytorch-converted",
                                                              "pytorch-operator", "simple"),
                                            ::testing::Values("ref", "cpu", "vulkan", "opencl")),
                         param_name);

}  // namespace
