// Matmul epilogues on the cpu (issue 16): the stream records an f32 matmul as an anchor, the
// element-wise ops that read its whole result join it, and the cpu backend runs both as one
// oneDNN matmul with post-ops (src/backends/cpu/epilogue.cpp). Each case compares fusion on with
// fusion off (within f32 tolerance: the summation order and oneDNN's eltwise approximations
// differ) and checks the stream's counters say what ran.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "backends/cpu/autotune_util.h"
#include "backends/cpu/gemm.h"
#include "ember/ember.h"
#include "op_table.h"

namespace ember {
namespace {

namespace F = nn::functional;
const Device kCpu = Device::cpu();

Tensor input(const Shape& s, uint64_t seed, double lo = -1, double hi = 1) {
  return testing::uniform(s, DType::f32, seed, lo, hi).to(kCpu);
}

std::vector<double> values(const Tensor& t) { return t.to(DType::f64).to_vector<double>(); }

// body() with fusion on, then off; every tensor within 1e-4 * (1 + |eager|). Returns the fused
// run's stream counters.
StreamStats expect_close(const std::string& what,
                         const std::function<std::vector<Tensor>()>& body) {
  SCOPED_TRACE(what);
  const bool was = fusion_enabled(kCpu);
  set_fusion(kCpu, true);
  reset_stream_stats(kCpu);
  const std::vector<Tensor> fused = body();
  sync(kCpu);
  const StreamStats st = stream_stats(kCpu);
  set_fusion(kCpu, false);
  const std::vector<Tensor> eager = body();
  set_fusion(kCpu, was);
  EXPECT_GT(st.recorded, 0);
  EXPECT_EQ(fused.size(), eager.size());
  for (size_t i = 0; i < std::min(fused.size(), eager.size()); ++i) {
    EXPECT_EQ(fused[i].shape(), eager[i].shape()) << "output " << i;
    const std::vector<double> f = values(fused[i]), e = values(eager[i]);
    EXPECT_EQ(f.size(), e.size());
    for (size_t k = 0; k < std::min(f.size(), e.size()); ++k)
      if (!(std::fabs(f[k] - e[k]) <= 1e-4 * (1 + std::fabs(e[k])))) {
        ADD_FAILURE() << "output " << i << " element " << k << ": fused " << f[k] << ", eager "
                      << e[k];
        break;
      }
  }
  return st;
}

// The eager matmul on oneDNN, as the epilogue (an OpenBLAS shape class is not fused; the
// autotuner's choice between the two is timed, so it is forced here).
class EpilogueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cpu::gemm::sgemm_choice_forced() &&
        cpu::gemm::sgemm_library(64, 64, 64) != cpu::gemm::Library::onednn)
      GTEST_SKIP() << "EMBER_GEMM puts every matmul on OpenBLAS: nothing is fused";
    cpu::tuner().force("cpu.matmul", "onednn");
  }
  void TearDown() override { cpu::tuner().force("cpu.matmul", ""); }
};

struct Case {
  std::string name;
  std::function<Tensor(const Tensor&)> epilogue;
};

TEST_F(EpilogueTest, EachEpilogueKindIsOneKernel) {
  const Tensor x = input({33, 40}, 1), w = input({40, 24}, 2), bias = input({24}, 3);
  const Tensor res = input({33, 24}, 4), col = input({33, 1}, 5);
  const std::vector<Case> cases = {
      {"bias", [&](const Tensor& y) { return y + bias; }},
      {"relu", [](const Tensor& y) { return F::relu(y); }},
      {"gelu", [](const Tensor& y) { return F::gelu(y); }},
      {"gelu_tanh", [](const Tensor& y) { return F::gelu(y, "tanh"); }},
      {"silu", [](const Tensor& y) { return F::silu(y); }},
      {"sigmoid", [](const Tensor& y) { return F::sigmoid(y); }},
      {"tanh", [](const Tensor& y) { return tanh(y); }},
      {"scale", [](const Tensor& y) { return y * 0.125; }},
      {"residual", [&](const Tensor& y) { return y + res; }},
      {"row broadcast mul", [&](const Tensor& y) { return y * col; }},
      {"bias + gelu + residual + scale",
       [&](const Tensor& y) { return (F::gelu(y + bias) + res) * 0.5; }},
      {"sub, div", [&](const Tensor& y) { return (y - res) / 4.0; }},
  };
  for (const Case& c : cases) {
    const StreamStats st =
        expect_close(c.name, [&] { return std::vector<Tensor>{c.epilogue(matmul(x, w))}; });
    EXPECT_EQ(st.kernels(), 1) << c.name << ": the matmul and its epilogue are one kernel";
    EXPECT_EQ(st.graphs, 1) << c.name;
    EXPECT_EQ(st.eager_ops, 0) << c.name;
  }
}

TEST_F(EpilogueTest, BatchDimsAndTransposedOperands) {
  const Tensor a = input({3, 17, 20}, 6), b = input({3, 20, 9}, 7), bias = input({9}, 8);
  StreamStats st =
      expect_close("batched", [&] { return std::vector<Tensor>{F::relu(matmul(a, b) + bias)}; });
  EXPECT_EQ(st.kernels(), 1);
  // Transposed views of both operands: oneDNN reads them through their strides.
  const Tensor at = input({20, 17}, 9), bt = input({9, 20}, 10);
  st = expect_close("transposed",
                    [&] { return std::vector<Tensor>{F::gelu(matmul(at.t(), bt.t()) + bias)}; });
  EXPECT_EQ(st.kernels(), 1);
  // A batched matrix times one matrix (folded into one GEMM) and a 4-d result.
  const Tensor x4 = input({2, 3, 5, 20}, 11);
  st = expect_close("4-d times 2-d",
                    [&] { return std::vector<Tensor>{F::sigmoid(matmul(x4, b[0]) * 2.0)}; });
  EXPECT_EQ(st.kernels(), 1);
}

TEST_F(EpilogueTest, StridedBiasAndResidualGiveTheEagerValues) {
  const Tensor x = input({6, 8}, 40), w = input({8, 5}, 41);
  const Tensor bias = input({10}, 42).slice(0, 0, 10, 2);  // [5], stride 2
  const Tensor res = input({5, 6}, 43).t();                // [6, 5], transposed
  expect_close("strided", [&] { return std::vector<Tensor>{F::relu(matmul(x, w) + bias) + res}; });
  expect_close("strided out", [&] {
    Tensor out = zeros({5, 6}, {DType::f32, kCpu}).t();  // written through a transpose
    out.copy_(F::gelu(matmul(x, w)));
    return std::vector<Tensor>{out};
  });
}

TEST_F(EpilogueTest, LinearAndItsBiasBroadcast) {
  const Tensor x = input({4, 6, 32}, 12), w = input({16, 32}, 13), bias = input({16}, 14);
  const StreamStats st =
      expect_close("linear", [&] { return std::vector<Tensor>{tanh(linear(x, w, bias))}; });
  EXPECT_EQ(st.kernels(), 1);
}

TEST_F(EpilogueTest, AHeldProductIsWrittenAndBothAreRight) {
  const Tensor x = input({20, 30}, 15), w = input({30, 12}, 16), bias = input({12}, 17);
  const StreamStats st = expect_close("held", [&] {
    Tensor y = matmul(x, w);
    Tensor z = F::gelu(y + bias);
    return std::vector<Tensor>{y, z};  // y is read too: the matmul writes it
  });
  EXPECT_EQ(st.kernels(), 2) << "the matmul, then its epilogue graph";
}

TEST_F(EpilogueTest, ADeadProductIsNeverWritten) {
  const Tensor x = input({20, 30}, 18), w = input({30, 12}, 19), bias = input({12}, 20);
  const StreamStats st =
      expect_close("dead", [&] { return std::vector<Tensor>{F::relu(matmul(x, w) + bias)}; });
  EXPECT_EQ(st.kernels(), 1);
  EXPECT_GE(st.dropped, 2) << "neither the product nor the biased sum is written";
}

TEST_F(EpilogueTest, EpiloguesOutsidePostOpsRunAsAGraphAfterTheMatmul) {
  const Tensor x = input({10, 8}, 21), w = input({8, 6}, 22);
  // y * sigmoid(y) reads the product twice (a branch), and abs has no post-op.
  StreamStats st = expect_close("branch", [&] {
    Tensor y = matmul(x, w);
    return std::vector<Tensor>{y * F::sigmoid(y) + abs(y)};
  });
  EXPECT_EQ(st.kernels(), 2);
  // Two outputs of the epilogue.
  st = expect_close("two outputs", [&] {
    Tensor y = matmul(x, w) * 2.0;
    return std::vector<Tensor>{y, F::relu(y)};
  });
  EXPECT_EQ(st.kernels(), 2);
}

TEST_F(EpilogueTest, MatmulAloneAndUnrelatedOpsAfterIt) {
  const Tensor x = input({10, 8}, 23), w = input({8, 6}, 24), u = input({10, 6}, 25);
  const StreamStats st = expect_close("alone", [&] {
    Tensor y = matmul(x, w);
    Tensor v = exp(u) * 2.0;  // does not read the product: not an epilogue
    return std::vector<Tensor>{y, v};
  });
  EXPECT_EQ(st.kernels(), 2);
}

TEST_F(EpilogueTest, InPlaceWriteOfAnOperandAfterTheMatmulRunsAfterIt) {
  const Tensor w = input({8, 6}, 27);
  const StreamStats st = expect_close("in place", [&] {
    Tensor x = input({10, 8}, 26);
    Tensor y = F::relu(matmul(x, w));
    x.mul_(3.0);  // writes the matmul's operand: must not join (the product reads x first)
    return std::vector<Tensor>{y, x};
  });
  EXPECT_GE(st.graphs, 1);
}

TEST_F(EpilogueTest, GradientsThroughLinearGeluAreUnchanged) {
  auto grads = [](bool fusion) {
    const bool was = fusion_enabled(kCpu);
    set_fusion(kCpu, fusion);
    Tensor x = input({6, 10}, 28).requires_grad_(true);
    Tensor w = input({7, 10}, 29).requires_grad_(true);
    Tensor b = input({7}, 30).requires_grad_(true);
    Tensor loss = (F::gelu(linear(x, w, b)) * input({6, 7}, 31)).sum();
    loss.backward();
    std::vector<std::vector<double>> g{values(x.grad()), values(w.grad()), values(b.grad()),
                                       values(loss)};
    set_fusion(kCpu, was);
    return g;
  };
  const auto on = grads(true), off = grads(false);
  for (size_t i = 0; i < on.size(); ++i) {
    ASSERT_EQ(on[i].size(), off[i].size());
    for (size_t k = 0; k < on[i].size(); ++k)
      EXPECT_NEAR(on[i][k], off[i][k], 1e-4 * (1 + std::fabs(off[i][k]))) << i << ", " << k;
  }
}

TEST_F(EpilogueTest, AThrowingOpDoesNotPoisonAPendingAnchor) {
  const Tensor x = input({12, 8}, 32), w = input({8, 5}, 33), bias = input({5}, 34);
  const StreamStats st = expect_close("throw", [&] {
    Tensor y = F::relu(matmul(x, w) + bias);  // recorded, pending
    EXPECT_THROW(matmul(x, x), Error);        // [12, 8] x [12, 8]: nothing recorded
    EXPECT_THROW(y + input({7}, 35), Error);
    Tensor z = F::gelu(matmul(y, w.t()));  // y [12, 5] x [5, 8]
    return std::vector<Tensor>{y, z};
  });
  EXPECT_GE(st.graphs, 1);
}

TEST_F(EpilogueTest, OtherDtypesRunTheMatmulEagerly) {
  for (DType t : {DType::f64, DType::bf16}) {
    const Tensor x = input({9, 8}, 36).to(t), w = input({8, 4}, 37).to(t);
    set_fusion(kCpu, true);
    sync(kCpu);  // the conversions
    reset_stream_stats(kCpu);
    const Tensor y = F::relu(matmul(x, w));
    sync(kCpu);
    EXPECT_EQ(stream_stats(kCpu).eager_ops, 2) << dtype_name(t) << ": matmul, relu";
    EXPECT_EQ(stream_stats(kCpu).graphs, 0) << dtype_name(t);
    const Tensor want = F::relu(matmul(x.to(DType::f64), w.to(DType::f64)));
    const std::vector<double> got = values(y), ref = values(want);
    ASSERT_EQ(got.size(), ref.size());
    for (size_t k = 0; k < got.size(); ++k)
      EXPECT_NEAR(got[k], ref[k], 2e-2 * (1 + std::fabs(ref[k]))) << dtype_name(t) << " " << k;
  }
}

// A shape class whose eager matmul runs on OpenBLAS keeps it: the fused run is the matmul, then
// its epilogue as a graph, equal to fusion off bit for bit (oneDNN would sum in another order).
TEST_F(EpilogueTest, AnOpenBlasShapeClassIsNotFusedAndKeepsTheEagerBits) {
  if (!cpu::gemm::have_openblas() || cpu::gemm::sgemm_choice_forced())
    GTEST_SKIP() << "OpenBLAS absent or EMBER_GEMM set";
  cpu::tuner().force("cpu.matmul", "openblas");
  const Tensor x = input({33, 40}, 50), w = input({40, 24}, 51), bias = input({24}, 52);
  const bool was = fusion_enabled(kCpu);
  std::vector<std::vector<double>> runs;
  StreamStats st{};
  for (bool fusion : {true, false}) {
    set_fusion(kCpu, fusion);
    reset_stream_stats(kCpu);
    const Tensor y = F::relu(matmul(x, w) + bias);
    runs.push_back(values(y));
    if (fusion) st = stream_stats(kCpu);
  }
  set_fusion(kCpu, was);
  EXPECT_EQ(st.kernels(), 2) << "the matmul, then relu(y + bias) as one graph";
  EXPECT_EQ(st.graphs, 1);
  EXPECT_EQ(runs[0], runs[1]);
}

}  // namespace
}  // namespace ember
