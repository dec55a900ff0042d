// cat / stack / split / chunk / repeat / tile / roll / tril / triu / diag / diagonal / meshgrid /
// pad / flip: hand-computed values (as torch gives them), views vs copies, and error messages.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "ember/ember.h"

using namespace ember;

namespace {

Tensor f32(std::initializer_list<float> v, Shape s) { return tensor<float>(v, std::move(s)); }
std::vector<float> vals(const Tensor& t) { return t.to_vector<float>(); }
using V = std::vector<float>;

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}
bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST(LayoutTest, CatJoinsAndPromotes) {
  Tensor a = f32({1, 2, 3, 4}, {2, 2});
  Tensor c0 = cat({a, f32({5, 6}, {1, 2})});
  EXPECT_EQ(c0.shape(), (Shape{3, 2}));
  EXPECT_EQ(vals(c0), (V{1, 2, 3, 4, 5, 6}));
  Tensor c1 = cat({a, f32({5, 6}, {2, 1})}, -1);
  EXPECT_EQ(vals(c1), (V{1, 2, 5, 3, 4, 6}));
  Tensor p = cat({tensor<int32_t>({1, 2}, {2}), tensor<double>({0.5}, {1})});
  EXPECT_EQ(p.dtype(), DType::f64);
  EXPECT_EQ(p.to_vector<double>(), (std::vector<double>{1, 2, 0.5}));
  // Non-contiguous inputs are read through their strides.
  EXPECT_EQ(vals(cat({a.t(), a.t()}, 1)), (V{1, 3, 1, 3, 2, 4, 2, 4}));
}

TEST(LayoutTest, CatEmptyPiecesAndLegacySkip) {
  Tensor a = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  // [0, 3] takes part normally; a 1-d [0] tensor is skipped whatever its shape (torch's rule).
  EXPECT_EQ(vals(cat({zeros({0, 3}), a})), vals(a));
  Tensor s = cat({a, zeros({0}, {DType::f64})}, 1);
  EXPECT_EQ(s.shape(), (Shape{2, 3}));
  EXPECT_EQ(s.dtype(), DType::f64);  // the skipped tensor still promotes
  EXPECT_EQ(cat({zeros({0}), zeros({0})}).shape(), (Shape{0}));
  EXPECT_EQ(cat({zeros({2, 0}), zeros({2, 0})}, 1).shape(), (Shape{2, 0}));
}

TEST(LayoutTest, CatErrors) {
  EXPECT_EQ(message_of([] {
              cat({ones({2, 3}), ones({2, 4})});
            }),
            "[cat] sizes of tensors must match except in dimension 0: tensor 0 has shape [2, 3] "
            "but tensor 1 has shape [2, 4]");
  EXPECT_TRUE(has(message_of([] { cat({ones({2, 3}), ones({3})}); }), "tensor 1 has shape [3]"));
  EXPECT_TRUE(has(message_of([] { cat({}); }), "[cat] expected a non-empty list"));
  EXPECT_TRUE(has(message_of([] { cat({scalar_tensor(1.f)}); }), "zero-dimensional"));
  EXPECT_TRUE(has(message_of([] { cat({ones({2}), ones({2})}, 2); }), "[cat]"));
  const std::string dev = message_of([] {
    cat({ones({2}, {Device::ref()}), ones({2}, {Device::cpu()})});
  });
  EXPECT_TRUE(has(dev, "[cat]") && has(dev, "ref") && has(dev, "cpu")) << dev;
  EXPECT_TRUE(has(message_of([] { cat({ones({2}), Tensor()}); }), "undefined"));
}

TEST(LayoutTest, Stack) {
  Tensor a = f32({1, 2}, {2}), b = f32({3, 4}, {2});
  EXPECT_EQ(stack({a, b}).shape(), (Shape{2, 2}));
  EXPECT_EQ(vals(stack({a, b})), (V{1, 2, 3, 4}));
  EXPECT_EQ(vals(stack({a, b}, 1)), (V{1, 3, 2, 4}));
  EXPECT_EQ(vals(stack({a, b}, -1)), (V{1, 3, 2, 4}));
  EXPECT_EQ(stack({scalar_tensor(1.f), scalar_tensor(2.f)}).shape(), (Shape{2}));
  EXPECT_EQ(message_of([] {
              stack({ones({2}), ones({3})});
            }),
            "[stack] expects each tensor to be equal size, but got [2] at entry 0 and [3] at "
            "entry 1");
}

TEST(LayoutTest, SplitAndChunk) {
  Tensor x = arange(5, {DType::f32});
  auto parts = split(x, 2);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(vals(parts[0]), (V{0, 1}));
  EXPECT_EQ(vals(parts[2]), (V{4}));
  EXPECT_TRUE(parts[1].is_alias_of(x));  // views
  auto sized = split(x, std::vector<int64_t>{1, 0, 4});
  ASSERT_EQ(sized.size(), 3u);
  EXPECT_EQ(sized[1].numel(), 0);
  EXPECT_EQ(vals(sized[2]), (V{1, 2, 3, 4}));
  EXPECT_EQ(message_of([&] {
              split(x, std::vector<int64_t>{1, 2});
            }),
            "[split] split sizes [1, 2] sum to 3 but dim 0 has size 5 (shape [5])");
  EXPECT_TRUE(has(message_of([&] { split(x, 0); }), "[split]"));
  EXPECT_EQ(split(zeros({0}), 2).size(), 1u);
  auto ch = chunk(arange(6, {DType::f32}), 4);  // ceil(6 / 4) = 2 -> only 3 chunks, as torch
  ASSERT_EQ(ch.size(), 3u);
  EXPECT_EQ(vals(ch[2]), (V{4, 5}));
  auto c5 = chunk(x, 3);
  ASSERT_EQ(c5.size(), 3u);
  EXPECT_EQ(vals(c5[2]), (V{4}));
  auto ce = chunk(zeros({0, 2}), 3);
  ASSERT_EQ(ce.size(), 3u);
  EXPECT_EQ(ce[0].shape(), (Shape{0, 2}));
  auto cols = chunk(arange(6, {DType::f32}).reshape({2, 3}), 2, 1);
  EXPECT_EQ(vals(cols[0]), (V{0, 1, 3, 4}));
  EXPECT_TRUE(has(message_of([&] { chunk(x, 0); }), "[chunk] chunks must be positive"));
}

TEST(LayoutTest, RepeatAndTile) {
  Tensor a = f32({1, 2}, {2});
  Tensor r = repeat(a, {2, 2});
  EXPECT_EQ(r.shape(), (Shape{2, 4}));
  EXPECT_EQ(vals(r), (V{1, 2, 1, 2, 1, 2, 1, 2}));
  Tensor col = f32({1, 2}, {2, 1});
  EXPECT_EQ(vals(repeat(col, {1, 3})), (V{1, 1, 1, 2, 2, 2}));
  Tensor same = repeat(a, {1});
  EXPECT_FALSE(same.is_alias_of(a));  // always a copy, as torch
  EXPECT_EQ(repeat(a, {0, 2}).shape(), (Shape{0, 4}));
  EXPECT_EQ(vals(tile(a, {2})), (V{1, 2, 1, 2}));
  Tensor m = f32({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(tile(m, {2}).shape(), (Shape{2, 4}));  // reps padded with leading 1s
  EXPECT_EQ(vals(tile(m, {2})), (V{1, 2, 1, 2, 3, 4, 3, 4}));
  EXPECT_EQ(message_of([&] { repeat(m, {2}); }),
            "[repeat] number of repeats (1) cannot be smaller than the number of dims (2) of "
            "shape [2, 2]");
  EXPECT_TRUE(has(message_of([&] { repeat(a, {-1}); }), "non-negative"));
}

TEST(LayoutTest, Roll) {
  Tensor x = arange(5, {DType::f32});
  EXPECT_EQ(vals(roll(x, {2})), (V{3, 4, 0, 1, 2}));
  EXPECT_EQ(vals(roll(x, {-1})), (V{1, 2, 3, 4, 0}));
  EXPECT_EQ(vals(roll(x, {7})), (V{3, 4, 0, 1, 2}));
  Tensor m = arange(6, {DType::f32}).reshape({2, 3});
  EXPECT_EQ(vals(roll(m, {1}, {1})), (V{2, 0, 1, 5, 3, 4}));
  EXPECT_EQ(vals(roll(m, {1})), (V{5, 0, 1, 2, 3, 4}));  // flattened
  EXPECT_EQ(vals(roll(m, {1, 1}, {0, 1})), (V{5, 3, 4, 2, 0, 1}));
  EXPECT_FALSE(roll(m, {0}, {0}).is_alias_of(m));
  EXPECT_TRUE(has(message_of([&] { roll(m, {1, 2}, {0}); }), "[roll] shifts and dims must align"));
  EXPECT_TRUE(has(message_of([&] { roll(m, {1}, {2}); }), "[roll]"));
}

TEST(LayoutTest, TrilTriu) {
  Tensor m = arange(1, 10, 1, {DType::f32}).reshape({3, 3});
  EXPECT_EQ(vals(tril(m)), (V{1, 0, 0, 4, 5, 0, 7, 8, 9}));
  EXPECT_EQ(vals(tril(m, -1)), (V{0, 0, 0, 4, 0, 0, 7, 8, 0}));
  EXPECT_EQ(vals(triu(m, 1)), (V{0, 2, 3, 0, 0, 6, 0, 0, 0}));
  EXPECT_EQ(vals(triu(m, -1)), (V{1, 2, 3, 4, 5, 6, 0, 8, 9}));
  Tensor r = arange(1, 7, 1, {DType::i64}).reshape({2, 3});
  EXPECT_EQ(tril(r).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0, 4, 5, 0}));
  EXPECT_EQ(tril(r).dtype(), DType::i64);
  Tensor b = ones({2, 2, 2}, {DType::b8});
  EXPECT_EQ(triu(b).to_vector<int>(), (std::vector<int>{1, 1, 0, 1, 1, 1, 0, 1}));
  EXPECT_EQ(triu(b).dtype(), DType::b8);
  EXPECT_EQ(message_of([] { tril(ones({3})); }),
            "[tril] expects a tensor with at least 2 dims, got shape [3]");
}

TEST(LayoutTest, DiagAndDiagonal) {
  Tensor v = f32({1, 2}, {2});
  EXPECT_EQ(vals(diag(v)), (V{1, 0, 0, 2}));
  EXPECT_EQ(vals(diag(v, 1)), (V{0, 1, 0, 0, 0, 2, 0, 0, 0}));
  EXPECT_EQ(vals(diag(v, -1)), (V{0, 0, 0, 1, 0, 0, 0, 2, 0}));
  Tensor m = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(vals(diag(m)), (V{1, 5}));
  EXPECT_EQ(vals(diag(m, 1)), (V{2, 6}));
  EXPECT_EQ(vals(diag(m, -1)), (V{4}));
  EXPECT_FALSE(diag(m).is_alias_of(m));
  Tensor d = diagonal(m, 1);
  EXPECT_TRUE(d.is_alias_of(m));
  EXPECT_EQ(vals(d), (V{2, 6}));
  EXPECT_EQ(vals(diagonal(m.reshape({1, 2, 3}), 0, 1, 2)), (V{1, 5}));
  EXPECT_EQ(message_of([] {
              diag(ones({2, 2, 2}));
            }),
            "[diag] expects a 1-d or 2-d tensor, got shape [2, 2, 2]");
}

TEST(LayoutTest, MeshgridIjAndXy) {
  Tensor x = f32({1, 2, 3}, {3}), y = f32({4, 5}, {2});
  auto ij = meshgrid({x, y});
  ASSERT_EQ(ij.size(), 2u);
  EXPECT_EQ(ij[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(vals(ij[0]), (V{1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(vals(ij[1]), (V{4, 5, 4, 5, 4, 5}));
  auto xy = meshgrid({x, y}, "xy");
  EXPECT_EQ(xy[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(vals(xy[0]), (V{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(vals(xy[1]), (V{4, 4, 4, 5, 5, 5}));
  auto three = meshgrid({x, y, f32({7}, {1})}, "xy");
  EXPECT_EQ(three[2].shape(), (Shape{2, 3, 1}));
  EXPECT_TRUE(has(message_of([&] { meshgrid({x, y}, "yx"); }), "[meshgrid] indexing"));
  EXPECT_TRUE(has(message_of([&] { meshgrid({x, ones({2, 2})}); }), "0-d or 1-d"));
  EXPECT_TRUE(has(message_of([&] { meshgrid({x, y.to(DType::f64)}); }), "same dtype"));
}

TEST(LayoutTest, PadModes1d) {
  Tensor x = f32({1, 2, 3, 4}, {4});
  EXPECT_EQ(vals(pad(x, {2, 1}, "reflect")), (V{3, 2, 1, 2, 3, 4, 3}));
  EXPECT_EQ(vals(pad(x, {2, 1}, "replicate")), (V{1, 1, 1, 2, 3, 4, 4}));
  EXPECT_EQ(vals(pad(x, {2, 1}, "circular")), (V{3, 4, 1, 2, 3, 4, 1}));
  EXPECT_EQ(vals(pad(x, {1, 2}, "constant", 9)), (V{9, 1, 2, 3, 4, 9, 9}));
  EXPECT_EQ(vals(pad(x, {-1, 2})), (V{2, 3, 4, 0, 0}));
  EXPECT_EQ(vals(pad(x, {-1, -2})), (V{2}));
  EXPECT_EQ(pad(x, {-2, -2}).shape(), (Shape{0}));
  EXPECT_EQ(vals(pad(x, {-1, 1}, "circular")), (V{2, 3, 4, 1}));
  EXPECT_EQ(vals(pad(x, {0, 0})), vals(x));
  EXPECT_FALSE(pad(x, {0, 0}, "reflect").is_alias_of(x));
  Tensor i = pad(tensor<int64_t>({5, 6}, {2}), {1, 1}, "constant", 2.0);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{2, 5, 6, 2}));
}

TEST(LayoutTest, PadModes2d) {
  Tensor m = f32({1, 2, 3, 4}, {2, 2});
  // (left 1, right 0) on the last dim, (top 0, bottom 1) on the one before: torch's order.
  EXPECT_EQ(vals(pad(m, {1, 0, 0, 1})), (V{0, 1, 2, 0, 3, 4, 0, 0, 0}));
  Tensor n = arange(1, 10, 1, {DType::f32}).reshape({1, 3, 3});
  Tensor r = pad(n, {1, 1, 1, 1}, "reflect");
  EXPECT_EQ(r.shape(), (Shape{1, 5, 5}));
  EXPECT_EQ(vals(r),
            (V{5, 4, 5, 6, 5, 2, 1, 2, 3, 2, 5, 4, 5, 6, 5, 8, 7, 8, 9, 8, 5, 4, 5, 6, 5}));
  Tensor rep = pad(n, {0, 1, 1, 0}, "replicate");
  EXPECT_EQ(vals(rep), (V{1, 2, 3, 3, 1, 2, 3, 3, 4, 5, 6, 6, 7, 8, 9, 9}));
  Tensor c = pad(n, {1, 0, 0, 1}, "circular");
  EXPECT_EQ(vals(c), (V{3, 1, 2, 3, 6, 4, 5, 6, 9, 7, 8, 9, 3, 1, 2, 3}));
}

TEST(LayoutTest, PadErrors) {
  Tensor x = f32({1, 2, 3, 4}, {4});
  EXPECT_TRUE(has(message_of([&] { pad(x, {4, 0}, "reflect"); }), "[pad] reflect padding (4, 0)"));
  EXPECT_TRUE(has(message_of([&] { pad(x, {5, 0}, "circular"); }), "[pad] circular"));
  EXPECT_TRUE(has(message_of([&] { pad(x, {1}); }), "[pad] padding length must be even"));
  EXPECT_TRUE(has(message_of([&] { pad(x, {1, 1, 1, 1}); }), "pads more dims"));
  EXPECT_TRUE(has(message_of([&] { pad(x, {1, 1}, "wrap"); }), "[pad] mode"));
  EXPECT_TRUE(has(message_of([&] { pad(x, {-3, -3}); }), "negative size"));
  EXPECT_TRUE(has(message_of([&] { pad(zeros({0}), {1, 1}, "replicate"); }), "non-empty"));
}

TEST(LayoutTest, Flip) {
  Tensor m = f32({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(vals(flip(m, {0})), (V{3, 4, 1, 2}));
  EXPECT_EQ(vals(flip(m, {0, 1})), (V{4, 3, 2, 1}));
  EXPECT_FALSE(flip(m, {1}).is_alias_of(m));
  EXPECT_TRUE(has(message_of([&] { flip(m, {2}); }), "[flip]"));
}
