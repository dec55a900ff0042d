// Tensor core: creation, views, aliasing, conversion, printing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "ember/ember.h"
#include "op_table.h"
#include "test_util.h"

using namespace ember;

namespace {
std::vector<float> vals(const Tensor& t) { return t.to_vector<float>(); }
}  // namespace

TEST(TensorTest, CreationShapesAndItem) {
  Tensor t = tensor<float>({1.f, 2.f, 3.f, 4.f}, {2, 2});
  EXPECT_EQ(t.shape(), (Shape{2, 2}));
  EXPECT_EQ(t.dtype(), DType::f32);
  EXPECT_FLOAT_EQ(t.select(1, 1)[1].item<float>(), 4.f);
  EXPECT_EQ(zeros({2, 3}).numel(), 6);
  EXPECT_EQ(full({2}, 7, DType::i32).to_vector<int32_t>(), (std::vector<int32_t>{7, 7}));
  Tensor s = scalar_tensor(3.5);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<double>(), 3.5);
  EXPECT_EQ(arange(5).dtype(), DType::i64);
  EXPECT_EQ(arange(6, DType::f32).dtype(), DType::f32);  // an explicit dtype wins over inference
  EXPECT_EQ(arange(0, 6, 1, TensorOptions(DType::f32, Device::ref())).dtype(), DType::f32);
  EXPECT_EQ(arange(0.0, 2.0).dtype(), DType::f32);
  EXPECT_EQ(arange(5).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(0.0, 1.0, 0.25).to_vector<float>(), (std::vector<float>{0, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(arange(10, 0, -3).to_vector<int64_t>(), (std::vector<int64_t>{10, 7, 4, 1}));
  EXPECT_EQ(vals(linspace(0, 1, 5)), (std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1}));
  EXPECT_EQ(vals(eye(2, 3)), (std::vector<float>{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(zeros({0, 3}).numel(), 0);
  EXPECT_EQ(ones_like(zeros({2}, DType::u8)).to_vector<int>(), (std::vector<int>{1, 1}));
}

TEST(TensorTest, ViewsShareStorageAndWriteThrough) {
  Tensor x = arange(12, {DType::f32}).reshape({3, 4});
  Tensor col = x.select(1, 2);
  EXPECT_TRUE(col.is_alias_of(x));
  col.fill_(-1);
  EXPECT_EQ(vals(x.select(1, 2)), (std::vector<float>{-1, -1, -1}));
  Tensor tr = x.t();
  EXPECT_FALSE(tr.is_contiguous());
  EXPECT_EQ(tr.shape(), (Shape{4, 3}));
  EXPECT_EQ(vals(tr.select(0, 1)), (std::vector<float>{1, 5, 9}));
  // Stepped slice with a negative start.
  EXPECT_EQ(vals(arange(10, DType::f32).slice(0, -7, 10, 3)), (std::vector<float>{3, 6, 9}));
  EXPECT_EQ(vals(arange(10, DType::f32).slice(0, 2, 100)).size(), 8u);
  // unfold: windows of 3 every 2.
  Tensor u = arange(7, DType::f32).unfold(0, 3, 2);
  EXPECT_EQ(u.shape(), (Shape{3, 3}));
  EXPECT_EQ(vals(u.select(0, 2)), (std::vector<float>{4, 5, 6}));
  // expand gives stride 0; writing through x is visible in the expansion.
  Tensor row = arange(3, DType::f32);
  Tensor e = row.expand({2, 3});
  EXPECT_EQ(e.strides(), (Strides{0, 1}));
  row.add_(1);
  EXPECT_EQ(vals(e), (std::vector<float>{1, 2, 3, 1, 2, 3}));
  // view needs compatible strides; reshape copies when it must.
  EXPECT_THROW(tr.view({12}), Error);
  Tensor r = tr.reshape({12});
  EXPECT_FALSE(r.is_alias_of(x));
  EXPECT_EQ(r.to_vector<float>()[1], 4.f);
  EXPECT_TRUE(x.reshape({2, 6}).is_alias_of(x));
  EXPECT_EQ(x.view({-1, 2}).shape(), (Shape{6, 2}));
  EXPECT_EQ(x.unsqueeze(1).shape(), (Shape{3, 1, 4}));
  EXPECT_EQ(x.unsqueeze(-1).squeeze().shape(), (Shape{3, 4}));
  EXPECT_EQ(x.flatten().shape(), (Shape{12}));
  EXPECT_EQ(x.permute({1, 0}).shape(), (Shape{4, 3}));
  EXPECT_EQ(vals(x.diagonal()), (std::vector<float>{0, 5, -1}));
  EXPECT_EQ(vals(x.diagonal(1)), (std::vector<float>{1, -1, 11}));
  EXPECT_EQ(vals(x.narrow(0, 1, 1).flatten()), (std::vector<float>{4, 5, -1, 7}));
  Tensor f = x.flip({0, 1});
  EXPECT_FALSE(f.is_alias_of(x));
  EXPECT_EQ(vals(f.select(0, 0)), (std::vector<float>{11, -1, 9, 8}));
}

TEST(TensorTest, InPlaceThroughOverlappingViews) {
  // A source partly overlapping the destination is refused, as torch (clone it first).
  Tensor x = arange(9, DType::f32).reshape({3, 3});
  EXPECT_THROW(x.copy_(x.t()), Error);
  x.copy_(x.t().clone());
  EXPECT_EQ(vals(x), (std::vector<float>{0, 3, 6, 1, 4, 7, 2, 5, 8}));
  Tensor y = arange(4, DType::i32);
  EXPECT_THROW(y.slice(0, 1, 4).copy_(y.slice(0, 0, 3)), Error);
  y.slice(0, 1, 4).copy_(y.slice(0, 0, 3).clone());
  EXPECT_EQ(y.to_vector<int>(), (std::vector<int>{0, 0, 1, 2}));
  EXPECT_THROW(y.add_(0.5), Error);  // float result into an int tensor
  Tensor m = zeros({2, 2});
  m.masked_fill_(tensor<bool>({true, false}), 5);
  EXPECT_EQ(vals(m), (std::vector<float>{5, 0, 5, 0}));
}

// add_/sub_/mul_/div_ write straight into a dense float tensor on a host device (no temporary),
// and fall back to compute-then-copy when autograd records the op or for a strided destination:
// every way gives the out-of-place values. An operand overlapping self shifted is refused (torch).
TEST(TensorTest, InPlaceArithmeticWritesIntoSelf) {
  for (const Device& dev : {Device::cpu(), Device::ref()}) {
    SCOPED_TRACE(dev.str());
    const Tensor a0 = arange(12, {DType::f32, dev}).reshape({3, 4}) - 5.f;
    const Tensor b = arange(4, {DType::f32, dev}) + 1.f;
    Tensor a = a0.clone();
    const int64_t version = a.impl()->storage->version;
    void* data = a.raw_data();
    a.add_(b, 2).mul_(b).sub_(1.5).div_(b);
    EXPECT_EQ(a.raw_data(), data);
    EXPECT_EQ(a.impl()->storage->version, version + 4);  // one write per op
    EXPECT_EQ(vals(a), vals((((a0 + b * 2) * b) - 1.5) / b));
    Tensor s = a0.clone();
    s.add_(s);  // the operand is self element for element
    EXPECT_EQ(vals(s), vals(a0 * 2.f));
    Tensor sh = arange(6, {DType::f32, dev});  // operand overlapping self shifted by one
    EXPECT_THROW(sh.slice(0, 1, 6).add_(sh.slice(0, 0, 5)), Error);
    sh.slice(0, 1, 6).add_(sh.slice(0, 0, 5).clone());
    EXPECT_EQ(vals(sh), (std::vector<float>{0, 1, 3, 5, 7, 9}));
    Tensor st = a0.clone();
    st.t().mul_(b.reshape({4, 1}));  // strided (transposed) destination
    EXPECT_EQ(vals(st), vals(a0 * b));
    Tensor cl = randn({2, 3, 4, 5}, {dev}).contiguous(MemoryFormat::channels_last);
    const Tensor cl0 = cl.clone();
    cl.add_(cl0);
    EXPECT_EQ(cl.memory_format(), MemoryFormat::channels_last);
    EXPECT_EQ(vals(cl), vals(cl0 * 2.f));
    Tensor leaf = a0.clone().requires_grad_();
    Tensor y = leaf * 1.f;
    y.mul_(b);
    y.sum().backward();
    EXPECT_EQ(vals(leaf.grad()), vals(b.expand({3, 4})));
  }
}

TEST(TensorTest, ConversionsAndDevices) {
  Tensor x = tensor<float>({-1.7f, 2.5f, 300.f});
  EXPECT_EQ(x.to(DType::i32).to_vector<int>(), (std::vector<int>{-1, 2, 300}));
  EXPECT_EQ(x.to(DType::b8).to_vector<int>(), (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(x.to(DType::f16).to_vector<float>()[1], 2.5f);
  Tensor r = x.to(Device::ref());
  EXPECT_EQ(r.device(), Device::ref());
  EXPECT_EQ(vals(r), vals(x));
  EXPECT_EQ(Device::parse("ref"), Device::ref());
  EXPECT_EQ(Device::parse("ref:0"), Device::ref());
  EXPECT_EQ(Device::parse("cpu:0"), Device::cpu());
  EXPECT_EQ(DeviceKind::parse("IntegratedGpu(1)"), DeviceKind::IntegratedGpu(1));
  EXPECT_EQ(DeviceKind::parse("Cpu").str(), "Cpu");
}

// As Python's operators on torch tensors: bool results, broadcasting, promotion, NaN compares
// unequal to everything, a scalar on the left compares the other way round.
TEST(TensorTest, ComparisonOperatorsGiveBoolTensors) {
  const Tensor x = tensor<float>({1.f, 2.f, NAN, 3.f});
  const Tensor i = tensor<int64_t>({1, 3, 3, 3});
  auto v = [](const Tensor& t) {
    EXPECT_EQ(t.dtype(), DType::b8);
    return t.to_vector<int>();
  };
  using V = std::vector<int>;
  EXPECT_EQ(v(x > 1.5), (V{0, 1, 0, 1}));
  EXPECT_EQ(v(x >= 2), (V{0, 1, 0, 1}));
  EXPECT_EQ(v(x < 2), (V{1, 0, 0, 0}));
  EXPECT_EQ(v(x <= 2), (V{1, 1, 0, 0}));
  EXPECT_EQ(v(x == 2), (V{0, 1, 0, 0}));
  EXPECT_EQ(v(x != 2), (V{1, 0, 1, 1}));
  EXPECT_EQ(v(1.5 < x), (V{0, 1, 0, 1}));
  EXPECT_EQ(v(2 >= x), (V{1, 1, 0, 0}));
  EXPECT_EQ(v(2 == x), v(x == 2));
  EXPECT_EQ(v(x == x), (V{1, 1, 0, 1}));
  EXPECT_EQ(v(x != x), (V{0, 0, 1, 0}));
  EXPECT_EQ(v(x < i), (V{0, 1, 0, 0}));  // f32 vs i64 promotes to f32
  EXPECT_EQ(v(i > x), v(x < i));
  // Broadcasting: [2, 1] against [4].
  const Tensor col = tensor<float>({1.f, 3.f}).reshape({2, 1});
  const Tensor m = col < x;
  EXPECT_EQ(m.shape(), (Shape{2, 4}));
  EXPECT_EQ(v(m), (V{0, 1, 0, 1, 0, 0, 0, 0}));
  test::expect_error([&] { (void)(x < tensor<float>({1.f, 2.f})); }, {"[lt]", "[4]", "[2]"});
}

// operator% is torch's %, torch.remainder: the sign of the divisor, for floats and integers, in
// all three forms (tensor % tensor, tensor % scalar, scalar % tensor).
TEST(TensorTest, ModuloOperatorIsTorchRemainder) {
  const Tensor a = tensor<float>({-7.f, 7.f, -7.f, 7.f, 5.5f, -0.5f});
  const Tensor b = tensor<float>({3.f, -3.f, -3.f, 3.f, 2.f, 4.f});
  EXPECT_EQ((a % b).to_vector<float>(), (std::vector<float>{2.f, -2.f, -1.f, 1.f, 1.5f, 3.5f}));
  EXPECT_EQ((a % b).to_vector<float>(), remainder(a, b).to_vector<float>());
  const Tensor ai = tensor<int64_t>({-7, 7, -7, 7, 0});
  const Tensor bi = tensor<int64_t>({3, -3, -3, 3, -5});
  const Tensor ri = ai % bi;
  EXPECT_EQ(ri.dtype(), DType::i64);
  EXPECT_EQ(ri.to_vector<int64_t>(), (std::vector<int64_t>{2, -2, -1, 1, 0}));
  EXPECT_EQ((ai % 3).to_vector<int64_t>(), (std::vector<int64_t>{2, 1, 2, 1, 0}));
  EXPECT_EQ((ai % -3).to_vector<int64_t>(), (std::vector<int64_t>{-1, -2, -1, -2, 0}));
  EXPECT_EQ((7 % tensor<int64_t>({-3, 3, 5})).to_vector<int64_t>(),
            (std::vector<int64_t>{-2, 1, 2}));
  EXPECT_EQ((-7.5 % tensor<float>({2.f, -2.f})).to_vector<float>(),
            (std::vector<float>{0.5f, -1.5f}));
  // Broadcasting and promotion as every binary operator: i64 % f32 is f32.
  const Tensor p = tensor<int64_t>({-5, 5}, {2, 1}) % tensor<float>({3.f, -3.f});
  EXPECT_EQ(p.shape(), (Shape{2, 2}));
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{1.f, -2.f, 2.f, -1.f}));
  // By zero: an integer remainder throws, as remainder() does; a floating one is NaN.
  test::expect_error([&] { (void)(ai % 0); }, {"[remainder] integer division by zero"});
  test::expect_error(
      [&] {
        (void)(ai % tensor<int64_t>({1, 1, 0, 1, 1}));
      },
      {"[remainder] integer division by zero"});
  test::expect_error([&] { (void)(5 % tensor<int64_t>({0})); },
                     {"[remainder] integer division by zero"});
  const std::vector<float> z = (a % 0.0).to_vector<float>();
  EXPECT_TRUE(std::all_of(z.begin(), z.end(), [](float v) { return std::isnan(v); }));
}

TEST(TensorTest, HalfAndBFloat16RoundTrip) {
  EXPECT_EQ(float(Half(1.0f)), 1.0f);
  EXPECT_EQ(Half(1.0f).bits, 0x3c00);
  EXPECT_EQ(Half(65504.f).bits, 0x7bff);
  EXPECT_EQ(Half(1e6f).bits, 0x7c00);                        // overflow -> inf
  EXPECT_EQ(float(Half(5.96046448e-08f)), 5.96046448e-08f);  // smallest subnormal
  EXPECT_EQ(Half(1.0f + 1.0f / 2048).bits, 0x3c00);          // tie rounds to even
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(float(BFloat16(3.140625f)), 3.140625f);
  EXPECT_TRUE(std::isnan(float(BFloat16(NAN))));
}

TEST(TensorTest, PrintsLikePyTorch) {
  EXPECT_EQ(tensor<float>({1.f, 2.5f}).str(), "tensor([1.0000, 2.5000])");
  EXPECT_EQ(tensor<float>({1.f, 2.f, 3.f, 4.f}, {2, 2}).str(),
            "tensor([[1., 2.],\n        [3., 4.]])");
  EXPECT_EQ(tensor<int32_t>({1, 2}).str(), "tensor([1, 2], dtype=int32)");
  EXPECT_EQ(tensor<bool>({true, false}).str(), "tensor([ True, False])");
  EXPECT_EQ(scalar_tensor(3).str(), "tensor(3.)");
  const std::string big = zeros({2000}).str();
  EXPECT_NE(big.find("..."), std::string::npos);
  EXPECT_LT(big.size(), 100u);
}

TEST(TensorTest, RandomIsReproducibleAcrossBackends) {
  manual_seed(42);
  Tensor a = randn({100}, {DType::f32, Device::cpu()});
  manual_seed(42);
  Tensor b = randn({100}, {DType::f32, Device::ref()});
  EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
  Tensor c = randn({100}, {DType::f32, Device::ref()});
  EXPECT_NE(b.to_vector<float>(), c.to_vector<float>());  // the stream advances
  manual_seed(7);
  auto u = rand({1000}).to_vector<float>();
  for (float v : u) {
    EXPECT_GE(v, 0.f);
    EXPECT_LT(v, 1.f);
  }
  auto p = randperm(50).to_vector<int64_t>();
  std::sort(p.begin(), p.end());
  for (int64_t i = 0; i < 50; ++i) EXPECT_EQ(p[size_t(i)], i);
  auto ri = randint(3, 6, {200}).to_vector<int64_t>();
  for (auto v : ri) {
    EXPECT_GE(v, 3);
    EXPECT_LT(v, 6);
  }
  auto bern = bernoulli({100}, 0.0).to_vector<float>();
  for (float v : bern) EXPECT_EQ(v, 0.f);
  EXPECT_THROW(bernoulli({2}, 1.5), Error);
}

TEST(OpTableTest, CompareDetectsWrongValuesShapesAndDtypes) {
  using ember::testing::compare;
  Tensor a = tensor<float>({1.f, 2.f});
  EXPECT_EQ(compare(a, a.clone()), "");
  EXPECT_NE(compare(a, tensor<float>({1.f, 2.1f})), "");
  EXPECT_NE(compare(a, tensor<double>({1.0, 2.0})), "");
  EXPECT_NE(compare(a, a.reshape({2, 1})), "");
  EXPECT_EQ(compare(tensor<float>({NAN}), tensor<float>({NAN})), "");
  EXPECT_NE(compare(tensor<float>({NAN}), tensor<float>({0.f})), "");
}

// ---- in-place writes and memory overlap, as torch 1.13 (values from torch) ----

TEST(TensorTest, InPlaceIntoExpandedTensorIsRefusedAsTorch) {
  auto expanded = [] { return zeros({1, 3}).expand({2, 3}); };
  const std::string msg =
      "unsupported operation: more than one element of the written-to tensor refers to a single "
      "memory location";
  test::expect_error([&] { expanded().add_(1); }, {"[add_] " + msg});
  test::expect_error([&] { expanded().add_(ones({2, 3})); }, {"[add_] " + msg});
  test::expect_error([&] { expanded().sub_(1); }, {"[sub_] " + msg});
  test::expect_error([&] { expanded().mul_(2); }, {"[mul_] " + msg});
  test::expect_error([&] { expanded().div_(ones({3})); }, {"[div_] " + msg});
  test::expect_error([&] { expanded().copy_(ones({2, 3})); }, {"[copy_] " + msg});
  test::expect_error([&] { expanded().clamp_(0, 1); }, {"[clamp_] " + msg});
  test::expect_error([&] { expanded().uniform_(); }, {"[uniform_] " + msg});
  test::expect_error([&] { expanded().normal_(); }, {"[normal_] " + msg});
  test::expect_error(
      [&] {
        Tensor e = expanded();
        slice_assign_(e, 1, 0, 2, 1, ones({2}));
      },
      {"[slice_assign_] " + msg});
  test::expect_error([&] { zeros({}).expand({3}).add_(1); }, {"[add_] " + msg});
  // torch allows these: fill_/zero_ (one value), masked_fill_ (each memory location is filled
  // when any of its elements' mask is true), a size-1 or empty expansion, a copy onto itself.
  Tensor e = expanded();
  e.fill_(2);
  EXPECT_EQ(vals(e), std::vector<float>(6, 2.f));
  e.zero_();
  EXPECT_EQ(vals(e), std::vector<float>(6, 0.f));
  e.masked_fill_(tensor<bool>({true, false, false, false, true, false}, {2, 3}), 1);
  EXPECT_EQ(vals(e), (std::vector<float>{1, 1, 0, 1, 1, 0}));
  Tensor e2 = zeros({3, 1}).expand({3, 2});
  e2.masked_fill_(tensor<bool>({true, false, false, false, false, true}, {3, 2}), 1);
  EXPECT_EQ(vals(e2), (std::vector<float>{1, 1, 0, 0, 1, 1}));
  EXPECT_EQ(vals(zeros({1, 3}).expand({1, 3}).add_(1)), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(zeros({1, 3}).expand({0, 3}).add_(1).numel(), 0);
  Tensor self = expanded();
  self.copy_(self);
  EXPECT_EQ(vals(self), std::vector<float>(6, 0.f));
}

TEST(TensorTest, InPlaceWithAnOperandPartlyOverlappingItIsRefusedAsTorch) {
  const std::string msg =
      "unsupported operation: some elements of the input tensor and the written-to tensor refer "
      "to a single memory location";
  Tensor x = arange(5, DType::f32);
  test::expect_error([&] { x.slice(0, 1, 5).add_(x.slice(0, 0, 4)); }, {"[add_] " + msg});
  test::expect_error([&] { x.slice(0, 0, 4).add_(x.slice(0, 1, 5)); }, {"[add_] " + msg});
  test::expect_error([&] { x.slice(0, 1, 5).add_(x.slice(0, 0, 4), 2); }, {"[add_] " + msg});
  test::expect_error([&] { x.slice(0, 1, 5).copy_(x.slice(0, 0, 4)); }, {"[copy_] " + msg});
  test::expect_error([&] { x.slice(0, 0, 3).mul_(x.slice(0, 2, 5)); }, {"[mul_] " + msg});
  test::expect_error([&] { slice_assign_(x, 0, 1, 5, 1, x.slice(0, 0, 4)); },
                     {"[slice_assign_] " + msg});
  Tensor m = arange(4, DType::f32).reshape({2, 2});
  test::expect_error([&] { m.add_(m.t()); }, {"[add_] " + msg});
  test::expect_error([&] { m.add_(m[0]); }, {"[add_] " + msg});  // broadcast: still partial
  Tensor b = tensor<bool>({true, false, true, false});
  test::expect_error([&] { b.slice(0, 1, 4).masked_fill_(b.slice(0, 0, 3), false); },
                     {"[masked_fill_] " + msg});
  EXPECT_EQ(vals(x), (std::vector<float>{0, 1, 2, 3, 4}));  // nothing was written
  // Allowed as in torch: the very same elements, disjoint parts, and operands torch cannot
  // decide about (neither is dense).
  x.add_(x);
  EXPECT_EQ(vals(x), (std::vector<float>{0, 2, 4, 6, 8}));
  x.view({5}).add_(x);
  EXPECT_EQ(vals(x), (std::vector<float>{0, 4, 8, 12, 16}));
  m[1].add_(m[0]);
  EXPECT_EQ(vals(m), (std::vector<float>{0, 1, 2, 4}));
  Tensor w = arange(6, DType::f32).reshape({2, 3});
  w.slice(1, 0, 2).add_(w.slice(1, 1, 3));
  EXPECT_EQ(vals(w), (std::vector<float>{1, 3, 2, 7, 9, 5}));
}

TEST(TensorTest, InPlaceIntoOverlappingUnfoldWindowsWritesElementByElementAsTorch) {
  // torch loops over the elements, so an element in two windows is updated twice.
  Tensor x = arange(4, DType::f32);
  x.unfold(0, 2, 1).add_(1);
  EXPECT_EQ(vals(x), (std::vector<float>{1, 3, 4, 4}));
  x = arange(4, DType::f32);
  x.unfold(0, 2, 1).mul_(2);
  EXPECT_EQ(vals(x), (std::vector<float>{0, 4, 8, 6}));
  x = arange(10, DType::f32);
  x.unfold(0, 4, 2).add_(ones({4}));
  EXPECT_EQ(vals(x), (std::vector<float>{1, 2, 4, 5, 6, 7, 8, 9, 9, 10}));
  x = arange(6, DType::f32);
  x.unfold(0, 3, 1).clamp_(0, 1);
  EXPECT_EQ(vals(x), (std::vector<float>{0, 1, 1, 1, 1, 1}));
  // copy_: the last write in torch's loop order wins.
  x = arange(4, DType::f32);
  x.unfold(0, 2, 1).copy_(arange(6, DType::f32).reshape({3, 2}));
  EXPECT_EQ(vals(x), (std::vector<float>{0, 2, 4, 5}));
  x = zeros({7});
  x.unfold(0, 3, 2).t().copy_(arange(1, 10, 1, DType::f32).reshape({3, 3}));
  EXPECT_EQ(vals(x), (std::vector<float>{1, 4, 2, 5, 3, 6, 9}));
  x = zeros({4});
  x.unfold(0, 2, 1).t().copy_(arange(1, 7, 1, DType::f32).reshape({2, 3}));
  EXPECT_EQ(vals(x), (std::vector<float>{1, 2, 3, 6}));
  x = zeros({4});
  x.unfold(0, 2, 1).copy_(arange(1, 7, 1, DType::f32).reshape({2, 3}).t());
  EXPECT_EQ(vals(x), (std::vector<float>{1, 4, 5, 6}));
  x = arange(4, DType::f32);
  x.unfold(0, 2, 1).fill_(7);
  EXPECT_EQ(vals(x), std::vector<float>(4, 7.f));
  // The gradient through the windows read after the write adds up per element (torch's
  // AsStridedBackward): d sum(u * w) / da.
  Tensor a = arange(4, DType::f32).requires_grad_();
  Tensor xa = a * 1;
  Tensor u = xa.unfold(0, 2, 1);
  u.add_(1);
  EXPECT_EQ(vals(u), (std::vector<float>{1, 3, 3, 4, 4, 4}));
  sum(u * tensor<float>({1, 2, 3, 4, 5, 6}, {3, 2})).backward();
  EXPECT_EQ(vals(a.grad()), (std::vector<float>{1, 5, 9, 6}));
}

// Accessors on temporaries return copies (issue 14 item 1): iterating the shape of a tensor
// that only the expression holds must not read freed memory (ASan checks this in CI).
TEST(TensorTemporaryTest, ShapeAndStridesOfTemporariesAreCopies) {
  static_assert(std::is_same_v<decltype(ones({2, 3}).shape()), Shape>);
  static_assert(std::is_same_v<decltype(ones({2, 3}).strides()), Strides>);
  const Tensor x = ones({2, 3});
  static_assert(std::is_same_v<decltype(x.shape()), const Shape&>);
  std::vector<int64_t> dims;
  for (int64_t d : (x * 2).transpose(0, 1).shape()) dims.push_back(d);
  EXPECT_EQ(dims, (std::vector<int64_t>{3, 2}));
  std::vector<int64_t> strides;
  for (int64_t s : ones({4, 5}).strides()) strides.push_back(s);
  EXPECT_EQ(strides, (std::vector<int64_t>{5, 1}));
  EXPECT_EQ(zeros({7}).sizes()[0], 7);
}
