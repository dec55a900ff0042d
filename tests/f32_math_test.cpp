// The f32 library (src/codegen/kir_lib_f32.cpp) that erf, erfinv, gelu, pow, atan2 and hypot
// use on devices without f64 (WebGPU): lowerings for GLSL, OpenCL C and WGSL call it and need no
// f64 (the f64 path stays where the device has it), and its kernels, lowered for a device's
// dialect with f64 turned off, run on every GPU device (lavapipe, PoCL) and match the ref backend
// on a grid of special and ordinary values: NaN, +-inf and +-0 exactly, the rest within a few
// f32 ulps.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "ember/ember.h"
#include "runtime/kernel_backend.h"

namespace ember {
namespace {

using codegen::Caps;
using codegen::Dialect;
using ir::BinaryOp;
using ir::UnaryOp;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

Tensor host(const std::vector<float>& v) {
  return from_vector(v, {int64_t(v.size())}, Device::ref());
}

// Special values, every power of two step across the exponent range, and a dense grid.
std::vector<float> unary_inputs() {
  std::vector<float> v = {kNaN,        kInf,        -kInf,        0.0f,    -0.0f,    1,
                          -1,          0.99999994f, -0.99999994f, 0.9999f, -0.9999f, 1.0000001f,
                          -1.0000001f, 1e-30f,      -1e-30f,      1e-6f,   3.9f,     4.0f,
                          -4.0f,       10,          1e30f,        -1e30f};
  for (int i = -2000; i <= 2000; ++i) v.push_back(float(i) * 0.0025f);  // [-5, 5]
  for (int i = -999; i <= 999; ++i) v.push_back(float(i) / 1000.0f);    // erfinv's domain
  return v;
}

// All pairs of special and ordinary values, then pseudo-random pairs over a wide range (a third
// with integer exponents, half with negative bases).
void binary_inputs(std::vector<float>& a, std::vector<float>& b) {
  const std::vector<float> s = {kNaN, kInf,   -kInf, 0.0f,    -0.0f,   1,     -1,   0.5f, -0.5f,
                                2,    -2,     3,     -3,      2.5f,    -2.5f, 10,   -7,   1e-3f,
                                1e5f, 1e-30f, 1e30f, 1.0001f, 0.9999f, 33.5f, -127, 128,  -150};
  for (float x : s)
    for (float y : s) a.push_back(x), b.push_back(y);
  uint32_t r = 12345;
  auto uniform = [&] {
    r = r * 1664525u + 1013904223u;
    return double(r >> 8) / double(1u << 24);
  };
  for (int i = 0; i < 6000; ++i) {
    float x = float(std::exp((uniform() - 0.5) * 40)), y = float((uniform() - 0.5) * 60);
    if (i % 3 == 0) y = std::floor(y);
    if (i % 2) x = -x;
    a.push_back(x), b.push_back(y);
  }
}

// NaN as NaN, infinities and zeros exactly (with their sign), results below FLT_MIN as any value
// there (a device may flush subnormals), the rest within rtol + atol; the largest relative error.
double check(const std::vector<float>& want, const std::vector<float>& got,
             const std::vector<float>& a, const std::vector<float>* b, double rtol, double atol,
             const std::string& what) {
  double worst = 0;
  int failures = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const float w = want[i], g = got[i];
    bool ok;
    if (std::isnan(w)) {
      ok = std::isnan(g);
    } else if (std::isinf(w) || w == 0) {
      ok = g == w && std::signbit(g) == std::signbit(w);
    } else if (std::fabs(w) < std::numeric_limits<float>::min()) {
      ok = std::fabs(g) < std::numeric_limits<float>::min();
    } else {
      const double e = std::fabs(double(g) - double(w));
      ok = e <= atol + rtol * std::fabs(double(w));
      if (std::fabs(w) > 1e-30) worst = std::max(worst, e / std::fabs(double(w)));
    }
    if (!ok && ++failures <= 5)
      ADD_FAILURE() << what << "(" << a[i] << (b ? ", " + std::to_string((*b)[i]) : "") << "): got "
                    << g << ", expected " << w;
  }
  return worst;
}

Caps no_f64_caps() {
  Caps c;
  c.i8 = c.i16 = c.f16 = c.i64 = true;
  return c;
}

TEST(F32MathTest, LoweringsWithoutF64CallTheF32Library) {
  const Tensor x = zeros({8}, TensorOptions(DType::f32));
  const Tensor h = zeros({8}, TensorOptions(DType::f16));
  struct U {
    UnaryOp op;
    const char* fn;
  };
  struct B {
    BinaryOp op;
    const char* fn;
  };
  for (Dialect d : {Dialect::glsl, Dialect::opencl, Dialect::wgsl}) {
    Caps caps = no_f64_caps();
    if (d == Dialect::wgsl) caps.i8 = caps.i16 = caps.i64 = false;
    Caps with_f64 = caps;
    with_f64.f64 = true;
    for (const Tensor& t : {x, h}) {
      auto source = [&](const ir::Op& op, const Caps& c) {
        const auto l = codegen::lower(op, d, c);
        std::string s;
        for (const auto& ln : l.launches) s += ln.kernel->source;
        return s;
      };
      for (const U& u : {U{UnaryOp::erf, "ember_erf_f32"}, U{UnaryOp::erfinv, "ember_erfinv_f32"},
                         U{UnaryOp::gelu, "ember_erf_f32"}}) {
        const ir::Unary op{u.op, t, t};
        const std::string s = source(op, caps);
        EXPECT_NE(s.find(u.fn), std::string::npos) << u.fn;
        EXPECT_EQ(s.find("_f64"), std::string::npos) << u.fn;
        if (d != Dialect::wgsl)  // unchanged where the device has f64
          EXPECT_NE(source(op, with_f64).find("_f64"), std::string::npos) << u.fn;
      }
      for (const B& bn : {B{BinaryOp::pow, "ember_pow_f32"}, B{BinaryOp::atan2, "ember_atan2_f32"},
                          B{BinaryOp::hypot, "ember_hypot_f32"}}) {
        const ir::Binary op{bn.op, t, t, t};
        const std::string s = source(op, caps);
        EXPECT_NE(s.find(bn.fn), std::string::npos) << bn.fn;
        EXPECT_EQ(s.find("_f64"), std::string::npos) << bn.fn;
        if (d != Dialect::wgsl)
          EXPECT_NE(source(op, with_f64).find("_f64"), std::string::npos) << bn.fn;
      }
    }
  }
}

// Lowers `op` (on device tensors) for the device's dialect without f64 and runs it there.
void run_without_f64(const Device& dev, const ir::Op& op) {
  auto* kb = dynamic_cast<runtime::KernelBackend*>(&backend_for(dev));
  ASSERT_NE(kb, nullptr) << dev.str();
  const Dialect d = dev.type() == DeviceType::vulkan ? Dialect::glsl : Dialect::opencl;
  kb->run(codegen::lower(op, d, no_f64_caps()));
  sync(dev);
}

std::vector<Device> gpu_devices() {
  std::vector<Device> out;
  for (const DeviceInfo& i : available_devices())
    if (i.device.type() == DeviceType::vulkan || i.device.type() == DeviceType::opencl)
      out.push_back(i.device);
  return out;
}

TEST(F32MathTest, GpuKernelsWithoutF64MatchRef) {
  const std::vector<Device> gpus = gpu_devices();
  if (gpus.empty()) GTEST_SKIP() << "no Vulkan or OpenCL device";
  const std::vector<float> xs = unary_inputs();
  std::vector<float> as, bs;
  binary_inputs(as, bs);
  for (const Device& dev : gpus) {
    struct U {
      UnaryOp op;
      const char* name;
      double rtol, atol;
    };
    // gelu's 1 + erf(x / sqrt 2) cancels below -2 (as ref's does): an absolute bound there
    for (const U& u : {U{UnaryOp::erf, "erf", 2e-6, 1e-30}, U{UnaryOp::erfinv, "erfinv", 2e-6, 0},
                       U{UnaryOp::gelu, "gelu", 2e-6, 1e-6}}) {
      const Tensor x = host(xs);
      Tensor want = empty_like(x);
      ember::run(ir::Unary{u.op, x, want});
      const Tensor xd = x.to(dev);
      Tensor got = empty_like(xd);
      run_without_f64(dev, ir::Unary{u.op, xd, got});
      const double e = check(want.to_vector<float>(), got.to(Device::ref()).to_vector<float>(), xs,
                             nullptr, u.rtol, u.atol, std::string(u.name) + " on " + dev.str());
      std::printf("[f32 math] %s on %s: max relative error %.3g\n", u.name, dev.str().c_str(), e);
    }
    struct B {
      BinaryOp op;
      const char* name;
      double rtol;
    };
    for (const B& bn : {B{BinaryOp::pow, "pow", 5e-6}, B{BinaryOp::atan2, "atan2", 2e-6},
                        B{BinaryOp::hypot, "hypot", 2e-6}}) {
      const Tensor a = host(as), b = host(bs);
      Tensor want = empty_like(a);
      ember::run(ir::Binary{bn.op, a, b, want});
      const Tensor ad = a.to(dev), bd = b.to(dev);
      Tensor got = empty_like(ad);
      run_without_f64(dev, ir::Binary{bn.op, ad, bd, got});
      const double e = check(want.to_vector<float>(), got.to(Device::ref()).to_vector<float>(), as,
                             &bs, bn.rtol, 0, std::string(bn.name) + " on " + dev.str());
      std::printf("[f32 math] %s on %s: max relative error %.3g\n", bn.name, dev.str().c_str(), e);
    }
  }
}

}  // namespace
}  // namespace ember
