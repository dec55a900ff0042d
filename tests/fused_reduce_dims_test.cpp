// Reductions fused into the element-wise graphs over any set of dims, on every backend that
// fuses (the cpu puts the reduced dims innermost, or folds by columns when they are all leading:
// src/backends/cpu/fused_graph.cpp; Vulkan and OpenCL iterate kept and reduced dims in the
// generated reduce kernels: src/codegen/reduce.cpp), and the element-wise ops that consume a
// reduction's result run after it in the same graph ("fuse-on-write": FusedGraph::after). Each
// case compares fusion on with fusion off on the same device (within the dtype's tolerance: the
// summation order differs) and checks the stream's counters say what ran.
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

using namespace fused_reduce;

TEST(FusedReduceDimsTest, LeadingAndMiddleDimsFoldInOnePass) {
  each_device([&] {
    const Tensor x = input({300, 70}, 1), y = input({300, 70}, 2);
    StreamStats st =
        expect_close("[N, C] dim 0", [&] { return std::vector<Tensor>{sum(x * y, {0})}; });
    EXPECT_EQ(st.kernels(), 1);
    EXPECT_EQ(st.dropped, 1) << "x * y is never written";
    // A column's sum against a double sum on the host.
    set_fusion(dev(), true);
    const std::vector<double> got = values(sum(x * y, {0})), xv = values(x), yv = values(y);
    for (size_t c : {size_t(0), size_t(33), size_t(69)}) {
      double want = 0;
      for (size_t n = 0; n < 300; ++n) want += double(float(xv[n * 70 + c] * yv[n * 70 + c]));
      EXPECT_NEAR(got[c], want, 1e-4 * (1 + std::fabs(want))) << "column " << c;
    }
    const Tensor a = input({4, 8, 6, 5}, 3), b = input({5, 9, 13}, 4);
    st = expect_close("NCHW {0, 2, 3}", [&] {
      return std::vector<Tensor>{sum(a * a + 1.0, {0, 2, 3}), sum(exp(a), {0, 2, 3}, true)};
    });
    EXPECT_EQ(st.kernels(), 2);
    st = expect_close("[B, T, D] dim 1", [&] {
      return std::vector<Tensor>{sum(b * 2.0, {1}), sum(b - 1.0, {1}, true),
                                 prod(b * 0.1 + 1.0, {0})};
    });
    EXPECT_EQ(st.kernels(), 3);
    st = expect_close("max/min over {0, 2}", [&] {
      return std::vector<Tensor>{amax(b * 3.0, {0, 2}), amin(b + 1.0, {0, 2}, true)};
    });
    EXPECT_EQ(st.kernels(), 2);
    // Reduced rows longer than one chunk (65,536 elements), in several rows and in one.
    const Tensor l = input({70000, 3}, 5);
    st = expect_close("long columns", [&] { return std::vector<Tensor>{sum(l * l, {0})}; });
    EXPECT_EQ(st.kernels(), 1);
  });
}

// Reductions over leading dims only fold by columns (per-column accumulators over contiguous
// runs): many reduced rows (several chunks of rows), more columns than a tile (blocks of
// columns), an element-wise output beside the sum (a bias gradient and the gradient it passes on),
// max/min with NaN in some columns, results independent of the thread count.
TEST(FusedReduceDimsTest, LeadingDimReductionsFoldByColumns) {
  each_device([&] {
    const Tensor g = input({64, 32, 40}, 30), h = input({64, 32, 40}, 31);
    StreamStats st = expect_close("bias gradient [N, L, C] over {0, 1}", [&] {
      const Tensor d = g * h, passed_on = d * 2.0;
      return std::vector<Tensor>{sum(d, {0, 1}), passed_on};
    });
    EXPECT_EQ(st.kernels(), 1);
    const Tensor wide = input({5, 9000}, 32);  // 9,000 columns: blocks of one tile
    st = expect_close("wide", [&] {
      return std::vector<Tensor>{sum(wide * wide, {0}), amax(wide - 1.0, {0}, true),
                                 prod(wide * 0.1 + 1.0, {0})};
    });
    EXPECT_EQ(st.kernels(), 3);
    std::vector<float> v(3000 * 20);
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(std::sin(double(i) * 0.7) * 3);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    v[2999 * 20 + 5] = nan;  // column 5, in the last chunk of rows
    v[17] = nan;             // column 17, first row
    const Tensor x = from_vector<float>(v, {3000, 20}, dev());
    st = expect_close("nan", [&] {
      return std::vector<Tensor>{amax(x * 2.0, {0}), amin(x + 1.0, {0}), sum(x * x, {0})};
    });
    EXPECT_EQ(st.eager_ops, 0);
    set_fusion(dev(), true);
    const std::vector<double> m = values(amax(x * 2.0, {0}));
    for (int c = 0; c < 20; ++c)
      EXPECT_EQ(std::isnan(m[size_t(c)]), c == 5 || c == 17) << "column " << c;
    // A column's sum against a double sum on the host, over several chunks of rows.
    const Tensor y = input({9000, 24}, 33);
    const std::vector<double> got = values(sum(y * 3.0, {0})), yv = values(y);
    for (size_t c : {size_t(0), size_t(11), size_t(23)}) {
      double want = 0;
      for (size_t n = 0; n < 9000; ++n) want += double(float(yv[n * 24 + c] * 3.0f));
      EXPECT_NEAR(got[c], want, 1e-6 * (1 + std::fabs(want))) << "column " << c;
    }
    const int threads = get_num_threads();
    set_num_threads(1);
    const std::vector<double> one = values(sum(y * 3.0, {0})), one_w = values(sum(wide * 2.0, {0}));
    set_num_threads(std::max(threads, 3));
    const std::vector<double> many = values(sum(y * 3.0, {0})),
                              many_w = values(sum(wide * 2.0, {0}));
    set_num_threads(threads);
    EXPECT_EQ(one, many);
    EXPECT_EQ(one_w, many_w);
    EXPECT_EQ(one, got);
  });
}

TEST(FusedReduceDimsTest, PermutedStridedAndBroadcastInputs) {
  each_device([&] {
    const Tensor x = input({40, 30}, 6), y = input({30}, 7), z = input({60, 50}, 8);
    const Tensor xt = x.transpose(0, 1);                             // [30, 40], permuted
    const Tensor zs = z.slice(0, 0, 60, 2);                          // [30, 50], every other row
    const Tensor w = input({2, 30, 3, 4}, 9).permute({0, 3, 1, 2});  // [2, 4, 30, 3] channels-last
    StreamStats st = expect_close("permuted", [&] {
      return std::vector<Tensor>{sum(xt * 2.0, {0}), sum(xt * xt, {1}, true)};
    });
    EXPECT_EQ(st.eager_ops, 0);
    st = expect_close("strided + broadcast", [&] {
      return std::vector<Tensor>{sum(zs * y.view({30, 1}), {0}), amax(x * y, {0})};
    });
    EXPECT_EQ(st.eager_ops, 0);
    st = expect_close("permuted 4-d, {0, 2, 3}", [&] {
      return std::vector<Tensor>{sum(w * w, {0, 2, 3}), sum(w + 1.0, {1})};
    });
    EXPECT_EQ(st.eager_ops, 0);
  });
}

TEST(FusedReduceDimsTest, HalfInputsOverLeadingDims) {
  each_device([&] {
    for (DType t : {DType::f16, DType::bf16}) {
      if (!supports_dtype(dev(), t)) continue;
      SCOPED_TRACE(dtype_name(t));
      const Tensor x = input({6, 10, 20}, 10, t), y = input({6, 10, 20}, 11, t);
      const StreamStats st = expect_close(
          "half",
          [&] {
            return std::vector<Tensor>{sum(x * y, {0, 2}), amax(x + y, {0}), mean(x * y, {0, 2})};
          },
          1e-2);
      EXPECT_EQ(st.kernels(), 3) << "the mean's scale and cast run after its fold";
    }
  });
}

TEST(FusedReduceDimsTest, MaxAndMinPropagateNaNOverColumns) {
  each_device([&] {
    std::vector<float> v(40 * 12);
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(std::cos(double(i) * 0.3) * 2);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    v[17 * 12 + 3] = nan;   // column 3, mid-column
    v[0 * 12 + 7] = nan;    // column 7, first element
    v[39 * 12 + 11] = nan;  // column 11, last element
    const Tensor x = from_vector<float>(v, {40, 12}, dev());
    const StreamStats st = expect_close("nan", [&] {
      return std::vector<Tensor>{amax(x * 2.0, {0}), amin(x + 1.0, {0}, true)};
    });
    EXPECT_EQ(st.eager_ops, 0);
    set_fusion(dev(), true);
    const std::vector<double> m = values(amin(x + 1.0, {0}));
    for (int c = 0; c < 12; ++c)
      EXPECT_EQ(std::isnan(m[size_t(c)]), c == 3 || c == 7 || c == 11) << "column " << c;
  });
}

TEST(FusedReduceDimsTest, SizeOneAndEmptyDims) {
  each_device([&] {
    const Tensor x = input({5, 1, 7}, 12), y = input({5, 1, 7}, 13);
    StreamStats st = expect_close("size-1 dims", [&] {
      return std::vector<Tensor>{sum(x * y, {1}), sum(x * y, {0, 1}, true), sum(x - y, {0})};
    });
    EXPECT_EQ(st.eager_ops, 0);
    // An empty tensor is never folded: the eager reduce gives the identity.
    const Tensor e = input({0, 4}, 14), f = input({3, 0}, 15);
    expect_close("empty", [&] {
      return std::vector<Tensor>{sum(e * 2.0, {0}), sum(f * 2.0, {0}), sum(e + 1.0)};
    });
    set_fusion(dev(), true);
    EXPECT_EQ(values(sum(e * 2.0, {0})), std::vector<double>(4, 0.0));
  });
}

TEST(FusedReduceDimsTest, ResultsDoNotDependOnTheThreadCount) {
  each_device([&] {
    const Tensor x = input({64, 3000}, 16), y = input({8, 16, 20, 20}, 17);
    auto run = [&] {
      set_fusion(dev(), true);
      std::vector<double> r = values(sum(x * x, {0}));
      const std::vector<double> r2 = values(mean(y * 2.0, {0, 2, 3}));
      r.insert(r.end(), r2.begin(), r2.end());
      return r;
    };
    const bool was = fusion_enabled(dev());
    const int threads = get_num_threads();
    set_num_threads(1);
    const std::vector<double> one = run();
    set_num_threads(std::max(threads, 3));
    const std::vector<double> many = run();
    set_num_threads(threads);
    set_fusion(dev(), was);
    EXPECT_EQ(one, many);
  });
}

TEST(FusedReduceDimsTest, EpilogueOnTheReducedValueIsTheSameKernel) {
  each_device([&] {
    const Tensor x = input({50, 80}, 18), y = input({50, 80}, 19);
    StreamStats st =
        expect_close("sum * 0.5", [&] { return std::vector<Tensor>{sum(x * y) * 0.5}; });
    EXPECT_EQ(st.kernels(), 1);
    EXPECT_EQ(st.graphs, 1);
    st = expect_close("rows", [&] {
      return std::vector<Tensor>{exp(sum(x * y, {1}) * 0.5 + 1.0), sum(x - y, {0}) / 50.0};
    });
    EXPECT_EQ(st.kernels(), 2);
    EXPECT_EQ(st.eager_ops, 0);
    // sqrt(var + eps) over {0, 2, 3}: the fold, then the scale, the shift and the sqrt.
    const Tensor a = input({4, 6, 5, 5}, 20), b = input({4, 6, 5, 5}, 21);
    st = expect_close("sqrt(var + eps)", [&] {
      const Tensor d = a - b;
      return std::vector<Tensor>{sqrt(sum(d * d, {0, 2, 3}, true) / 100.0 + 1e-5)};
    });
    EXPECT_EQ(st.kernels(), 1);
    // The reduction's result is held: it is written, and its epilogue reads it.
    st = expect_close("held", [&] {
      Tensor s = sum(x * y, {0});
      return std::vector<Tensor>{s, s * s - 1.0};
    });
    EXPECT_EQ(st.kernels(), 1);
    // var and batch-norm statistics through the library's ops, against eager.
    st = expect_close("var / mean", [&] {
      const Tensor t = a * 1.5;
      return std::vector<Tensor>{var(t, {0, 2, 3}), mean(t, {0, 2, 3}, true),
                                 sqrt(var(t, {0, 2, 3}, 0) + 1e-5)};
    });
    // Each var's dev * dev with its sum and scale is one kernel (the second: with + eps and the
    // sqrt); a mean of t once written (no group computes it) runs eagerly, its scale too.
    EXPECT_GE(st.graphs, 3);
    // An epilogue in half precision (mean of f16: the f32 sum, the scale, the cast back).
    if (!supports_dtype(dev(), DType::f16)) return;
    const Tensor h = input({6, 40}, 22, DType::f16);
    st = expect_close(
        "half mean", [&] { return std::vector<Tensor>{mean(h * h, {0})}; }, 1e-2);
    EXPECT_EQ(st.kernels(), 1);
  });
}

TEST(FusedReduceDimsTest, OpsOfAnotherShapeAfterTheReductionStartANewGroup) {
  each_device([&] {
    const Tensor x = input({20, 30}, 23);
    const StreamStats st = expect_close("softmax over dim 0", [&] {
      const Tensor e = exp(x * 2.0);
      return std::vector<Tensor>{e / sum(e, {0}, true)};  // the division has x's shape
    });
    EXPECT_EQ(st.graphs, 1) << "exp with its sum; the division (one op) runs alone";
  });
}

TEST(FusedReduceDimsTest, GradientsThroughLeadingDimReductionsEqualEager) {
  each_device([&] {
    auto grads = [](bool fusion) {
      const bool was = fusion_enabled(dev());
      set_fusion(dev(), fusion);
      Tensor x = input({4, 6, 5, 5}, 24, DType::f32, -2, 2).requires_grad_(true);
      Tensor w = input({1, 6, 1, 1}, 25).requires_grad_(true);
      const Tensor m = mean(x, {0, 2, 3}, true);
      const Tensor v = var(x, {0, 2, 3}, 0, true);
      const Tensor xn = (x - m) / sqrt(v + 1e-5) * w;
      Tensor loss = sum(xn * input({4, 6, 5, 5}, 26)) + sum(sum(x * x, {0}) * 0.5);
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
