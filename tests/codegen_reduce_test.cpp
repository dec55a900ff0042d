// The reduction family of the kernel generator (src/codegen/reduce*.cpp): every generated kernel
// compiles as Vulkan GLSL (glslangValidator), kernels are keyed by rank and variant and never
// by shape, unsupported dtypes are errors naming the op, and on a Vulkan device the variants the
// op table's small shapes never reach (workgroup trees, merge sort, chunked nonzero) match ref.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "codegen/common.h"
#include "codegen/kernel.h"
#include "ember/ember.h"
#include "op_table.h"

namespace ember {
namespace {

using codegen::Caps;
using codegen::Dialect;
using codegen::Lowering;

Caps full_caps() {
  Caps c;
  c.f16 = c.f64 = c.i64 = c.i8 = c.i16 = true;
  c.max_workgroup_size = 1024;
  c.max_shared_bytes = 32768;
  return c;
}

Tensor host(const Shape& s, DType t) { return zeros(s, {t, Device::ref()}); }

// Ops covering every kernel variant of the family for dtype t.
std::vector<ir::Op> family_ops(DType t) {
  using ir::ReduceOp;
  using ir::ScanOp;
  std::vector<ir::Op> ops;
  const Tensor x = host({3, 4, 5}, t);
  const Tensor xp = x.permute({2, 0, 1});  // [5, 3, 4], strided
  const Tensor big = host({2, 3000}, t);
  const DType acc_out = is_floating(t) ? t : DType::i64;
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::any, ReduceOp::all, ReduceOp::max,
                      ReduceOp::min}) {
    const bool logical = op == ReduceOp::any || op == ReduceOp::all;
    const bool extreme = op == ReduceOp::max || op == ReduceOp::min;
    const DType out = logical ? DType::b8 : extreme ? t : acc_out;
    ops.push_back(ir::Reduce{op, xp, {0, 2}, host({1, 3, 1}, out), {}});
    ops.push_back(ir::Reduce{op, big, {1}, host({2, 1}, out), {}});
    ops.push_back(ir::Reduce{op, host({300}, t), {0}, host({1}, out), {}});
    if (extreme) {
      ops.push_back(ir::Reduce{op, xp, {1}, host({5, 1, 4}, t), host({5, 1, 4}, DType::i64)});
      ops.push_back(ir::Reduce{op, big, {1}, host({2, 1}, t), host({2, 1}, DType::i64)});
    }
  }
  for (ScanOp op : {ScanOp::cumsum, ScanOp::cumprod, ScanOp::cummax, ScanOp::cummin}) {
    const bool extreme = op == ScanOp::cummax || op == ScanOp::cummin;
    ops.push_back(ir::Scan{op, xp, 1, host({5, 3, 4}, extreme ? t : acc_out),
                           extreme ? host({5, 3, 4}, DType::i64) : Tensor()});
  }
  for (bool desc : {false, true}) {
    ops.push_back(ir::Sort{xp, 2, desc, host({5, 3, 4}, t), host({5, 3, 4}, DType::i64)});
    ops.push_back(ir::Sort{big, 1, desc, host({2, 3000}, t), host({2, 3000}, DType::i64)});
  }
  ops.push_back(ir::Nonzero{xp, host({7, 3}, DType::i64)});
  return ops;
}

// Runs glslangValidator on every source (one process per file, two at a time; it links several
// files given together); returns "" or the errors with the failing sources.
std::string validate(const std::map<std::string, std::string>& sources) {
  char dir_template[] = "/tmp/ember_reduce_glsl_XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (!dir) return "cannot create a temp dir";
  const std::string d = dir;
  std::map<std::string, std::string> by_file;
  for (const auto& [name, src] : sources) {
    std::ofstream(d + "/" + name + ".comp") << src;
    by_file[name + ".comp"] = src;
  }
  const std::string cmd = "cd " + d +
                          " && ls *.comp | xargs -P 2 -I{} sh -c 'glslangValidator -V "
                          "--target-env vulkan1.1 -o {}.spv {} > {}.log 2>&1 || echo {} >> "
                          "failed.txt'";
  std::system(cmd.c_str());
  std::string failures;
  std::ifstream failed(d + "/failed.txt");
  std::string file;
  while (failures.size() < 20000 && std::getline(failed, file)) {
    std::ifstream log(d + "/" + file + ".log");
    failures +=
        file + ":\n" +
        std::string((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>()) +
        by_file[file] + "\n";
  }
  std::system(("rm -rf " + d).c_str());
  return failures;
}

TEST(CodegenReduceTest, EveryKernelCompilesAsVulkanGlsl) {
  if (std::system("glslangValidator --version > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "glslangValidator not installed (Debian glslang-tools)";
  std::map<std::string, std::string> sources;
  const Caps caps = full_caps();
  // Every dtype lowers; one of each type class is compiled (glslangValidator takes ~0.1 s a file):
  // float, double, half, bf16 bits, narrow and 64-bit integers, bool.
  const std::vector<DType> compiled = {DType::f32, DType::f64, DType::f16, DType::bf16,
                                       DType::i8,  DType::i64, DType::b8};
  for (DType t : std::vector<DType>(kAllDTypes, kAllDTypes + kNumDTypes))
    for (const ir::Op& op : family_ops(t)) {
      const Lowering l = codegen::lower(op, Dialect::glsl, caps);
      ASSERT_FALSE(l.launches.empty()) << ir::name(op) << " " << dtype_name(t);
      for (const auto& launch : l.launches) {
        ASSERT_EQ(launch.bindings.size(), launch.kernel->buffers.size()) << launch.kernel->name;
        if (std::find(compiled.begin(), compiled.end(), t) != compiled.end())
          sources[launch.kernel->name] = launch.kernel->source;
      }
    }
  // Both sort variants, both reduce variants and the three nonzero passes, for each dtype.
  EXPECT_GE(sources.size(), size_t(7 * 20));
  const std::string errors = validate(sources);
  EXPECT_EQ(errors, "");
}

TEST(CodegenReduceTest, KernelsAreKeyedByRankNotShape) {
  const Caps caps = full_caps();
  const Lowering a = codegen::lower(
      ir::Reduce{ir::ReduceOp::sum, host({3, 4, 5}, DType::f32), {1}, host({3, 1, 5}, DType::f32)},
      Dialect::glsl, caps);
  const Lowering b = codegen::lower(
      ir::Reduce{ir::ReduceOp::sum, host({6, 9, 2}, DType::f32), {1}, host({6, 1, 2}, DType::f32)},
      Dialect::glsl, caps);
  ASSERT_EQ(a.launches.size(), 1u);
  ASSERT_EQ(b.launches.size(), 1u);
  EXPECT_EQ(a.launches[0].kernel, b.launches[0].kernel);
  EXPECT_NE(a.launches[0].params, b.launches[0].params);
  // Sort of 7 and of 40 elements per line: one shared-memory kernel.
  const Tensor s7 = host({5, 7}, DType::i32), s40 = host({2, 40}, DType::i32);
  const Lowering c =
      codegen::lower(ir::Sort{s7, 1, false, host({5, 7}, DType::i32), host({5, 7}, DType::i64)},
                     Dialect::glsl, caps);
  const Lowering d =
      codegen::lower(ir::Sort{s40, 1, false, host({2, 40}, DType::i32), host({2, 40}, DType::i64)},
                     Dialect::glsl, caps);
  EXPECT_EQ(c.launches[0].kernel, d.launches[0].kernel);
  EXPECT_EQ(c.launches[0].groups, 5u);  // one workgroup per line
}

TEST(CodegenReduceTest, VariantsFollowTheReducedExtent) {
  const Caps caps = full_caps();
  // 4000 elements into each of 3 outputs: one workgroup per output.
  const Lowering g = codegen::lower(
      ir::Reduce{ir::ReduceOp::sum, host({3, 4000}, DType::f32), {1}, host({3, 1}, DType::f32)},
      Dialect::glsl, caps);
  EXPECT_EQ(g.launches[0].groups, 3u);
  EXPECT_EQ(g.launches[0].kernel->local_size, 256u);
  // Empty output: nothing to launch.
  const Lowering e = codegen::lower(
      ir::Reduce{ir::ReduceOp::sum, host({0, 4}, DType::f32), {1}, host({0, 1}, DType::f32)},
      Dialect::glsl, caps);
  EXPECT_TRUE(e.launches.empty());
  // A line longer than shared memory holds: merge sort with two scratch index buffers.
  const Lowering m = codegen::lower(ir::Sort{host({10000}, DType::f64), 0, true,
                                             host({10000}, DType::f64), host({10000}, DType::i64)},
                                    Dialect::glsl, caps);
  ASSERT_EQ(m.scratch_bytes.size(), 2u);
  EXPECT_EQ(m.scratch_bytes[0], 40000);
  // Nonzero: count, scan, write.
  const Lowering n = codegen::lower(
      ir::Nonzero{host({100, 100}, DType::u8), host({5, 2}, DType::i64)}, Dialect::glsl, caps);
  EXPECT_EQ(n.launches.size(), 3u);
  EXPECT_EQ(n.scratch_bytes.size(), 1u);
}

TEST(CodegenReduceTest, UnsupportedDtypeIsAnErrorNamingTheOp) {
  Caps caps;  // no f16/f64/i64/i8/i16
  auto message = [&](const ir::Op& op) -> std::string {
    try {
      codegen::lower(op, Dialect::glsl, caps);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  const std::string m1 =
      message(ir::Reduce{ir::ReduceOp::sum, host({4}, DType::f64), {0}, host({1}, DType::f64)});
  EXPECT_NE(m1.find("sum"), std::string::npos) << m1;
  EXPECT_NE(m1.find("float64"), std::string::npos) << m1;
  // Sort's indices are i64.
  const std::string m2 = message(
      ir::Sort{host({4}, DType::f32), 0, false, host({4}, DType::f32), host({4}, DType::i64)});
  EXPECT_NE(m2.find("sort"), std::string::npos) << m2;
  EXPECT_NE(m2.find("int64"), std::string::npos) << m2;
  const std::string m3 = message(ir::Scan{ir::ScanOp::cummax, host({4}, DType::u8), 0,
                                          host({4}, DType::u8), host({4}, DType::i64)});
  EXPECT_NE(m3.find("cummax"), std::string::npos) << m3;
  // f32 max without indices needs nothing optional.
  EXPECT_EQ(
      message(ir::Reduce{ir::ReduceOp::max, host({4}, DType::f32), {0}, host({1}, DType::f32)}),
      "");
}

// ---- on a Vulkan device: the large-extent variants against ref ----

const Device* vulkan_device() {
  static const Device* dev = []() -> const Device* {
    for (const auto& d : available_devices())
      if (d.device.str().rfind("vulkan", 0) == 0) return new Device(d.device);
    return nullptr;
  }();
  return dev;
}

void expect_same(const Tensor& want, const Tensor& got, const std::string& what) {
  EXPECT_EQ(testing::compare(want, got.to(Device::ref()), 4.0), "") << what;
}

TEST(CodegenReduceTest, LargeExtentsMatchRefOnVulkan) {
  const Device* dev = vulkan_device();
  if (!dev) GTEST_SKIP() << "no Vulkan device in available_devices()";
  for (DType t : {DType::f32, DType::i32, DType::f16, DType::u8}) {
    if (!supports_dtype(*dev, t)) continue;
    const std::string tag = dtype_name(t);
    // Values in a small range: many ties for argmax and the sorts' stability.
    // 3000 per line: past shared memory's 2048 (merge sort), and under lavapipe's limit of 65535
    // loop iterations per invocation (llvmpipe ends longer loops early; see reduce_scan_sort.cpp).
    const Tensor x = testing::uniform({3, 3000}, t, 7, -20, 20);
    const Tensor xd = x.to(*dev);
    expect_same(sum(x, {1}), sum(xd, {1}), "sum " + tag);
    expect_same(sum(x), sum(xd), "sum all " + tag);
    expect_same(amax(x, {0, 1}), amax(xd, {0, 1}), "amax " + tag);
    expect_same(argmax(x, 1), argmax(xd, 1), "argmax " + tag);
    expect_same(argmin(x), argmin(xd), "argmin flat " + tag);
    expect_same(ember::any(x, {1}), ember::any(xd, {1}), "any " + tag);
    // A strided view: the transposed columns.
    expect_same(sum(x.t(), {0}), sum(xd.t(), {0}), "sum transposed " + tag);
    for (bool desc : {false, true}) {
      auto [v, i] = sort(x, 1, desc);
      auto [vd, id] = sort(xd, 1, desc);
      expect_same(v, vd, "sort values (merge) " + tag);
      expect_same(i, id, "sort indices (merge) " + tag);
      const Tensor s = x.narrow(1, 0, 1000);
      auto [v2, i2] = sort(s, 1, desc);
      auto [vd2, id2] = sort(s.to(*dev), 1, desc);
      expect_same(v2, vd2, "sort values (shared) " + tag);
      expect_same(i2, id2, "sort indices (shared) " + tag);
    }
    auto [cv, ci] = cummax(x, 1);
    auto [cvd, cid] = cummax(xd, 1);
    expect_same(cv, cvd, "cummax " + tag);
    expect_same(ci, cid, "cummax indices " + tag);
    expect_same(nonzero(x), nonzero(xd), "nonzero " + tag);
  }
  // NaN: wins max/argmax (the first one), sorts as the largest.
  Tensor y = testing::uniform({2, 3000}, DType::f32, 3);
  y = where(lt(testing::uniform({2, 3000}, DType::f32, 4, 0, 1), 0.01), NAN, y);
  const Tensor yd = y.to(*dev);
  expect_same(argmax(y, 1), argmax(yd, 1), "argmax nan");
  expect_same(amin(y, {1}), amin(yd, {1}), "amin nan");
  auto [v, i] = sort(y, 1, true);
  auto [vd, id] = sort(yd, 1, true);
  expect_same(v, vd, "sort nan values");
  expect_same(i, id, "sort nan indices");
}

}  // namespace
}  // namespace ember
