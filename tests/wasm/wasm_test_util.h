// Helpers of the wasm tests: random inputs on the reference device, and the check that an op
// gives the reference's values on the wasm cpu device.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "ember/ember.h"

namespace ember::wasm_test {

/// f32 values uniform in [-2, 2) of `shape` on Device::ref(), deterministic in `seed`.
inline Tensor rnd(const Shape& shape, uint64_t seed) {
  manual_seed(Device::ref(), seed);
  return rand(shape, {DType::f32, Device::ref()}) * 4.0 - 2.0;
}

/// Whether got equals want: rtol 0: bit for bit (any NaN for a NaN); else every element within
/// rtol * (1 + |want|), NaN where NaN. "" when equal, else the first difference.
inline std::string differs(const Tensor& want, const Tensor& got, double rtol) {
  if (want.shape() != got.shape())
    return "shape " + shape_str(got.shape()) + " != " + shape_str(want.shape());
  if (want.dtype() != got.dtype()) return "dtype differs";
  const std::vector<float> w = want.to(DType::f32).to_vector<float>();
  const std::vector<float> g = got.to(DType::f32).to_vector<float>();
  for (size_t i = 0; i < w.size(); ++i) {
    const bool ok = std::isnan(w[i]) ? std::isnan(g[i])
                    : rtol == 0      ? std::memcmp(&w[i], &g[i], sizeof(float)) == 0
                                : std::fabs(double(w[i]) - g[i]) <= rtol * (1 + std::fabs(w[i]));
    if (!ok)
      return "element " + std::to_string(i) + ": got " + std::to_string(g[i]) + ", want " +
             std::to_string(w[i]) + " (shape " + shape_str(want.shape()) + ")";
  }
  return "";
}

/// fn on `inputs` (on Device::ref()) and on copies of them on Device::cpu() (the wasm backend)
/// give equal results (within rtol; 0: bit for bit).
inline void expect_match(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                         const std::vector<Tensor>& inputs, const std::string& what, double rtol) {
  const Tensor want = fn(inputs);
  std::vector<Tensor> on_cpu;
  for (const Tensor& t : inputs) on_cpu.push_back(t.to(Device::cpu()));
  const Tensor got = fn(on_cpu);
  ASSERT_EQ(got.device(), Device::cpu()) << what;
  const std::string d = differs(want, got.to(Device::ref()), rtol);
  EXPECT_TRUE(d.empty()) << what << ": " << d;
}

}  // namespace ember::wasm_test
