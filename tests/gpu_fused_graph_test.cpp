// Fused graph kernels on the GPU backends (codegen/fused_graph.cpp, KernelBackend::execute_graph):
// on every non-host device, chains of element-wise ops give the same bits with fusion on as op
// by op (ember::set_fusion(device, false)), and stream_stats shows that graphs really ran.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "codegen/common.h"
#include "ember/ember.h"
#include "ember/nn/functional/activation.h"
#include "runtime/backend.h"
#include "test_util.h"

namespace ember {
namespace {

namespace F = nn::functional;

using test::gpu_devices;

// A tensor's values as exact host words: floats widened to f64, integers and bools to i64.
std::vector<uint64_t> bits(const Tensor& t) {
  const Tensor h = t.to(Device::ref());
  std::vector<uint64_t> out(size_t(h.numel()));
  if (is_floating(h.dtype())) {
    const std::vector<double> v = h.to(DType::f64).to_vector<double>();
    if (!v.empty()) std::memcpy(out.data(), v.data(), v.size() * 8);
  } else {
    const std::vector<int64_t> v = h.to(DType::i64).to_vector<int64_t>();
    if (!v.empty()) std::memcpy(out.data(), v.data(), v.size() * 8);
  }
  return out;
}

// Values in [-2, 2) from a fixed generator, made on the host (uploads are no recorded ops).
Tensor host_values(Shape shape, uint32_t seed, DType t = DType::f32) {
  std::vector<float> v(size_t(numel_of(shape)));
  uint32_t s = seed * 2654435761u + 12345u;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = float(s >> 8) / float(1 << 24) * 4.0f - 2.0f;
  }
  return from_vector<float>(v, shape, Device::ref()).to(t);
}

using Chain = std::function<std::vector<Tensor>(const Device&)>;

// Runs `chain` fused and op by op on `d`; every result must have the same dtype, shape and bits.
// Returns the fused run's stream stats.
StreamStats expect_same(const Device& d, const Chain& chain, const char* what) {
  set_fusion(d, true);
  sync(d);
  reset_stream_stats(d);
  std::vector<std::vector<uint64_t>> fused;
  std::vector<Tensor> fused_t = chain(d);
  for (const Tensor& t : fused_t) fused.push_back(bits(t));
  const StreamStats st = stream_stats(d);
  set_fusion(d, false);
  std::vector<Tensor> eager_t = chain(d);
  set_fusion(d, true);
  EXPECT_EQ(fused_t.size(), eager_t.size());
  for (size_t i = 0; i < fused_t.size() && i < eager_t.size(); ++i) {
    EXPECT_EQ(fused_t[i].dtype(), eager_t[i].dtype()) << what << " result " << i;
    EXPECT_EQ(fused_t[i].shape(), eager_t[i].shape()) << what << " result " << i;
    const std::vector<uint64_t> e = bits(eager_t[i]);
    EXPECT_EQ(fused[i].size(), e.size()) << what << " result " << i;
    if (fused[i].size() != e.size()) continue;
    size_t bad = 0;
    for (size_t j = 0; j < e.size(); ++j)
      if (fused[i][j] != e[j] && bad++ < 3)
        ADD_FAILURE() << d.str() << " " << what << " result " << i << " element " << j
                      << " differs: fused " << std::hex << fused[i][j] << " eager " << e[j];
    EXPECT_EQ(bad, 0u) << d.str() << " " << what << " result " << i;
  }
  EXPECT_GT(st.graphs, 0) << d.str() << " " << what << ": no graph ran fused";
  return st;
}

void on_each_gpu(const std::function<void(const Device&)>& body) {
  const std::vector<Device> gpus = gpu_devices();
  if (gpus.empty()) GTEST_SKIP() << "no GPU device";
  for (const Device& d : gpus) body(d);
}

TEST(GpuFusedGraphTest, F32ChainsMatchOpByOp) {
  on_each_gpu([](const Device& d) {
    const Tensor xh = host_values({4099}, 1), yh = host_values({4099}, 2);
    const StreamStats st = expect_same(
        d,
        [&](const Device& d) -> std::vector<Tensor> {
          const Tensor x = xh.to(d), y = yh.to(d);
          Tensor a = exp(F::relu(x * 2 + 1));
          // a * b + c across two ops: no contraction into one fma
          Tensor b = x * y + y;
          Tensor c = F::sigmoid(b) / (abs(a) + 0.5) - sqrt(abs(x)) * 3;
          Tensor e = F::leaky_relu(x, 0.2) + clamp(y, -0.5, 0.75) + tanh(x * y);
          return {a, b, c, e};
        },
        "f32");
    EXPECT_GE(st.fused_ops, 10) << d.str();
  });
}

// GELU's backward as autograd records it: products feeding sums across nodes, which GLSL may
// contract into fmas unless the locals are `precise` (lavapipe did: an ulp off the eager ops).
TEST(GpuFusedGraphTest, ProductsFeedingSumsAcrossNodesAreNotContracted) {
  on_each_gpu([](const Device& d) {
    const Tensor xh = host_values({4099}, 3), gh = host_values({4099}, 4);
    expect_same(
        d,
        [&](const Device& d) -> std::vector<Tensor> {
          const Tensor x = xh.to(d), g = gh.to(d);
          const Tensor cdf = (erf(x * 0.70710678f) + 1) * 0.5f;
          const Tensor pdf = exp(x * x * -0.5f) * 0.39894228f;
          return {g * (cdf + x * pdf), x * g + g * 3 - x * x};
        },
        "gelu backward");
  });
}

// Without `precise` locals GLSL may also simplify x - x to 0 and x / 0 to garbage (lavapipe gave
// 0 and denormals): IEEE results as the eager ops and torch give.
TEST(GpuFusedGraphTest, DivisionByAValueComputedInTheGraphKeepsIeeeResults) {
  on_each_gpu([](const Device& d) {
    const Tensor xh = tensor<float>({1.f, -2.f, 0.f, 3.f});
    std::vector<Tensor> fused;
    expect_same(
        d,
        [&](const Device& d) -> std::vector<Tensor> {
          const Tensor x = xh.to(d), y = xh.to(d);
          std::vector<Tensor> r = {x / (x - x),
                                   1.0 / (x - x),
                                   x / (x * 0),
                                   x / (x - y),
                                   (x * 1e38 * 10) - (x * 1e38 * 10),
                                   isfinite(x / 0.0)};
          if (fused.empty()) fused = r;  // the first run is the fused one
          return r;
        },
        "division");
    // torch 1.13's answers for x = [1, -2, 0, 3].
    const float inf = INFINITY, nan = NAN;
    const std::vector<std::vector<float>> want = {{inf, -inf, nan, inf},
                                                  {inf, inf, inf, inf},
                                                  {inf, inf, nan, inf},
                                                  {inf, -inf, nan, inf},
                                                  {nan, nan, 0, nan}};
    for (size_t i = 0; i < want.size(); ++i) {
      const std::vector<float> q = fused[i].to(Device::cpu()).to_vector<float>();
      for (size_t j = 0; j < 4; ++j)
        EXPECT_TRUE(std::isnan(want[i][j]) ? std::isnan(q[j]) : q[j] == want[i][j])
            << d.str() << " result " << i << " element " << j << ": " << q[j];
    }
    EXPECT_EQ(fused[5].to(Device::cpu()).to_vector<int>(), (std::vector<int>{0, 0, 0, 0}));
  });
}

TEST(GpuFusedGraphTest, SeveralLiveOutputs) {
  on_each_gpu([](const Device& d) {
    const Tensor xh = host_values({3, 333}, 3);
    expect_same(
        d,
        [&](const Device& d) -> std::vector<Tensor> {
          const Tensor x = xh.to(d);
          Tensor a = x * x;
          Tensor b = a - x;
          Tensor c = b * 0.25 + a;
          Tensor e = gt(c, b);
          return {a, b, c, e};
        },
        "live outputs");
  });
}

TEST(GpuFusedGraphTest, NarrowFloatChainsMatchOpByOp) {
  on_each_gpu([](const Device& d) {
    for (DType t : {DType::f16, DType::bf16}) {
      if (!supports_dtype(d, t)) continue;
      const Tensor xh = host_values({2050}, 4, t), yh = host_values({2050}, 5, t);
      expect_same(
          d,
          [&](const Device& d) -> std::vector<Tensor> {
            const Tensor x = xh.to(d), y = yh.to(d);
            // every intermediate rounds to 16 bits as its eager op stored it
            Tensor a = (x * 3 + 0.1) * y - 0.7;
            Tensor b = exp(a / 3) + x * x * x;
            Tensor c = where(gt(x, y), a, b * 0.3);
            Tensor f = (b.to(DType::f32) * 1.001).to(t) + a;  // casts both ways
            return {a, b, c, f};
          },
          dtype_name(t));
    }
  });
}

TEST(GpuFusedGraphTest, IntegerAndBoolChainsMatchOpByOp) {
  on_each_gpu([](const Device& d) {
    const Tensor xh = (host_values({1000}, 6) * 1000).to(DType::i32);
    const Tensor yh = (host_values({1000}, 7) * 50).to(DType::i32);
    expect_same(
        d,
        [&](const Device& d) -> std::vector<Tensor> {
          const Tensor x = xh.to(d), y = yh.to(d);
          Tensor a = (x * 3 + 7) * y - x;  // wraps as i32
          Tensor b = bitwise_xor(a, y) + bitwise_and(x, 255) + bitwise_left_shift(y, 3);
          Tensor c = minimum(a, b) + maximum(x, y) + abs(y);
          Tensor m = logical_or(logical_and(gt(x, y), ne(a, 0)), logical_not(lt(b, 0)));
          Tensor w = where(m, c, a * 2);
          return {a, b, c, m, w};
        },
        "i32/bool");
    for (DType t : {DType::i8, DType::i16}) {
      if (!supports_dtype(d, t)) continue;
      const Tensor ih = xh.to(t);
      expect_same(
          d,
          [&](const Device& d) -> std::vector<Tensor> {
            const Tensor x = ih.to(d);
            Tensor a = x * 3 + 100;  // wraps as i8 at each op
            Tensor b = a * a - x;
            Tensor c = clamp(x, -1, 2) * -7 + bitwise_and(b, -3);  // negative constants
            return {a, b, b.to(DType::i32) + 1, c};
          },
          dtype_name(t));
    }
  });
}

TEST(GpuFusedGraphTest, CastsMatchOpByOp) {
  on_each_gpu([](const Device& d) {
    const Tensor xh = host_values({777}, 8);
    expect_same(
        d,
        [&](const Device& d) -> std::vector<Tensor> {
          const Tensor x = xh.to(d);
          Tensor i = (x * 1e9).to(DType::i32);  // saturates
          Tensor f = (x * 100).to(DType::i32).to(DType::f32) + 0.5;
          Tensor b = gt(x, 0).to(DType::f32) * 2 - lt(x, -1).to(DType::i32).to(DType::f32);
          Tensor u = (x * 300).to(DType::u8).to(DType::i32) * 2;  // saturates at 0 and 255
          return {i, f, b, u};
        },
        "casts");
  });
}

TEST(GpuFusedGraphTest, BroadcastAndPermutedInputsAndStridedOutputs) {
  on_each_gpu([](const Device& d) {
    const Tensor xh = host_values({4, 5, 6}, 9), rowh = host_values({6}, 10),
                 colh = host_values({4, 1, 1}, 11), ph = host_values({6, 4, 5}, 12);
    expect_same(
        d,
        [&](const Device& d) -> std::vector<Tensor> {
          const Tensor x = xh.to(d), row = rowh.to(d), col = colh.to(d), p = ph.to(d);
          Tensor a = x * row + col;                 // broadcast loads
          Tensor b = a - p.permute({1, 2, 0}) * 2;  // a permuted load
          Tensor out = zeros({5, 4, 12}, TensorOptions(d));
          out.slice(2, 0, 12, 2).copy_(exp(b.permute({1, 0, 2}) * 0.5));  // a strided output
          Tensor t = zeros({6, 5, 4}, TensorOptions(d));
          t.permute({2, 1, 0}).copy_(sqrt(abs(b)) + 1);  // a permuted output
          return {a, b, out, t};
        },
        "views");
  });
}

TEST(GpuFusedGraphTest, InPlaceUpdates) {
  on_each_gpu([](const Device& d) {
    const Tensor wh = host_values({2, 513}, 13), gh = host_values({2, 513}, 14);
    expect_same(
        d,
        [&](const Device& d) -> std::vector<Tensor> {
          Tensor w = wh.to(d);
          const Tensor g = gh.to(d);
          Tensor m = zeros({2, 513}, TensorOptions(d));
          for (int step = 0; step < 4; ++step) {  // a momentum step, in place
            m.mul_(0.9).add_(g * w, 0.1);
            w.add_(m, -0.05);
            w.add_(0.001);
          }
          return {w, m};
        },
        "add_");
  });
}

TEST(GpuFusedGraphTest, GraphsWiderThanTheBufferLimitSplit) {
  on_each_gpu([](const Device& d) {
    // 40 inputs: more than any device's max_graph_buffers (at most 31 here)
    std::vector<Tensor> hs;
    for (int i = 0; i < 40; ++i) hs.push_back(host_values({300}, uint32_t(100 + i)));
    const StreamStats st = expect_same(
        d,
        [&](const Device& d) -> std::vector<Tensor> {
          std::vector<Tensor> xs;
          for (const Tensor& h : hs) xs.push_back(h.to(d));
          Tensor acc = xs[0];
          for (size_t i = 1; i < xs.size(); ++i) acc = acc + xs[i] * double(i);
          return {acc};
        },
        "40 inputs");
    // Each graph binds its loads and the one live accumulator (the dead partial sums bind
    // nothing): the first takes B - 1 inputs, each later one the carried sum and B - 2 more.
    const int64_t b = backend_for(d).max_graph_buffers();
    ASSERT_GE(b, 3) << d.str();
    const int64_t rest = std::max<int64_t>(40 - (b - 1), 0);
    EXPECT_EQ(st.graphs, 1 + (rest + b - 3) / (b - 2)) << d.str() << " max_graph_buffers " << b;
  });
}

TEST(GpuFusedGraphTest, OneKernelForOtherConstantsAndShapes) {
  on_each_gpu([](const Device& d) {
    auto chain = [&](const Tensor& xh, double k) {
      const Tensor x = xh.to(d);
      return exp(F::relu(x * k + 1)).to(Device::ref());
    };
    const Tensor x1 = host_values({1000}, 15), x2 = host_values({3, 77}, 16);
    const Tensor r1 = chain(x1, 2);  // builds the graph's kernel
    reset_stream_stats(d);
    const size_t kernels = codegen::cached_kernel_count();
    const Tensor r2 = chain(x1, 3);
    const Tensor r3 = chain(x2, -1.5);
    EXPECT_EQ(codegen::cached_kernel_count(), kernels)
        << d.str() << ": another constant or shape built another kernel";
    EXPECT_EQ(stream_stats(d).graphs, 2) << d.str();
    // and the constants reached the kernel
    const std::vector<float> v1 = x1.to_vector<float>(), v2 = x2.to_vector<float>();
    const std::vector<float> o2 = r2.to_vector<float>(), o3 = r3.to_vector<float>();
    for (size_t i = 0; i < v1.size(); i += 97)
      EXPECT_NEAR(o2[i], std::exp(std::max(v1[i] * 3 + 1, 0.0f)), 1e-4 * o2[i]) << i;
    for (size_t i = 0; i < v2.size(); i += 13)
      EXPECT_NEAR(o3[i], std::exp(std::max(v2[i] * -1.5f + 1, 0.0f)), 1e-4 * o3[i]) << i;
  });
}

}  // namespace
}  // namespace ember
