// The kernel generator's elementwise family and common helpers, without a device: every kernel
// of copy/fill/unary/binary/where/random for every dtype is rendered (Caps with every feature)
// and validated by glslangValidator when it is installed; params, indexing and errors are
// checked by value.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include "codegen/common.h"
#include "codegen/kernel.h"
#include "ember/ember.h"
#include "ir/op_traits.h"

namespace ember {
namespace {

using codegen::Caps;
using codegen::Dialect;
using codegen::Lowering;

Caps all_caps() {
  Caps c;
  c.f16 = c.f64 = c.i64 = c.i8 = c.i16 = true;
  return c;
}

Tensor make(Shape s, DType t) { return zeros(std::move(s), TensorOptions(t)); }

void collect(const Lowering& l, std::map<std::string, std::string>& out) {
  for (const auto& la : l.launches) out[la.kernel->key] = la.kernel->source;
}

// Every elementwise kernel (distinct sources) for all ops and dtypes.
std::map<std::string, std::string> all_elementwise_kernels() {
  const Caps caps = all_caps();
  std::map<std::string, std::string> ks;
  for (DType t : kAllDTypes) {
    Tensor dst = make({3, 4}, t);
    for (DType s : kAllDTypes) {
      collect(codegen::lower(ir::Copy{make({4}, s).expand({3, 4}), dst}, Dialect::glsl, caps), ks);
      collect(codegen::lower(ir::Copy{make({4, 3}, s).t(), dst}, Dialect::glsl, caps), ks);
    }
    collect(codegen::lower(ir::Fill{dst, Scalar(1.5)}, Dialect::glsl, caps), ks);
    for (size_t op = 0; op < ir::kUnaryOpCount; ++op) {
      const auto u = ir::UnaryOp(op);
      const bool pred = ir::traits(u).predicate;
      collect(codegen::lower(ir::Unary{u, make({3, 4}, t), pred ? make({3, 4}, DType::b8) : dst},
                             Dialect::glsl, caps),
              ks);
    }
    for (size_t op = 0; op < ir::kBinaryOpCount; ++op) {
      const auto b = ir::BinaryOp(op);
      Tensor out = ir::traits(b).predicate ? make({3, 4}, DType::b8) : dst;
      collect(codegen::lower(ir::Binary{b, make({3, 4}, t), make({4}, t).expand({3, 4}), out},
                             Dialect::glsl, caps),
              ks);
    }
    collect(
        codegen::lower(ir::Where{make({3, 4}, DType::b8), dst, make({4}, t).expand({3, 4}), dst},
                       Dialect::glsl, caps),
        ks);
    for (int dist = 0; dist < 4; ++dist)
      collect(
          codegen::lower(ir::Random{ir::RandomDist(dist), dst, 0, 5, 42, 7}, Dialect::glsl, caps),
          ks);
    ir::Random bern{
        ir::RandomDist::bernoulli, make({3, 4}, DType::f32), 0, 1, 1, 0, make({3, 4}, t)};
    collect(codegen::lower(bern, Dialect::glsl, caps), ks);
  }
  return ks;
}

TEST(CodegenElementwiseTest, EveryKernelIsValidGlsl) {
  const auto ks = all_elementwise_kernels();
  EXPECT_GT(ks.size(), 850u);
  if (std::system("glslangValidator --version > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "glslangValidator not installed: rendered " << ks.size()
                 << " kernels, validation skipped";
  }
  const std::string dir = ::testing::TempDir();
  int failed = 0;
  // glslangValidator takes ~0.1 s a kernel: every 8th kernel by default, all of them with
  // EMBER_VALIDATE_ALL_KERNELS=1 (all 873 passed when this test was written)
  const bool all = std::getenv("EMBER_VALIDATE_ALL_KERNELS") != nullptr;
  size_t index = 0;
  for (const auto& [key, src] : ks) {
    if (!all && index++ % 8 != 0) continue;
    // Per process: ctest runs tests in parallel processes.
    const std::string path = dir + "/ember_" + std::to_string(::getpid()) + "_" + key + ".comp";
    std::ofstream(path) << src;
    const std::string cmd = "glslangValidator -V --target-env vulkan1.1 -o /dev/null " + path +
                            " > " + path + ".log 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      std::ifstream log(path + ".log");
      std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
      if (++failed <= 5) ADD_FAILURE() << key << ":\n" << text << "\n" << src;
    }
    std::remove(path.c_str());
    std::remove((path + ".log").c_str());
  }
  EXPECT_EQ(failed, 0) << "of " << ks.size() << " kernels";
}

TEST(CodegenElementwiseTest, KernelsAreKeyedByRankNotShape) {
  const Caps caps = all_caps();
  auto a = codegen::lower(
      ir::Unary{ir::UnaryOp::exp, make({5, 7}, DType::f32), make({5, 7}, DType::f32)},
      Dialect::glsl, caps);
  auto b =
      codegen::lower(ir::Unary{ir::UnaryOp::exp, make({100}, DType::f32), make({100}, DType::f32)},
                     Dialect::glsl, caps);
  ASSERT_EQ(a.launches.size(), 1u);
  EXPECT_EQ(a.launches[0].kernel.get(), b.launches[0].kernel.get());
  // contiguous dims merge: rank 1, params = numel, size, (offset, stride) x 2
  EXPECT_EQ(a.launches[0].params, (std::vector<uint32_t>{35, 35, 0, 1, 0, 1, 0, 0, 0}));
  EXPECT_EQ(a.launches[0].groups, 1u);
}

TEST(CodegenElementwiseTest, MissingFeatureIsAnErrorNamingOpAndDtype) {
  Caps caps = all_caps();
  caps.f64 = false;
  try {
    codegen::lower(ir::Unary{ir::UnaryOp::exp, make({2}, DType::f64), make({2}, DType::f64)},
                   Dialect::glsl, caps);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[exp]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("float64"), std::string::npos) << e.what();
  }
  caps = all_caps();
  caps.i8 = false;
  EXPECT_THROW(codegen::lower(ir::Fill{make({2}, DType::b8), Scalar(true)}, Dialect::glsl, caps),
               Error);
}

TEST(CodegenCommonTest, ParamsHoldOffsetSizesStrides) {
  Tensor base = make({4, 6}, DType::f32);
  Tensor v = base.t().narrow(0, 1, 3);  // shape [3, 4], strides [1, 6], offset 1
  codegen::Params p;
  EXPECT_EQ(p.f32(1.5f), 0u);
  EXPECT_EQ(p.tensor(v, "test"), 1u);
  EXPECT_EQ(p.f64(-2.0), 6u);
  const auto& w = p.words();
  ASSERT_EQ(w.size(), 8u);
  EXPECT_EQ(w[0], 0x3fc00000u);
  EXPECT_EQ(std::vector<uint32_t>(w.begin() + 1, w.begin() + 6),
            (std::vector<uint32_t>{1, 3, 4, 1, 6}));
  EXPECT_EQ(w[6], 0u);
  EXPECT_EQ(w[7], 0xc0000000u);
  EXPECT_THROW(p.i32(int64_t(1) << 31, "test"), Error);
  EXPECT_THROW(p.strided(0, {3000, 1 << 20}, {int64_t(1) << 20, 1}, "test"), Error);
  EXPECT_EQ(codegen::Params().take().size(), 1u);  // never empty
}

TEST(CodegenCommonTest, IterMergesContiguousDims) {
  Tensor a = make({2, 3, 4}, DType::f32);
  auto it = codegen::make_iter({a, make({3, 4}, DType::f32).expand({2, 3, 4})});
  EXPECT_EQ(it.sizes, (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(it.strides[0], (std::vector<int64_t>{12, 1}));
  EXPECT_EQ(it.strides[1], (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(it.numel, 24);
  Caps caps;
  caps.max_groups_x = 10;
  EXPECT_EQ(codegen::groups_1d(1 << 20, 256, caps), 10u);
  EXPECT_EQ(codegen::groups_1d(0, 256, caps), 1u);
  EXPECT_EQ(codegen::groups_1d(257, 256, caps), 2u);
}

// The kernels' index division by a size (add_iter's FastDiv), against n / d on the host: every
// d up to 4,096 and sizes near powers of two up to 2^31, at n around multiples of d, the
// largest index (2^31 - 1) and spread values.
TEST(CodegenCommonTest, FastDivEqualsDivisionBelow2To31) {
  auto div = [](uint32_t n, codegen::FastDiv f) {
    const uint32_t hi = uint32_t((uint64_t(n) * f.m) >> 32);
    return (hi + n) >> f.s;
  };
  std::vector<uint32_t> ds;
  for (uint32_t d = 1; d <= 4096; ++d) ds.push_back(d);
  for (int b = 12; b <= 31; ++b)
    for (int64_t e : {-3, -1, 0, 1, 3}) ds.push_back(uint32_t((int64_t(1) << b) + e));
  const uint32_t top = 0x7FFFFFFFu;
  int failures = 0;
  for (uint32_t d : ds) {
    if (d == 0 || d > top) continue;
    const codegen::FastDiv f = codegen::fast_div(d);
    auto check = [&](uint64_t n) {
      if (n > top || failures > 5) return;
      if (div(uint32_t(n), f) != uint32_t(n) / d)
        ADD_FAILURE() << n << " / " << d << ": " << div(uint32_t(n), f) << " (" << ++failures
                      << ")";
    };
    for (uint64_t q : {uint64_t(0), uint64_t(1), uint64_t(2), uint64_t(top / d - 1),
                       uint64_t(top / d), uint64_t(top / d + 1)})
      for (int64_t e : {-1, 0, 1}) check(uint64_t(std::max<int64_t>(0, int64_t(q * d) + e)));
    for (uint64_t n = 0; n <= top; n += 7919u * 65537u % top + d) check(n);
    check(top);
  }
  EXPECT_EQ(codegen::fast_div(0).m, 0u);
}

TEST(CodegenCommonTest, ConversionsFollowRefCast) {
  using namespace codegen::kir;
  Kernel k("conversions", 64);
  const Buf a = k.buffer("a", DType::i64, true), f = k.buffer("f", DType::f32, true);
  const Buf d = k.buffer("d", DType::f64, true), h = k.buffer("h", DType::bf16, true);
  const Expr z = lit(Type::u32, 0);
  const Expr i64v = k.let("i64v", k.load(a, z)), f32v = k.let("f32v", k.load(f, z));
  auto conv = [&](DType from, DType to, Expr v) { return codegen::convert(k, from, to, v); };
  // float -> integer saturates through a helper function; integer -> narrower integer wraps
  const Expr fi = conv(DType::f32, DType::i32, f32v);
  EXPECT_EQ(fi.type(), Type::i32);
  EXPECT_TRUE(k.has_function("ember_sat_i32_f32"));
  const Expr wrap = conv(DType::i64, DType::i8, i64v);
  EXPECT_EQ(wrap.type(), Type::i32);
  EXPECT_EQ(conv(DType::f32, DType::b8, f32v).type(), Type::boolean);
  EXPECT_EQ(conv(DType::b8, DType::f64, lit_bool(true)).type(), Type::f64);
  EXPECT_EQ(conv(DType::f16, DType::bf16, f32v).node().id, f32v.node().id);  // both compute in f32
  k.store(a, z, cast(Type::i64, wrap + fi));
  k.store(d, z, conv(DType::b8, DType::f64, conv(DType::f32, DType::b8, f32v)));
  k.store(h, z, f32v);
  const std::string g = render(k, Dialect::glsl, all_caps())->source;
  EXPECT_NE(g.find("int(int8_t("), std::string::npos) << g;            // the wrap
  EXPECT_NE(g.find("ember_bf16_from_float"), std::string::npos) << g;  // bf16 store rounds
  EXPECT_NE(g.find("2147483647"), std::string::npos) << g;             // the saturation bound
}

}  // namespace
}  // namespace ember
