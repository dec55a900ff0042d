// Convolution epilogues on the cpu: the stream records an f32 forward convolution (offered
// through Backend::execute_fused) as an anchor, the element-wise ops that read its whole result
// join it, and the cpu backend runs both as one oneDNN convolution with post-ops
// (src/backends/cpu/conv.cpp, post_ops.cpp). Each case compares fusion on with fusion off
// (within 1e-4 * (1 + |eager|)) and checks the stream's counters say what ran.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/kernels.h"
#include "ember/ember.h"
#include "op_table.h"
#include "runtime/autotune.h"

namespace ember {
namespace {

namespace F = nn::functional;
const Device kCpu = Device::cpu();

Tensor input(const Shape& s, uint64_t seed, double lo = -1, double hi = 1) {
  return testing::uniform(s, DType::f32, seed, lo, hi).to(kCpu);
}

std::vector<double> values(const Tensor& t) { return t.to(DType::f64).to_vector<double>(); }

void expect_near_all(const std::vector<double>& f, const std::vector<double>& e,
                     const std::string& what) {
  ASSERT_EQ(f.size(), e.size()) << what;
  for (size_t k = 0; k < f.size(); ++k)
    if (!(std::fabs(f[k] - e[k]) <= 1e-4 * (1 + std::fabs(e[k])))) {
      ADD_FAILURE() << what << " element " << k << ": fused " << f[k] << ", eager " << e[k];
      return;
    }
}

// body() with fusion on, then off; every tensor within 1e-4 * (1 + |eager|). Returns the fused
// run's stream counters.
StreamStats expect_close(const std::string& what,
                         const std::function<std::vector<Tensor>()>& body) {
  SCOPED_TRACE(what);
  const bool was = fusion_enabled(kCpu);
  set_fusion(kCpu, true);
  sync(kCpu);
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
    expect_near_all(values(fused[i]), values(eager[i]), "output " + std::to_string(i));
  }
  return st;
}

struct Case {
  std::string name;
  std::function<Tensor(const Tensor&)> epilogue;
};

TEST(ConvEpilogueTest, EachEpilogueKindIsOneKernel) {
  const Tensor x = input({2, 3, 10, 9}, 1), w = input({8, 3, 3, 3}, 2), b = input({8}, 3);
  // A residual (a binary operand of dst's shape) is fused in dst's layout by the jit
  // convolutions only with channels-last tensors: on NCHW only oneDNN's gemm convolution takes
  // it, through its slow reference post-ops, so NCHW residuals run as two kernels.
  const Tensor res = input({2, 8, 8, 7}, 4).contiguous(MemoryFormat::channels_last);
  const Tensor chan = input({1, 8, 1, 1}, 5);
  const std::vector<Case> cases = {
      {"relu", [](const Tensor& y) { return F::relu(y); }},
      {"gelu", [](const Tensor& y) { return F::gelu(y); }},
      {"silu", [](const Tensor& y) { return F::silu(y); }},
      {"sigmoid", [](const Tensor& y) { return F::sigmoid(y); }},
      {"tanh", [](const Tensor& y) { return tanh(y); }},
      {"scale", [](const Tensor& y) { return y * 0.25; }},
      {"residual + relu", [&](const Tensor& y) { return F::relu(y + res); }},
      {"per-channel mul", [&](const Tensor& y) { return y * chan; }},
      {"scale + gelu + residual", [&](const Tensor& y) { return F::gelu(y * 2.0) + res; }},
  };
  for (const Case& c : cases) {
    const Tensor xx = c.name.find("residual") == std::string::npos
                          ? x
                          : x.contiguous(MemoryFormat::channels_last);
    const StreamStats st =
        expect_close(c.name, [&] { return std::vector<Tensor>{c.epilogue(F::conv2d(xx, w, b))}; });
    EXPECT_EQ(st.kernels(), 1) << c.name << ": the convolution and its epilogue are one kernel";
    EXPECT_EQ(st.graphs, 1) << c.name;
    EXPECT_EQ(st.eager_ops, 0) << c.name;
    EXPECT_GE(st.dropped, 1) << c.name << ": the convolution's own output is never written";
  }
}

TEST(ConvEpilogueTest, GeometriesAndGroups) {
  const Tensor x = input({2, 4, 11, 12}, 6), b = input({6}, 7);
  struct Geo {
    std::string name;
    Tensor w;
    std::vector<int64_t> stride, padding, dilation;
    int64_t groups;
  };
  const std::vector<Geo> geos = {
      {"stride 2, padding 1", input({6, 4, 3, 3}, 8), {2}, {1}, {1}, 1},
      {"dilation 2", input({6, 4, 3, 3}, 9), {1}, {2}, {2}, 1},
      {"groups 2", input({6, 2, 3, 3}, 10), {1}, {1}, {1}, 2},
      {"1x1", input({6, 4, 1, 1}, 11), {1}, {0}, {1}, 1},
  };
  for (const Geo& g : geos) {
    const StreamStats st = expect_close(g.name, [&] {
      return std::vector<Tensor>{
          F::relu(F::conv2d(x, g.w, b, g.stride, g.padding, g.dilation, g.groups))};
    });
    EXPECT_EQ(st.kernels(), 1) << g.name;
  }
  const Tensor dw = input({4, 1, 3, 3}, 12);  // depthwise, no bias
  const StreamStats st = expect_close("depthwise", [&] {
    return std::vector<Tensor>{F::gelu(F::conv2d(x, dw, Tensor(), {1}, {1}, {1}, 4))};
  });
  EXPECT_EQ(st.kernels(), 1);
}

TEST(ConvEpilogueTest, ChannelsLastInputAndResidual) {
  const Tensor x = input({2, 5, 9, 9}, 13).contiguous(MemoryFormat::channels_last);
  const Tensor b = input({8}, 16);
  const Tensor res = input({2, 8, 9, 9}, 15).contiguous(MemoryFormat::channels_last);
  for (int64_t k : {1, 3}) {
    const Tensor w = input({8, 5, k, k}, 14 + uint64_t(k));
    const std::string what = "channels_last " + std::to_string(k) + "x" + std::to_string(k);
    const StreamStats st = expect_close(what, [&] {
      const Tensor y = F::conv2d(x, w, b, {1}, {k / 2});
      EXPECT_TRUE(y.is_contiguous(MemoryFormat::channels_last)) << what;
      return std::vector<Tensor>{F::relu(y + res)};
    });
    EXPECT_EQ(st.kernels(), 1) << what;
    EXPECT_EQ(st.eager_ops, 0) << what;
  }  // A contiguous residual on a channels-last output: the graph reads both by logical index.
  const Tensor w = input({8, 5, 3, 3}, 40), plain = input({2, 8, 9, 9}, 41);
  expect_close("mixed layouts",
               [&] { return std::vector<Tensor>{F::relu(F::conv2d(x, w, b, {1}, {1}) + plain)}; });
}

TEST(ConvEpilogueTest, OneAndThreeSpatialDims) {
  const Tensor x1 = input({2, 3, 20}, 42), w1 = input({5, 3, 4}, 43);
  expect_close("conv1d", [&] { return std::vector<Tensor>{F::relu(F::conv1d(x1, w1))}; });
  const Tensor x3 = input({1, 3, 6, 7, 5}, 44), w3 = input({4, 3, 2, 3, 2}, 45);
  const Tensor b3 = input({4}, 46);
  const StreamStats st = expect_close(
      "conv3d", [&] { return std::vector<Tensor>{F::silu(F::conv3d(x3, w3, b3, {1}, {1}))}; });
  EXPECT_EQ(st.kernels(), 1);
}

TEST(ConvEpilogueTest, AHeldOutputIsWrittenAndBothAreRight) {
  const Tensor x = input({1, 3, 8, 8}, 17), w = input({4, 3, 3, 3}, 18), b = input({4}, 19);
  const StreamStats st = expect_close("held", [&] {
    Tensor y = F::conv2d(x, w, b);
    Tensor z = F::relu(y);
    return std::vector<Tensor>{y, z};  // y is read too: the convolution writes it
  });
  EXPECT_EQ(st.kernels(), 2) << "the convolution, then relu";
  EXPECT_EQ(st.graphs, 0);
}

TEST(ConvEpilogueTest, AConvolutionAloneIsCountedAsAKernel) {
  const Tensor x = input({1, 3, 8, 8}, 20), w = input({4, 3, 3, 3}, 21);
  const StreamStats st =
      expect_close("alone", [&] { return std::vector<Tensor>{F::conv2d(x, w)}; });
  EXPECT_EQ(st.kernels(), 1);
  EXPECT_EQ(st.eager_ops, 1);
}

TEST(ConvEpilogueTest, EpiloguesOutsidePostOpsRunAsAGraphAfterTheConvolution) {
  const Tensor x = input({1, 3, 8, 8}, 22), w = input({4, 3, 3, 3}, 23);
  const StreamStats st = expect_close("branch", [&] {
    Tensor y = F::conv2d(x, w);
    return std::vector<Tensor>{y * F::sigmoid(y) + abs(y)};
  });
  EXPECT_EQ(st.kernels(), 2);
}

TEST(ConvEpilogueTest, GradientsThroughConvReluAreUnchanged) {
  auto grads = [](bool fusion) {
    const bool was = fusion_enabled(kCpu);
    set_fusion(kCpu, fusion);
    manual_seed(7);
    nn::Conv2d conv(nn::Conv2dOptions(3, 6, 3).padding(1));
    Tensor x = input({2, 3, 7, 7}, 24).requires_grad_(true);
    Tensor loss = (F::relu(conv.forward(x)) * input({2, 6, 7, 7}, 25)).sum();
    loss.backward();
    std::vector<std::vector<double>> g{values(x.grad()), values(conv.weight.grad()),
                                       values(conv.bias.grad()), values(loss)};
    set_fusion(kCpu, was);
    return g;
  };
  const auto on = grads(true), off = grads(false);
  ASSERT_EQ(on.size(), off.size());
  for (size_t i = 0; i < on.size(); ++i) expect_near_all(on[i], off[i], std::to_string(i));
}

TEST(ConvEpilogueTest, AThrowingOpDoesNotPoisonAPendingConvolution) {
  const Tensor x = input({1, 3, 8, 8}, 26), w = input({4, 3, 3, 3}, 27), b = input({4}, 28);
  const StreamStats st = expect_close("throw", [&] {
    Tensor y = F::relu(F::conv2d(x, w, b));                      // recorded, pending
    EXPECT_THROW(F::conv2d(x, input({4, 5, 3, 3}, 29)), Error);  // channels do not match
    EXPECT_THROW(y + input({7}, 30), Error);
    Tensor z = F::gelu(F::conv2d(y, input({2, 4, 3, 3}, 31)));
    return std::vector<Tensor>{y, z};
  });
  EXPECT_GE(st.graphs, 1);
}

// Eval batch_norm between a convolution and its relu: the per-channel scale and shift (ops of
// another shape, independent of the convolution) run first as a side group, and the convolution
// takes x * scale + shift and the relu (and a residual) as post-ops: 2 kernels, not 4.
TEST(ConvEpilogueTest, BatchNormBetweenConvAndReluJoinsTheEpilogue) {
  const Tensor x = input({2, 6, 9, 9}, 50).contiguous(MemoryFormat::channels_last);
  const Tensor w = input({8, 6, 3, 3}, 51), mean = input({8}, 52), g = input({8}, 54);
  const Tensor var = input({8}, 53, 0.5, 2), beta = input({8}, 55);
  const Tensor res = input({2, 8, 9, 9}, 56).contiguous(MemoryFormat::channels_last);
  NoGradGuard no_grad;
  StreamStats st = expect_close("conv + bn + relu", [&] {
    return std::vector<Tensor>{
        F::relu(F::batch_norm(F::conv2d(x, w, Tensor(), {1}, {1}), mean, var, g, beta, false))};
  });
  EXPECT_EQ(st.kernels(), 2) << "the per-channel graph, then the convolution with post-ops";
  EXPECT_EQ(st.eager_ops, 0);
  st = expect_close("conv + bn + residual + relu", [&] {
    const Tensor y = F::batch_norm(F::conv2d(x, w, Tensor(), {1}, {1}), mean, var, g, beta, false);
    return std::vector<Tensor>{F::relu(y + res)};
  });
  EXPECT_EQ(st.kernels(), 2);
}

// An op after the convolution that writes the convolution's input, or reads what its epilogue
// writes, is never moved before it: the results stay the eager ones.
TEST(ConvEpilogueTest, OpsThatTouchTheAnchoredGroupAreNotMovedBeforeIt) {
  const Tensor w = input({4, 3, 3, 3}, 57), c = input({4}, 58);
  expect_close("the input written in place after the convolution", [&] {
    Tensor x = input({1, 3, 8, 8}, 59) * 1.0;
    Tensor y = F::conv2d(x, w);
    x.mul_(3.0);  // touches the anchor's input: runs after the convolution
    Tensor s = c * 2.0;
    return std::vector<Tensor>{F::relu(y * s.reshape({1, 4, 1, 1})), x};
  });
  expect_close("a side op reading the epilogue's output", [&] {
    Tensor x = input({1, 3, 8, 8}, 60);
    Tensor y = F::relu(F::conv2d(x, w));
    Tensor m = y.narrow(1, 0, 1) * 2.0;  // another shape, reads y: not independent
    return std::vector<Tensor>{y, m};
  });
}

TEST(ConvEpilogueTest, OtherDtypesRunTheComposite) {
  const Tensor x = input({1, 3, 8, 8}, 32).to(DType::f64);
  const Tensor w = input({4, 3, 3, 3}, 33).to(DType::f64);
  set_fusion(kCpu, true);
  const Tensor y = F::relu(F::conv2d(x, w));
  EXPECT_EQ(y.dtype(), DType::f64);
  const Tensor want = F::relu(F::conv2d(x.to(DType::f32), w.to(DType::f32)));
  expect_near_all(values(y), values(want), "f64");
}

// The cpu keeps each convolution's weights reordered (and batch_norm folded in) across calls,
// keyed by the weight's storage and write count: every way of writing a weight must be seen.
// Each result is compared with the ref backend's convolution of the weight as it was then.
Tensor on_ref(const Tensor& x, const Tensor& w, const Tensor& b) {
  const Device r = Device::ref();
  return F::relu(F::conv2d(x.to(r), w.to(r), b.defined() ? b.to(r) : Tensor(), {1}, {1}));
}

TEST(ConvEpilogueTest, PackedWeightsFollowEveryWriteToTheWeight) {
  const Tensor x = input({2, 4, 7, 7}, 70).contiguous(MemoryFormat::channels_last);
  const Tensor b = input({6}, 71);
  Tensor w = input({6, 4, 3, 3}, 72) * 1.0;
  auto conv = [&] { return F::relu(F::conv2d(x, w, b, {1}, {1})); };
  for (bool fusion : {true, false}) {
    SCOPED_TRACE(fusion ? "fusion on" : "fusion off");
    const bool was = fusion_enabled(kCpu);
    set_fusion(kCpu, fusion);
    expect_near_all(values(conv()), values(on_ref(x, w, b)), "first");
    expect_near_all(values(conv()), values(on_ref(x, w, b)), "again");
    w.mul_(2.0);
    expect_near_all(values(conv()), values(on_ref(x, w, b)), "after mul_");
    // Recorded in one stream: the first sees w before add_, the second after it.
    const Tensor before = on_ref(x, w, b);
    const Tensor ya = conv();
    w.add_(0.5);
    const Tensor yb = conv();
    expect_near_all(values(ya), values(before), "recorded before add_");
    expect_near_all(values(yb), values(on_ref(x, w, b)), "recorded after add_");
    w.copy_(input({6, 4, 3, 3}, 73 + uint64_t(fusion)));
    expect_near_all(values(conv()), values(on_ref(x, w, b)), "after copy_");
    set_fusion(kCpu, was);
  }
  // Through a host pointer: from then on every convolution reads the weight as it is.
  Tensor wp = input({6, 4, 3, 3}, 75) * 1.0;
  const Tensor y0 = F::relu(F::conv2d(x, wp, b, {1}, {1}));
  expect_near_all(values(y0), values(on_ref(x, wp, b)), "before data_ptr");
  float* p = wp.data_ptr<float>();
  for (int64_t i = 0; i < wp.numel(); ++i) p[i] = -p[i];
  expect_near_all(values(F::relu(F::conv2d(x, wp, b, {1}, {1}))), values(on_ref(x, wp, b)),
                  "after writes through data_ptr");
  p[0] = 3;
  expect_near_all(values(F::relu(F::conv2d(x, wp, b, {1}, {1}))), values(on_ref(x, wp, b)),
                  "after a second write");
}

TEST(ConvEpilogueTest, PackedWeightsOfInferenceTensorsFollowInPlaceWrites) {
  // Inference tensors have no version counter; their writes are still counted.
  InferenceMode guard;
  const Tensor x = input({1, 4, 6, 6}, 76), b = input({6}, 77);
  Tensor w = input({6, 4, 3, 3}, 78) * 1.0;
  ASSERT_TRUE(w.is_inference());
  for (int k = 0; k < 3; ++k) {
    expect_near_all(values(F::relu(F::conv2d(x, w, b, {1}, {1}))), values(on_ref(x, w, b)),
                    "step " + std::to_string(k));
    w.mul_(-1.5);
  }
}

// Eval batch_norm folded into the weights and bias: the fold follows the running statistics and
// the weight, and a scale that is not finite is left to the post-ops (eager's inf and NaN).
TEST(ConvEpilogueTest, FoldedBatchNormFollowsItsStatisticsAndKeepsNonFiniteScales) {
  const Tensor x = input({2, 4, 7, 7}, 79).contiguous(MemoryFormat::channels_last);
  Tensor w = input({6, 4, 3, 3}, 80) * 1.0;
  Tensor mean = input({6}, 81) * 1.0, var = input({6}, 82, 0.5, 2) * 1.0;
  const Tensor g = input({6}, 83), beta = input({6}, 84);
  NoGradGuard no_grad;
  auto body = [&] {
    return std::vector<Tensor>{
        F::relu(F::batch_norm(F::conv2d(x, w, Tensor(), {1}, {1}), mean, var, g, beta, false))};
  };
  expect_close("first", body);
  for (int64_t groups : {2, 4}) {  // the scale per output channel of grouped weights
    const Tensor wg = input({8, 4 / groups, 3, 3}, 85 + uint64_t(groups));
    const Tensor m8 = input({8}, 87), v8 = input({8}, 88, 0.5, 2);
    expect_close("groups " + std::to_string(groups), [&] {
      return std::vector<Tensor>{F::relu(
          F::batch_norm(F::conv2d(x, wg, Tensor(), {1}, {1}, {1}, groups), m8, v8, m8, v8, false))};
    });
  }
  mean.add_(0.25);
  expect_close("after the running mean moved", body);
  w.mul_(0.5);
  expect_close("after the weight changed", body);
  var.fill_(-1e-5);  // var + eps == 0: an infinite scale, so inf, -inf and NaN results
  const bool was = fusion_enabled(kCpu);
  set_fusion(kCpu, true);
  const std::vector<double> fused = values(body()[0]);
  set_fusion(kCpu, false);
  const std::vector<double> eager = values(body()[0]);
  set_fusion(kCpu, was);
  ASSERT_EQ(fused.size(), eager.size());
  int64_t non_finite = 0;
  for (size_t k = 0; k < fused.size(); ++k) {
    const double f = fused[k], e = eager[k];
    if (std::isnan(e) || std::isinf(e)) ++non_finite;
    const bool same = std::isnan(e)   ? std::isnan(f)
                      : std::isinf(e) ? f == e
                                      : std::fabs(f - e) <= 1e-4 * (1 + std::fabs(e));
    ASSERT_TRUE(same) << "element " << k << ": fused " << f << ", eager " << e;
  }
  EXPECT_GT(non_finite, 0) << "the case must reach the non-finite path";
}

// Weights used again unchanged may run through oneDNN's Winograd (an autotuned way of its own
// for them at EMBER_AUTOTUNE=full; forced here): plain, with an element-wise epilogue, with
// batch_norm folded in (its scales through the two-step reorder of channels-last weights) and a
// scalar scale folded into contiguous weights, against the ref backend. Weights written between
// calls never take it, nor does the default effort.
TEST(ConvEpilogueTest, WinogradForReusedWeightsAgreesWithTheReference) {
  autotune::Autotuner& t = autotune::for_device(kCpu);
  const autotune::Options saved = t.options();
  autotune::Options full = saved;
  full.effort = autotune::Effort::full;
  t.set_options(full);
  t.force("cpu.conv", "winograd");
  const Device r = Device::ref();
  const Tensor x = input({2, 16, 12, 12}, 90).contiguous(MemoryFormat::channels_last);
  const Tensor w = input({16, 16, 3, 3}, 91).contiguous(MemoryFormat::channels_last);
  const Tensor b = input({16}, 92), mean = input({16}, 93), g = input({16}, 94);
  const Tensor var = input({16}, 95, 0.5, 2), beta = input({16}, 96);
  NoGradGuard no_grad;
  const Tensor want_plain = F::conv2d(x.to(r), w.to(r), b.to(r), {1}, {1});
  const Tensor want_bn = F::relu(F::batch_norm(F::conv2d(x.to(r), w.to(r), Tensor(), {1}, {1}),
                                               mean.to(r), var.to(r), g.to(r), beta.to(r), false));
  const int64_t before = cpu::conv_winograd_runs();
  for (int k = 0; k < 3; ++k) {
    SCOPED_TRACE("call " + std::to_string(k));
    expect_near_all(values(F::conv2d(x, w, b, {1}, {1})), values(want_plain), "plain");
    expect_near_all(values(F::relu(F::conv2d(x, w, b, {1}, {1}))), values(F::relu(want_plain)),
                    "relu epilogue");
    expect_near_all(values(F::relu(F::batch_norm(F::conv2d(x, w, Tensor(), {1}, {1}), mean, var, g,
                                                 beta, false))),
                    values(want_bn), "batch_norm folded");
  }
  // A scalar scale folded into contiguous weights (one reorder into Winograd's layout).
  const Tensor wc = input({16, 16, 3, 3}, 97);
  const Tensor want_scaled = F::conv2d(x.to(r), wc.to(r), b.to(r), {1}, {1}) * 0.25;
  for (int k = 0; k < 3; ++k)
    expect_near_all(values(F::conv2d(x, wc, b, {1}, {1}) * 0.25), values(want_scaled),
                    "scale folded, call " + std::to_string(k));
  EXPECT_GE(cpu::conv_winograd_runs() - before, 6) << "the calls after the first of each";
  Tensor written = w * 1.0;
  const int64_t trained = cpu::conv_winograd_runs();
  for (int k = 0; k < 3; ++k) {
    const Tensor want = F::conv2d(x.to(r), written.to(r), b.to(r), {1}, {1});
    expect_near_all(values(F::conv2d(x, written, b, {1}, {1})), values(want), "written");
    written.mul_(0.75);
  }
  EXPECT_EQ(cpu::conv_winograd_runs(), trained) << "weights written between calls";
  autotune::Options balanced = saved;
  balanced.effort = autotune::Effort::balanced;
  t.set_options(balanced);
  for (int k = 0; k < 3; ++k) F::conv2d(x, w, b, {1}, {1}).to_vector<float>();
  EXPECT_EQ(cpu::conv_winograd_runs(), trained) << "the default effort";
  t.set_options(saved);
  t.force("cpu.conv", "");
}

// 1x1 convolutions of stride 1 on NHWC activations may run as matmuls over their rows (an
// autotuned way; forced here): plain, with bias, batch_norm folded, an NHWC residual and relu,
// a per-channel operand; an NCHW residual and a strided 1x1 convolution take a convolution.
TEST(ConvEpilogueTest, OneByOneAsMatmulAgreesWithTheReference) {
  autotune::Autotuner& t = autotune::for_device(kCpu);
  t.force("cpu.conv", "matmul");
  const Device r = Device::ref();
  const Tensor x = input({2, 12, 5, 7}, 100).contiguous(MemoryFormat::channels_last);
  const Tensor w = input({20, 12, 1, 1}, 101), b = input({20}, 102);
  const Tensor mean = input({20}, 103), var = input({20}, 104, 0.5, 2);
  const Tensor res = input({2, 20, 5, 7}, 105).contiguous(MemoryFormat::channels_last);
  const Tensor nchw_res = input({2, 20, 5, 7}, 106), chan = input({1, 20, 1, 1}, 107);
  NoGradGuard no_grad;
  auto ref_conv = [&](const Tensor& wt, const Tensor& bt) {
    return F::conv2d(x.to(r), wt.to(r), bt.defined() ? bt.to(r) : Tensor());
  };
  const int64_t before = cpu::conv_matmul_runs();
  for (int k = 0; k < 2; ++k) {
    SCOPED_TRACE("call " + std::to_string(k));
    expect_near_all(values(F::conv2d(x, w, b)), values(ref_conv(w, b)), "plain");
    expect_near_all(values(F::conv2d(x, w)), values(ref_conv(w, Tensor())), "no bias");
    expect_near_all(
        values(F::relu(F::batch_norm(F::conv2d(x, w), mean, var, mean, var, false) + res)),
        values(F::relu(F::batch_norm(ref_conv(w, Tensor()), mean.to(r), var.to(r), mean.to(r),
                                     var.to(r), false) +
                       res.to(r))),
        "batch_norm + residual + relu");
    expect_near_all(values(F::gelu(F::conv2d(x, w, b) * chan)),
                    values(F::gelu(ref_conv(w, b) * chan.to(r))), "per-channel operand");
    expect_near_all(values(F::relu(F::conv2d(x, w, b) + nchw_res)),
                    values(F::relu(ref_conv(w, b) + nchw_res.to(r))), "NCHW residual");
    const Tensor strided = F::conv2d(x, w, b, {2});
    expect_near_all(values(strided), values(F::conv2d(x.to(r), w.to(r), b.to(r), {2})), "stride 2");
  }
  EXPECT_GE(cpu::conv_matmul_runs() - before, 8) << "the matmul way ran";
  t.force("cpu.conv", "");
}

// Epilogue operands that broadcast over some dims (squeeze-excitation's [N, C, 1, 1], drop-path's
// [N, 1, 1, 1], per-pixel maps) and an NCHW residual after a channels-last 1x1 convolution, on
// every way (oneDNN 2.6's gemm convolution and a matmul over rows both applied them at the wrong
// elements); relu of -inf after a grouped convolution; a division by constants whose reciprocal
// overflows or which would fold into the weights as a scale beyond the float range.
TEST(ConvEpilogueTest, BroadcastOperandsAfterOneByOneConvolutionsOnEveryWay) {
  autotune::Autotuner& t = autotune::for_device(kCpu);
  const Device r = Device::ref();
  const Tensor x = input({2, 6, 3, 4}, 110).contiguous(MemoryFormat::channels_last);
  const Tensor w = input({5, 6, 1, 1}, 111), b = input({5}, 112);
  const std::vector<Shape> shapes = {{2, 1, 1, 1}, {2, 5, 1, 1}, {1, 1, 3, 4}, {2, 1, 3, 4},
                                     {1, 5, 3, 4}, {4},          {2, 5, 3, 1}, {2, 5, 3, 4}};
  NoGradGuard no_grad;
  for (const char* way : {"", "nhwc", "blocked", "matmul"}) {
    SCOPED_TRACE(std::string("way ") + (*way ? way : "tuned"));
    t.force("cpu.conv", way);
    for (size_t k = 0; k < shapes.size(); ++k) {
      const Tensor o = input(shapes[k], 113 + k);
      const Tensor want = F::conv2d(x.to(r), w.to(r), b.to(r));
      expect_near_all(values(F::silu(F::conv2d(x, w, b)) * o), values(F::silu(want) * o.to(r)),
                      "silu * " + shape_str(shapes[k]));
      expect_near_all(values(F::relu(F::conv2d(x, w, b) + o)), values(F::relu(want + o.to(r))),
                      "relu + " + shape_str(shapes[k]));
      expect_near_all(values(o + F::conv2d(x, w, b)), values(o.to(r) + want),
                      shape_str(shapes[k]) + " + conv (the result in the operand's layout)");
    }
  }
  t.force("cpu.conv", "");
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor xi = from_vector<float>(std::vector<float>{-inf, 1, 2, 3}, {1, 2, 2}).to(kCpu);
  const Tensor wi = from_vector<float>(std::vector<float>{1, 1}, {2, 1, 1}).to(kCpu);
  expect_near_all(values(F::relu(F::conv1d(xi, wi, Tensor(), {1}, {0}, {1}, 2))), {0, 1, 2, 3},
                  "relu of -inf after a grouped conv1d");
  const Tensor xs = input({1, 3, 6, 6}, 130), ws = input({4, 3, 3, 3}, 131);
  for (double c : {1e-39, 3e-39})
    expect_near_all(values(F::conv2d(xs * 1e-6, ws) / c),
                    values(F::conv2d(xs.to(r) * 1e-6, ws.to(r)) / c),
                    "divided by " + std::to_string(c));
}

}  // namespace
}  // namespace ember
