// The wasm cpu backend's SIMD (and, in the pthreads build, threaded) kernels against the
// reference backend: random inputs of odd sizes, broadcasts, strided views, batches, the MNIST
// CNN's layer shapes, empty tensors, NaN and signed zeros.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backends/wasm/wasm_backend.h"
#include "ember/ember.h"
#include "wasm_test_util.h"

namespace ember {
namespace {

namespace F = nn::functional;
using wasm_test::expect_match;
using wasm_test::rnd;

const Device kRef = Device::ref();
const Device kCpu = Device::cpu();

TEST(WasmBackend, IsTheCpuDevice) {
  const DeviceInfo info = backend_for(kCpu).info();
  EXPECT_EQ(info.name, "wasm (WebAssembly)");
  EXPECT_NE(info.details.find("SIMD128"), std::string::npos) << info.details;
}

// 8 GiB is past wasm32's address space: a clear error, not a size_t that wraps to a small
// buffer (a batch of 100,000 MNIST images overran memory that way).
TEST(WasmBackend, AllocationsPastTheAddressSpaceAreErrors) {
  for (const Device& d : {kCpu, Device::ref()}) {
    try {
      (void)empty({int64_t(1) << 31, 4}, TensorOptions(DType::f32, d));
      ADD_FAILURE() << "8 GiB allocated on " << d.str();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("address space"), std::string::npos) << e.what();
    }
  }
}

// ---- matmul ----

struct MatmulShape {
  int64_t m, k, n;
};

TEST(WasmMatmul, MatchesRefOnOddSizes) {
  const MatmulShape shapes[] = {{1, 1, 1},      {1, 7, 5},     {3, 9, 17},   {4, 8, 8},
                                {5, 3, 9},      {7, 300, 13},  {17, 33, 65}, {64, 288, 576},
                                {2, 9216, 128}, {33, 257, 40}, {129, 20, 7}, {1, 100, 3}};
  uint64_t seed = 1;
  for (const auto& s : shapes) {
    Tensor a = rnd({s.m, s.k}, ++seed), b = rnd({s.k, s.n}, ++seed);
    const std::string what =
        "matmul " + std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n);
    // Row-major operands: each output sums in k order, as the reference: the same bits.
    expect_match([](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }, {a, b}, what,
                 0.0);
    // Transposed operands (a Linear's weight.t(), a backward's a.t()) and stepped views.
    expect_match(
        [](const std::vector<Tensor>& in) {
          return matmul(in[0].t().contiguous().t(), in[1].t().contiguous().t());
        },
        {a, b}, what + " column-major", 1e-5 * std::sqrt(double(s.k)));
    expect_match(
        [](const std::vector<Tensor>& in) {
          Tensor a2 = cat({in[0], in[0]}, 1).slice(1, 0, 2 * in[0].size(1), 2);
          return matmul(a2, in[1]);
        },
        {a, b}, what + " stepped", 0.0);
  }
}

TEST(WasmMatmul, BatchedAndBroadcast) {
  Tensor a = rnd({3, 5, 19}, 11), b = rnd({3, 19, 10}, 12), w = rnd({19, 6}, 13);
  expect_match([](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }, {a, b},
               "batched", 0.0);
  expect_match([](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }, {a, w},
               "broadcast b", 0.0);
  // Many small products (split across threads one product each) and a non-contiguous dst
  // layout through a transposed result.
  Tensor x = rnd({40, 6, 7}, 14), y = rnd({40, 7, 9}, 15);
  expect_match([](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }, {x, y},
               "many small", 0.0);
  expect_match(
      [](const std::vector<Tensor>& in) {
        return matmul(in[1].transpose(1, 2), in[0].transpose(1, 2)).transpose(1, 2);
      },
      {x, y}, "transposed", 1e-5 * std::sqrt(7.0));
}

TEST(WasmMatmul, EmptyAndNonFinite) {
  for (const auto& s : std::vector<MatmulShape>{{0, 3, 4}, {3, 0, 4}, {3, 4, 0}}) {
    Tensor a = rnd({s.m, s.k}, 21), b = rnd({s.k, s.n}, 22);
    expect_match([](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }, {a, b},
                 "empty", 0.0);
  }
  Tensor a = rnd({9, 12}, 23), b = rnd({12, 11}, 24);
  std::vector<float> av = a.to_vector<float>();
  av[5] = std::numeric_limits<float>::quiet_NaN();
  av[40] = std::numeric_limits<float>::infinity();
  a = from_vector<float>(av, {9, 12}, kRef);
  expect_match([](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }, {a, b},
               "nan/inf", 0.0);
}

// ---- element-wise ----

TEST(WasmElementwise, BinaryBroadcastsAndViews) {
  using Fn = Tensor (*)(const Tensor&, const Tensor&);
  const std::pair<const char*, Fn> ops[] = {
      {"add", [](const Tensor& a, const Tensor& b) { return a + b; }},
      {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }}};
  const std::pair<Shape, Shape> shapes[] = {
      {{7, 33}, {7, 33}},    {{7, 33}, {33}}, {{4, 5, 6}, {1, 5, 1}}, {{3, 1, 9}, {1, 4, 1}},
      {{1031}, {1}},         {{}, {}},        {{0, 5}, {5}},          {{2, 64, 26, 26}, {64, 1, 1}},
      {{300, 129}, {300, 1}}};
  uint64_t seed = 100;
  for (const auto& [name, op_fn] : ops)
    for (const auto& [sa, sb] : shapes) {
      const Fn fn = op_fn;
      Tensor a = rnd(sa, ++seed), b = rnd(sb, ++seed);
      const std::string what = std::string(name) + " " + shape_str(sa) + " " + shape_str(sb);
      expect_match([fn](const std::vector<Tensor>& in) { return fn(in[0], in[1]); }, {a, b}, what,
                   0.0);
      if (a.dim() >= 2)  // permuted and stepped views of a
        expect_match(
            [fn](const std::vector<Tensor>& in) {
              Tensor p = in[0].transpose(0, 1).contiguous().transpose(0, 1);
              Tensor s = cat({in[0], in[0]}, -1).slice(-1, 0, 2 * in[0].size(-1), 2);
              return cat({fn(p, in[1]), fn(s, in[1])}, 0);
            },
            {a, b}, what + " views", 0.0);
    }
}

TEST(WasmElementwise, NanAndSignedZerosAsRef) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = INFINITY;
  std::vector<float> av = {nan, 1, -0.f, 0.f, -0.f, 2, nan, -inf, 3, 0.f, inf, -1, -0.f};
  std::vector<float> bv = {1, nan, 0.f, -0.f, -0.f, 2, nan, 5, -inf, 0.f, nan, -1, 0.f};
  Tensor a = from_vector<float>(av, {13}, kRef), b = from_vector<float>(bv, {13}, kRef);
  expect_match([](const std::vector<Tensor>& in) { return maximum(in[0], in[1]); }, {a, b},
               "maximum", 0.0);
  expect_match([](const std::vector<Tensor>& in) { return minimum(in[0], in[1]); }, {a, b},
               "minimum", 0.0);
  expect_match([](const std::vector<Tensor>& in) { return in[0] / in[1]; }, {a, b}, "div", 0.0);
  expect_match([](const std::vector<Tensor>& in) { return abs(in[0]); }, {a}, "abs", 0.0);
  expect_match([](const std::vector<Tensor>& in) { return -in[0]; }, {a}, "neg", 0.0);
  expect_match([](const std::vector<Tensor>& in) { return sqrt(in[0]); }, {a}, "sqrt", 0.0);
}

// relu keeps -0 and NaN (the reference's source: x < 0 ? 0 : x). The reference compiled by
// emscripten 3.1.6's LLVM 14 gives +0 for -0 (it lowers that select to f32.max), so this checks
// the values themselves.
TEST(WasmElementwise, ReluKeepsNegativeZeroAndNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> y =
      F::relu(from_vector<float>({-0.f, nan, -1.f, 2.f, 0.f, -3.f, -0.f, 4.f, -0.f}, {9}, kCpu))
          .to_vector<float>();
  for (size_t i : {size_t(0), size_t(6), size_t(8)})
    EXPECT_TRUE(y[i] == 0 && std::signbit(y[i])) << i;
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_TRUE(y[2] == 0 && !std::signbit(y[2]));
  EXPECT_EQ(y[3], 2.f);
  EXPECT_EQ(y[7], 4.f);
}

TEST(WasmElementwise, UnaryCopyFillInPlace) {
  Tensor x = rnd({37, 29}, 7);
  expect_match(
      [](const std::vector<Tensor>& in) {
        return cat({F::relu(in[0]), -in[0], abs(in[0]), square(in[0]), sqrt(abs(in[0])),
                    F::relu(in[0].t()).t()},
                   0);
      },
      {x}, "unary", 0.0);
  expect_match(
      [](const std::vector<Tensor>& in) {
        Tensor y = in[0].t().contiguous();  // strided copy
        Tensor z = full({5, 7}, 2.5, {DType::f32, in[0].device()});
        Tensor w = in[0].clone();
        w.add_(in[0].slice(0, 0, 1));  // in place, b broadcast along rows
        w.mul_(3.0);
        return cat(
            {y.flatten(), z.flatten(), w.flatten(), in[0].to(DType::i32).to(DType::f32).flatten()},
            0);
      },
      {x}, "copy/fill/in-place", 0.0);
}

// ---- reductions ----

TEST(WasmReduce, LastDimSumMaxMin) {
  uint64_t seed = 300;
  for (const Shape& s : std::vector<Shape>{{1}, {3}, {5, 7}, {64, 9216}, {4, 3, 1031}, {10, 1}}) {
    Tensor x = rnd(s, ++seed);
    expect_match(
        [](const std::vector<Tensor>& in) {
          return cat({sum(in[0], {-1}).flatten(), amax(in[0], {-1}).flatten(),
                      amin(in[0], {-1}).flatten(), sum(in[0]).flatten()},
                     0);
        },
        {x}, "reduce " + shape_str(s), 1e-6);
  }
  // NaN propagates; the first of equal zeros wins.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> v = {-0.f, 0.f, -1, -2,  -3,   0.f, -0.f, -5, 1,  nan, 2,  3,
                          -7,   -8,  -9, 0.f, -0.f, -1,  -1,   -1, -1, -1,  -1, -0.f};
  Tensor z = from_vector<float>(v, {3, 8}, kRef);
  expect_match(
      [](const std::vector<Tensor>& in) {
        return cat({amax(in[0], {-1}), amin(in[0], {-1}), -amax(-in[0], {-1})}, 0);
      },
      {z}, "reduce specials", 0.0);
}

// ---- convolution and pooling ----

struct ConvCase {
  Shape x, w;
  int64_t stride, pad, dilation;
  bool bias;
};

TEST(WasmConv, MatchesRef) {
  const ConvCase cases[] = {
      {{1, 1, 28, 28}, {32, 1, 3, 3}, 1, 0, 1, true},    // MNIST conv1, one digit
      {{1, 32, 26, 26}, {64, 32, 3, 3}, 1, 0, 1, true},  // MNIST conv2
      {{5, 1, 28, 28}, {32, 1, 3, 3}, 1, 0, 1, true},    // a batch
      {{3, 3, 11, 9}, {5, 3, 3, 2}, 2, 1, 1, false},     // stride, padding, odd sizes
      {{2, 4, 10, 10}, {6, 4, 3, 3}, 1, 2, 2, true},     // dilation
      {{2, 3, 5, 5}, {4, 3, 1, 1}, 1, 0, 1, true},       // 1x1
  };
  uint64_t seed = 500;
  for (const auto& c : cases) {
    Tensor x = rnd(c.x, ++seed), w = rnd(c.w, ++seed), b = rnd({c.w[0]}, ++seed);
    const std::string what = "conv2d x" + shape_str(c.x) + " w" + shape_str(c.w);
    auto fn = [c](const std::vector<Tensor>& in) {
      return F::conv2d(in[0], in[1], c.bias ? in[2] : Tensor(), {c.stride, c.stride},
                       {c.pad, c.pad}, {c.dilation, c.dilation});
    };
    expect_match(fn, {x, w, b}, what, 1e-5);
    // A strided input and a channels-last one (the latter runs the composite).
    expect_match(
        [fn](const std::vector<Tensor>& in) {
          Tensor xs = cat({in[0], in[0]}, -1).slice(-1, 0, 2 * in[0].size(-1), 2);
          return cat(
              {fn({xs, in[1], in[2]}),
               fn({in[0].contiguous(MemoryFormat::channels_last), in[1], in[2]}).contiguous()},
              0);
        },
        {x, w, b}, what + " views", 1e-5);
  }
}

TEST(WasmPool, MaxPoolMatchesRef) {
  uint64_t seed = 600;
  struct P {
    Shape x;
    int64_t k, s, p;
  };
  for (const P& c : {P{{2, 64, 24, 24}, 2, 2, 0}, P{{1, 3, 7, 7}, 2, 2, 0},
                     P{{2, 3, 9, 8}, 3, 1, 1}, P{{1, 2, 6, 6}, 3, 2, 1}}) {
    Tensor x = rnd(c.x, ++seed);
    std::vector<float> v = x.to_vector<float>();
    v[3] = std::numeric_limits<float>::quiet_NaN();
    v[v.size() / 2] = -0.f;
    v[v.size() / 2 + 1] = 0.f;
    x = from_vector<float>(v, c.x, kRef);
    expect_match(
        [c](const std::vector<Tensor>& in) {
          return F::max_pool2d(in[0], {c.k, c.k}, {c.s, c.s}, {c.p, c.p});
        },
        {x}, "max_pool2d " + shape_str(c.x), 0.0);
  }
}

TEST(WasmIm2col, MatchesRef) {
  Tensor x = rnd({2, 3, 9, 7}, 700);
  expect_match(
      [](const std::vector<Tensor>& in) {
        return F::unfold(in[0], {3, 2}, {1, 2}, {1, 0}, {2, 1});
      },
      {x}, "unfold", 0.0);
}

}  // namespace
}  // namespace ember
