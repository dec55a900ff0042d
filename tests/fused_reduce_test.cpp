// Reductions fused into the element-wise graphs ("fuse-on-read") on every backend that fuses: the
// stream records a sum/prod/max/min whose src is a node of the open group, the group ends with
// it, and the backend folds the node's values instead of writing them (the cpu tile by tile:
// src/backends/cpu/fused_graph.cpp; Vulkan and OpenCL inside the generated reduce kernels:
// src/codegen/reduce.cpp). Each case compares fusion on with fusion off on the same device
// (within the dtype's tolerance: the summation order differs) and checks the stream's counters
// say what ran.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "fused_reduce_util.h"

namespace ember {
namespace {

namespace F = nn::functional;
using namespace fused_reduce;

TEST(FusedReduceTest, SumOfAProductOverAllDimsIsOneGraph) {
  each_device([&] {
    const Tensor x = input({64, 300}, 1), y = input({64, 300}, 2);
    const StreamStats st = expect_close("all", [&] { return std::vector<Tensor>{sum(x * y)}; });
    EXPECT_EQ(st.graphs, 1);
    EXPECT_EQ(st.eager_ops, 0) << "the sum runs inside the graph";
    EXPECT_EQ(st.fused_ops, 2);
    EXPECT_EQ(st.dropped, 1) << "x * y is never written";
    // The value itself, against a double sum on the host.
    const std::vector<double> xv = values(x), yv = values(y);
    double want = 0;
    for (size_t i = 0; i < xv.size(); ++i) want += double(float(xv[i] * yv[i]));
    EXPECT_NEAR(sum(x * y).item<float>(), want, 1e-4 * (1 + std::fabs(want)));
  });
}

TEST(FusedReduceTest, SumOverTheLastDimAndKeepdim) {
  each_device([&] {
    const Tensor x = input({50, 1000}, 3), y = input({50, 1000}, 4);
    StreamStats st = expect_close("last", [&] { return std::vector<Tensor>{sum(x * y, {-1})}; });
    EXPECT_EQ(st.kernels(), 1);
    EXPECT_EQ(st.dropped, 1);
    st = expect_close("keepdim", [&] { return std::vector<Tensor>{sum(exp(x) - y, {1}, true)}; });
    EXPECT_EQ(st.kernels(), 1);
    // Trailing dims of a 3-d tensor, and rows longer than one chunk (65,536 elements).
    const Tensor a = input({4, 6, 50}, 5), b = input({3, 150000}, 6);
    st = expect_close("two trailing dims", [&] {
      return std::vector<Tensor>{sum(a * 2.0 + 1.0, {1, 2})};
    });
    EXPECT_EQ(st.kernels(), 1);
    st = expect_close("long rows", [&] { return std::vector<Tensor>{sum(b * b, {1})}; });
    EXPECT_EQ(st.kernels(), 1);
    st = expect_close("long full", [&] { return std::vector<Tensor>{sum(b * b)}; });
    EXPECT_EQ(st.kernels(), 1);
    st = expect_close("prod", [&] { return std::vector<Tensor>{prod(a * 0.5 + 1.0, {2})}; });
    EXPECT_EQ(st.kernels(), 1);
  });
}

TEST(FusedReduceTest, MeanIsTheFusedSumThenAScale) {
  each_device([&] {
    const Tensor x = input({40, 77}, 7), y = input({40, 77}, 8);
    const StreamStats st = expect_close("mean", [&] {
      return std::vector<Tensor>{mean(x * y, {-1}), mean(x - y)};
    });
    EXPECT_EQ(st.graphs, 2) << "x * y with its sum and scale, x - y with its sum and scale";
    EXPECT_EQ(st.eager_ops, 0) << "the scale runs in the reduction's kernel (fuse-on-write)";
    EXPECT_EQ(st.fused_ops, 8) << "per mean: the op, the sum, the count's Fill, the division";
    EXPECT_EQ(st.dropped, 4) << "neither x * y nor x - y is written, nor the counts";
  });
}

TEST(FusedReduceTest, CompositeSoftmaxAndLogSoftmaxEqualTheOps) {
  each_device([&] {
    const Tensor x = input({33, 70}, 9, DType::f32, -4, 4);
    auto softmax = [&] {
      Tensor e = exp(x - amax(x, {-1}, true));
      return e / sum(e, {-1}, true);
    };
    auto log_softmax = [&] {
      Tensor s = x - amax(x, {-1}, true);
      return s - log(sum(exp(s), {-1}, true));
    };
    StreamStats st = expect_close("softmax", [&] { return std::vector<Tensor>{softmax()}; });
    // The max of the leaf x and the division (a one-op group) run alone; x - max, exp and the sum
    // are one graph: 3 kernels instead of 5.
    EXPECT_EQ(st.graphs, 1);
    EXPECT_EQ(st.fused_ops, 3);
    EXPECT_EQ(st.eager_ops, 2);
    st = expect_close("log_softmax", [&] { return std::vector<Tensor>{log_softmax()}; });
    EXPECT_EQ(st.graphs, 1);
    EXPECT_EQ(st.fused_ops, 4) << "x - max, exp, sum, then the log of the sum (its epilogue)";
    EXPECT_GE(st.dropped, 1) << "exp(s) is never written";
    // Against the library's own ops, run eagerly.
    set_fusion(dev(), false);
    const std::vector<double> sm = values(F::softmax(x, -1)), lsm = values(F::log_softmax(x, -1));
    set_fusion(dev(), true);
    expect_near_all(values(softmax()), sm, 1e-5, "softmax vs F::softmax");
    expect_near_all(values(log_softmax()), lsm, 1e-5, "log_softmax vs F::log_softmax");
  });
}

TEST(FusedReduceTest, CompositeLayerNormEqualsTheOp) {
  each_device([&] {
    const Tensor x = input({24, 96}, 10), w = input({96}, 11), b = input({96}, 12);
    auto composite = [&] {
      Tensor xc = x - mean(x, {-1}, true);
      Tensor var = mean(xc * xc, {-1}, true);
      return xc / sqrt(var + 1e-5) * w + b;
    };
    const StreamStats st =
        expect_close("layer_norm", [&] { return std::vector<Tensor>{composite()}; });
    EXPECT_GE(st.dropped, 1) << "xc * xc is never written";
    set_fusion(dev(), false);
    const std::vector<double> want = values(F::layer_norm(x, {96}, w, b));
    set_fusion(dev(), true);
    expect_near_all(values(composite()), want, 1e-4, "layer_norm vs F::layer_norm");
  });
}

TEST(FusedReduceTest, MaxAndMinPropagateNaN) {
  each_device([&] {
    std::vector<float> v(12 * 40);
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(std::sin(double(i) * 0.7) * 3);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    v[3 * 40 + 17] = nan;   // row 3, mid-row
    v[7 * 40] = nan;        // row 7, first element
    v[11 * 40 + 39] = nan;  // row 11, last element
    const Tensor x = from_vector<float>(v, {12, 40}, dev());
    const StreamStats st = expect_close("nan", [&] {
      return std::vector<Tensor>{amax(x * 2.0, {-1}), amin(x + 1.0, {-1}), max(x * x), min(-x)};
    });
    EXPECT_EQ(st.eager_ops, 0);
    set_fusion(dev(), true);
    const std::vector<double> m = values(amax(x * 2.0, {-1}));
    for (int r = 0; r < 12; ++r)
      EXPECT_EQ(std::isnan(m[size_t(r)]), r == 3 || r == 7 || r == 11) << "row " << r;
    EXPECT_TRUE(std::isnan(max(x * x).item<float>()));
    // Without NaN the extreme is exact.
    const Tensor y = input({9, 31}, 13);
    expect_close(
        "exact",
        [&] {
          return std::vector<Tensor>{amax(y * 3.0, {1}), min(y - 2.0)};
        },
        0);
  });
}

// A product with a 0 and factors whose partial products overflow is 0, as the ordered product
// (accumulators that split the elements would give 0 * inf = NaN).
TEST(FusedReduceTest, AProductWithAZeroAndAnOverflowIsZero) {
  each_device([&] {
    std::vector<float> v(40, 1e30f);
    v[0] = 0.f;
    const Tensor x = from_vector<float>(v, {1, 40}, Device::cpu()).to(dev());
    const StreamStats st = expect_close(
        "prod", [&] { return std::vector<Tensor>{prod(x * 1.0, {1})}; }, 0);
    EXPECT_GE(st.graphs, 1);
    EXPECT_EQ(values(prod(x, {1}))[0], 0.0);
  });
}

TEST(FusedReduceTest, HalfInputsAccumulateAsEager) {
  each_device([&] {
    for (DType t : {DType::f16, DType::bf16}) {
      if (!supports_dtype(dev(), t)) continue;
      SCOPED_TRACE(dtype_name(t));
      const Tensor x = input({30, 500}, 14, t), y = input({30, 500}, 15, t);
      StreamStats st = expect_close(
          "half",
          [&] {
            return std::vector<Tensor>{sum(x * y, {-1}), sum(x + y), amax(x * y, {1})};
          },
          1e-2);
      EXPECT_EQ(st.eager_ops, 0);
      EXPECT_EQ(st.dropped, 3);
      st = expect_close(
          "half mean", [&] { return std::vector<Tensor>{mean(x * y, {-1})}; }, 1e-2);
      EXPECT_GE(st.graphs, 1);
    }
    // f64 too.
    if (!supports_dtype(dev(), DType::f64)) return;
    const Tensor a = input({20, 64}, 16, DType::f64), b = input({20, 64}, 17, DType::f64);
    const StreamStats st = expect_close(
        "f64", [&] { return std::vector<Tensor>{sum(a * b, {1})}; }, 1e-12);
    EXPECT_EQ(st.kernels(), 1);
  });
}

TEST(FusedReduceTest, NarrowOutputs) {
  each_device([&] {
    const Tensor x = input({300, 1}, 18), y = input({300, 1}, 19);
    StreamStats st = expect_close("[N, 1] over a size-1 dim",
                                  [&] { return std::vector<Tensor>{sum(x * y, {1}, true)}; });
    EXPECT_EQ(st.kernels(), 1);
    const Tensor a = input({300, 5}, 20), b = input({300, 5}, 21);
    st = expect_close("[N, 5] -> [N, 1]",
                      [&] { return std::vector<Tensor>{sum(a * b, {1}, true)}; });
    EXPECT_EQ(st.kernels(), 1);
    st = expect_close("a scalar", [&] { return std::vector<Tensor>{sum(x[0] * 3.0)}; });
    EXPECT_EQ(st.eager_ops, 0);
  });
}

TEST(FusedReduceTest, BroadcastPermutedAndStridedInputs) {
  each_device([&] {
    const Tensor xt = input({64, 48}, 22).t();                  // [48, 64], transposed
    const Tensor bias = input({64}, 23);                        // broadcast over rows
    const Tensor s = input({48, 128}, 24).slice(1, 0, 128, 2);  // [48, 64], stride 2
    const Tensor col = input({48, 1}, 25);                      // broadcast over columns
    const StreamStats st = expect_close("views", [&] {
      return std::vector<Tensor>{sum((xt + bias) * s, {-1}), sum(xt * col), amax(s - xt, {1})};
    });
    EXPECT_EQ(st.eager_ops, 0);
    EXPECT_EQ(st.graphs, 3);
  });
}

TEST(FusedReduceTest, HeldIntermediateIsWrittenAndRight) {
  each_device([&] {
    const Tensor x = input({20, 30}, 26), y = input({20, 30}, 27);
    const StreamStats st = expect_close("held", [&] {
      Tensor p = x * y;
      return std::vector<Tensor>{p, sum(p, {-1})};
    });
    EXPECT_EQ(st.graphs, 1);
    EXPECT_EQ(st.dropped, 0) << "p is held: written";
  });
}

TEST(FusedReduceTest, ALoadedInputAndAnInPlaceWriteAreReducedToo) {
  each_device([&] {
    const Tensor x = input({20, 30}, 37), y = input({20, 30}, 38);
    StreamStats st = expect_close("load", [&] {
      Tensor p = x * y;
      return std::vector<Tensor>{p, sum(x, {-1})};  // x is a load of p's group
    });
    EXPECT_EQ(st.graphs, 1);
    EXPECT_EQ(st.eager_ops, 0);
    st = expect_close("in place", [&] {
      Tensor a = x * 1.0;
      a.mul_(y);
      a.add_(2.0);
      return std::vector<Tensor>{sum(a, {-1}), a};  // reads the in-place writes' result
    });
    EXPECT_EQ(st.graphs, 1);
  });
}

TEST(FusedReduceTest, ReductionsTheCpuDoesNotFoldRunEagerly) {
  each_device([&] {
    const Tensor x = input({20, 30}, 28), y = input({20, 30}, 29);
    // max with indices: the graph runs, then the reduction (leading dims fold:
    // fused_reduce_dims_test.cpp).
    StreamStats st = expect_close("indices", [&] {
      auto [v, i] = max(x * y + 1.0, 1);
      return std::vector<Tensor>{v, i};
    });
    EXPECT_EQ(st.graphs, 1);
    EXPECT_EQ(st.eager_ops, 1);
    // An integer sum (promoted to i64) is not folded either.
    const Tensor n = testing::uniform({10, 10}, DType::i32, 30, -5, 5).to(dev());
    expect_close(
        "int", [&] { return std::vector<Tensor>{sum(n * 2, {1})}; }, 0);
  });
}

TEST(FusedReduceTest, OpsAfterTheReductionStartANewGroup) {
  each_device([&] {
    const Tensor x = input({16, 40}, 31);
    const StreamStats st = expect_close("chain", [&] {
      Tensor s = sum(exp(x), {-1}, true);
      Tensor t = sum(log(s) * 2.0);  // reads the reduction: the next group, itself reduced
      return std::vector<Tensor>{t};
    });
    EXPECT_EQ(st.graphs, 2);
    EXPECT_EQ(st.eager_ops, 0);
  });
}

TEST(FusedReduceTest, AThrowingOpAfterARecordedReductionDoesNotPoisonTheStream) {
  each_device([&] {
    const bool was = fusion_enabled(dev());
    set_fusion(dev(), true);
    const Tensor x = input({10, 20}, 32), y = input({10, 20}, 33);
    Tensor s = sum(x * y, {-1});
    if (dev() == Device::cpu()) {  // the cpu checks integer division by zero while it runs
      Tensor a = full({8}, 6, {DType::i32, dev()}) + 1;
      Tensor z = full({8}, 0, {DType::i32, dev()}) * 2;
      EXPECT_THROW(floor_divide(a, z), Error);
    } else {  // a GPU cannot: an op the frontend rejects
      EXPECT_THROW(x + input({3, 7}, 41), Error);
    }
    Tensor s2 = sum(x * y + 1.0, {-1});
    const std::vector<double> got = values(s), got2 = values(s2);
    set_fusion(dev(), false);
    const std::vector<double> want = values(sum(x * y, {-1})),
                              want2 = values(sum(x * y + 1.0, {-1}));
    set_fusion(dev(), was);
    expect_near_all(got, want, 1e-5, "before the throw");
    expect_near_all(got2, want2, 1e-5, "after the throw");
  });
}

TEST(FusedReduceTest, GradientsThroughCompositesEqualEager) {
  each_device([&] {
    auto grads = [](bool fusion) {
      const bool was = fusion_enabled(dev());
      set_fusion(dev(), fusion);
      Tensor x = input({12, 30}, 34, DType::f32, -3, 3).requires_grad_(true);
      Tensor w = input({30}, 35).requires_grad_(true);
      Tensor e = exp(x - amax(x, {-1}, true).detach());
      Tensor sm = e / sum(e, {-1}, true);
      Tensor xc = x - mean(x, {-1}, true);
      Tensor ln = xc / sqrt(mean(xc * xc, {-1}, true) + 1e-5) * w;
      Tensor loss = sum(sm * input({12, 30}, 36)) + sum(ln * ln * 0.5);
      loss.backward();
      std::vector<std::vector<double>> g{values(x.grad()), values(w.grad()), values(loss)};
      set_fusion(dev(), was);
      return g;
    };
    const auto on = grads(true), off = grads(false);
    for (size_t i = 0; i < on.size(); ++i)
      expect_near_all(on[i], off[i], 1e-4, "gradient " + std::to_string(i));
  });
}

}  // namespace
}  // namespace ember
