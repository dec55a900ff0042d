// Memory formats: the strides of each layout, the checks, layout propagation through
// element-wise ops and convolutions (on every device), and the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ember/ember.h"
#include "ember/record/safetensors.h"
#include "test_util.h"

using namespace ember;
namespace F = ember::nn::functional;

namespace {

const MemoryFormat CL = MemoryFormat::channels_last;

std::vector<Device> devices() {
  std::vector<Device> out;
  for (const auto& d : available_devices()) out.push_back(d.device);
  return out;
}

// Values of `got` within rel * max|want| of `want`.
void expect_close(const Tensor& got, const Tensor& want, double rel = 1e-5) {
  const auto g = got.to_vector<double>(), w = want.to_vector<double>();
  ASSERT_EQ(g.size(), w.size());
  double scale = 0;
  for (double v : w) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], w[i], rel * scale) << "at " << i;
}

TEST(MemoryFormat, StridesOfEachFormat) {
  // torch.empty(2, 3, 4, 5, memory_format=torch.channels_last).stride() == (60, 1, 15, 3).
  EXPECT_EQ(empty({2, 3, 4, 5}, {}, CL).strides(), (Strides{60, 1, 15, 3}));
  EXPECT_EQ(empty({2, 3, 4, 5, 6}, {}, MemoryFormat::channels_last_3d).strides(),
            (Strides{360, 1, 90, 18, 3}));
  EXPECT_EQ(empty({2, 3, 4, 5}, {}, MemoryFormat::contiguous).strides(), (Strides{60, 20, 5, 1}));
}

TEST(MemoryFormat, IsContiguousAndMemoryFormat) {
  const Tensor x = arange(120, {DType::f32}).reshape({2, 3, 4, 5});
  EXPECT_TRUE(x.is_contiguous(MemoryFormat::contiguous));
  EXPECT_FALSE(x.is_contiguous(CL));
  EXPECT_FALSE(x.is_contiguous(MemoryFormat::channels_last_3d));
  EXPECT_EQ(x.memory_format(), MemoryFormat::contiguous);
  // NHWC data viewed as NCHW is channels-last.
  const Tensor nhwc = x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
  EXPECT_TRUE(nhwc.is_contiguous(CL));
  EXPECT_FALSE(nhwc.is_contiguous());
  EXPECT_EQ(nhwc.memory_format(), CL);
  // One channel: both layouts at once (as torch); the plain one is reported.
  const Tensor one = zeros({2, 1, 4, 5});
  EXPECT_TRUE(one.is_contiguous(CL));
  EXPECT_EQ(one.memory_format(), MemoryFormat::contiguous);
  // Empty tensors are contiguous whatever their strides (as torch).
  const Tensor empty_cl = empty({0, 3, 4, 5}, {}, CL);
  EXPECT_TRUE(empty_cl.is_contiguous());
  EXPECT_EQ(empty_cl.memory_format(), MemoryFormat::contiguous);
  // A slice of a channels-last tensor along W is not dense.
  EXPECT_FALSE(nhwc.slice(3, 0, 4, 2).is_contiguous(CL));
  EXPECT_EQ(nhwc.slice(3, 0, 4, 2).memory_format(), MemoryFormat::contiguous);
}

TEST(MemoryFormat, ContiguousCopiesOnlyWhenNeeded) {
  for (const Device& dev : devices()) {
    SCOPED_TRACE(dev.str());
    const Tensor x = randn({2, 3, 4, 5}, {dev});
    const Tensor c = x.contiguous(CL);
    EXPECT_EQ(c.strides(), (Strides{60, 1, 15, 3}));
    EXPECT_EQ(c.to_vector<float>(), x.to_vector<float>());
    EXPECT_TRUE(c.contiguous(CL).is_alias_of(c));
    const Tensor back = c.contiguous();
    EXPECT_TRUE(back.is_contiguous());
    EXPECT_EQ(back.to_vector<float>(), x.to_vector<float>());
    const Tensor v = randn({2, 3, 2, 3, 4}, {dev}).contiguous(MemoryFormat::channels_last_3d);
    EXPECT_EQ(v.strides(), (Strides{72, 1, 36, 12, 3}));
  }
}

TEST(MemoryFormat, Errors) {
  const Tensor x = zeros({3, 4, 5});
  test::expect_error([&] { (void)x.contiguous(CL); },
                     {"[contiguous]", "channels_last needs a 4-d tensor", "[3, 4, 5]"});
  test::expect_error(
      [&] {
        (void)zeros({2, 3, 4, 5}).contiguous(MemoryFormat::channels_last_3d);
      },
      {"[contiguous]", "channels_last_3d needs a 5-d tensor", "[2, 3, 4, 5]"});
  test::expect_error([&] { (void)x.contiguous(MemoryFormat::preserve); },
                     {"[contiguous]", "preserve names no layout"});
  test::expect_error([&] { (void)x.is_contiguous(MemoryFormat::preserve); }, {"[is_contiguous]"});
  test::expect_error([&] { (void)empty({2, 3}, {}, CL); }, {"[empty]", "[2, 3]"});
  EXPECT_FALSE(x.is_contiguous(CL));  // a rank mismatch is an answer, not an error
}

// y = relu(x * w + b) as batch_norm's affine step: a channels-last x keeps its layout through
// unary, binary with [1, C, 1, 1] operands on either side, casts and where, with the same values.
TEST(MemoryFormat, ElementwiseOpsKeepChannelsLast) {
  for (const Device& dev : devices()) {
    SCOPED_TRACE(dev.str());
    manual_seed(3);
    const Tensor x = randn({2, 5, 3, 4}, {dev});
    const Tensor w = randn({1, 5, 1, 1}, {dev}), b = randn({1, 5, 1, 1}, {dev});
    const Tensor xc = x.contiguous(CL);
    const Tensor want = F::relu(x * w + b);
    const Tensor got = F::relu(w * xc + b);
    EXPECT_EQ(got.memory_format(), CL);
    EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>());
    EXPECT_EQ(gt(xc, 0.f).memory_format(), CL);
    EXPECT_EQ(where(gt(xc, 0.f), xc, 0.f).memory_format(), CL);
    EXPECT_EQ(where(gt(xc, 0.f), xc, 0.f).to_vector<float>(), F::relu(x).to_vector<float>());
    EXPECT_EQ(xc.to(DType::f64).memory_format(), CL);
    EXPECT_EQ(xc.to(DType::f64).to_vector<double>(), x.to(DType::f64).to_vector<double>());
    // The first full-size operand decides: a contiguous one wins over a channels-last one.
    EXPECT_EQ((x + xc).memory_format(), MemoryFormat::contiguous);
    EXPECT_EQ((xc + x).memory_format(), CL);
    EXPECT_EQ((xc + x).to_vector<float>(), (x + x).to_vector<float>());
  }
}

// A channels-last input gives a channels-last output with the NCHW values, forward and backward,
// through the fused (oneDNN) convolution on cpu and the composite elsewhere.
TEST(MemoryFormat, ConvKeepsChannelsLastAndItsGradients) {
  for (const Device& dev : devices()) {
    SCOPED_TRACE(dev.str());
    manual_seed(11);
    const Tensor x0 = randn({2, 6, 9, 7}, {dev});
    const Tensor w0 = randn({8, 3, 3, 3}, {dev}) * 0.2f, b0 = randn({8}, {dev});
    auto run = [&](bool cl, Tensor& gx, Tensor& gw) {
      Tensor x = (cl ? x0.contiguous(CL) : x0.clone()).requires_grad_();
      Tensor w = w0.clone().requires_grad_();
      Tensor y = F::conv2d(x, w, b0, {2, 1}, {1, 1}, {1, 1}, 2);
      (y * y).sum().backward();
      gx = x.grad();
      gw = w.grad();
      return y.detach();
    };
    Tensor gx, gw, gx_cl, gw_cl;
    const Tensor y = run(false, gx, gw), y_cl = run(true, gx_cl, gw_cl);
    EXPECT_EQ(y.memory_format(), MemoryFormat::contiguous);
    EXPECT_EQ(y_cl.memory_format(), CL);
    EXPECT_EQ(gx_cl.memory_format(), CL);
    expect_close(y_cl, y);
    expect_close(gx_cl, gx);
    expect_close(gw_cl, gw);
  }
}

// A ResNet-style block (conv, batch_norm, relu, residual add, pooling) on a channels-last input
// stays channels-last through the pooling and computes the NCHW values.
TEST(MemoryFormat, ResidualBlockStaysChannelsLast) {
  for (const Device& dev : devices()) {
    SCOPED_TRACE(dev.str());
    manual_seed(5);
    const Tensor x = randn({2, 4, 8, 8}, {dev});
    const Tensor w1 = randn({4, 4, 3, 3}, {dev}) * 0.3f, w2 = randn({4, 4, 1, 1}, {dev}) * 0.5f;
    const Tensor rm = randn({4}, {dev}), rv = rand({4}, {dev}) + 0.5f;
    const Tensor g = randn({4}, {dev}), bt = randn({4}, {dev});
    auto block = [&](const Tensor& in) {
      Tensor h = F::relu(F::batch_norm(F::conv2d(in, w1, Tensor(), {1}, {1}), rm, rv, g, bt));
      return F::relu(F::conv2d(h, w2) + in);
    };
    const Tensor want = block(x), got = block(x.contiguous(CL));
    EXPECT_EQ(got.memory_format(), CL);
    expect_close(got, want);
    EXPECT_EQ(F::max_pool2d(got, {2}).memory_format(), CL);
    EXPECT_EQ(F::avg_pool2d(got, {2}).memory_format(), CL);
    EXPECT_EQ(F::adaptive_avg_pool2d(got, {2, 2}).memory_format(), CL);
    expect_close(F::max_pool2d(got, {2}), F::max_pool2d(want, {2}));
    expect_close(F::avg_pool2d(got, {2}), F::avg_pool2d(want, {2}));
    expect_close(F::adaptive_avg_pool2d(got, {1, 1}), F::adaptive_avg_pool2d(want, {1, 1}));
  }
}

}  // namespace

// Module::to(channels_last) converts the conv weight (4-d) but not the 1-d bias; the forward,
// an SGD step and a safetensors round trip give the same values as the NCHW module.
TEST(MemoryFormat, ModuleToChannelsLast) {
  manual_seed(21);
  auto a = std::make_shared<nn::Conv2d>(3, 4, 3);
  auto b = std::make_shared<nn::Conv2d>(3, 4, 3);
  b->load_state_dict(a->state_dict());
  b->to(CL);
  EXPECT_EQ(b->weight.memory_format(), CL);
  EXPECT_EQ(b->bias.strides(), (Strides{1}));
  EXPECT_TRUE(b->weight.requires_grad());
  const Tensor x = randn({2, 3, 6, 6});
  expect_close(b->forward(x.contiguous(CL)), a->forward(x));
  for (auto* m : {a.get(), b.get()}) {
    optim::SGD opt(m->parameters(), optim::SGDOptions(0.1));
    Tensor in = m == b.get() ? x.contiguous(CL) : x;
    (m->forward(in) * m->forward(in)).sum().backward();
    opt.step();
  }
  EXPECT_EQ(b->weight.memory_format(), CL);
  expect_close(b->weight, a->weight);
  test::TempDir dir("memfmt");
  record::save_module(dir / "b.safetensors", *b);
  auto c = std::make_shared<nn::Conv2d>(3, 4, 3);
  EXPECT_EQ(record::load_into(*c, dir / "b.safetensors"), "");
  EXPECT_EQ(c->weight.to_vector<float>(), b->weight.to_vector<float>());
  b->to(MemoryFormat::contiguous);
  EXPECT_TRUE(b->weight.is_contiguous());
  test::expect_error([&] { b->to(MemoryFormat::preserve); }, {"[Module.to]", "preserve"});
}

// Which results keep a channels-last input's layout, as torch 1.13 (checked there with
// is_contiguous(memory_format=...)).
TEST(MemoryFormat, CopiesCatInterpolatePadGroupNormKeepChannelsLastAsTorch) {
  const MemoryFormat CL3 = MemoryFormat::channels_last_3d;
  for (const Device dev : devices()) {
    SCOPED_TRACE(dev.str());
    const Tensor x = randn({2, 4, 5, 6}, {dev});
    const Tensor xc = x.contiguous(CL);
    auto is_cl = [&](const Tensor& t) { return t.memory_format() == CL; };
    // clone and the *_like factories: memory_format=preserve.
    const Tensor c = xc.clone();
    EXPECT_TRUE(is_cl(c));
    expect_close(c, x);
    EXPECT_FALSE(c.is_alias_of(xc));
    EXPECT_TRUE(xc.contiguous().is_contiguous());
    for (const Tensor& t : {empty_like(xc), zeros_like(xc), ones_like(xc), full_like(xc, 2),
                            rand_like(xc), randn_like(xc)})
      EXPECT_TRUE(is_cl(t));
    EXPECT_EQ(zeros_like(xc).to_vector<float>(), std::vector<float>(240, 0.f));
    EXPECT_EQ(full_like(xc, 2).to_vector<float>(), std::vector<float>(240, 2.f));
    EXPECT_TRUE(empty_like(x).is_contiguous());
    // A strided slice of a channels-last tensor: clone keeps its dim order (torch's
    // infer_dense_strides), cat does not (its strides are not channels-last-like).
    const Tensor slice = xc.slice(2, 0, 5, 2);
    EXPECT_TRUE(is_cl(slice.clone()));
    EXPECT_TRUE(cat({slice, slice}, 1).is_contiguous());
    // cat: channels-last when every input is.
    for (int64_t d : {0, 1, 2, 3}) {
      const Tensor y = cat({xc, xc}, d);
      EXPECT_TRUE(is_cl(y));
      expect_close(y, cat({x, x}, d));
    }
    EXPECT_TRUE(cat({xc, x}, 1).is_contiguous());
    EXPECT_TRUE(cat({x, xc}, 1).is_contiguous());
    // interpolate: channels-last except bicubic.
    for (const char* mode : {"nearest", "nearest-exact", "bilinear", "area"}) {
      SCOPED_TRACE(mode);
      const Tensor y = F::interpolate(xc, {7, 8}, {}, mode);
      EXPECT_TRUE(is_cl(y));
      expect_close(y, F::interpolate(x, {7, 8}, {}, mode));
    }
    EXPECT_TRUE(F::interpolate(xc, {7, 8}, {}, "bicubic").is_contiguous());
    // pad: constant keeps it, the others give contiguous.
    const Tensor pc = pad(xc, {1, 1, 2, 0});
    EXPECT_TRUE(is_cl(pc));
    expect_close(pc, pad(x, {1, 1, 2, 0}));
    for (const char* mode : {"reflect", "replicate", "circular"}) {
      SCOPED_TRACE(mode);
      const Tensor y = pad(xc, {1, 1, 1, 1}, mode);
      EXPECT_TRUE(y.is_contiguous());
      expect_close(y, pad(x, {1, 1, 1, 1}, mode));
    }
    // group_norm keeps it.
    const Tensor g = F::group_norm(xc, 2, ones({4}, {dev}), zeros({4}, {dev}));
    EXPECT_TRUE(is_cl(g));
    expect_close(g, F::group_norm(x, 2, ones({4}, {dev}), zeros({4}, {dev})), 1e-4);
    // 5-d: the same with channels_last_3d, except area (adaptive_avg_pool3d) is contiguous.
    const Tensor v = randn({2, 3, 2, 4, 5}, {dev}).contiguous(CL3);
    EXPECT_EQ(v.clone().memory_format(), CL3);
    EXPECT_EQ(cat({v, v}, 1).memory_format(), CL3);
    EXPECT_EQ(F::interpolate(v, {3, 5, 7}, {}, "trilinear").memory_format(), CL3);
    EXPECT_EQ(F::interpolate(v, {3, 5, 7}).memory_format(), CL3);
    EXPECT_TRUE(F::interpolate(v, {3, 5, 7}, {}, "area").is_contiguous());
    EXPECT_EQ(pad(v, {1, 1, 1, 1, 1, 1}).memory_format(), CL3);
    EXPECT_EQ(F::group_norm(v, 3).memory_format(), CL3);
  }
}
