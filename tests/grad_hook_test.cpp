// Tensor::register_hook: gradient hooks on leaves and intermediates, their order, removal,
// errors, and their part in autograd::grad and create_graph (values: torch 1.13, from
// tests/golden/gen_autograd_ext.py).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/ember.h"
#include "test_util.h"

using namespace ember;
using ember::test::expect_error;
using ember::test::expect_near;

namespace {
#include "golden/autograd_ext_golden.inc"

std::vector<double> vals(const double* p, size_t n) { return std::vector<double>(p, p + n); }
#define GOLDEN(name) vals(golden_ext::name, std::size(golden_ext::name))

Tensor leaf() { return tensor<double>({0.5, -1.2, 2.0}).requires_grad_(); }
Tensor weights() { return tensor<double>({1.0, 2.0, 3.0}); }
}  // namespace

TEST(GradHookTest, HooksReplaceGradientsOfIntermediatesAndLeaves) {
  Tensor x = leaf();
  Tensor y = x * 2;
  y.register_hook([](const Tensor& g) { return g * 10; });
  x.register_hook([](const Tensor& g) { return g + 1; });  // before accumulation into .grad
  (y * y).sum().backward();
  expect_near(x.grad(), GOLDEN(kHookChainGrad), 1e-12);
}

TEST(GradHookTest, LeafHookSeesTheSummedGradientOnce) {
  Tensor x = leaf();
  std::vector<Tensor> seen;
  x.register_hook([&](const Tensor& g) { seen.push_back(g.clone()); });  // void: inspects only
  (x * 2 + x * 3).sum().backward();
  ASSERT_EQ(seen.size(), 1u);
  expect_near(seen[0], GOLDEN(kLeafHookSees));
  expect_near(x.grad(), GOLDEN(kLeafHookGrad));
}

TEST(GradHookTest, HooksRunInRegistrationOrder) {
  Tensor x = leaf();
  Tensor y = x * 1;
  y.register_hook([](const Tensor& g) { return g * 2; });
  y.register_hook([](const Tensor& g) { return g + 1; });  // sees the first one's result
  (y * weights()).sum().backward();
  expect_near(x.grad(), GOLDEN(kHookOrderGrad));
}

TEST(GradHookTest, RemovedHookNoLongerRuns) {
  Tensor x = leaf();
  Tensor y = x * 1;
  int calls = 0;
  RemovableHandle h = y.register_hook([&](const Tensor& g) {
    ++calls;
    return g * 100;
  });
  RemovableHandle kept = y.register_hook([&](const Tensor&) { ++calls; });
  EXPECT_TRUE(h.active());
  h.remove();
  h.remove();  // twice: nothing
  EXPECT_FALSE(h.active());
  y.sum().backward();
  EXPECT_EQ(calls, 1);
  expect_near(x.grad(), {1, 1, 1});
  Tensor z = leaf();
  RemovableHandle on_leaf = z.register_hook([](const Tensor& g) { return g * 7; });
  on_leaf.remove();
  z.sum().backward();
  expect_near(z.grad(), {1, 1, 1});
}

TEST(GradHookTest, HookOnTensorWithoutGradThrows) {
  Tensor c = tensor<double>({1.0});
  expect_error([&] { c.register_hook([](const Tensor& g) { return g; }); },
               {"[register_hook]", "does not require grad"});
}

TEST(GradHookTest, HookChangingShapeOrDtypeThrows) {
  Tensor x = leaf();
  Tensor y = x * 1;
  y.register_hook([](const Tensor& g) { return g.sum(); });
  expect_error([&] { y.sum().backward(); }, {"[register_hook]", "same shape, dtype and device"});
  Tensor x2 = leaf();
  Tensor y2 = x2 * 1;
  y2.register_hook([](const Tensor& g) { return g.to(DType::f32); });
  expect_error([&] { y2.sum().backward(); }, {"[register_hook]", "float32"});
}

TEST(GradHookTest, HooksRunInCreateGraphBackward) {
  Tensor x = leaf();
  Tensor y = x * x;
  y.register_hook([](const Tensor& g) { return g * 3; });
  const Tensor g =
      autograd::grad({(y * y * weights()).sum()}, {x}, {}, std::nullopt, false, true)[0];
  expect_near(g, GOLDEN(kHookCreateGraphGrad), 1e-12);
  // Second pass: the gradient reaches y's node again, through its saved value: the hook runs.
  expect_near(autograd::grad({g.sum()}, {x})[0], GOLDEN(kHookCreateGraphGradGrad), 1e-10);
}

// Ember runs the hooks of the tensors autograd::grad differentiates with respect to (as the
// doc comment says: on every gradient computed for the tensor); torch 1.13 skipped them there.
TEST(GradHookTest, AutogradGradRunsHooksOfItsInputs) {
  Tensor x = leaf();
  Tensor y = x * 2;
  y.register_hook([](const Tensor& g) { return g * 10; });
  x.register_hook([](const Tensor& g) { return g + 1; });
  const Tensor z = (y * y).sum();
  const auto gy = autograd::grad({z}, {y}, {}, true);
  expect_near(gy[0], {10 * 2 * 1.0, 10 * 2 * -2.4, 10 * 2 * 4.0}, 1e-12);
  const auto gx = autograd::grad({z}, {x});
  expect_near(gx[0], GOLDEN(kHookChainGrad), 1e-12);
  EXPECT_FALSE(x.grad().defined());  // autograd::grad touches no .grad
}
