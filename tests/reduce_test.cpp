// Reductions, scans and sorting against hand-computed values, plus their errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ember/ember.h"
#include "test_util.h"

using namespace ember;
using ember::test::expect_error;

namespace {

std::vector<float> f(const Tensor& t) { return t.to_vector<float>(); }
std::vector<int64_t> l(const Tensor& t) { return t.to_vector<int64_t>(); }
using VF = std::vector<float>;
using VL = std::vector<int64_t>;

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

Tensor m23() { return tensor<float>({1, 2, 3, 4, 5, 6}, {2, 3}); }

}  // namespace

TEST(ReduceTest, SumOverDimsAndKeepdim) {
  Tensor x = m23();
  EXPECT_EQ(sum(x).dim(), 0);
  EXPECT_FLOAT_EQ(sum(x).item<float>(), 21);
  EXPECT_EQ(f(sum(x, {0})), (VF{5, 7, 9}));
  Tensor k = sum(x, {1}, true);
  EXPECT_EQ(k.shape(), (Shape{2, 1}));
  EXPECT_EQ(f(k), (VF{6, 15}));
  EXPECT_EQ(f(sum(x, {-1, 0})), (VF{21}));
  EXPECT_EQ(f(sum(x.t(), {1})), (VF{5, 7, 9}));  // non-contiguous input
  Tensor a = arange(24, {DType::f32}).reshape({2, 3, 4});
  // sum over dims 0 and 2 of arange: for j, sum_i sum_k (12i + 4j + k) = 2*(4*4j + 6) + 4*12.
  EXPECT_EQ(f(sum(a, {0, 2})), (VF{60, 92, 124}));
  EXPECT_EQ(sum(a, {2, 0}, true).shape(), (Shape{1, 3, 1}));
}

TEST(ReduceTest, SumDtypes) {
  EXPECT_EQ(sum(tensor<int32_t>({1, 2, 3})).dtype(), DType::i64);
  EXPECT_EQ(sum(tensor<uint8_t>({200, 100})).item<int64_t>(), 300);  // no u8 wrap-around
  EXPECT_EQ(sum(tensor<uint8_t>({200, 100})).dtype(), DType::i64);
  Tensor b = tensor<bool>({true, false, true, true});
  EXPECT_EQ(sum(b).dtype(), DType::i64);
  EXPECT_EQ(sum(b).item<int64_t>(), 3);
  EXPECT_EQ(sum(tensor<double>({0.5, 0.25})).dtype(), DType::f64);
  EXPECT_EQ(sum(ones({3}, DType::f16)).dtype(), DType::f16);
  // Accumulated in f64 (an f16 accumulator would stall near 256, where its spacing is 0.25).
  const double tenth = float(Half(0.1f));
  EXPECT_FLOAT_EQ(sum(full({3000}, 0.1, DType::f16)).item<float>(),
                  float(Half(float(tenth * 3000))));
}

TEST(ReduceTest, EmptyReductionsGiveIdentities) {
  Tensor e = zeros({2, 0, 3});
  EXPECT_EQ(f(sum(e, {1})), VF(6, 0.f));
  EXPECT_EQ(sum(e, {1}).shape(), (Shape{2, 3}));
  EXPECT_EQ(f(prod(e, {1})), VF(6, 1.f));
  EXPECT_EQ(sum(e).item<float>(), 0.f);
  EXPECT_FALSE(any(e).item<bool>());
  EXPECT_TRUE(all(e).item<bool>());
  EXPECT_TRUE(std::isnan(mean(e).item<float>()));
  EXPECT_EQ(std::get<0>(max(e, 2)).shape(), (Shape{2, 0}));
  EXPECT_EQ(f(logsumexp(e, {1})), VF(6, -kInf));
  EXPECT_EQ(count_nonzero(e).item<int64_t>(), 0);
}

TEST(ReduceTest, MeanAndProd) {
  EXPECT_EQ(f(mean(tensor<float>({1, 2, 3, 4}, {2, 2}), {0})), (VF{2, 3}));
  EXPECT_FLOAT_EQ(mean(m23()).item<float>(), 3.5f);
  EXPECT_FLOAT_EQ(m23().mean({1}, true).to_vector<float>()[1], 5.f);
  EXPECT_EQ(mean(ones({2}, DType::bf16)).dtype(), DType::bf16);
  EXPECT_FLOAT_EQ(prod(tensor<float>({1, 2, 3, 4})).item<float>(), 24);
  EXPECT_EQ(prod(tensor<int32_t>({-2, 3, 5})).dtype(), DType::i64);
  EXPECT_EQ(prod(tensor<int32_t>({-2, 3, 5})).item<int64_t>(), -30);
  EXPECT_EQ(f(prod(m23(), {1})), (VF{6, 120}));
}

TEST(ReduceTest, MaxMinValuesAndFirstIndexOnTies) {
  Tensor x = tensor<float>({1, 5, 5, 7, 2, 7}, {2, 3});
  auto [v, i] = max(x, 1);
  EXPECT_EQ(f(v), (VF{5, 7}));
  EXPECT_EQ(l(i), (VL{1, 0}));
  EXPECT_EQ(i.dtype(), DType::i64);
  auto [v2, i2] = min(x, 0, true);
  EXPECT_EQ(v2.shape(), (Shape{1, 3}));
  EXPECT_EQ(f(v2), (VF{1, 2, 5}));
  EXPECT_EQ(l(i2), (VL{0, 1, 0}));
  EXPECT_EQ(argmax(tensor<int32_t>({3, 1, 3})).item<int64_t>(), 0);
  EXPECT_EQ(argmin(tensor<int32_t>({2, 1, 1})).item<int64_t>(), 1);
  EXPECT_EQ(argmax(x).item<int64_t>(), 3);  // flat index of the first 7
  EXPECT_EQ(argmin(x).item<int64_t>(), 0);
  EXPECT_EQ(l(argmax(x, 0)), (VL{1, 0, 1}));
  EXPECT_EQ(l(x.argmax(1, true)), (VL{1, 0}));
  EXPECT_FLOAT_EQ(x.max().item<float>(), 7);
  EXPECT_FLOAT_EQ(x.min().item<float>(), 1);
  EXPECT_EQ(max(tensor<int64_t>({-5, -9})).dtype(), DType::i64);
  Tensor a = arange(24, {DType::f32}).reshape({2, 3, 4});
  EXPECT_EQ(f(amax(a, {0, 2})), (VF{15, 19, 23}));
  EXPECT_EQ(amax(a, {0, 2}, true).shape(), (Shape{1, 3, 1}));
  EXPECT_EQ(f(amin(a, {-1})), (VF{0, 4, 8, 12, 16, 20}));
  EXPECT_TRUE(max(tensor<bool>({false, true})).item<bool>());
}

TEST(ReduceTest, NaNPropagatesAndArgmaxPointsAtIt) {
  Tensor x = tensor<float>({1, kNaN, 3, kNaN});
  EXPECT_TRUE(std::isnan(max(x).item<float>()));
  EXPECT_TRUE(std::isnan(min(x).item<float>()));
  EXPECT_TRUE(std::isnan(amax(x, {0}).item<float>()));
  EXPECT_EQ(argmax(x).item<int64_t>(), 1);
  EXPECT_EQ(argmin(x, 0).item<int64_t>(), 1);
  auto [v, i] = max(tensor<float>({1, 2, kNaN, 0, 3, 4}, {2, 3}), 1);
  EXPECT_TRUE(std::isnan(f(v)[0]));
  EXPECT_EQ(f(v)[1], 4.f);
  EXPECT_EQ(l(i), (VL{2, 2}));
  EXPECT_TRUE(std::isnan(sum(x).item<float>()));
}

TEST(ReduceTest, AnyAll) {
  EXPECT_TRUE(any(tensor<float>({0, 0, 1})).item<bool>());
  EXPECT_FALSE(all(tensor<int32_t>({1, 1, 0})).item<bool>());
  EXPECT_EQ(any(tensor<int32_t>({1, 1, 0})).dtype(), DType::b8);
  Tensor b = tensor<bool>({true, false, true, true}, {2, 2});
  EXPECT_EQ(all(b, {1}).to_vector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ(any(b, {0}, true).shape(), (Shape{1, 2}));
}

TEST(ReduceTest, VarStdWithCorrection) {
  Tensor x = tensor<float>({1, 2, 3, 4});
  EXPECT_NEAR(var(x).item<float>(), 5.0 / 3.0, 1e-6);
  EXPECT_NEAR(var(x, {}, 0).item<float>(), 1.25, 1e-6);
  EXPECT_NEAR(ember::std(x).item<float>(), std::sqrt(5.0 / 3.0), 1e-6);
  EXPECT_NEAR(ember::std(x, {0}, 0).item<float>(), std::sqrt(1.25), 1e-6);
  auto [v, m] = var_mean(x);
  EXPECT_NEAR(v.item<float>(), 5.0 / 3.0, 1e-6);
  EXPECT_FLOAT_EQ(m.item<float>(), 2.5f);
  Tensor y = tensor<double>({1, 2, 3, 4, 6, 8}, {2, 3});
  auto [v2, m2] = var_mean(y, {1}, 1, true);
  EXPECT_EQ(v2.shape(), (Shape{2, 1}));
  EXPECT_EQ(v2.to_vector<double>(), (std::vector<double>{1, 4}));
  EXPECT_EQ(m2.to_vector<double>(), (std::vector<double>{2, 6}));
  EXPECT_TRUE(std::isnan(var(tensor<float>({3})).item<float>()));  // 0 / 0
  // Large offset: the two-pass formula keeps the small variance.
  EXPECT_NEAR(var(tensor<float>({1e6f + 1, 1e6f + 2, 1e6f + 3})).item<float>(), 1.0, 1e-6);
  EXPECT_EQ(var(ones({4}, DType::f16)).dtype(), DType::f16);
}

TEST(ReduceTest, LogsumexpIsStable) {
  EXPECT_NEAR(logsumexp(tensor<float>({1, 2, 3}), {0}).item<float>(), 3.40760596, 1e-6);
  EXPECT_NEAR(logsumexp(tensor<float>({1000, 1000}), {0}).item<float>(), 1000.6931472, 1e-3);
  EXPECT_EQ(logsumexp(tensor<float>({-kInf, -kInf}), {0}).item<float>(), -kInf);
  EXPECT_EQ(logsumexp(tensor<float>({kInf, 1}), {0}).item<float>(), kInf);
  Tensor i = logsumexp(tensor<int64_t>({0, 0}), {0});
  EXPECT_EQ(i.dtype(), DType::f32);
  EXPECT_NEAR(i.item<float>(), std::log(2.0), 1e-6);
  Tensor k = logsumexp(zeros({2, 3}), {1}, true);
  EXPECT_EQ(k.shape(), (Shape{2, 1}));
  EXPECT_NEAR(f(k)[0], std::log(3.0), 1e-6);
}

TEST(ReduceTest, NormVariants) {
  Tensor x = tensor<float>({3, -4});
  EXPECT_FLOAT_EQ(norm(x).item<float>(), 5);
  EXPECT_FLOAT_EQ(norm(x, 1.0).item<float>(), 7);
  EXPECT_FLOAT_EQ(norm(x, INFINITY).item<float>(), 4);
  EXPECT_FLOAT_EQ(norm(x, -INFINITY).item<float>(), 3);
  EXPECT_NEAR(norm(x, 3.0).item<float>(), std::cbrt(91.0), 1e-5);
  EXPECT_FLOAT_EQ(norm(x, 0.0).item<float>(), 2);
  EXPECT_FLOAT_EQ(norm(x, "fro").item<float>(), 5);
  Tensor m = tensor<float>({3, 4, 0, -2}, {2, 2});
  EXPECT_EQ(f(norm(m, 2.0, {1})), (VF{5, 2}));
  EXPECT_EQ(norm(m, 1.0, {0}, true).shape(), (Shape{1, 2}));
  EXPECT_EQ(f(norm(m, 1.0, {0}, true)), (VF{3, 6}));
}

TEST(ReduceTest, CountNonzero) {
  Tensor x = tensor<int32_t>({0, 1, 2, 0, 0, 3}, {2, 3});
  EXPECT_EQ(count_nonzero(x).item<int64_t>(), 3);
  EXPECT_EQ(count_nonzero(x).dtype(), DType::i64);
  EXPECT_EQ(l(count_nonzero(x, {0})), (VL{0, 1, 2}));
  EXPECT_EQ(count_nonzero(tensor<bool>({true, false, true})).item<int64_t>(), 2);
}

TEST(ReduceTest, ZeroDimTensors) {
  Tensor s = scalar_tensor(4.0);
  EXPECT_EQ(sum(s, {0}).item<float>(), 4.f);
  EXPECT_EQ(sum(s, {-1}, true).dim(), 0);
  auto [v, i] = max(s, 0);
  EXPECT_EQ(v.item<float>(), 4.f);
  EXPECT_EQ(i.item<int64_t>(), 0);
  EXPECT_EQ(argmax(s).item<int64_t>(), 0);
}

TEST(ReduceTest, ErrorsNameTheOp) {
  Tensor x = m23();
  expect_error([&] { sum(x, {2}); }, {"[sum]", "dim 2", "[2, 3]"});
  expect_error([&] { sum(x, {0, -2}); }, {"[sum]", "more than once"});
  expect_error([&] { mean(tensor<int64_t>({1, 2})); }, {"[mean]", "could not infer output dtype"});
  expect_error([&] { var(tensor<int32_t>({1, 2})); }, {"[var]", "floating"});
  expect_error([&] { norm(tensor<int32_t>({1, 2})); }, {"[norm]", "floating"});
  expect_error([&] { norm(x, "nuc"); }, {"[norm]", "nuc"});
  expect_error([&] { norm(zeros({0}), INFINITY); }, {"[norm]", "zero-size"});
  expect_error([&] { max(zeros({0, 3}), 0); }, {"[max]", "zero-size dim 0"});
  expect_error([&] { max(zeros({0})); }, {"[max]", "zero-size"});
  expect_error([&] { min(zeros({2, 0})); }, {"[min]", "zero-size"});
  expect_error([&] { amax(zeros({2, 0}), {1}); }, {"[amax]", "zero-size"});
  expect_error([&] { argmax(zeros({0})); }, {"[argmax]", "empty"});
  expect_error([&] { argmin(zeros({3, 0}), 1); }, {"[argmin]", "zero-size"});
  expect_error([&] { sum(Tensor()); }, {"[sum]", "undefined"});
  expect_error([&] { max(x, 5); }, {"[max]", "dim 5"});
  expect_error([&] { logsumexp(x, {3}); }, {"[logsumexp]", "dim 3"});
}

TEST(ScanTest, CumsumCumprod) {
  EXPECT_EQ(f(cumsum(tensor<float>({1, 2, 3}), 0)), (VF{1, 3, 6}));
  Tensor i = cumsum(tensor<int32_t>({1, 2, 3, 4}, {2, 2}), 1);
  EXPECT_EQ(i.dtype(), DType::i64);
  EXPECT_EQ(l(i), (VL{1, 3, 3, 7}));
  EXPECT_EQ(l(cumsum(tensor<int32_t>({1, 2, 3, 4}, {2, 2}), -2)), (VL{1, 2, 4, 6}));
  EXPECT_EQ(l(cumsum(tensor<bool>({true, false, true}), 0)), (VL{1, 1, 2}));
  EXPECT_EQ(f(cumprod(tensor<float>({1, 2, 3, 4}), 0)), (VF{1, 2, 6, 24}));
  EXPECT_EQ(l(cumprod(tensor<uint8_t>({20, 20}), 0)), (VL{20, 400}));
  EXPECT_EQ(cumsum(scalar_tensor(2.0), 0).dim(), 0);
  EXPECT_EQ(cumsum(zeros({0, 2}), 0).shape(), (Shape{0, 2}));
  expect_error([&] { cumsum(zeros({2}), 1); }, {"[cumsum]", "dim 1"});
}

TEST(ScanTest, CummaxCumminLastIndexOnTies) {
  auto [v, i] = cummax(tensor<float>({1, 3, 2, 3, 0}), 0);
  EXPECT_EQ(f(v), (VF{1, 3, 3, 3, 3}));
  EXPECT_EQ(l(i), (VL{0, 1, 1, 3, 3}));
  auto [v2, i2] = cummin(tensor<int32_t>({3, 1, 2, 1}), 0);
  EXPECT_EQ(v2.dtype(), DType::i32);
  EXPECT_EQ(l(v2), (VL{3, 1, 1, 1}));
  EXPECT_EQ(l(i2), (VL{0, 1, 1, 3}));
  auto [v3, i3] = cummax(tensor<float>({1, kNaN, 2, kNaN}), 0);
  EXPECT_EQ(f(v3)[0], 1.f);
  EXPECT_TRUE(std::isnan(f(v3)[2]));
  EXPECT_EQ(l(i3), (VL{0, 1, 1, 3}));
  auto [v4, i4] = cummax(tensor<float>({1, 5, 4, 2}, {2, 2}), 0);
  EXPECT_EQ(f(v4), (VF{1, 5, 4, 5}));
  EXPECT_EQ(l(i4), (VL{0, 0, 1, 0}));
}

TEST(SortTest, StableWithDuplicates) {
  Tensor x = tensor<int32_t>({2, 1, 2, 1, 0});
  auto [v, i] = sort(x);
  EXPECT_EQ(l(v), (VL{0, 1, 1, 2, 2}));
  EXPECT_EQ(l(i), (VL{4, 1, 3, 0, 2}));
  auto [vd, id] = sort(x, 0, true);
  EXPECT_EQ(l(vd), (VL{2, 2, 1, 1, 0}));
  EXPECT_EQ(l(id), (VL{0, 2, 1, 3, 4}));
  EXPECT_EQ(l(argsort(x)), (VL{4, 1, 3, 0, 2}));
  EXPECT_EQ(v.dtype(), DType::i32);
}

TEST(SortTest, NaNSortsAsLargest) {
  Tensor x = tensor<float>({3, kNaN, 1});
  auto [v, i] = sort(x);
  EXPECT_EQ(f(v)[0], 1.f);
  EXPECT_EQ(f(v)[1], 3.f);
  EXPECT_TRUE(std::isnan(f(v)[2]));
  EXPECT_EQ(l(i), (VL{2, 0, 1}));
  EXPECT_EQ(l(argsort(x, 0, true)), (VL{1, 0, 2}));
}

TEST(SortTest, AlongDimOfViews) {
  Tensor x = tensor<float>({3, 1, 2, 0, 5, 4}, {2, 3});
  auto [v, i] = sort(x, 0);
  EXPECT_EQ(f(v), (VF{0, 1, 2, 3, 5, 4}));
  EXPECT_EQ(l(i), (VL{1, 0, 0, 0, 1, 1}));
  auto [vt, it] = sort(x.t(), 1, true);  // rows of the transpose = columns of x
  EXPECT_EQ(f(vt), (VF{3, 0, 5, 1, 4, 2}));
  EXPECT_EQ(l(it), (VL{0, 1, 1, 0, 1, 0}));
  expect_error([&] { sort(x, 2); }, {"[sort]", "dim 2"});
  expect_error([&] { argsort(x, -3); }, {"[argsort]", "dim -3"});
}

TEST(SortTest, TopkValuesAndIndices) {
  Tensor x = tensor<float>({1, 5, 3, 5, 2});
  auto [v, i] = topk(x, 2);
  EXPECT_EQ(f(v), (VF{5, 5}));
  EXPECT_EQ(l(i), (VL{1, 3}));
  auto [vs, is] = topk(x, 2, 0, false);
  EXPECT_EQ(f(vs), (VF{1, 2}));
  EXPECT_EQ(l(is), (VL{0, 4}));
  auto [vm, im] = topk(tensor<int64_t>({4, 9, 1, 7, 8, 2}, {2, 3}), 1, 1);
  EXPECT_EQ(vm.shape(), (Shape{2, 1}));
  EXPECT_EQ(l(vm), (VL{9, 8}));
  EXPECT_EQ(l(im), (VL{1, 1}));
  EXPECT_EQ(std::get<0>(topk(x, 0)).shape(), (Shape{0}));
  expect_error([&] { topk(x, 6); }, {"[topk]", "k (6)", "size 5"});
  expect_error([&] { topk(x, -1); }, {"[topk]"});
}

TEST(ReduceTest, MatchesNaiveLoopsOnPermutedViews) {
  manual_seed(7);
  // x is [3, 4, 5] viewed through a permutation of a [5, 3, 4] buffer.
  Tensor x = randint(-9, 10, {5, 3, 4}, DType::i32).permute({1, 2, 0});
  ASSERT_FALSE(x.is_contiguous());
  const auto v = x.to_vector<int32_t>();  // row-major over [3, 4, 5]
  auto at = [&](int i, int j, int k) { return v[size_t(i * 20 + j * 5 + k)]; };
  std::vector<int64_t> want_sum(4, 0), want_argmax(3 * 4, 0), want_prod(3 * 5, 1);
  std::vector<int32_t> want_max(3 * 4);
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 5; ++k) want_sum[size_t(j)] += at(i, j, k);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      int best = 0;
      for (int k = 1; k < 5; ++k)
        if (at(i, j, k) > at(i, j, best)) best = k;
      want_argmax[size_t(i * 4 + j)] = best;
      want_max[size_t(i * 4 + j)] = at(i, j, best);
    }
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 5; ++k)
      for (int j = 0; j < 4; ++j) want_prod[size_t(i * 5 + k)] *= at(i, j, k);
  EXPECT_EQ(l(sum(x, {0, 2})), want_sum);
  EXPECT_EQ(l(prod(x, {1})), want_prod);
  auto [mv, mi] = max(x, 2);
  EXPECT_EQ(mv.to_vector<int32_t>(), want_max);
  EXPECT_EQ(l(mi), want_argmax);
  // Stable sort along dim 0 against std::stable_sort.
  auto [sv, si] = sort(x, 0);
  const auto got_v = sv.to_vector<int32_t>();
  const auto got_i = l(si);
  for (int j = 0; j < 4; ++j)
    for (int k = 0; k < 5; ++k) {
      std::vector<int64_t> order = {0, 1, 2};
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return at(int(a), j, k) < at(int(b), j, k); });
      for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(got_i[size_t(i * 20 + j * 5 + k)], order[size_t(i)]);
        EXPECT_EQ(got_v[size_t(i * 20 + j * 5 + k)], at(int(order[size_t(i)]), j, k));
      }
    }
  // cumsum along dim 1.
  const auto cs = l(cumsum(x, 1));
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 5; ++k) {
      int64_t run = 0;
      for (int j = 0; j < 4; ++j) {
        run += at(i, j, k);
        EXPECT_EQ(cs[size_t(i * 20 + j * 5 + k)], run);
      }
    }
}
