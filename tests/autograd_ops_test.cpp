// Hand-checked gradients of the reduce and indexing families (ties, zeros, duplicates) and the
// errors autodiff raises through them.
#include <gtest/gtest.h>

#include <cmath>

#include "ember/autograd.h"
#include "ember/ember.h"

using namespace ember;

namespace {
std::vector<double> v(const Tensor& t) { return t.contiguous().to_vector<double>(); }
Tensor leaf(std::initializer_list<double> vals, Shape shape = {}) {
  Tensor t = tensor<double>(vals, std::move(shape));
  t.requires_grad_();
  return t;
}
std::vector<double> grad_of(const Tensor& out, const Tensor& x, const Tensor& g = Tensor()) {
  return v(autograd::grad({out}, {x}, {g.defined() ? g : ones_like(out)})[0]);
}
void expect_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected an ember::Error containing \"" << needle << "\"";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}
}  // namespace

TEST(AutogradOpsTest, MaxWithTies) {
  // max(dim) sends the gradient to the returned index only; amax and max() share it evenly.
  Tensor x = leaf({1, 3, 3, 2, 0, 2}, {2, 3});
  auto [values, indices] = max(x, 1);
  EXPECT_EQ(v(values), (std::vector<double>{3, 2}));
  const auto idx = indices.to_vector<int64_t>();
  const auto g = grad_of(values, x, tensor<double>({10, 20}));
  std::vector<double> expect(6, 0.0);
  expect[size_t(idx[0])] = 10;
  expect[size_t(3 + idx[1])] = 20;
  EXPECT_EQ(g, expect);
  EXPECT_EQ(grad_of(amax(x, {1}), x), (std::vector<double>{0, 0.5, 0.5, 0.5, 0, 0.5}));
  EXPECT_EQ(grad_of(amin(x, {0}), x), (std::vector<double>{1, 0, 0, 0, 1, 1}));
  Tensor y = leaf({1, 3, 3, -1});
  EXPECT_EQ(grad_of(max(y), y), (std::vector<double>{0, 0.5, 0.5, 0}));
  EXPECT_EQ(grad_of(min(y), y), (std::vector<double>{0, 0, 0, 1}));
  // cummax: each output's gradient goes to the element it copied.
  Tensor c = leaf({1, 3, 2, 5});
  EXPECT_EQ(grad_of(std::get<0>(cummax(c, 0)), c, tensor<double>({1, 2, 4, 8})),
            (std::vector<double>{1, 6, 0, 8}));
}

TEST(AutogradOpsTest, ProdAndCumprodWithZeros) {
  Tensor x = leaf({2, 0, 3, 4});
  // y = [2, 0, 0, 0]: dy/dx0 = 1 (only y0 survives), dy/dx1 = 2 + 2*3 + 2*3*4 = 32.
  EXPECT_EQ(grad_of(cumprod(x, 0), x), (std::vector<double>{1, 32, 0, 0}));
  EXPECT_EQ(grad_of(prod(x), x), (std::vector<double>{0, 24, 0, 0}));
  Tensor two = leaf({0, 5, 0});
  EXPECT_EQ(grad_of(prod(two), two), (std::vector<double>{0, 0, 0}));
  Tensor p = leaf({2, 3, 4});
  EXPECT_EQ(grad_of(prod(p), p), (std::vector<double>{12, 8, 6}));
  EXPECT_EQ(grad_of(cumprod(p, 0), p), (std::vector<double>{1 + 3 + 12, 2 + 8, 6}));
}

TEST(AutogradOpsTest, CumsumSortAndTopk) {
  Tensor x = leaf({3, 1, 2});
  EXPECT_EQ(grad_of(cumsum(x, 0), x, tensor<double>({1, 2, 3})), (std::vector<double>{6, 5, 3}));
  // sorted = [1, 2, 3] taken from positions [1, 2, 0].
  EXPECT_EQ(grad_of(std::get<0>(sort(x)), x, tensor<double>({10, 20, 30})),
            (std::vector<double>{30, 10, 20}));
  EXPECT_EQ(grad_of(std::get<0>(topk(x, 2)), x, tensor<double>({1, 2})),
            (std::vector<double>{1, 0, 2}));
}

TEST(AutogradOpsTest, NormAtZeroAndInfNormTies) {
  // As torch: the gradient of a zero norm is 0, not NaN.
  Tensor z = leaf({0, 0, 0});
  EXPECT_EQ(grad_of(norm(z), z), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(grad_of(norm(z, 3.0), z), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(grad_of(norm(z, 1.0), z), (std::vector<double>{0, 0, 0}));
  Tensor x = leaf({-3, 3, 1});
  EXPECT_EQ(grad_of(norm(x, INFINITY), x), (std::vector<double>{-0.5, 0.5, 0}));
  Tensor y = leaf({3, 4});
  const auto gy = grad_of(norm(y), y);
  EXPECT_NEAR(gy[0], 0.6, 1e-15);
  EXPECT_NEAR(gy[1], 0.8, 1e-15);
}

TEST(AutogradOpsTest, DuplicateIndicesAccumulate) {
  Tensor x = leaf({1, 2, 3});
  const Tensor idx = tensor<int64_t>({0, 0, 2, 0});
  EXPECT_EQ(grad_of(gather(x, 0, idx), x), (std::vector<double>{3, 0, 1}));
  EXPECT_EQ(grad_of(index_select(x, 0, idx), x), (std::vector<double>{3, 0, 1}));
  EXPECT_EQ(grad_of(index(x, {idx}), x), (std::vector<double>{3, 0, 1}));
  // scatter_add: every source gets the gradient of the slot it was added to.
  Tensor src = leaf({1, 1, 1, 1});
  EXPECT_EQ(grad_of(scatter_add(x, 0, idx, src), src, tensor<double>({5, 6, 7})),
            (std::vector<double>{5, 5, 7, 5}));
  // index_put with accumulate: x gets g; values get g at their rows.
  Tensor vals = leaf({1, 1, 1, 1});
  EXPECT_EQ(grad_of(index_put(x, {idx}, vals, true), vals, tensor<double>({5, 6, 7})),
            (std::vector<double>{5, 5, 7, 5}));
  // Without accumulate the overwritten rows of x get no gradient.
  EXPECT_EQ(grad_of(index_put(x, {idx}, vals), x, tensor<double>({5, 6, 7})),
            (std::vector<double>{0, 6, 0}));
}

TEST(AutogradOpsTest, ScatterReduceTiesAndMasks) {
  // amax over {self 5, src 5, src 2} at slot 0: self and the first source share the gradient.
  Tensor self = leaf({5, 1});
  Tensor src = leaf({5, 2, 4});
  const Tensor idx = tensor<int64_t>({0, 0, 1});
  Tensor out = scatter_reduce(self, 0, idx, src, "amax");
  EXPECT_EQ(v(out), (std::vector<double>{5, 4}));
  auto g = autograd::grad({out}, {self, src}, {tensor<double>({2, 3})});
  EXPECT_EQ(v(g[0]), (std::vector<double>{1, 0}));
  EXPECT_EQ(v(g[1]), (std::vector<double>{1, 0, 3}));
  // mean over {self 5, src 5, src 2}: each of the three gets g / 3.
  Tensor m = scatter_reduce(self, 0, idx, src, "mean");
  g = autograd::grad({m}, {self, src}, {tensor<double>({3, 4})});
  EXPECT_EQ(v(g[0]), (std::vector<double>{1, 2}));
  EXPECT_EQ(v(g[1]), (std::vector<double>{1, 1, 2}));
  // masked_fill: no gradient through the filled positions.
  Tensor x = leaf({1, 2, 3});
  EXPECT_EQ(grad_of(masked_fill(x, tensor<bool>({true, false, true}), 0.0), x),
            (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(grad_of(masked_select(x, tensor<bool>({true, false, true})), x, tensor<double>({4, 5})),
            (std::vector<double>{4, 0, 5}));
}

TEST(AutogradOpsTest, IntegerOutputsCarryNoGradient) {
  Tensor x = leaf({1, 5, 2});
  const Tensor am = argmax(x);
  EXPECT_FALSE(am.requires_grad());
  EXPECT_FALSE(std::get<1>(max(x, 0)).requires_grad());
  EXPECT_FALSE(std::get<1>(sort(x)).requires_grad());
  EXPECT_FALSE(argsort(x).requires_grad());
  EXPECT_FALSE(nonzero(x).requires_grad());
  EXPECT_TRUE(std::get<0>(sort(x)).requires_grad());
  expect_error([&] { am.to(DType::f64).backward(); }, "does not require grad");
  expect_error([&] { autograd::grad({argmax(x, 0).to(DType::f64)}, {x}); }, "autograd::grad");
}

TEST(AutogradOpsTest, InPlaceChangeOfASavedTensorNamesTheOp) {
  Tensor x = leaf({2, 3, 4});
  Tensor h = x * 1;
  Tensor p = prod(h);
  h.add_(1);  // prod saved h
  expect_error([&] { p.backward(); }, "ProdBackward");
  Tensor y = cumprod(x * 1, 0);
  y.mul_(2);  // cumprod saved its output
  expect_error([&] { y.sum().backward(); }, "CumprodBackward");
  Tensor idx = tensor<int64_t>({0, 2});
  Tensor gth = gather(x, 0, idx);
  idx.fill_(1);  // gather saved its index
  expect_error([&] { gth.sum().backward(); }, "GatherBackward");
  // Modifying a tensor that no rule saved is fine (sum saves nothing).
  Tensor k = x * 1;
  Tensor s = sum(k);
  k.add_(1);
  s.backward();
  EXPECT_EQ(v(x.grad()), (std::vector<double>{1, 1, 1}));
}
