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
  // Chunked scans of long lines (totals, prefixes, chunks): the sum and the extreme paths.
  const Tensor longer = host({2, 5000}, t);
  ops.push_back(ir::Scan{ScanOp::cumsum, longer, 1, host({2, 5000}, acc_out), Tensor()});
  ops.push_back(
      ir::Scan{ScanOp::cummax, longer, 1, host({2, 5000}, t), host({2, 5000}, DType::i64)});
  for (bool desc : {false, true}) {
    ops.push_back(ir::Sort{xp, 2, desc, host({5, 3, 4}, t), host({5, 3, 4}, DType::i64)});
    // Blocks of the shared size, then merge passes to scratch and to the outputs.
    ops.push_back(ir::Sort{longer, 1, desc, host({2, 5000}, t), host({2, 5000}, DType::i64)});
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
  // Per dtype: the sort's bitonic kernels (whole lines, blocks) and merge passes, both reduce
  // variants, plain and chunked scans and the three nonzero passes.
  EXPECT_GE(sources.size(), size_t(7 * 30));
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
  // A line longer than shared memory holds (2048 f64 with indices): 5 blocks sorted into scratch,
  // then merge passes of runs of 2048, 4096 (scratch to scratch) and 8192 (to the outputs).
  const Lowering m = codegen::lower(ir::Sort{host({10000}, DType::f64), 0, true,
                                             host({10000}, DType::f64), host({10000}, DType::i64)},
                                    Dialect::glsl, caps);
  ASSERT_EQ(m.scratch_bytes.size(), 2u);
  EXPECT_EQ(m.scratch_bytes[0], 40000);
  ASSERT_EQ(m.launches.size(), 4u);
  EXPECT_EQ(m.launches[0].groups, 5u);
  EXPECT_EQ(m.launches[1].kernel, m.launches[2].kernel);  // ping-pong: bindings swap
  EXPECT_EQ(m.launches[1].bindings[1].scratch, 0);
  EXPECT_EQ(m.launches[2].bindings[1].scratch, 1);
  EXPECT_NE(m.launches[3].kernel, m.launches[2].kernel);
  EXPECT_EQ(m.launches[3].bindings[1].scratch, 0);
  EXPECT_NE(m.launches[1].params, m.launches[2].params);  // the run width
  // One more block: one more pass. Same kernels (keyed by rank, not by length).
  const Lowering m2 = codegen::lower(ir::Sort{host({17000}, DType::f64), 0, true,
                                              host({17000}, DType::f64), host({17000}, DType::i64)},
                                     Dialect::glsl, caps);
  ASSERT_EQ(m2.launches.size(), 5u);
  EXPECT_EQ(m2.launches[0].groups, 9u);
  EXPECT_EQ(m2.launches[0].kernel, m.launches[0].kernel);
  EXPECT_EQ(m2.launches[4].kernel, m.launches[3].kernel);
  // Scans: lines of 4096 in one thread each; longer lines chunked in three launches.
  const Lowering s1 = codegen::lower(
      ir::Scan{ir::ScanOp::cumsum, host({3, 4096}, DType::f32), 1, host({3, 4096}, DType::f32)},
      Dialect::glsl, caps);
  EXPECT_EQ(s1.launches.size(), 1u);
  EXPECT_TRUE(s1.scratch_bytes.empty());
  const Lowering s2 =
      codegen::lower(ir::Scan{ir::ScanOp::cummin, host({3, 70000}, DType::f32), 1,
                              host({3, 70000}, DType::f32), host({3, 70000}, DType::i64)},
                     Dialect::glsl, caps);
  ASSERT_EQ(s2.launches.size(), 3u);
  ASSERT_EQ(s2.scratch_bytes.size(), 2u);      // chunk extremes and their indices
  EXPECT_EQ(s2.scratch_bytes[1], 3 * 69 * 4);  // chunks of 1024
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
    // 3000 per line: past shared memory's 2048 (two blocks and one merge pass).
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
  // Long lines: 5000 (3 blocks, two merge passes) and 70000 (35 blocks, six passes; also past
  // lavapipe's 65535 loop iterations for a one-thread-per-line scan). Small integer ranges give
  // many ties (stability), and the float lines carry NaNs (the largest, sticky in cummax).
  for (int64_t len : {int64_t(5000), int64_t(70000)}) {
    const std::string at = " len " + std::to_string(len);
    const Tensor ti = testing::uniform({2, len}, DType::i32, 11, -50, 50);
    Tensor tf = testing::uniform({2, len}, DType::f32, 12, -50, 50).to(DType::i32).to(DType::f32);
    tf = where(lt(testing::uniform({2, len}, DType::f32, 13, 0, 1), 0.02), NAN, tf);
    for (const Tensor& x : {ti, tf}) {
      const std::string tag = std::string(dtype_name(x.dtype())) + at;
      const Tensor xd = x.to(*dev);
      for (bool desc : {false, true}) {
        auto [v, i] = sort(x, 1, desc);
        auto [vd, id] = sort(xd, 1, desc);
        expect_same(v, vd, "long sort values " + tag + (desc ? " desc" : ""));
        expect_same(i, id, "long sort indices " + tag + (desc ? " desc" : ""));
      }
      // Along dim 0 of the transpose: strided lines.
      auto [vt, it] = sort(x.t(), 0, true);
      auto [vtd, itd] = sort(xd.t(), 0, true);
      expect_same(vt, vtd, "long sort transposed values " + tag);
      expect_same(it, itd, "long sort transposed indices " + tag);
      expect_same(cumsum(x, 1), cumsum(xd, 1), "long cumsum " + tag);
      expect_same(cumsum(x.t(), 0), cumsum(xd.t(), 0), "long cumsum transposed " + tag);
      auto [cv, ci] = cummax(x, 1);
      auto [cvd, cid] = cummax(xd, 1);
      expect_same(cv, cvd, "long cummax " + tag);
      expect_same(ci, cid, "long cummax indices " + tag);
      auto [mv, mi] = cummin(x, 1);
      auto [mvd, mid] = cummin(xd, 1);
      expect_same(mv, mvd, "long cummin " + tag);
      expect_same(mi, mid, "long cummin indices " + tag);
    }
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
