// Exactness of the cpu's matmul and convolution epilogues (oneDNN post-ops). NaN and
// infinities through them: a
// fused relu, sigmoid, exp or maximum must give what the eager ops give (torch's answers: NaN
// stays NaN, relu(-inf) is 0). oneDNN 2.6's jit relu turned NaN into 0, its reference relu
// turned -inf into NaN, its jit exp turned NaN into inf and its reference logistic NaN into 0;
// each layout below reaches another of its implementations (gemm, brgconv, jit, depthwise).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/autotune_util.h"
#include "ember/ember.h"
#include "op_table.h"

namespace ember {
namespace {

namespace F = nn::functional;
const Device kCpu = Device::cpu();
const float kInf = std::numeric_limits<float>::infinity();
const float kNan = std::numeric_limits<float>::quiet_NaN();

// Uniform values in [-1, 1] with every fifth element replaced by -inf, inf, NaN, -1e30 or 1e30
// in turn, so that sums over them give each non-finite kind (inf - inf: NaN).
Tensor nonfinite_input(const Shape& s, uint64_t seed) {
  std::vector<float> v = testing::uniform(s, DType::f32, seed, -1, 1).to_vector<float>();
  const float special[] = {-kInf, kInf, kNan, -1e30f, 1e30f};
  for (size_t i = 0; i < v.size(); i += 5) v[i] = special[(i / 5 + seed) % 5];
  return from_vector(v, s, kCpu);
}

std::string check_equal(const Tensor& fused, const Tensor& eager, bool nonfinite_expected) {
  const std::vector<double> f = fused.to(DType::f64).to_vector<double>();
  const std::vector<double> e = eager.to(DType::f64).to_vector<double>();
  if (f.size() != e.size()) return "sizes differ";
  int nonfinite = 0;
  for (size_t k = 0; k < f.size(); ++k) {
    const bool ok = std::isnan(e[k])   ? std::isnan(f[k])
                    : std::isinf(e[k]) ? f[k] == e[k]
                                       : std::fabs(f[k] - e[k]) <= 1e-4 * (1 + std::fabs(e[k]));
    if (!ok)
      return "element " + std::to_string(k) + ": fused " + std::to_string(f[k]) + ", eager " +
             std::to_string(e[k]);
    nonfinite += !std::isfinite(e[k]);
  }
  // Every epilogue here keeps a NaN pre-activation NaN: the case must reach one.
  return nonfinite > 0 || !nonfinite_expected ? "" : "no NaN or infinity reached the output";
}

struct Epilogue {
  std::string name;
  std::function<Tensor(const Tensor&)> f;
};

std::vector<Epilogue> epilogues(const Tensor& other) {
  return {
      {"relu", [](const Tensor& y) { return F::relu(y); }},
      {"leaky_relu 0", [](const Tensor& y) { return F::leaky_relu(y, 0.0); }},
      {"leaky_relu 0.1", [](const Tensor& y) { return F::leaky_relu(y, 0.1); }},
      {"relu after a scale", [](const Tensor& y) { return F::relu(y * 0.5 + 1.0); }},
      {"gelu", [](const Tensor& y) { return F::gelu(y); }},
      {"silu", [](const Tensor& y) { return F::silu(y); }},
      {"sigmoid", [](const Tensor& y) { return F::sigmoid(y); }},
      {"tanh", [](const Tensor& y) { return tanh(y); }},
      {"exp", [](const Tensor& y) { return exp(y); }},
      {"maximum", [&](const Tensor& y) { return maximum(y, other); }},
      {"minimum", [&](const Tensor& y) { return minimum(y, other); }},
      {"residual + relu", [&](const Tensor& y) { return F::relu(y + other); }},
  };
}

// Runs body with fusion on and off and compares (NaN-aware); the fused run must see a
// non-finite pre-activation, which the inputs' infinities guarantee.
void expect_same(const std::string& what, const std::function<Tensor()>& body,
                 bool nonfinite_expected = true) {
  SCOPED_TRACE(what);
  const bool was = fusion_enabled(kCpu);
  set_fusion(kCpu, true);
  const Tensor fused = body();
  sync(kCpu);
  set_fusion(kCpu, false);
  const Tensor eager = body();
  set_fusion(kCpu, was);
  const std::string err = check_equal(fused, eager, nonfinite_expected);
  EXPECT_TRUE(err.empty()) << what << ": " << err;
}

// Every way the convolution autotuner may pick is forced in turn: a NaN lost in one
// implementation's post-ops must not hide behind another's timing.
class EpilogueNonFiniteTest : public ::testing::Test {
 protected:
  void SetUp() override { cpu::tuner().force("cpu.matmul", "onednn"); }
  void TearDown() override {
    cpu::tuner().force("cpu.matmul", "");
    cpu::tuner().force("cpu.conv", "");
  }
};

TEST_F(EpilogueNonFiniteTest, ConvolutionEpiloguesKeepNaNAndInfinities) {
  InferenceMode inference;  // the anchors the stream offers at inference too
  struct Conv {
    std::string name;
    Tensor x, w;
    int64_t groups;
    bool channels_last;
  };
  const std::vector<Conv> convs = {
      {"3x3", nonfinite_input({2, 8, 7, 6}, 1), nonfinite_input({16, 8, 3, 3}, 2), 1, false},
      {"3x3 channels-last", nonfinite_input({2, 16, 7, 6}, 3),
       testing::uniform({16, 16, 3, 3}, DType::f32, 4, -1, 1).to(kCpu), 1, true},
      {"1x1 channels-last", nonfinite_input({2, 16, 5, 5}, 5),
       testing::uniform({32, 16, 1, 1}, DType::f32, 6, -1, 1).to(kCpu), 1, true},
      {"grouped 1x1 (gemm)", nonfinite_input({1, 4, 9, 1}, 7),
       testing::uniform({4, 2, 1, 1}, DType::f32, 8, -1, 1).to(kCpu), 2, false},
      {"depthwise", nonfinite_input({2, 8, 6, 6}, 9),
       testing::uniform({8, 1, 3, 3}, DType::f32, 10, -1, 1).to(kCpu), 8, true},
  };
  for (const std::string way : {"", "nhwc", "blocked", "matmul", "winograd"}) {
    cpu::tuner().force("cpu.conv", way);
    for (const Conv& c : convs) {
      const Tensor x = c.channels_last ? c.x.contiguous(MemoryFormat::channels_last) : c.x;
      const Tensor y0 = F::conv2d(x, c.w, Tensor(), {1}, {1}, {1}, c.groups);
      const Tensor other = nonfinite_input(y0.shape(), 11);
      for (const Epilogue& e : epilogues(other))
        expect_same(c.name + ", way '" + way + "', " + e.name,
                    [&] { return e.f(F::conv2d(x, c.w, Tensor(), {1}, {1}, {1}, c.groups)); });
    }
  }
}

TEST_F(EpilogueNonFiniteTest, MatmulEpiloguesKeepNaNAndInfinities) {
  const Tensor a = nonfinite_input({33, 20}, 12);
  const Tensor b = testing::uniform({20, 24}, DType::f32, 13, -1, 1).to(kCpu);
  const Tensor bias = nonfinite_input({24}, 14), other = nonfinite_input({33, 24}, 15);
  for (const Epilogue& e : epilogues(other)) {
    expect_same("matmul, " + e.name, [&] { return e.f(matmul(a, b)); });
    expect_same("matmul + bias, " + e.name, [&] { return e.f(matmul(a, b) + bias); });
  }
  const Tensor a3 = nonfinite_input({3, 7, 20}, 16);
  const Tensor other3 = nonfinite_input({3, 7, 24}, 17);
  for (const Epilogue& e : epilogues(other3))
    expect_same("batched matmul, " + e.name, [&] { return e.f(matmul(a3, b)); });
}

// oneDNN 2.6's brgemm kernels gave every eltwise post-op of one algorithm the first one's
// parameters: (y + 1) * 2 came out y + 2. Chains with a repeated algorithm match eager.
TEST_F(EpilogueNonFiniteTest, RepeatedStepsOfOneKindKeepTheirOwnParameters) {
  const Tensor a = testing::uniform({96, 160}, DType::f32, 21, -1, 1).to(kCpu);
  const Tensor b = testing::uniform({160, 144}, DType::f32, 22, -1, 1).to(kCpu);
  const Tensor x = testing::uniform({2, 16, 9, 9}, DType::f32, 23, -1, 1)
                       .to(kCpu)
                       .contiguous(MemoryFormat::channels_last);
  const Tensor w = testing::uniform({32, 16, 1, 1}, DType::f32, 24, -1, 1).to(kCpu);
  const std::vector<Epilogue> chains = {
      {"(y + 1) * 2", [](const Tensor& y) { return (y + 1.0) * 2.0; }},
      {"tanh(y + 1) * 2", [](const Tensor& y) { return tanh(y + 1.0) * 2.0; }},
      {"relu(y + 1)", [](const Tensor& y) { return F::relu(y + 1.0); }},
      {"relu(relu(y * 0.5) - 0.1)",
       [](const Tensor& y) { return F::relu(F::relu(y * 0.5) - 0.1); }},
      {"gelu(y) * 3 + 1", [](const Tensor& y) { return F::gelu(y) * 3.0 + 1.0; }},
  };
  for (const Epilogue& e : chains) {
    expect_same(
        "matmul, " + e.name, [&] { return e.f(matmul(a, b)); }, false);
    for (const std::string way : {"", "nhwc", "blocked", "matmul"}) {
      cpu::tuner().force("cpu.conv", way);
      expect_same(
          "conv, way '" + way + "', " + e.name, [&] { return e.f(F::conv2d(x, w)); }, false);
    }
  }
}

}  // namespace
}  // namespace ember
