// The indexing and spatial kernel families of the GPU kernel generator (src/codegen/{indexing,
// matmul,spatial}.cpp): every generated kernel compiles as Vulkan GLSL (glslangValidator), kernels
// are keyed by rank and variant rather than by shape, and missing device features are errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "codegen/kernel.h"
#include "ember/ember.h"
#include "op_table.h"

namespace ember {
namespace {

using codegen::Caps;

Caps full_caps() {
  Caps c;
  c.f16 = c.f64 = c.i64 = c.i8 = c.i16 = true;
  c.max_shared_bytes = 32768;
  return c;
}

const std::vector<DType> kAll = {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i8,
                                 DType::i16, DType::i32, DType::i64, DType::u8,   DType::u16,
                                 DType::u32, DType::u64, DType::b8};
const std::vector<DType> kFloat = {DType::f32, DType::f64, DType::f16, DType::bf16};

Tensor t(const Shape& s, DType dt = DType::f32) { return empty(s, {dt, Device::ref()}); }

// Every op variant of the two families, for `dt`; with `all` false, only the variants whose code
// differs most between dtypes (reductions, accumulation, comparisons).
std::vector<ir::Op> ops_for(DType dt, bool all = true) {
  std::vector<ir::Op> ops;
  if (!all) {
    ops.push_back(ir::Scatter{t({4, 5}, dt), 0, t({6, 5}, DType::i64), t({6, 5}, dt),
                              dt == DType::b8 ? ir::ScatterReduce::amin : ir::ScatterReduce::mean,
                              false});
    ops.push_back(ir::Scatter{t({4, 5}, dt), 0, t({6, 5}, DType::i64), t({6, 5}, dt),
                              ir::ScatterReduce::amax, false});
    ops.push_back(ir::IndexAdd{t({4, 3}, dt), 0, t({6}, DType::i64), t({6, 3}, dt), Scalar(2)});
    ops.push_back(ir::Matmul{t({1, 64, 40}, dt), t({1, 40, 48}, dt), t({1, 64, 48}, dt)});
    ops.push_back(
        ir::Col2im{t({2, 12, 9}, dt), t({2, 3, 5, 5}, dt), {2, 2}, {2, 2}, {1, 1}, {1, 1}});
    ops.push_back(
        ir::AdaptivePool{true, t({2, 3, 5}, dt), t({2, 3, 3}, dt), t({2, 3, 3}, DType::i64)});
    ops.push_back(ir::AdaptivePool{false, t({2, 3, 5}, dt), t({2, 3, 3}, dt), Tensor()});
    return ops;
  }
  const Tensor ix2 = t({3, 5}, DType::i64);
  ops.push_back(ir::Gather{t({4, 5}, dt), 0, ix2, t({3, 5}, dt)});
  ops.push_back(ir::Gather{t({2, 4, 3}, dt), 1, t({2, 6, 2}, DType::i64), t({2, 6, 2}, dt)});
  ops.push_back(ir::IndexSelect{t({3, 5}, dt), 1, t({7}, DType::i64), t({3, 7}, dt)});
  for (int r = 0; r < 6; ++r)
    for (bool self : {true, false}) {
      if (r == int(ir::ScatterReduce::mean) && dt == DType::b8) continue;
      ops.push_back(ir::Scatter{t({4, 5}, dt), 0, t({6, 5}, DType::i64), t({6, 5}, dt),
                                ir::ScatterReduce(r), self});
    }
  ops.push_back(ir::IndexAdd{t({4, 3}, dt), 0, t({6}, DType::i64), t({6, 3}, dt), Scalar(2)});
  if (dt != DType::b8) {
    ops.push_back(ir::Matmul{t({2, 3, 4}, dt), t({2, 4, 5}, dt), t({2, 3, 5}, dt)});
    ops.push_back(ir::Matmul{t({1, 64, 40}, dt), t({1, 40, 48}, dt), t({1, 64, 48}, dt)});
  }
  for (int nd = 1; nd <= 3; ++nd) {
    Shape img{2, 3};
    std::vector<int64_t> k, s, p, dil;
    for (int q = 0; q < nd; ++q) {
      img.push_back(5);
      k.push_back(2);
      s.push_back(2);
      p.push_back(1);
      dil.push_back(1);
    }
    const int64_t l = nd == 1 ? 3 : nd == 2 ? 9 : 27;
    const int64_t kp = nd == 1 ? 2 : nd == 2 ? 4 : 8;
    ops.push_back(ir::Im2col{t(img, dt), t({2, 3 * kp, l}, dt), k, s, p, dil, Scalar(1.5)});
    ops.push_back(ir::Col2im{t({2, 3 * kp, l}, dt), t(img, dt), k, s, p, dil});
    Shape out{2, 3};
    for (int q = 0; q < nd; ++q) out.push_back(3);
    ops.push_back(ir::AdaptivePool{true, t(img, dt), t(out, dt), t(out, DType::i64)});
    ops.push_back(ir::AdaptivePool{true, t(img, dt), t(out, dt), Tensor()});
    ops.push_back(ir::AdaptivePool{false, t(img, dt), t(out, dt), Tensor()});
    for (auto m : {ir::InterpMode::nearest, ir::InterpMode::nearest_exact, ir::InterpMode::linear,
                   ir::InterpMode::cubic}) {
      const bool weighted = m == ir::InterpMode::linear || m == ir::InterpMode::cubic;
      if (weighted && std::find(kFloat.begin(), kFloat.end(), dt) == kFloat.end()) continue;
      for (bool align : {false, true}) {
        if (!weighted && align) continue;
        ops.push_back(ir::Interpolate{m, align, {}, t(img, dt), t(out, dt)});
      }
    }
  }
  return ops;
}

bool have_validator() { return std::system("glslangValidator --version >/dev/null 2>&1") == 0; }

// Compiles `src` as a Vulkan 1.1 compute shader; returns "" or the validator's log.
std::string validate(const std::string& src, const std::string& name) {
  const std::string dir = ::testing::TempDir();
  // Per process: ctest runs tests in parallel processes.
  const std::string path = dir + "ember_" + std::to_string(::getpid()) + "_" + name + ".comp",
                    log = path + ".log";
  std::ofstream(path) << src;
  const std::string cmd = "glslangValidator -V --target-env vulkan1.1 -o " + path + ".spv " + path +
                          " >" + log + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::string out;
  if (rc != 0) {
    std::ifstream in(log);
    out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (out.empty()) out = "glslangValidator exit " + std::to_string(rc);
  }
  std::remove(path.c_str());
  std::remove(log.c_str());
  std::remove((path + ".spv").c_str());
  return out;
}

// Every variant in f32 and the dtype-sensitive ones in every dtype (about 100 kernels; one
// validator process each). EMBER_CODEGEN_CHECK_ALL=1 checks every variant in every dtype.
TEST(CodegenSpatialTest, KernelsCompileAsVulkanGlsl) {
  if (!have_validator()) GTEST_SKIP() << "glslangValidator not installed (glslang-tools)";
  const Caps caps = full_caps();
  const bool every = std::getenv("EMBER_CODEGEN_CHECK_ALL") != nullptr;
  std::map<std::string, std::string> kernels;  // key -> source
  for (DType dt : kAll)
    for (const ir::Op& op : ops_for(dt, every || dt == DType::f32)) {
      const codegen::Lowering l = codegen::lower(op, codegen::Dialect::glsl, caps);
      ASSERT_FALSE(l.launches.empty()) << ir::name(op) << " " << dtype_name(dt);
      for (const codegen::Launch& ln : l.launches) {
        ASSERT_EQ(ln.bindings.size(), ln.kernel->buffers.size()) << ln.kernel->name;
        ASSERT_GE(ln.groups, 1u);
        ASSERT_FALSE(ln.params.empty());
        kernels[ln.kernel->name] = ln.kernel->source;
      }
    }
  EXPECT_GT(kernels.size(), every ? 400u : 100u);
  int failed = 0;
  for (const auto& [name, src] : kernels) {
    const std::string log = validate(src, name);
    if (!log.empty() && ++failed <= 5) ADD_FAILURE() << name << ":\n" << log << "\n" << src;
  }
  EXPECT_EQ(failed, 0) << "of " << kernels.size() << " kernels";
}

TEST(CodegenSpatialTest, KernelsAreKeyedByRankNotShape) {
  const Caps caps = full_caps();
  auto kernel_of = [&](const ir::Op& op) {
    return codegen::lower(op, codegen::Dialect::glsl, caps).launches.at(0).kernel;
  };
  const auto g1 = kernel_of(ir::Gather{t({4, 5}), 0, t({3, 5}, DType::i64), t({3, 5})});
  const auto g2 =
      kernel_of(ir::Gather{t({9, 7}).transpose(0, 1), 1, t({2, 8}, DType::i64), t({2, 8})});
  EXPECT_EQ(g1->key, g2->key);
  const auto m1 = kernel_of(ir::Matmul{t({1, 70, 90}), t({1, 90, 33}), t({1, 70, 33})});
  const auto m2 = kernel_of(ir::Matmul{
      t({3, 128, 64}), t({3, 64, 100}).transpose(1, 2).transpose(1, 2), t({3, 128, 100})});
  EXPECT_EQ(m1->key, m2->key);
  EXPECT_NE(m1->key, kernel_of(ir::Matmul{t({1, 2, 3}), t({1, 3, 4}), t({1, 2, 4})})->key);
  const auto c1 =
      kernel_of(ir::Col2im{t({2, 12, 9}), t({2, 3, 5, 5}), {2, 2}, {2, 2}, {1, 1}, {1, 1}});
  const auto c2 =
      kernel_of(ir::Col2im{t({1, 8, 16}), t({1, 2, 4, 4}), {2, 2}, {1, 1}, {0, 0}, {1, 1}, {4, 4}});
  EXPECT_EQ(c1->key, c2->key);
}

TEST(CodegenSpatialTest, MissingFeaturesAreErrorsNamingOpAndDtype) {
  Caps caps = full_caps();
  caps.i64 = false;
  try {
    codegen::lower(ir::Gather{t({4, 5}), 0, t({3, 5}, DType::i64), t({3, 5})},
                   codegen::Dialect::glsl, caps);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[gather]"), std::string::npos) << e.what();
  }
  caps = full_caps();
  caps.f16 = false;
  try {
    codegen::lower(
        ir::Matmul{t({1, 2, 3}, DType::f16), t({1, 3, 4}, DType::f16), t({1, 2, 4}, DType::f16)},
        codegen::Dialect::glsl, caps);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("[matmul]"), std::string::npos) << m;
    EXPECT_NE(m.find("float16"), std::string::npos) << m;
  }
  caps = full_caps();
  caps.f64 = false;
  EXPECT_THROW(codegen::lower(ir::Interpolate{ir::InterpMode::linear,
                                              false,
                                              {},
                                              t({1, 1, 4}, DType::f64),
                                              t({1, 1, 8}, DType::f64)},
                              codegen::Dialect::glsl, caps),
               Error);
  // A float col2im without f64 sums in float instead (still a kernel, not an error).
  const auto l =
      codegen::lower(ir::Col2im{t({1, 4, 4}), t({1, 1, 3, 3}), {2, 2}, {1, 1}, {0, 0}, {1, 1}},
                     codegen::Dialect::glsl, caps);
  EXPECT_EQ(l.launches.size(), 1u);
  EXPECT_EQ(l.launches[0].kernel->source.find("double"), std::string::npos);
}

TEST(CodegenSpatialTest, EmptyOutputsLaunchNothing) {
  const Caps caps = full_caps();
  EXPECT_TRUE(codegen::lower(ir::Matmul{t({2, 0, 3}), t({2, 3, 4}), t({2, 0, 4})},
                             codegen::Dialect::glsl, caps)
                  .launches.empty());
  EXPECT_TRUE(codegen::lower(ir::Gather{t({4, 5}), 0, t({0, 5}, DType::i64), t({0, 5})},
                             codegen::Dialect::glsl, caps)
                  .launches.empty());
}

// ---- on vulkan:0 against the ref backend, at sizes the op table does not reach ----

// The Vulkan device, or "" with the reason in `why`.
bool vulkan(Device& dev, std::string& why) {
  try {
    dev = Device::vulkan();
    return true;
  } catch (const Error& e) {
    why = e.what();
    return false;
  }
}

#define VULKAN_OR_SKIP(dev)                                             \
  Device dev;                                                           \
  {                                                                     \
    std::string why;                                                    \
    if (!vulkan(dev, why)) GTEST_SKIP() << "no Vulkan device: " << why; \
  }

// The tiled kernel (M, N >= 16, M * N * K >= 32768) with a transposed operand, per dtype.
TEST(CodegenSpatialVulkanTest, TiledMatmulMatchesRef) {
  VULKAN_OR_SKIP(dev);
  for (DType dt :
       {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i32, DType::i8, DType::u64}) {
    const bool uns = dt == DType::u64;
    const Tensor a = testing::uniform({2, 70, 90}, dt, 1, uns ? 0 : -2, uns ? 3 : 2);
    const Tensor b = testing::uniform({2, 33, 90}, dt, 2, uns ? 0 : -2, uns ? 3 : 2);
    const Tensor want = matmul(a, b.transpose(1, 2));
    const Tensor got = matmul(a.to(dev), b.to(dev).transpose(1, 2)).to(Device::ref());
    EXPECT_EQ(testing::compare(want, got, 8.0), "") << dtype_name(dt);
  }
}

// Many duplicate targets: results are deterministic and equal the ref's accumulation order.
TEST(CodegenSpatialVulkanTest, ScatterAndIndexAddWithDuplicatesMatchRef) {
  VULKAN_OR_SKIP(dev);
  const Tensor x = testing::uniform({20, 37}, DType::f32, 3);
  const Tensor ix = testing::integers({300, 37}, DType::i64, 4, 0, 20);
  const Tensor src = testing::uniform({300, 37}, DType::f32, 5);
  for (const char* r : {"sum", "prod", "mean", "amax", "amin"})
    for (bool self : {true, false}) {
      const Tensor want = scatter_reduce(x, 0, ix, src, r, self);
      const Tensor got =
          scatter_reduce(x.to(dev), 0, ix.to(dev), src.to(dev), r, self).to(Device::ref());
      EXPECT_EQ(testing::compare(want, got), "") << r << " include_self " << self;
    }
  const Tensor ix1 = testing::integers({300}, DType::i64, 6, 0, 20);
  const Tensor s1 = testing::uniform({37, 300}, DType::f32, 7);
  const Tensor want = index_add(x.t(), 1, ix1, s1, 0.5);
  const Tensor got = index_add(x.to(dev).t(), 1, ix1.to(dev), s1.to(dev), 0.5).to(Device::ref());
  EXPECT_EQ(testing::compare(want, got), "");
}

// conv (im2col + tiled matmul) and conv_transpose (col2im) at a size with many overlapping taps.
TEST(CodegenSpatialVulkanTest, ConvAndTransposedConvMatchRef) {
  VULKAN_OR_SKIP(dev);
  const Tensor x = testing::uniform({2, 8, 17, 15}, DType::f32, 8);
  const Tensor w = testing::uniform({24, 8, 3, 3}, DType::f32, 9);
  const Tensor want = nn::functional::conv2d(x, w, Tensor(), {1}, {1});
  const Tensor got = nn::functional::conv2d(x.to(dev), w.to(dev), Tensor(), {1}, {1});
  EXPECT_EQ(testing::compare(want, got.to(Device::ref()), 8.0), "");
  const Tensor wt = testing::uniform({8, 6, 4, 4}, DType::f32, 10);
  const Tensor want_t = nn::functional::conv_transpose2d(x, wt, Tensor(), {2}, {1});
  const Tensor got_t = nn::functional::conv_transpose2d(x.to(dev), wt.to(dev), Tensor(), {2}, {1});
  EXPECT_EQ(testing::compare(want_t, got_t.to(Device::ref()), 8.0), "");
}

}  // namespace
}  // namespace ember
