// Shared by the fused-reduction tests (fused_reduce_test.cpp, fused_reduce_dims_test.cpp): each
// case runs once per device that fuses (cpu, Vulkan, OpenCL; not ref), with dev() set to it, and
// compares fusion on with fusion off on that device (within the dtype's tolerance: the summation
// order differs).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "op_table.h"

namespace ember::fused_reduce {

/// The device the current case runs on.
inline Device& dev() {
  static Device d = Device::cpu();
  return d;
}

/// body() once per device but ref, dev() set to it (then back to the cpu). Cases whose dtypes a
/// device lacks skip them there (supports_dtype).
inline void each_device(const std::function<void()>& body) {
  for (const DeviceInfo& i : available_devices()) {
    if (i.device == Device::ref()) continue;
    SCOPED_TRACE(i.device.str());
    dev() = i.device;
    body();
  }
  dev() = Device::cpu();
}

inline Tensor input(const Shape& s, uint64_t seed, DType t = DType::f32, double lo = -1,
                    double hi = 1) {
  return testing::uniform(s, t, seed, lo, hi).to(dev());
}

/// t's values as doubles (read back through the cpu: a device may lack f64).
inline std::vector<double> values(const Tensor& t) {
  return t.to(Device::cpu()).to(DType::f64).to_vector<double>();
}

/// Every element of `got` within rtol * (1 + |want|) of `want` (NaN where want is NaN).
inline void expect_near_all(const std::vector<double>& got, const std::vector<double>& want,
                            double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < got.size(); ++k) {
    if (std::isnan(want[k])) {
      EXPECT_TRUE(std::isnan(got[k])) << what << " element " << k << ": " << got[k];
      continue;
    }
    if (!(std::fabs(got[k] - want[k]) <= rtol * (1 + std::fabs(want[k])))) {
      ADD_FAILURE() << what << " element " << k << ": fused " << got[k] << ", eager " << want[k];
      return;
    }
  }
}

/// body() on dev() with fusion on, then off; every tensor within rtol. Returns the fused run's
/// counters.
inline StreamStats expect_close(const std::string& what,
                                const std::function<std::vector<Tensor>()>& body,
                                double rtol = 1e-5) {
  SCOPED_TRACE(what);
  const Device d = dev();
  const bool was = fusion_enabled(d);
  set_fusion(d, true);
  sync(d);
  reset_stream_stats(d);
  const std::vector<Tensor> fused = body();
  sync(d);
  const StreamStats st = stream_stats(d);
  set_fusion(d, false);
  const std::vector<Tensor> eager = body();
  set_fusion(d, was);
  EXPECT_GT(st.recorded, 0);
  EXPECT_EQ(fused.size(), eager.size());
  for (size_t i = 0; i < std::min(fused.size(), eager.size()); ++i) {
    EXPECT_EQ(fused[i].shape(), eager[i].shape()) << "output " << i;
    EXPECT_EQ(fused[i].dtype(), eager[i].dtype()) << "output " << i;
    expect_near_all(values(fused[i]), values(eager[i]), rtol, "output " + std::to_string(i));
  }
  return st;
}

}  // namespace ember::fused_reduce
