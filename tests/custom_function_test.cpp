// Custom differentiable ops (ember/autograd/function.h) against finite differences and torch
// 1.13's torch.autograd.Function (tests/golden/gen_autograd_ext.py writes the same cases).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/ember.h"
#include "gradcheck.h"
#include "test_util.h"

using namespace ember;
using autograd::AutogradContext;
using autograd::Function;
using ember::test::expect_error;
using ember::test::expect_near;
using ember::test::gradcheck;
using ember::test::gradgradcheck;

namespace {
#include "golden/autograd_ext_golden.inc"

std::vector<double> vals(const double* p, size_t n) { return std::vector<double>(p, p + n); }
#define GOLDEN(name) vals(golden_ext::name, std::size(golden_ext::name))

Tensor leaf() { return tensor<double>({0.5, -1.2, 2.0}).requires_grad_(); }
Tensor weights() { return tensor<double>({1.0, 2.0, 3.0}); }

// x^3 with a backward written with tensor ops on the saved input: differentiable again.
struct Cube : Function<Cube> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    EXPECT_FALSE(is_grad_enabled());  // forward runs with grad mode off
    ctx->save_for_backward({x});
    return x * x * x;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    const Tensor x = ctx->get_saved_variables()[0];
    return {g[0] * 3 * x * x};
  }
};

// A non-tensor argument, kept in saved_data.
struct MulConst : Function<MulConst> {
  static Tensor forward(AutogradContext* ctx, Tensor x, double c) {
    ctx->saved_data["c"] = c;
    return x * c;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, const std::vector<Tensor>& g) {
    return {g[0] * ctx->saved_data["c"].toDouble(), Tensor()};
  }
};

// Two outputs.
struct SinCos : Function<SinCos> {
  static std::vector<Tensor> forward(AutogradContext* ctx, Tensor x) {
    ctx->save_for_backward({x});
    return {sin(x), cos(x)};
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    const Tensor x = ctx->get_saved_variables()[0];
    return {g[0] * cos(x) - g[1] * sin(x)};
  }
};

// The max and (non-differentiable) its index.
struct MaxWithIndex : Function<MaxWithIndex> {
  static std::vector<Tensor> forward(AutogradContext* ctx, Tensor x) {
    const Tensor i = argmax(x, 0);
    ctx->saved_data["i"] = i.item<int64_t>();
    Tensor idx = i.to(x.dtype());
    ctx->mark_non_differentiable({idx});
    return {x.max(), idx};
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    EXPECT_EQ(g[1].to_vector<double>(), std::vector<double>{0.0});  // the index's: zeros
    const Tensor i = tensor<int64_t>({ctx->saved_data["i"].toInt()});
    return {index_add(zeros({3}, DType::f64), 0, i, g[0].reshape({1}))};
  }
};

// Writes its input in place.
struct TripleInPlace : Function<TripleInPlace> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    x.mul_(3);
    ctx->mark_dirty({x});
    return x;
  }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) {
    return {g[0] * 3};
  }
};

// a * b + c with an integer argument between: records needs_input_grad in backward.
std::vector<bool> g_needs;
struct ScaledMul : Function<ScaledMul> {
  static Tensor forward(AutogradContext* ctx, Tensor a, int64_t k, Tensor b) {
    ctx->save_for_backward({a, b});
    ctx->saved_data["k"] = k;
    return a * b * double(k);
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    g_needs = {ctx->needs_input_grad(0), ctx->needs_input_grad(1)};
    const auto s = ctx->get_saved_variables();
    const double k = double(ctx->saved_data["k"].toInt());
    return {ctx->needs_input_grad(0) ? g[0] * s[1] * k : Tensor(), Tensor(),
            ctx->needs_input_grad(1) ? g[0] * s[0] * k : Tensor()};
  }
};

// A std::vector<Tensor> argument: one gradient per element.
struct SumList : Function<SumList> {
  static Tensor forward(AutogradContext*, std::vector<Tensor> xs, double scale) {
    Tensor s = zeros_like(xs[0]);
    for (const Tensor& x : xs) s = s + x;
    return s * scale;
  }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) {
    return {g[0] * 2.0, g[0] * 2.0, Tensor()};  // two list elements, then `scale`
  }
};

// Returns its input unchanged.
struct Identity : Function<Identity> {
  static Tensor forward(AutogradContext*, Tensor x) { return x; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return g; }
};

// Broken backwards.
struct TooFewGrads : Function<TooFewGrads> {
  static Tensor forward(AutogradContext*, Tensor a, Tensor b) { return a + b; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {g[0]}; }
};
struct WrongShape : Function<WrongShape> {
  static Tensor forward(AutogradContext*, Tensor a) { return a.sum(); }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {g[0]}; }
};
struct GradForDouble : Function<GradForDouble> {
  static Tensor forward(AutogradContext*, Tensor a, double) { return a * 1; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) {
    return {g[0], g[0]};
  }
};
}  // namespace

TEST(CustomFunctionTest, FirstAndSecondDerivativesMatchTorch) {
  Tensor x = leaf();
  Tensor y = Cube::apply(x);
  EXPECT_EQ(y.grad_fn_name(), "CubeBackward");
  const Tensor g = autograd::grad({(y * weights()).sum()}, {x}, {}, std::nullopt, false, true)[0];
  expect_near(g, GOLDEN(kCubeGrad), 1e-12);
  EXPECT_TRUE(g.requires_grad());  // create_graph: the backward was recorded
  expect_near(autograd::grad({g.sum()}, {x})[0], GOLDEN(kCubeGradGrad), 1e-12);
}

TEST(CustomFunctionTest, GradcheckAndGradgradcheck) {
  const Tensor x = ember::test::random_input({2, 3}, 7);
  const auto cube = [](const std::vector<Tensor>& in) { return Cube::apply(in[0]); };
  EXPECT_EQ(gradcheck(cube, {x}), "");
  EXPECT_EQ(gradgradcheck(cube, {x}), "");
  const auto mul = [](const std::vector<Tensor>& in) { return MulConst::apply(in[0], -1.5); };
  EXPECT_EQ(gradcheck(mul, {x}), "");
  const auto sincos = [](const std::vector<Tensor>& in) {
    const auto o = SinCos::apply(in[0]);
    return o[0] * 2 + o[1] * o[1];
  };
  EXPECT_EQ(gradcheck(sincos, {x}), "");
  EXPECT_EQ(gradgradcheck(sincos, {x}), "");
  const Tensor b = ember::test::random_input({2, 3}, 8);
  const auto smul = [](const std::vector<Tensor>& in) { return ScaledMul::apply(in[0], 3, in[1]); };
  EXPECT_EQ(gradcheck(smul, {x, b}), "");
  EXPECT_EQ(gradgradcheck(smul, {x, b}), "");
}

TEST(CustomFunctionTest, NonTensorArgumentAndSavedData) {
  Tensor x = leaf();
  (MulConst::apply(x, 2.5) * weights()).sum().backward();
  expect_near(x.grad(), GOLDEN(kMulConstGrad), 1e-12);
  autograd::IValue v = int64_t(3);
  EXPECT_TRUE(v.isInt());
  EXPECT_EQ(v.toInt(), 3);
  expect_error([&] { (void)v.toDouble(); }, {"[saved_data]", "expected a double", "int"});
  autograd::IValue s = std::vector<int64_t>{2, 3};
  EXPECT_EQ(s.toIntVector(), (std::vector<int64_t>{2, 3}));
}

TEST(CustomFunctionTest, SeveralOutputsAndUnusedOutputGetsZeros) {
  Tensor x = leaf();
  auto o = SinCos::apply(x);
  ASSERT_EQ(o.size(), 2u);
  EXPECT_EQ(o[1].grad_fn_name(), "SinCosBackward");
  (o[0] * weights() + o[1] * o[1]).sum().backward();
  expect_near(x.grad(), GOLDEN(kSinCosGrad), 1e-12);
  Tensor x2 = leaf();
  SinCos::apply(x2)[1].sum().backward();  // sin's gradient is zeros in backward
  expect_near(x2.grad(), GOLDEN(kSinCosCosOnlyGrad), 1e-12);
}

TEST(CustomFunctionTest, NonDifferentiableOutput) {
  Tensor x = leaf();
  auto o = MaxWithIndex::apply(x);
  EXPECT_TRUE(o[0].requires_grad());
  EXPECT_FALSE(o[1].requires_grad());
  expect_near(o[1], GOLDEN(kMaxIndex));
  (o[0] * 4).backward();
  expect_near(x.grad(), GOLDEN(kMaxGrad), 1e-12);
}

TEST(CustomFunctionTest, NeedsInputGradCountsTensorInputs) {
  Tensor a = leaf();
  Tensor b = tensor<double>({1.0, 2.0, 3.0});  // no grad
  ScaledMul::apply(a, 2, b).sum().backward();
  EXPECT_EQ(g_needs, (std::vector<bool>{true, false}));
  expect_near(a.grad(), {2, 4, 6});
  Tensor b2 = tensor<double>({1.0, 2.0, 3.0}).requires_grad_();
  Tensor a2 = tensor<double>({1.0, 1.0, 1.0});
  ScaledMul::apply(a2, 2, b2).sum().backward();
  EXPECT_EQ(g_needs, (std::vector<bool>{false, true}));
  expect_near(b2.grad(), {2, 2, 2});
}

TEST(CustomFunctionTest, NeedsInputGradOutOfRangeThrows) {
  struct Probe : Function<Probe> {
    static Tensor forward(AutogradContext* ctx, Tensor a) {
      EXPECT_TRUE(ctx->needs_input_grad(0));  // also known in forward
      expect_error([&] { (void)ctx->needs_input_grad(1); }, {"[Probe]", "needs_input_grad(1)"});
      return a * 2;
    }
    static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) {
      return {g[0] * 2};
    }
  };
  Tensor a = leaf();
  Probe::apply(a).sum().backward();
  expect_near(a.grad(), {2, 2, 2});
}

TEST(CustomFunctionTest, SavedTensorModifiedInPlaceThrows) {
  Tensor a = leaf();
  Tensor x = a * 1;
  Tensor y = Cube::apply(x);
  {
    NoGradGuard no_grad;
    x.add_(1);
  }
  expect_error([&] { y.sum().backward(); }, {"Cube", "modified by an in-place operation"});
}

TEST(CustomFunctionTest, WrongGradientsNameTheFunction) {
  Tensor a = leaf(), b = leaf();
  expect_error([&] { TooFewGrads::apply(a, b).sum().backward(); },
               {"[TooFewGrads]", "backward returned 1 gradients, expected 2"});
  expect_error([&] { WrongShape::apply(a).backward(); },
               {"[WrongShape]", "gradient of shape []", "argument 0 of shape [3]"});
  expect_error([&] { GradForDouble::apply(a, 1.0).sum().backward(); },
               {"[GradForDouble]", "argument 1, which is not a Tensor"});
}

TEST(CustomFunctionTest, VectorArgumentGetsOneGradientPerElement) {
  Tensor a = leaf(), b = leaf();
  SumList::apply(std::vector<Tensor>{a, b}, 2.0).sum().backward();
  expect_near(a.grad(), {2, 2, 2});
  expect_near(b.grad(), {2, 2, 2});
}

TEST(CustomFunctionTest, MarkDirtyMovesHistoryOntoTheNode) {
  Tensor a = leaf();
  Tensor y = a * 1;
  Tensor z = TripleInPlace::apply(y);
  EXPECT_TRUE(z.is_alias_of(y));
  EXPECT_EQ(y.grad_fn_name(), "TripleInPlaceBackward");  // y itself was rebased, as torch
  (z * z * weights()).sum().backward();
  expect_near(a.grad(), GOLDEN(kTripleInPlaceGrad), 1e-12);
  Tensor leaf_in = leaf();
  expect_error([&] { TripleInPlace::apply(leaf_in); },
               {"[TripleInPlace]", "leaf tensor that requires grad"});
}

TEST(CustomFunctionTest, ReturnedInputIsANewTensorWithTheNode) {
  Tensor a = leaf();
  Tensor x = a * 2;
  Tensor y = Identity::apply(x);
  EXPECT_EQ(x.grad_fn_name(), "mulBackward");  // the input keeps its history
  EXPECT_EQ(y.grad_fn_name(), "IdentityBackward");
  (y * weights()).sum().backward();
  expect_near(a.grad(), {2, 4, 6});
}

TEST(CustomFunctionTest, NoGraphWithoutGradOrUnderNoGrad) {
  Tensor c = tensor<double>({1.0, 2.0, 3.0});
  EXPECT_FALSE(Cube::apply(c).requires_grad());
  Tensor a = leaf();
  NoGradGuard no_grad;
  Tensor y = Cube::apply(a);
  EXPECT_FALSE(y.requires_grad());
  expect_near(y, {0.125, -1.728, 8.0}, 1e-12);
}

TEST(CustomFunctionTest, BackwardTwiceNeedsRetainGraph) {
  Tensor a = leaf();
  Tensor y = Cube::apply(a).sum();
  y.backward(Tensor(), true);
  y.backward();
  expect_near(a.grad(), {1.5, 8.64, 24.0}, 1e-12);
  expect_error([&] { y.backward(); }, {"a second time", "retain_graph = true"});
}

TEST(CustomFunctionTest, RunsOnOpenCLWithTensorOpBackward) {
  Device dev;
  std::string why;
  if (!ember::test::opencl_device(dev, why)) GTEST_SKIP() << "no OpenCL device: " << why;
  Tensor x = tensor<float>({0.5f, -1.2f, 2.0f}, {}, dev).requires_grad_();
  auto o = SinCos::apply(x);
  EXPECT_EQ(o[0].device(), dev);
  (o[0] * 2 + o[1] * o[1]).sum().backward();
  Tensor xc = tensor<float>({0.5f, -1.2f, 2.0f}).requires_grad_();
  auto oc = SinCos::apply(xc);
  (oc[0] * 2 + oc[1] * oc[1]).sum().backward();
  expect_near(x.grad().to(Device::cpu()), xc.grad().to_vector<double>(), 1e-5);
}

TEST(CustomFunctionTest, RunsOnVulkanWithTensorOpBackward) {
  Device dev;
  std::string why;
  if (!ember::test::vulkan_device(dev, why)) GTEST_SKIP() << "no Vulkan device: " << why;
  Tensor x = tensor<float>({0.5f, -1.2f, 2.0f}, {}, dev).requires_grad_();
  auto o = SinCos::apply(x);
  EXPECT_EQ(o[0].device(), dev);
  (o[0] * 2 + o[1] * o[1]).sum().backward();
  Tensor xc = tensor<float>({0.5f, -1.2f, 2.0f}).requires_grad_();
  auto oc = SinCos::apply(xc);
  (oc[0] * 2 + oc[1] * oc[1]).sum().backward();
  expect_near(x.grad().to(Device::cpu()), xc.grad().to_vector<double>(), 1e-5);
}
