// Tensor::index / index_put_ (LibTorch's x.index({...})) against torch 1.13: each case of
// tests/data/golden/tensor_index.json (tests/golden/gen_tensor_index.py) runs the C++ expression
// of tests/golden/tensor_index_cases.inc on the ref, cpu and Vulkan backends and compares the
// result (dtype, shape, values), whether it is a view of x as in torch (and then that writing
// through it reaches x), and the gradients of sum(out * w) w.r.t. x and the value. Hand-written
// tests below cover aliasing, overloads, printing and errors.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "test_util.h"

using json = nlohmann::json;
using namespace ember;
using namespace ember::indexing;
using ember::test::expect_error;

namespace {

const std::string kFile = std::string(EMBER_TEST_DATA_DIR) + "/golden/tensor_index.json";
constexpr double kFill = -7.5;  // FILL in the generator

struct Case {
  std::vector<Tensor> tensors;  // the index tensors, c.t(k) in the expressions
  const Tensor& t(size_t k) const { return tensors.at(k); }
};
using Expr = Tensor (*)(Tensor& x, const Tensor& v, const Case& c);
struct Named {
  const char* name;
  Expr fn;
};

#define EMBER_INDEX_CASE(name, ...)                                                \
  {#name, [](Tensor& x, const Tensor&, [[maybe_unused]] const Case& c) -> Tensor { \
     return __VA_ARGS__;                                                           \
   }},
#define EMBER_PUT_CASE(name, ...)                                                              \
  {#name,                                                                                      \
   [](Tensor& y, [[maybe_unused]] const Tensor& v, [[maybe_unused]] const Case& c) -> Tensor { \
     __VA_ARGS__;                                                                              \
     return y;                                                                                 \
   }},
const Named kCases[] = {
#include "golden/tensor_index_cases.inc"
};
#undef EMBER_INDEX_CASE
#undef EMBER_PUT_CASE

const json& golden() {
  static const json j = [] {
    std::ifstream f(kFile);
    if (!f)
      throw std::runtime_error("cannot open " + kFile +
                               " (run /usr/bin/python3 tests/golden/gen_tensor_index.py)");
    return json::parse(f);
  }();
  return j;
}

Tensor from_json(const json& j, Device dev) {
  const DType dt = dtype_from_name(j["dtype"].get<std::string>());
  const Shape shape = j["shape"].get<std::vector<int64_t>>();
  std::vector<double> v;
  for (const auto& e : j["data"])
    v.push_back(e.is_boolean() ? double(e.get<bool>()) : e.get<double>());
  return from_vector<double>(v, shape, dev).to(dt);
}

void expect_equal(const Tensor& got, const json& want, const std::string& what, double tol = 0) {
  ASSERT_TRUE(got.defined()) << what;
  EXPECT_EQ(dtype_name(got.dtype()), want["dtype"].get<std::string>()) << what;
  ASSERT_EQ(got.shape(), want["shape"].get<std::vector<int64_t>>()) << what;
  const std::vector<double> g = got.to_vector<double>();
  const json& d = want["data"];
  ASSERT_EQ(g.size(), d.size()) << what;
  for (size_t k = 0; k < g.size(); ++k) {
    const double w = d[k].is_boolean() ? double(d[k].get<bool>()) : d[k].get<double>();
    EXPECT_NEAR(g[k], w, tol) << what << " at " << k;
  }
}

Tensor grad_or_zeros(const Tensor& t) { return t.grad().defined() ? t.grad() : zeros_like(t); }

void run_case(size_t k, Device dev) {
  const json& g = golden().at(k);
  const Named& n = kCases[k];
  ASSERT_EQ(g["name"].get<std::string>(), n.name) << "tensor_index_cases.inc and the JSON differ";
  Case c;
  for (const auto& t : g["tensors"]) c.tensors.push_back(from_json(t, dev));
  const Tensor x = from_json(g["x"], dev);
  const json& jv = g.contains("value") ? g["value"] : json();
  const Tensor v = jv.is_object() && !jv.contains("scalar") ? from_json(jv, dev) : Tensor();
  const bool put = g["kind"] == "put";

  // The result (index) or the tensor after the write (index_put_).
  Tensor in = x.clone();
  const Tensor out = n.fn(in, v, c);
  expect_equal(out, g["out"], "result");
  if (!put) {
    const bool torch_view = g["view"].get<bool>();
    if (torch_view || out.numel() > 0) {
      EXPECT_EQ(out.is_alias_of(in), torch_view) << "a view of x in torch: " << torch_view;
    }
    if (torch_view) {  // writing through the view reaches x, at torch's positions
      Tensor xf = x.clone();
      n.fn(xf, v, c).fill_(kFill);
      expect_equal(xf, g["filled"], "x after filling the view");
    }
  }

  if (!g.contains("grad_x")) return;
  const Tensor w = from_json(g["w"], dev);
  Tensor xg = x.clone().requires_grad_();
  Tensor vg = g.contains("grad_value") ? v.clone().requires_grad_() : v;
  if (put) {
    Tensor y = xg.clone();
    n.fn(y, vg, c);
    (y * w).sum().backward();
  } else {
    (n.fn(xg, vg, c) * w).sum().backward();
  }
  expect_equal(grad_or_zeros(xg), g["grad_x"], "grad of x", 1e-6);
  if (g.contains("grad_value"))
    expect_equal(grad_or_zeros(vg), g["grad_value"], "grad of value", 1e-6);
}

class GoldenCase : public ::testing::Test {
 public:
  GoldenCase(size_t k, std::optional<Device> dev) : k_(k), dev_(dev) {}
  void TestBody() override {
    if (dev_) return run_case(k_, *dev_);
    EMBER_VULKAN_OR_SKIP(dev);  // opened here, not while registering
    for (const char* dt : {"float32", "int64", "bool"})
      if (!supports_dtype(dev, dtype_from_name(dt))) GTEST_SKIP() << dt << " not on " << dev;
    run_case(k_, dev);
  }

 private:
  size_t k_;
  std::optional<Device> dev_;  // none: the Vulkan device
};

// One gtest per case and backend: TensorIndexGolden.<case>/ref, .../cpu, .../vulkan.
const bool kRegistered = [] {
  std::vector<std::pair<std::string, std::optional<Device>>> devs = {{"ref", Device::ref()},
                                                                     {"cpu", Device::cpu()}};
#ifdef EMBER_HAVE_VULKAN
  devs.emplace_back("vulkan", std::nullopt);
#endif
  for (size_t k = 0; k < std::size(kCases); ++k)
    for (const auto& [tag, dev] : devs)
      ::testing::RegisterTest(
          "TensorIndexGolden", (std::string(kCases[k].name) + "/" + tag).c_str(), nullptr, nullptr,
          __FILE__, __LINE__,
          [k, dev = dev]() -> ::testing::Test* { return new GoldenCase(k, dev); });
  return true;
}();

Tensor arange3() { return arange(24, DType::f32).reshape({2, 3, 4}); }

}  // namespace

TEST(TensorIndexTest, GoldenCoversEveryCase) {
  ASSERT_EQ(golden().size(), std::size(kCases));
  std::set<std::string> names;
  int64_t index = 0, put = 0;
  for (size_t k = 0; k < std::size(kCases); ++k) {
    EXPECT_EQ(golden()[k]["name"].get<std::string>(), kCases[k].name);
    EXPECT_TRUE(names.insert(kCases[k].name).second) << "duplicate case " << kCases[k].name;
    (golden()[k]["kind"] == "put" ? put : index)++;
  }
  EXPECT_GE(index, 40);
  EXPECT_GE(put, 20);
}

TEST(TensorIndexTest, BasicIndicesAreViewsThatWriteThrough) {
  Tensor x = arange3();
  Tensor col = x.index({Slice(), 0});  // [2, 4]
  ASSERT_TRUE(col.is_alias_of(x));
  col.fill_(-1);
  EXPECT_EQ(x.index({1, 0, 3}).item<float>(), -1.f);
  EXPECT_EQ(x.index({1, 1, 3}).item<float>(), 19.f);
  // Through a chain of views: x[1][None, ..., 1::2] then an in-place op.
  Tensor v = x.index({1}).index({None, Ellipsis, Slice(1, None, 2)});
  EXPECT_EQ(v.shape(), (Shape{1, 3, 2}));
  v.mul_(0);
  EXPECT_EQ(x.index({1, 2, 1}).item<float>(), 0.f);
  EXPECT_EQ(x.index({1, 2, 2}).item<float>(), 22.f);
  // {Ellipsis} is a new view, not x itself (torch's alias).
  Tensor all = x.index({Ellipsis});
  EXPECT_NE(all.impl(), x.impl());
  EXPECT_TRUE(all.is_alias_of(x));
  // index_put_ on a basic view writes x; advanced results are copies.
  x.index({0}).index_put_({Slice(), 1}, 100.0);
  EXPECT_EQ(x.index({0, 2, 1}).item<float>(), 100.f);
  Tensor adv = x.index({Slice(), tensor<int64_t>({0, 2})});
  EXPECT_FALSE(adv.is_alias_of(x));
  EXPECT_FALSE(x.index({true}).is_alias_of(x));  // bools are advanced, as torch
}

TEST(TensorIndexTest, IndexPutWritesInPlaceAndReturnsSelf) {
  Tensor x = zeros({3, 4});
  const Tensor alias = x;
  Tensor& r = x.index_put_({Slice(), 0}, tensor<float>({1, 2, 3}));
  EXPECT_EQ(&r, &x);
  EXPECT_EQ(alias.to_vector<float>(), (std::vector<float>{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0}));
  x.index_put_({tensor<int64_t>({2, 0}), Slice(1, 3)}, 5);
  EXPECT_EQ(alias.index({0}).to_vector<float>(), (std::vector<float>{1, 5, 5, 0}));
  EXPECT_EQ(alias.index({2}).to_vector<float>(), (std::vector<float>{3, 5, 5, 0}));
  // A mask of x's own shape, as x[x > 4] = 0.
  x.index_put_({gt(x, 4)}, 0.0);
  EXPECT_EQ(amax(x).item<float>(), 3.f);
}

TEST(TensorIndexTest, IntegerTypesAndListsAllConvert) {
  Tensor x = arange3();
  const int i = 1;
  const long l = 1;
  const int64_t q = 1;
  const size_t z = 1;
  const unsigned u = 1;
  const short s = 1;
  for (const Tensor& t :
       {x.index({i}), x.index({l}), x.index({q}), x.index({z}), x.index({u}), x.index({s})})
    EXPECT_EQ(t.to_vector<float>(), x.select(0, 1).to_vector<float>());
  // A list built at run time, as LibTorch's std::vector<TensorIndex>.
  std::vector<TensorIndex> idx;
  idx.emplace_back(Slice());
  idx.emplace_back(Slice(None, -1));
  idx.emplace_back(TensorIndex({3, 0}));
  EXPECT_EQ(x.index(idx).shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(x.index(idx).to_vector<float>(), (std::vector<float>{3, 0, 7, 4, 15, 12, 19, 16}));
  x.index_put_(idx, 0.5);
  EXPECT_EQ(x.index({1, 1, 0}).item<float>(), 0.5f);
  // TensorIndex's queries, as LibTorch's.
  const TensorIndex t = true, n = None, e = Ellipsis, k = -3, sl = Slice(1, None, 2);
  EXPECT_TRUE(t.is_boolean() && t.boolean());
  EXPECT_TRUE(n.is_none());
  EXPECT_TRUE(e.is_ellipsis());
  EXPECT_TRUE(k.is_integer() && k.integer() == -3);
  EXPECT_TRUE(sl.is_slice() && sl.slice().start() == 1 && !sl.slice().stop() &&
              sl.slice().step() == 2);
  EXPECT_TRUE(TensorIndex("...").is_ellipsis());
}

TEST(TensorIndexTest, IndicesPrintAsLibTorch) {
  std::ostringstream os;
  os << TensorIndex(Slice(1, None, 2)) << ' ' << TensorIndex(None) << ' ' << TensorIndex(Ellipsis)
     << ' ' << TensorIndex(-2) << ' ' << TensorIndex(false) << ' ' << TensorIndex({0, 1});
  EXPECT_EQ(os.str(), "1:None:2 None ... -2 false Tensor int64 [2]");
}

TEST(TensorIndexTest, GradientsFlowThroughIndexAndIndexPut) {
  // y = x.clone(); y[:, i] = v * 2; loss = sum(y * y)  -> dx = 2x outside the written columns.
  Tensor x = arange(6, DType::f32).reshape({2, 3}).requires_grad_();
  Tensor v = tensor<float>({1, -1}).reshape({2, 1}).requires_grad_();
  Tensor y = x.clone();
  y.index_put_({Slice(), tensor<int64_t>({2})}, v * 2);
  (y * y).sum().backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{0, 2, 0, 6, 8, 0}));
  EXPECT_EQ(v.grad().to_vector<float>(), (std::vector<float>{8, -8}));  // d(2v)^2/dv = 8v
  // index of index: duplicates accumulate into x's gradient.
  Tensor z = arange(4, DType::f32).requires_grad_();
  z.index({tensor<int64_t>({1, 1, 3})}).index({Slice(None, 2)}).sum().backward();
  EXPECT_EQ(z.grad().to_vector<float>(), (std::vector<float>{0, 2, 0, 0}));
  // Writing a value that requires grad into a tensor that does not makes it part of the graph,
  // through both paths (basic: copy_ into the view; advanced: index_put).
  Tensor w = tensor<float>({3}).requires_grad_();
  Tensor t = zeros({2, 3});
  t.index_put_({0, Slice(1, None)}, w);
  t.index_put_({tensor<int64_t>({1, 1}), tensor<int64_t>({0, 2})}, w * 2);
  ASSERT_TRUE(t.requires_grad());
  (t * arange(6, DType::f32).reshape({2, 3})).sum().backward();
  EXPECT_EQ(w.grad().item<float>(), 1 + 2 + 2 * (3 + 5));
}

TEST(TensorIndexTest, BadIndicesThrowNamingShapes) {
  Tensor x = zeros({2, 3, 4});
  expect_error([&] { x.index(std::vector<TensorIndex>{}); }, {"[index]", "empty index list"});
  expect_error(
      [&] {
        x.index({0, 0, 0, 0});
      },
      {"[index]", "too many indices for tensor of dimension 3", "[2, 3, 4]"});
  expect_error(
      [&] {
        x.index({Slice(), 3});
      },
      {"[index]", "index 3 is out of range for dim 1 of size 3", "[2, 3, 4]"});
  expect_error([&] { x.index({-3}); }, {"[index]", "index -3", "dim 0 of size 2"});
  expect_error(
      [&] {
        x.index({None, Slice(), tensor<int64_t>({0, 3})});
      },
      {"[index]", "index 3 is out of range for dim 1 of size 3", "[2, 3, 4]"});
  expect_error(
      [&] {
        x.index({Slice(), tensor<bool>({true, false})});
      },
      {"[index]", "mask [2]", "does not match the shape [3]", "[2, 3, 4]"});
  expect_error([&] { x.index({Ellipsis, 0, Ellipsis}); }, {"[index]", "single Ellipsis"});
  expect_error([&] { x.index({Slice(None, None, 0)}); },
               {"[index]", "step must be greater than zero"});
  expect_error([&] { x.index({tensor<float>({0})}); },
               {"[index]", "must be integer, bool or uint8", "float32 [1]"});
  expect_error(
      [&] {
        x.index({tensor<int64_t>({0, 1}), Slice(), tensor<int64_t>({0, 1, 2})});
      },
      {"[index]", "[2]", "[3]", "[2, 3, 4]"});
  expect_error([&] { scalar_tensor(1.0).index({0}); },
               {"[index]", "too many indices for tensor of dimension 0"});
  expect_error([&] { TensorIndex("::"); }, {"[index]", "\"...\""});
  expect_error(
      [&] {
        x.index_put_({0}, zeros({2, 4}));
      },
      {"[index_put_]", "value [2, 4] cannot be broadcast to the indexed shape [3, 4]"});
  expect_error(
      [&] {
        x.index_put_({tensor<int64_t>({0})}, zeros({3, 4}, DType::f64));
      },
      {"[index_put_]", "float64", "float32"});
  expect_error(
      [&] {
        x.index_put_({tensor<int64_t>({0})}, zeros({2, 4}));
      },
      {"[index_put_]", "[2, 4]", "[1, 3, 4]"});
  // In place on a leaf that requires grad is refused, as every in-place op (torch too).
  Tensor leaf = zeros({2, 2}).requires_grad_();
  EXPECT_THROW(leaf.index_put_({0}, 1.0), Error);
  EXPECT_THROW(leaf.index_put_({tensor<int64_t>({0})}, 1.0), Error);
}
