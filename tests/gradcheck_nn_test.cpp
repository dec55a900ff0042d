// Finite-difference gradchecks (f64) of linalg, layout, convolution, pooling and interpolation,
// on seeded random shapes and options. The composites (activations, norms, losses, attention,
// embedding) are in gradcheck_nn_composite_test.cpp; both count into one summary line.
#include <gtest/gtest.h>

#include <cstdio>

#include "ember/ember.h"
#include "gradcheck_nn_util.h"

namespace ember {
namespace {

namespace F = nn::functional;
using test::GradFn;
using namespace test::nn_gc;
using V = std::vector<Tensor>;

// Prints "gradcheck nn: N ops, M checks" once all tests ran.
class CountReport : public ::testing::Environment {
 public:
  void TearDown() override {
    if (counts().checks > 0)
      std::printf("gradcheck nn: %zu ops, %lld checks\n", counts().ops.size(),
                  static_cast<long long>(counts().checks));
  }
};
[[maybe_unused]] ::testing::Environment* const kReport =
    ::testing::AddGlobalTestEnvironment(new CountReport);

std::string str(const Shape& s) { return shape_str(s); }

TEST(GradcheckNnTest, Matmul) {
  // (a shape, b shape): every torch.matmul case, batch broadcasting included.
  const std::vector<std::pair<Shape, Shape>> cases = {{{4}, {4}},
                                                      {{3}, {3, 2}},
                                                      {{2, 3}, {3}},
                                                      {{2, 3}, {3, 4}},
                                                      {{2, 2, 3}, {3}},
                                                      {{3}, {2, 3, 4}},
                                                      {{2, 2, 3}, {2, 3, 4}},
                                                      {{2, 2, 3}, {3, 4}},
                                                      {{2, 3}, {2, 3, 4}},
                                                      {{2, 1, 2, 3}, {3, 3, 2}},
                                                      {{1, 2, 3}, {4, 3, 2}},
                                                      {{3, 1, 2, 3}, {1, 2, 3, 2}}};
  uint64_t seed = 100;
  for (const auto& [sa, sb] : cases) {
    check("matmul", str(sa) + " x " + str(sb), [](const V& v) { return matmul(v[0], v[1]); },
          {rnd(sa, ++seed), rnd(sb, ++seed)});
  }
  // One operand without grad: only the other's rule runs.
  check("matmul", "b constant", [](const V& v) { return matmul(v[0], v[1]); },
        {rnd({2, 3, 4}, 7), cst({4, 2}, 8)});
  check("matmul", "a constant", [](const V& v) { return matmul(v[0], v[1]); },
        {cst({2, 3}, 9), rnd({2, 3, 4}, 10)});
  check("Tensor::matmul", "[2, 3] x [3, 2]", [](const V& v) { return v[0].matmul(v[1]); },
        {rnd({2, 3}, 11), rnd({3, 2}, 12)});
  std::mt19937_64 rng(5);
  for (int i = 0; i < 3; ++i) {
    const int64_t b = pick(rng, 1, 3), m = pick(rng, 1, 4), k = pick(rng, 1, 4),
                  n = pick(rng, 1, 4);
    check("bmm", "random", [](const V& v) { return bmm(v[0], v[1]); },
          {rnd({b, m, k}, ++seed), rnd({b, k, n}, ++seed)});
    check("mm", "random", [](const V& v) { return mm(v[0], v[1]); },
          {rnd({m, k}, ++seed), rnd({k, n}, ++seed)});
    check("dot", "random", [](const V& v) { return dot(v[0], v[1]); },
          {rnd({k}, ++seed), rnd({k}, ++seed)});
    check("outer", "random", [](const V& v) { return outer(v[0], v[1]); },
          {rnd({m}, ++seed), rnd({n}, ++seed)});
    check("linear", "bias", [](const V& v) { return linear(v[0], v[1], v[2]); },
          {rnd({b, m, k}, ++seed), rnd({n, k}, ++seed), rnd({n}, ++seed)});
    check("linear", "no bias", [](const V& v) { return linear(v[0], v[1]); },
          {rnd({m, k}, ++seed), rnd({n, k}, ++seed)});
  }
  check("linear", "1-d input and weight", [](const V& v) { return linear(v[0], v[1], v[2]); },
        {rnd({3}, 1), rnd({3}, 2), rnd({}, 3)});
}

TEST(GradcheckNnTest, Layout) {
  std::mt19937_64 rng(11);
  uint64_t seed = 200;
  for (int i = 0; i < 3; ++i) {
    const Shape s = test::random_shape(++seed, 1, 3, 1, 3);
    const int64_t r = int64_t(s.size()), d = pick(rng, -r, r - 1);
    Shape s2 = s;
    s2[size_t(d < 0 ? d + r : d)] += 1;
    check("cat", str(s) + " dim " + std::to_string(d),
          [d](const V& v) {
            return cat({v[0], v[1], v[2]}, d);
          },
          {rnd(s, ++seed), rnd(s2, ++seed), rnd(s, ++seed)});
    check("stack", str(s),
          [d](const V& v) {
            return stack({v[0], v[1]}, d);
          },
          {rnd(s, ++seed), rnd(s, ++seed)});
    const Shape big{4, 5, 3};
    const int64_t sd = pick(rng, 0, 2);
    check("split", "size 2",
          [sd](const V& v) {
            auto p = split(v[0], 2, sd);
            return cat({p.front() * 2.0, p.back() * -3.0}, sd);  // middle pieces get zero gradients
          },
          {rnd(big, ++seed)});
    check("split", "sizes",
          [](const V& v) {
            auto p = split(v[0], std::vector<int64_t>{1, 3, 1}, 1);
            return cat({p[2], p[0] * 0.5}, 1);
          },
          {rnd(big, ++seed)});
    check("chunk", "3 chunks",
          [sd](const V& v) {
            auto p = chunk(v[0], 3, sd);
            return cat({p.back(), p.front() * 4.0}, sd);
          },
          {rnd(big, ++seed)});
    check("repeat", str(s),
          [](const V& v) {
            return repeat(v[0], {2, 1, 2, 3});
          },
          {rnd(s, ++seed)});
    check("tile", str(s), [](const V& v) { return tile(v[0], {3, 2}); }, {rnd(s, ++seed)});
    check("roll", "dims",
          [](const V& v) {
            return roll(v[0], {2, -1}, {0, 2});
          },
          {rnd(big, ++seed)});
    check("roll", "flattened", [](const V& v) { return roll(v[0], {7}); }, {rnd(s, ++seed)});
    const int64_t k = pick(rng, -2, 2);
    check("tril", "k " + std::to_string(k), [k](const V& v) { return tril(v[0], k); },
          {rnd({2, 3, 4}, ++seed)});
    check("triu", "k " + std::to_string(k), [k](const V& v) { return triu(v[0], k); },
          {rnd({4, 3}, ++seed)});
    check("diag", "1-d k " + std::to_string(k), [k](const V& v) { return diag(v[0], k); },
          {rnd({3}, ++seed)});
    check("diag", "2-d k " + std::to_string(k), [k](const V& v) { return diag(v[0], k); },
          {rnd({4, 4}, ++seed)});
    check("diagonal", "k " + std::to_string(k), [k](const V& v) { return diagonal(v[0], k, 1, 2); },
          {rnd({2, 4, 3}, ++seed)});
    check("flip", str(big), [](const V& v) { return flip(v[0], {0, -1}); }, {rnd(big, ++seed)});
  }
  for (const char* ix : {"ij", "xy"})
    check("meshgrid", ix,
          [ix](const V& v) {
            auto g = meshgrid({v[0], v[1], v[2]}, ix);
            return stack({g[0], g[1] * 2.0, g[2] * -1.0});
          },
          {rnd({2}, 1), rnd({3}, 2), rnd({4}, 3)});
  // pad: every mode on 1-, 2- and 3-d spatial inputs; constant with crops.
  struct PadCase {
    Shape s;
    std::vector<int64_t> pad;
    const char* mode;
  };
  const std::vector<PadCase> pads = {{{2, 5}, {1, 2}, "constant"},
                                     {{2, 3, 4}, {-1, 2, 1, -1}, "constant"},
                                     {{1, 2, 5}, {2, 3}, "reflect"},
                                     {{1, 2, 4, 3}, {1, 2, 3, 1}, "reflect"},
                                     {{1, 1, 3, 3, 4}, {1, 2, 2, 1, 1, 2}, "reflect"},
                                     {{1, 2, 4}, {3, 1}, "replicate"},
                                     {{1, 2, 3, 3}, {2, 1, 0, 2}, "replicate"},
                                     {{1, 1, 2, 3, 2}, {1, 1, 2, 0, 1, 1}, "replicate"},
                                     {{1, 2, 4}, {2, 4}, "circular"},
                                     {{1, 2, 3, 4}, {1, 3, 2, 1}, "circular"},
                                     {{1, 1, 2, 3, 3}, {1, 2, 1, 1, 2, 0}, "circular"}};
  for (const PadCase& p : pads) {
    const auto amounts = p.pad;
    const std::string mode = p.mode;
    check("pad", mode + " " + str(p.s),
          [amounts, mode](const V& v) { return pad(v[0], amounts, mode, 0.75); },
          {rnd(p.s, ++seed)});
  }
}

TEST(GradcheckNnTest, Conv) {
  std::mt19937_64 rng(21);
  uint64_t seed = 300;
  for (int64_t nd = 1; nd <= 3; ++nd) {
    for (int rep = 0; rep < (nd == 3 ? 2 : 4); ++rep) {
      const int64_t g = pick(rng, 1, 2), cig = pick(rng, 1, 2), cog = pick(rng, 1, 2);
      const int64_t n = pick(rng, 1, 2);
      std::vector<int64_t> k, s, p, d, op;
      Shape xs{n, cig * g}, ws{cog * g, cig}, tws{cig * g, cog};
      for (int64_t i = 0; i < nd; ++i) {
        k.push_back(pick(rng, 1, 3));
        s.push_back(pick(rng, 1, 2));
        d.push_back(pick(rng, 1, 2));
        p.push_back(pick(rng, 0, 1));
        op.push_back(pick(rng, 0, std::max(s.back(), d.back()) - 1));
        xs.push_back(d.back() * (k.back() - 1) + pick(rng, 1, nd == 3 ? 2 : 3));
        ws.push_back(k.back());
        tws.push_back(k.back());
      }
      const bool bias = rep % 2 == 0;
      const std::string what = "x " + str(xs) + " w " + str(ws) + " groups " + std::to_string(g);
      GradFn conv = [=](const V& v) {
        const Tensor b = bias ? v[2] : Tensor();
        return nd == 1   ? F::conv1d(v[0], v[1], b, s, p, d, g)
               : nd == 2 ? F::conv2d(v[0], v[1], b, s, p, d, g)
                         : F::conv3d(v[0], v[1], b, s, p, d, g);
      };
      const char* cname = nd == 1 ? "conv1d" : nd == 2 ? "conv2d" : "conv3d";
      check(cname, what, conv,
            {rnd(xs, ++seed), rnd(ws, ++seed), bias ? rnd({cog * g}, ++seed) : Tensor()});
      GradFn convt = [=](const V& v) {
        const Tensor b = bias ? v[2] : Tensor();
        return nd == 1   ? F::conv_transpose1d(v[0], v[1], b, s, p, op, g, d)
               : nd == 2 ? F::conv_transpose2d(v[0], v[1], b, s, p, op, g, d)
                         : F::conv_transpose3d(v[0], v[1], b, s, p, op, g, d);
      };
      const char* tname = nd == 1   ? "conv_transpose1d"
                          : nd == 2 ? "conv_transpose2d"
                                    : "conv_transpose3d";
      // Transposed input: spatial >= 2 padding + 1, so the output is never empty.
      Shape txs{n, cig * g};
      for (int64_t i = 0; i < nd; ++i) txs.push_back(2 * p[size_t(i)] + pick(rng, 1, 2));
      check(tname, "x " + str(txs) + " w " + str(tws) + " output_padding " + str(op), convt,
            {rnd(txs, ++seed), rnd(tws, ++seed), bias ? rnd({cog * g}, ++seed) : Tensor()});
    }
  }
  check("conv2d", "padding same",
        [](const V& v) { return F::conv2d(v[0], v[1], v[2], {1}, F::PaddingMode("same"), {2}); },
        {rnd({1, 2, 5, 4}, 1), rnd({3, 2, 2, 3}, 2), rnd({3}, 3)});
  check("conv_transpose2d", "stride 2, output_padding [1, 0], groups 2",
        [](const V& v) {
          return F::conv_transpose2d(v[0], v[1], v[2], {2, 3}, {1}, {1, 0}, 2, {1});
        },
        {rnd({1, 4, 3, 2}, 11), rnd({4, 1, 3, 2}, 12), rnd({2}, 13)});
  check("conv_transpose1d", "dilation 2, output_padding 1",
        [](const V& v) { return F::conv_transpose1d(v[0], v[1], Tensor(), {1}, {1}, {1}, 1, {2}); },
        {rnd({2, 2, 4}, 14), rnd({2, 3, 3}, 15)});
  check("conv_transpose3d", "stride 2, output_padding 1",
        [](const V& v) { return F::conv_transpose3d(v[0], v[1], v[2], {2}, {0}, {1}); },
        {rnd({1, 1, 2, 2, 1}, 16), rnd({1, 2, 2, 1, 2}, 17), rnd({2}, 18)});
  check("conv1d", "unbatched", [](const V& v) { return F::conv1d(v[0], v[1]); },
        {rnd({2, 5}, 4), rnd({3, 2, 2}, 5)});
  check("unfold", "[1, 2, 4, 5]",
        [](const V& v) {
          return F::unfold(v[0], {2, 3}, {1}, {1}, {2, 1});
        },
        {rnd({1, 2, 4, 5}, 6)});
  check("fold", "[1, 4, 4]",
        [](const V& v) {
          return F::fold(v[0], {3, 4}, {2, 2}, {1}, {0}, {1, 2});
        },
        {rnd({1, 4, 4}, 7)});
}

TEST(GradcheckNnTest, Pool) {
  uint64_t seed = 400;
  std::mt19937_64 rng(31);
  for (int64_t nd = 1; nd <= 3; ++nd) {
    for (int rep = 0; rep < 3; ++rep) {
      std::vector<int64_t> k, s, p, d;
      Shape xs{pick(rng, 1, 2), pick(rng, 1, 2)};
      for (int64_t i = 0; i < nd; ++i) {
        k.push_back(pick(rng, 1, 3));
        s.push_back(pick(rng, 1, 2));
        d.push_back(pick(rng, 1, 2));
        p.push_back(pick(rng, 0, k.back() / 2));
        xs.push_back(d.back() * (k.back() - 1) + pick(rng, 1, nd == 3 ? 2 : 4));
      }
      const bool ceil = rep != 0, include_pad = rep != 1;
      const std::string what = str(xs) + " kernel " + str(k) + " stride " + str(s) + " pad " +
                               str(p) + (ceil ? " ceil" : "");
      const char* mname = nd == 1 ? "max_pool1d" : nd == 2 ? "max_pool2d" : "max_pool3d";
      check(mname, what,
            [=](const V& v) {
              return nd == 1   ? F::max_pool1d(v[0], k, s, p, d, ceil)
                     : nd == 2 ? F::max_pool2d(v[0], k, s, p, d, ceil)
                               : F::max_pool3d(v[0], k, s, p, d, ceil);
            },
            {distinct(xs, ++seed)});
      check(std::string(mname) + "_with_indices", what,
            [=](const V& v) {
              return std::get<0>(nd == 1   ? F::max_pool1d_with_indices(v[0], k, s, p, d, ceil)
                                 : nd == 2 ? F::max_pool2d_with_indices(v[0], k, s, p, d, ceil)
                                           : F::max_pool3d_with_indices(v[0], k, s, p, d, ceil));
            },
            {distinct(xs, ++seed)});
      const char* aname = nd == 1 ? "avg_pool1d" : nd == 2 ? "avg_pool2d" : "avg_pool3d";
      const std::optional<int64_t> div =
          rep == 2 && nd > 1 ? std::optional<int64_t>(3) : std::nullopt;
      check(aname, what + (include_pad ? " count_include_pad" : ""),
            [=](const V& v) {
              return nd == 1   ? F::avg_pool1d(v[0], k, s, p, ceil, include_pad)
                     : nd == 2 ? F::avg_pool2d(v[0], k, s, p, ceil, include_pad, div)
                               : F::avg_pool3d(v[0], k, s, p, ceil, include_pad, div);
            },
            {rnd(xs, ++seed)});
      // Adaptive: output sizes below, equal to and above the input (overlapping windows).
      std::vector<int64_t> o;
      for (int64_t i = 0; i < nd; ++i) o.push_back(pick(rng, 1, xs[size_t(2 + i)] + 1));
      const std::string awhat = str(xs) + " -> " + str(o);
      check(nd == 1   ? "adaptive_avg_pool1d"
            : nd == 2 ? "adaptive_avg_pool2d"
                      : "adaptive_avg_pool3d",
            awhat,
            [=](const V& v) {
              return nd == 1   ? F::adaptive_avg_pool1d(v[0], o)
                     : nd == 2 ? F::adaptive_avg_pool2d(v[0], o)
                               : F::adaptive_avg_pool3d(v[0], o);
            },
            {rnd(xs, ++seed)});
      check(nd == 1   ? "adaptive_max_pool1d"
            : nd == 2 ? "adaptive_max_pool2d"
                      : "adaptive_max_pool3d",
            awhat,
            [=](const V& v) {
              return nd == 1   ? F::adaptive_max_pool1d(v[0], o)
                     : nd == 2 ? F::adaptive_max_pool2d(v[0], o)
                               : F::adaptive_max_pool3d(v[0], o);
            },
            {distinct(xs, ++seed)});
    }
  }
  check("adaptive_max_pool2d_with_indices", "unbatched [2, 5, 4] -> [2, 3]",
        [](const V& v) {
          return std::get<0>(F::adaptive_max_pool2d_with_indices(v[0], {2, 3}));
        },
        {distinct({2, 5, 4}, 1)});
}

TEST(GradcheckNnTest, Interpolate) {
  struct Case {
    Shape s;
    std::vector<int64_t> size;
    std::vector<double> scale;
    const char* mode;
  };
  const std::vector<Case> cases = {{{1, 2, 5}, {8}, {}, "nearest"},
                                   {{1, 2, 5}, {}, {0.6}, "nearest"},
                                   {{1, 1, 3, 4}, {6, 8}, {}, "nearest"},
                                   {{1, 1, 2, 3, 2}, {}, {1.5}, "nearest"},
                                   {{1, 2, 5}, {7}, {}, "nearest-exact"},
                                   {{1, 1, 4, 3}, {}, {0.7, 1.6}, "nearest-exact"},
                                   {{1, 2, 5}, {8}, {}, "linear"},
                                   {{2, 1, 6}, {}, {0.5}, "linear"},
                                   {{1, 2, 3, 4}, {5, 3}, {}, "bilinear"},
                                   {{1, 1, 4, 3}, {}, {1.7, 2.0}, "bilinear"},
                                   {{1, 2, 4, 3}, {6, 5}, {}, "bicubic"},
                                   {{1, 1, 5, 4}, {}, {0.6, 1.5}, "bicubic"},
                                   {{1, 1, 2, 3, 3}, {3, 4, 2}, {}, "trilinear"},
                                   {{1, 1, 3, 2, 2}, {}, {1.5}, "trilinear"},
                                   {{1, 2, 7}, {3}, {}, "area"},
                                   {{1, 1, 5, 4}, {3, 6}, {}, "area"},
                                   {{1, 1, 3, 4, 2}, {2, 3, 2}, {}, "area"}};
  uint64_t seed = 500;
  for (const Case& c : cases) {
    const std::string mode = c.mode;
    const bool has_align =
        mode == "linear" || mode == "bilinear" || mode == "bicubic" || mode == "trilinear";
    for (int align = 0; align < (has_align ? 2 : 1); ++align) {
      const auto size = c.size;
      const auto scale = c.scale;
      const std::optional<bool> ac = has_align ? std::optional<bool>(align == 1) : std::nullopt;
      check("interpolate " + mode,
            str(c.s) + (size.empty() ? " scale" : " size") + (align ? " align_corners" : ""),
            [=](const V& v) { return F::interpolate(v[0], size, scale, mode, ac); },
            {rnd(c.s, ++seed)});
    }
  }
}

// Empty shapes and low-precision dtypes through the new rules: gradients keep the input's
// shape and dtype; f32 agrees with f64.
TEST(GradcheckNnTest, EmptyAndLowPrecisionBackward) {
  auto grad_of = [](const std::function<Tensor(const Tensor&)>& fn, Tensor x) {
    x = x.detach().clone().requires_grad_();
    sum(fn(x)).backward();
    return x.grad();
  };
  const std::vector<std::pair<std::function<Tensor(const Tensor&)>, Shape>> empties = {
      {[](const Tensor& x) {
         return matmul(x, ones({0, 3}, DType::f64));
       },
       {2, 0}},
      {[](const Tensor& x) {
         return F::adaptive_max_pool2d(x, {0, 2});
       },
       {1, 2, 3, 3}},
      {[](const Tensor& x) { return F::adaptive_avg_pool1d(x, {0}); }, {1, 2, 3}},
      {[](const Tensor& x) {
         return F::conv2d(x, ones({2, 3, 2, 2}, DType::f64));
       },
       {0, 3, 4, 4}},
      {[](const Tensor& x) { return F::interpolate(x, {4}, {}, "linear"); }, {0, 2, 3}},
      {[](const Tensor& x) { return F::max_pool1d(x, {2}); }, {0, 2, 4}}};
  for (const auto& [fn, shape] : empties) {
    const Tensor g = grad_of(fn, zeros(shape, DType::f64));
    ASSERT_TRUE(g.defined()) << shape_str(shape);
    EXPECT_EQ(g.shape(), shape);
    EXPECT_EQ(sum(abs(g)).item<double>(), 0.0) << shape_str(shape);
  }
  const std::vector<std::function<Tensor(const Tensor&)>> fns = {
      [](const Tensor& x) { return F::conv2d(x, x.slice(0, 0, 1).slice(2, 0, 2).slice(3, 0, 2)); },
      [](const Tensor& x) {
        return F::interpolate(x, {5, 7}, {}, "bicubic", true);
      },
      [](const Tensor& x) {
        return F::adaptive_avg_pool2d(x, {3, 2}) * x.sum();
      },
      [](const Tensor& x) {
        return F::adaptive_max_pool2d(x, {2, 3});
      },
      [](const Tensor& x) { return matmul(x, x.mT()); }};
  const Tensor x64 = cst({2, 3, 4, 4}, 9);
  for (size_t i = 0; i < fns.size(); ++i) {
    const auto want = grad_of(fns[i], x64).to_vector<double>();
    const Tensor g32 = grad_of(fns[i], x64.to(DType::f32));
    EXPECT_EQ(g32.dtype(), DType::f32);
    const auto got = g32.to(DType::f64).to_vector<double>();
    for (size_t e = 0; e < want.size(); ++e)
      ASSERT_NEAR(got[e], want[e], 1e-4 * (1 + std::abs(want[e])))
          << "fn " << i << " element " << e;
    const Tensor gb = grad_of(fns[i], x64.to(DType::bf16));
    EXPECT_EQ(gb.dtype(), DType::bf16);
    EXPECT_EQ(gb.shape(), x64.shape());
  }
}

}  // namespace
}  // namespace ember
