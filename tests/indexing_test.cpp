// Indexing ops: hand-checked values, negative indices, masks, duplicates, empty inputs, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "ember/ember.h"

using namespace ember;

namespace {

Tensor L(std::initializer_list<int64_t> v, Shape s = {}) { return tensor<int64_t>(v, s); }
Tensor F(std::initializer_list<float> v, Shape s = {}) { return tensor<float>(v, s); }
Tensor B(std::initializer_list<bool> v, Shape s = {}) { return tensor<bool>(v, s); }
std::vector<float> fv(const Tensor& t) { return t.to_vector<float>(); }
std::vector<int64_t> iv(const Tensor& t) { return t.to_vector<int64_t>(); }
using FV = std::vector<float>;
using IV = std::vector<int64_t>;

// Expects f to throw ember::Error whose message contains every part.
void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected ember::Error containing " << parts[0];
  } catch (const Error& e) {
    const std::string m = e.what();
    for (const auto& p : parts) EXPECT_NE(m.find(p), std::string::npos) << "message: " << m;
  }
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();

}  // namespace

TEST(IndexingTest, GatherPicksAlongDim) {
  Tensor x = F({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(fv(gather(x, 0, L({1, 0, 1}, {1, 3}))), (FV{4, 2, 6}));
  Tensor g = gather(x, 1, L({2, 0, 1, 1}, {2, 2}));
  EXPECT_EQ(g.shape(), (Shape{2, 2}));
  EXPECT_EQ(fv(g), (FV{3, 1, 5, 5}));
  EXPECT_EQ(fv(gather(x, -1, L({2, 0, 1, 1}, {2, 2}))), (FV{3, 1, 5, 5}));
  EXPECT_EQ(fv(gather(x, 1, L({0}, {1, 1}))), (FV{1}));  // index smaller than x in dim 0
  EXPECT_EQ(fv(gather(x, 1, tensor<int32_t>({2, 2}, {1, 2}))), (FV{3, 3}));       // i32 accepted
  EXPECT_EQ(gather(x.t(), 0, L({1, 2}, {1, 2})).to_vector<float>(), (FV{2, 6}));  // strided x
  Tensor s = gather(scalar_tensor(7.0), 0, scalar_tensor(0, DType::i64));
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<double>(), 7.0);
  EXPECT_EQ(gather(x, 1, zeros({2, 0}, DType::i64)).shape(), (Shape{2, 0}));
}

TEST(IndexingTest, GatherRejectsBadIndices) {
  Tensor x = F({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_error(
      [&] {
        gather(x, 1, L({0, 3}, {1, 2}));
      },
      {"[gather]", "index 3", "dim 1", "size 3"});
  expect_error([&] { gather(x, 1, L({-1}, {1, 1})); }, {"[gather]", "index -1", "dim 1"});
  expect_error([&] { gather(x, 0, F({0}, {1, 1})); }, {"[gather]", "integer"});
  expect_error([&] { gather(x, 0, L({0})); }, {"[gather]", "same number of dims"});
  expect_error([&] { gather(x, 1, zeros({3, 1}, DType::i64)); }, {"[gather]", "larger"});
  expect_error([&] { gather(x, 2, L({0}, {1, 1})); }, {"gather"});
  expect_error([&] { gather(Tensor(), 0, L({0})); }, {"[gather]", "undefined"});
  expect_error(
      [&] {
        gather(x, 1, tensor<uint64_t>({~uint64_t(0)}, {1, 1}));
      },
      {"[gather]", "18446744073709551615"});
  const Device other = x.device() == Device::cpu() ? Device::ref() : Device::cpu();
  expect_error([&] { gather(x, 0, L({0}, {1, 1}).to(other)); }, {"[gather]", "devices"});
  expect_error([&] { index_put(x, {L({0})}, F({1}).to(other)); }, {"[index_put]", "devices"});
}

TEST(IndexingTest, ScatterWritesAndLastDuplicateWins) {
  Tensor x = zeros({3, 4});
  Tensor s = scatter(x, 0, L({0, 1, 2, 0}, {1, 4}), F({1, 2, 3, 4}, {1, 4}));
  EXPECT_EQ(fv(s), (FV{1, 0, 0, 4, 0, 2, 0, 0, 0, 0, 3, 0}));
  EXPECT_EQ(fv(x), FV(12, 0.f));  // the input is not modified
  Tensor v = scatter(x, 1, L({1, 3, 0}, {3, 1}), Scalar(5.0));
  EXPECT_EQ(fv(v), (FV{0, 5, 0, 0, 0, 0, 0, 5, 5, 0, 0, 0}));
  EXPECT_EQ(fv(scatter(zeros({3}), 0, L({1, 1, 1}), F({7, 8, 9}))), (FV{0, 9, 0}));
  // src larger than index: only src's leading [1, 2] block is used.
  Tensor big = arange(1, 11).to(DType::f32).reshape({2, 5});
  EXPECT_EQ(fv(scatter(zeros({3, 4}), 0, L({2, 1}, {1, 2}), big)),
            (FV{0, 0, 0, 0, 0, 2, 0, 0, 1, 0, 0, 0}));
  EXPECT_EQ(scatter(x, 0, zeros({0, 4}, DType::i64), zeros({0, 4})).to_vector<float>(), fv(x));
  Tensor z = scatter(scalar_tensor(1.0), 0, scalar_tensor(0, DType::i64), scalar_tensor(4.0));
  EXPECT_EQ(z.dim(), 0);
  EXPECT_EQ(z.item<double>(), 4.0);
}

TEST(IndexingTest, ScatterAddAccumulatesDuplicates) {
  EXPECT_EQ(fv(scatter_add(zeros({3}), 0, L({0, 2, 0, 0}), F({1, 2, 3, 4}))), (FV{8, 0, 2}));
  Tensor xi = tensor<int32_t>({1, 1}, {2, 1});
  Tensor si = tensor<int32_t>({5, 6, 7}, {1, 3});
  Tensor r = scatter_add(xi, 0, L({1}, {1, 1}), si);
  EXPECT_EQ(r.dtype(), DType::i32);
  EXPECT_EQ(r.to_vector<int32_t>(), (std::vector<int32_t>{1, 6}));
}

TEST(IndexingTest, ScatterReduceAllModesWithAndWithoutSelf) {
  Tensor x = F({10, 20, 30, 40});
  Tensor idx = L({0, 0, 2, 2, 1});
  Tensor src = F({1, 2, 3, 4, 5});
  auto run = [&](const char* r, bool self) { return fv(scatter_reduce(x, 0, idx, src, r, self)); };
  EXPECT_EQ(run("sum", true), (FV{13, 25, 37, 40}));
  EXPECT_EQ(run("sum", false), (FV{3, 5, 7, 40}));
  EXPECT_EQ(run("prod", true), (FV{20, 100, 360, 40}));
  EXPECT_EQ(run("prod", false), (FV{2, 5, 12, 40}));
  const FV m = run("mean", true);
  EXPECT_FLOAT_EQ(m[0], 13.f / 3);
  EXPECT_FLOAT_EQ(m[1], 12.5f);
  EXPECT_FLOAT_EQ(m[2], 37.f / 3);
  EXPECT_FLOAT_EQ(m[3], 40.f);
  EXPECT_EQ(run("mean", false), (FV{1.5f, 5, 3.5f, 40}));
  EXPECT_EQ(run("amax", true), (FV{10, 20, 30, 40}));
  EXPECT_EQ(run("amax", false), (FV{2, 5, 4, 40}));
  EXPECT_EQ(run("amin", true), (FV{1, 5, 3, 40}));
  EXPECT_EQ(run("amin", false), (FV{1, 5, 3, 40}));
  // Integer mean rounds down (floor), as torch: (1 - 1 - 2) / 3 -> -1, (-1 - 2) / 2 -> -2.
  EXPECT_EQ(iv(scatter_reduce(L({1}), 0, L({0, 0}), L({-1, -2}), "mean")), (IV{-1}));
  EXPECT_EQ(iv(scatter_reduce(L({1}), 0, L({0, 0}), L({-1, -2}), "mean", false)), (IV{-2}));
  EXPECT_TRUE(std::isnan(fv(scatter_reduce(F({0}), 0, L({0, 0}), F({kNaN, 1}), "amax"))[0]));
  EXPECT_TRUE(std::isnan(fv(scatter_reduce(F({kNaN}), 0, L({0}), F({1}), "amin"))[0]));
  expect_error([&] { scatter_reduce(x, 0, idx, src, "max"); }, {"[scatter_reduce]", "\"max\""});
  expect_error([&] { scatter_reduce(B({true}), 0, L({0}), B({true}), "mean"); },
               {"[scatter_reduce]", "bool"});
}

TEST(IndexingTest, ScatterFamilyRejectsBadIndices) {
  Tensor x = zeros({2, 3});
  Tensor src = ones({2, 3});
  expect_error(
      [&] {
        scatter(x, 1, L({3}, {1, 1}), src);
      },
      {"[scatter]", "index 3", "dim 1", "size 3"});
  expect_error([&] { scatter(x, 0, L({-1}, {1, 1}), src); }, {"[scatter]", "index -1", "dim 0"});
  expect_error([&] { scatter(x, 0, L({2}, {1, 1}), Scalar(1)); }, {"[scatter]", "index 2"});
  expect_error([&] { scatter_add(x, 0, L({5}, {1, 1}), src); }, {"[scatter_add]", "index 5"});
  expect_error(
      [&] {
        scatter_reduce(x, 1, L({-4}, {1, 1}), src, "sum");
      },
      {"[scatter_reduce]", "index -4"});
  expect_error(
      [&] {
        scatter(x, 0, L({0}, {1, 1}), ones({2, 3}, DType::f64));
      },
      {"[scatter]", "dtype"});
  expect_error(
      [&] {
        scatter(x, 0, zeros({1, 4}, DType::i64), ones({1, 4}));
      },
      {"[scatter]", "larger"});
  expect_error(
      [&] {
        scatter(x, 0, zeros({2, 2}, DType::i64), ones({1, 3}));
      },
      {"[scatter]", "larger than src"});
}

TEST(IndexingTest, IndexSelectRowsAndColumns) {
  Tensor x = F({1, 2, 3, 4, 5, 6}, {3, 2});
  EXPECT_EQ(fv(index_select(x, 0, L({2, 0, 2}))), (FV{5, 6, 1, 2, 5, 6}));
  Tensor c = index_select(x, 1, L({1}));
  EXPECT_EQ(c.shape(), (Shape{3, 1}));
  EXPECT_EQ(fv(c), (FV{2, 4, 6}));
  EXPECT_EQ(index_select(x, 0, scalar_tensor(1, DType::i64)).shape(), (Shape{1, 2}));
  EXPECT_EQ(index_select(x, 0, zeros({0}, DType::i64)).shape(), (Shape{0, 2}));
  EXPECT_EQ(fv(index_select(x.t(), 1, tensor<int32_t>({2}))), (FV{5, 6}));
  EXPECT_EQ(index_select(scalar_tensor(3.0), 0, L({0})).item<double>(), 3.0);
  EXPECT_EQ(index_select(zeros({0, 2}), 1, L({1, 1})).shape(), (Shape{0, 2}));
  expect_error([&] { index_select(x, 0, L({-1})); },
               {"[index_select]", "index -1", "dim 0", "size 3"});
  expect_error(
      [&] {
        index_select(x, 1, L({0, 2}));
      },
      {"[index_select]", "index 2", "dim 1", "size 2"});
  expect_error([&] { index_select(x, 0, L({0, 1}, {1, 2})); }, {"[index_select]", "1-d"});
  expect_error([&] { index_select(x, 0, F({0})); }, {"[index_select]", "integer"});
}

TEST(IndexingTest, IndexAddAccumulatesWithAlpha) {
  Tensor x = ones({3, 2});
  Tensor src = F({1, 2, 3, 4, 5, 6}, {3, 2});
  EXPECT_EQ(fv(index_add(x, 0, L({0, 2, 0}), src, 2)), (FV{13, 17, 1, 1, 7, 9}));
  EXPECT_EQ(fv(index_add(x, 1, L({1, 1}), src)), (FV{1, 4, 1, 8, 1, 12}));
  EXPECT_EQ(fv(x), FV(6, 1.f));
  Tensor xi = zeros({2}, DType::i64);
  EXPECT_EQ(iv(index_add(xi, 0, L({1, 1, 0}), L({1, 2, 3}), 3)), (IV{9, 9}));
  EXPECT_EQ(fv(index_add(x, 0, zeros({0}, DType::i64), zeros({0, 2}))), fv(x));
  expect_error([&] { index_add(x, 0, L({3, 0, 0}), src); }, {"[index_add]", "index 3", "dim 0"});
  expect_error([&] { index_add(x, 0, L({0, -1, 0}), src); }, {"[index_add]", "index -1"});
  expect_error([&] { index_add(x, 0, L({0, 1}), src); }, {"[index_add]", "shape"});
  expect_error(
      [&] {
        index_add(x, 0, L({0, 1, 2}), src.to(DType::f64));
      },
      {"[index_add]", "dtype"});
  expect_error([&] { index_add(xi, 0, L({0}), L({1}), 0.5); }, {"[index_add]", "alpha"});
}

TEST(IndexingTest, AdvancedIndexReadFollowsTorchPlacement) {
  Tensor x = arange(12).reshape({3, 4});
  EXPECT_EQ(iv(index(x, {L({2, 0})})), (IV{8, 9, 10, 11, 0, 1, 2, 3}));
  EXPECT_EQ(iv(index(x, {L({-1})})), (IV{8, 9, 10, 11}));  // negative indices wrap
  EXPECT_EQ(iv(index(x, {L({0, 2}), L({1, 3})})), (IV{1, 11}));
  Tensor bc = index(x, {L({0, 2}, {2, 1}), L({1, 3})});  // broadcast to [2, 2]
  EXPECT_EQ(bc.shape(), (Shape{2, 2}));
  EXPECT_EQ(iv(bc), (IV{1, 3, 9, 11}));
  Tensor col = index(x, {Tensor(), L({3, 0})});
  EXPECT_EQ(col.shape(), (Shape{3, 2}));
  EXPECT_EQ(iv(col), (IV{3, 0, 7, 4, 11, 8}));
  Tensor x3 = arange(24).reshape({2, 3, 4});
  // Non-adjacent indexed dims: the broadcast dims go first.
  Tensor na = index(x3, {L({1, 0}), Tensor(), L({3, 2})});
  EXPECT_EQ(na.shape(), (Shape{2, 3}));
  EXPECT_EQ(iv(na), (IV{15, 19, 23, 2, 6, 10}));
  // Adjacent indexed dims after a full dim: the broadcast dims stay in place.
  Tensor ad = index(x3, {Tensor(), L({2, 0}), L({1, 1})});
  EXPECT_EQ(ad.shape(), (Shape{2, 2}));
  EXPECT_EQ(iv(ad), (IV{9, 1, 21, 13}));
  EXPECT_EQ(iv(index(x, {gt(x, 5)})), (IV{6, 7, 8, 9, 10, 11}));
  Tensor rows = index(x, {B({true, false, true})});
  EXPECT_EQ(rows.shape(), (Shape{2, 4}));
  EXPECT_EQ(iv(rows), (IV{0, 1, 2, 3, 8, 9, 10, 11}));
  EXPECT_EQ(index(x, {scalar_tensor(true, DType::b8)}).shape(), (Shape{1, 3, 4}));
  EXPECT_EQ(index(x, {scalar_tensor(false, DType::b8)}).shape(), (Shape{0, 3, 4}));
  EXPECT_EQ(index(x, {zeros({0}, DType::i64)}).shape(), (Shape{0, 4}));
  EXPECT_EQ(index(zeros({0, 4}), {Tensor(), L({1})}).shape(), (Shape{0, 1}));
}

TEST(IndexingTest, AdvancedIndexRejectsBadIndices) {
  Tensor x = arange(12).reshape({3, 4});
  expect_error([&] { index(x, {L({3})}); }, {"[index]", "index 3", "dim 0", "size 3"});
  expect_error([&] { index(x, {L({-4})}); }, {"[index]", "index -4"});
  expect_error([&] { index(x, {Tensor(), L({4})}); }, {"[index]", "index 4", "dim 1", "size 4"});
  expect_error([&] { index(x, {L({0}), L({0}), L({0})}); }, {"[index]", "too many"});
  expect_error([&] { index(x, {B({true, false})}); }, {"[index]", "mask"});
  expect_error([&] { index(x, {L({0, 1}), L({0, 1, 2})}); }, {"index"});
  expect_error([&] { index(x, {F({0})}); }, {"[index]", "integer"});
  expect_error([&] { index(x, {}); }, {"[index]"});
}

TEST(IndexingTest, IndexPutAssignsAndAccumulates) {
  Tensor x = zeros({3, 4});
  Tensor p = index_put(x, {L({0, 2}), L({1, 3})}, F({5, 6}));
  EXPECT_EQ(fv(p), (FV{0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6}));
  EXPECT_EQ(fv(x), FV(12, 0.f));
  EXPECT_EQ(fv(index_put(x, {L({1})}, scalar_tensor(9.f))),
            (FV{0, 0, 0, 0, 9, 9, 9, 9, 0, 0, 0, 0}));
  EXPECT_EQ(fv(index_put(x, {L({-1})}, F({1, 2, 3, 4}))), (FV{0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4}));
  Tensor a = arange(6).to(DType::f32).reshape({2, 3});
  EXPECT_EQ(fv(index_put(a, {gt(a, 2)}, scalar_tensor(0.f))), (FV{0, 1, 2, 0, 0, 0}));
  EXPECT_EQ(fv(index_put(a, {Tensor(), B({true, false, true})}, F({7, 8}, {2, 1}))),
            (FV{7, 1, 7, 8, 4, 8}));
  // Duplicates: accumulate adds them all; plain assignment keeps the last.
  EXPECT_EQ(fv(index_put(zeros({4}), {L({1, 1, 3, 1})}, F({1, 2, 3, 4}), true)), (FV{0, 7, 0, 3}));
  EXPECT_EQ(fv(index_put(zeros({4}), {L({1, 1, 3, 1})}, F({1, 2, 3, 4}))), (FV{0, 4, 0, 3}));
  EXPECT_EQ(fv(index_put(ones({2, 2}), {gt(ones({2, 2}), 0)}, F({1, 2, 3, 4}), true)),
            (FV{2, 3, 4, 5}));
  // Non-adjacent indexed dims: values are laid out with the broadcast dims first.
  Tensor x3 = zeros({2, 3, 4}, DType::i64);
  Tensor q = index_put(x3, {L({1, 0}), Tensor(), L({3, 2})}, arange(6).reshape({2, 3}));
  EXPECT_EQ(iv(index(q, {L({1}), Tensor(), L({3})})), (IV{0, 1, 2}));
  EXPECT_EQ(iv(index(q, {L({0}), Tensor(), L({2})})), (IV{3, 4, 5}));
  const IV all = iv(q);
  EXPECT_EQ(std::accumulate(all.begin(), all.end(), int64_t(0)), 15);
  EXPECT_EQ(fv(index_put(x, {zeros({0}, DType::i64)}, scalar_tensor(1.f))), fv(x));
}

TEST(IndexingTest, IndexPutRejectsBadInput) {
  Tensor x = zeros({3, 4});
  expect_error([&] { index_put(x, {L({3})}, scalar_tensor(1.f)); },
               {"[index_put]", "index 3", "dim 0", "size 3"});
  expect_error(
      [&] {
        index_put(x, {L({0}), L({-5})}, scalar_tensor(1.f), true);
      },
      {"[index_put]", "index -5", "dim 1"});
  expect_error([&] { index_put(x, {L({0})}, scalar_tensor(1.0, DType::f64)); },
               {"[index_put]", "dtype"});
  expect_error([&] { index_put(x, {L({0, 1})}, F({1, 2, 3})); }, {"index_put"});
  expect_error([&] { index_put(x, {B({true})}, scalar_tensor(1.f)); }, {"[index_put]", "mask"});
}

TEST(IndexingTest, MaskedFillScalarAndTensorValue) {
  Tensor x = F({1, 2, 3, 4}, {2, 2});
  Tensor m = B({true, false, false, true}, {2, 2});
  EXPECT_EQ(fv(masked_fill(x, m, 9)), (FV{9, 2, 3, 9}));
  EXPECT_EQ(fv(masked_fill(x, B({true, false}), -1.5)), (FV{-1.5f, 2, -1.5f, 4}));
  EXPECT_EQ(fv(masked_fill(x, m, scalar_tensor(7.0, DType::f64))), (FV{7, 2, 3, 7}));
  Tensor xi = masked_fill(L({1, 2}), B({false, true}), 2.7);
  EXPECT_EQ(xi.dtype(), DType::i64);
  EXPECT_EQ(iv(xi), (IV{1, 2}));
  EXPECT_EQ(masked_fill(zeros({0, 2}), B({true, true}), 1).shape(), (Shape{0, 2}));
  expect_error([&] { masked_fill(x, L({1, 0}), 1); }, {"[masked_fill]", "bool"});
  expect_error([&] { masked_fill(x, m, F({1})); }, {"[masked_fill]", "0-d"});
  EXPECT_EQ(masked_fill(x, B({true, false}, {1, 1, 2}), 1).shape(), (Shape{1, 2, 2}));
  expect_error([&] { masked_fill(x, B({true, false, true}), 1); }, {"[masked_fill]"});
}

TEST(IndexingTest, MaskedSelectBroadcasts) {
  Tensor x = F({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(fv(masked_select(x, B({true, false, false, true}, {2, 2}))), (FV{1, 4}));
  EXPECT_EQ(fv(masked_select(x, B({false, true}))), (FV{2, 4}));
  EXPECT_EQ(fv(masked_select(F({5, 6}), B({true, true, true, true}, {2, 2}))), (FV{5, 6, 5, 6}));
  EXPECT_EQ(masked_select(x, zeros({2, 2}, DType::b8)).shape(), (Shape{0}));
  EXPECT_EQ(fv(masked_select(scalar_tensor(3.f), scalar_tensor(true, DType::b8))), (FV{3}));
  expect_error([&] { masked_select(x, ones({2, 2})); }, {"[masked_select]", "bool"});
  expect_error([&] { masked_select(x, B({true, false, true})); }, {"masked_select"});
}

TEST(IndexingTest, NonzeroCoordinates) {
  Tensor n = nonzero(F({0, 1, 2, 0}, {2, 2}));
  EXPECT_EQ(n.dtype(), DType::i64);
  EXPECT_EQ(n.shape(), (Shape{2, 2}));
  EXPECT_EQ(iv(n), (IV{0, 1, 1, 0}));
  EXPECT_EQ(iv(nonzero(F({0, kNaN}))), (IV{1}));  // NaN is non-zero
  EXPECT_EQ(iv(nonzero(F({0, 1, 0, 0}, {2, 2}).t())), (IV{1, 0}));
  EXPECT_EQ(nonzero(scalar_tensor(3.0)).shape(), (Shape{1, 0}));
  EXPECT_EQ(nonzero(scalar_tensor(0.0)).shape(), (Shape{0, 0}));
  EXPECT_EQ(nonzero(zeros({0, 3})).shape(), (Shape{0, 2}));
  EXPECT_EQ(iv(nonzero(B({false, true, true}))), (IV{1, 2}));
  expect_error([&] { nonzero(Tensor()); }, {"[nonzero]"});
}

TEST(IndexingTest, OneHotClasses) {
  Tensor o = one_hot(L({0, 2, 1}));
  EXPECT_EQ(o.dtype(), DType::i64);
  EXPECT_EQ(o.shape(), (Shape{3, 3}));
  EXPECT_EQ(iv(o), (IV{1, 0, 0, 0, 0, 1, 0, 1, 0}));
  EXPECT_EQ(one_hot(L({0, 2, 1}), 4).shape(), (Shape{3, 4}));
  EXPECT_EQ(iv(one_hot(scalar_tensor(1, DType::i64), 3)), (IV{0, 1, 0}));
  EXPECT_EQ(one_hot(zeros({0}, DType::i64), 3).shape(), (Shape{0, 3}));
  EXPECT_EQ(iv(one_hot(tensor<int32_t>({1}), 2)), (IV{0, 1}));
  expect_error([&] { one_hot(L({0, -1})); }, {"[one_hot]", "class value -1 is negative"});
  expect_error(
      [&] {
        one_hot(L({0, 3}), 3);
      },
      {"[one_hot]", "class value 3 is out of range for num_classes=3"});
  expect_error([&] { one_hot(F({0})); }, {"[one_hot]", "integer"});
  expect_error([&] { one_hot(zeros({0}, DType::i64)); }, {"[one_hot]", "empty"});
  expect_error([&] { one_hot(L({0}), -2); }, {"[one_hot]", "num_classes"});
}

TEST(IndexingTest, TakeAlongDimBroadcastsOrFlattens) {
  Tensor x = F({10, 30, 20, 60, 40, 50}, {2, 3});
  EXPECT_EQ(fv(take_along_dim(x, L({0, 2, 1, 1, 2, 0}, {2, 3}), 1)), (FV{10, 20, 30, 40, 50, 60}));
  Tensor b = take_along_dim(x, L({0}, {1, 1}), 1);
  EXPECT_EQ(b.shape(), (Shape{2, 1}));
  EXPECT_EQ(fv(b), (FV{10, 60}));
  EXPECT_EQ(fv(take_along_dim(x, L({1}, {1, 1}), 0)), (FV{60, 40, 50}));
  EXPECT_EQ(fv(take_along_dim(x, L({5, 0}), std::nullopt)), (FV{50, 10}));
  expect_error([&] { take_along_dim(x, L({0, -1}, {1, 2}), 1); }, {"[take_along_dim]", "index -1"});
  expect_error([&] { take_along_dim(x, L({6}), std::nullopt); },
               {"[take_along_dim]", "index 6", "size 6"});
  expect_error([&] { take_along_dim(x, L({0}), 1); }, {"[take_along_dim]", "same number of dims"});
  expect_error([&] { take_along_dim(x, L({0, 0, 0}, {3, 1}), 1); }, {"take_along_dim"});
}

TEST(IndexingTest, SliceAssignWritesInPlace) {
  Tensor x = zeros({2, 5});
  Tensor& r = slice_assign_(x, 1, 0, 5, 2, scalar_tensor(1.0));
  EXPECT_EQ(&r, &x);
  EXPECT_EQ(fv(x), (FV{1, 0, 1, 0, 1, 1, 0, 1, 0, 1}));
  slice_assign_(x, -1, -2, 5, 1, L({7, 8}));
  EXPECT_EQ(fv(x), (FV{1, 0, 1, 7, 8, 1, 0, 1, 7, 8}));
  slice_assign_(x, 0, 1, 100, 1, F({3, 3, 3, 3, 3}, {1, 5}));
  EXPECT_EQ(fv(x.select(0, 1)), FV(5, 3.f));
  Tensor empty_slice = zeros({2});
  slice_assign_(empty_slice, 0, 1, 1, 1, scalar_tensor(4.0));
  EXPECT_EQ(fv(empty_slice), (FV{0, 0}));
  Tensor s0 = scalar_tensor(1.0);
  expect_error([&] { slice_assign_(x, 1, 0, 5, 0, scalar_tensor(1.0)); },
               {"[slice_assign_]", "step"});
  expect_error([&] { slice_assign_(x, 1, 0, 2, 1, F({1, 2, 3})); }, {"[slice_assign_]", "[2, 2]"});
  expect_error([&] { slice_assign_(s0, 0, 0, 1, 1, scalar_tensor(1.0)); },
               {"[slice_assign_]", "0-d"});
  expect_error([&] { slice_assign_(x, 2, 0, 1, 1, scalar_tensor(1.0)); }, {"slice_assign_"});
}
