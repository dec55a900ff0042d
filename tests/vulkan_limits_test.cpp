// Sizes past lavapipe's loop limit (a shader invocation stops after 65,535 loop iterations in all
// and its results are then garbage): matmul with K = 70,000 and 200,000 (split into K-chunks)
// and reductions over more than 67M elements (split into partials and a second launch), each
// compared with the cpu backend (and a fused graph's reduction over 70M elements). Inputs are small
// integers (as floats too) so that every sum is exact and a lost or repeated chunk shows. Skipped
// when no Vulkan device exists.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <tuple>
#include <vector>

#include "codegen/kernel.h"
#include "codegen/lower.h"
#include "ember/ember.h"
#include "op_table.h"
#include "runtime/autotune.h"
#include "test_util.h"

namespace ember {
namespace {

using codegen::Caps;
using codegen::Dialect;
using codegen::Lowering;
using testing::compare;

// ---- lowerings (no device needed): where the splits happen, on both device classes ----

Caps caps_of(bool cpu) {
  Caps c;
  c.f16 = c.f64 = c.i64 = c.i8 = c.i16 = true;
  c.max_workgroup_size = 1024;
  c.max_shared_bytes = 32768;
  c.cpu = cpu;
  return c;
}

Tensor host(const Shape& s, DType t) { return zeros(s, {t, Device::ref()}); }

// The launches of a split: at least `min_launches`, every binding matching its kernel's buffers,
// one kernel for all chunks; sources collected for glslangValidator.
// (glslangValidator takes ~0.2 s a file: one dtype of each kind is compiled).
void check_split(const Lowering& l, size_t min_launches, std::map<std::string, std::string>& src,
                 DType t) {
  ASSERT_GE(l.launches.size(), min_launches);
  const bool compile = t == DType::f32 || t == DType::bf16 || t == DType::b8;
  for (const auto& ln : l.launches) {
    ASSERT_EQ(ln.bindings.size(), ln.kernel->buffers.size()) << ln.kernel->name;
    for (const auto& b : ln.bindings) EXPECT_LT(b.scratch, int(l.scratch_bytes.size()));
    if (compile) src[ln.kernel->name] = ln.kernel->source;
  }
}

// glslangValidator on every source (two processes at a time): "" or the failing files' logs.
std::string validate(const std::map<std::string, std::string>& sources) {
  char dir_template[] = "/tmp/ember_limits_glsl_XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (!dir) return "cannot create a temp dir";
  const std::string d = dir;
  for (const auto& [name, text] : sources) std::ofstream(d + "/" + name + ".comp") << text;
  const std::string cmd = "cd " + d +
                          " && ls *.comp | xargs -P 2 -I{} sh -c 'glslangValidator -V "
                          "--target-env vulkan1.1 -o {}.spv {} > {}.log 2>&1 || cat {}.log >> "
                          "failed.txt'";
  std::system(cmd.c_str());
  std::ifstream failed(d + "/failed.txt");
  const std::string failures((std::istreambuf_iterator<char>(failed)),
                             std::istreambuf_iterator<char>());
  std::system(("rm -rf " + d).c_str());
  return failures.substr(0, 4000);
}

TEST(VulkanLimits, LoweringsSplitPastTheLoopLimit) {
  std::map<std::string, std::string> sources;
  for (bool cpu : {true, false}) {
    SCOPED_TRACE(cpu ? "cpu device" : "gpu device");
    const Caps caps = caps_of(cpu);
    for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8, DType::b8}) {
      SCOPED_TRACE(dtype_name(t));
      // Thin (one thread per output) and tiled: K = 1,000 is one launch, K = 200,000 several
      // of one kernel; f16/bf16 carry the float accumulators in one f32 scratch buffer.
      for (int64_t m : {3, 40}) {
        const auto mm = [&](int64_t k) {
          return codegen::lower(
              ir::Matmul{host({1, m, k}, t), host({1, k, m}, t), host({1, m, m}, t)}, Dialect::glsl,
              caps);
        };
        EXPECT_EQ(mm(1000).launches.size(), 1u);
        const Lowering l = mm(200000);
        check_split(l, 3, sources, t);
        EXPECT_EQ(l.launches.front().kernel, l.launches.back().kernel);
        const bool scratch = t == DType::f16 || t == DType::bf16;
        EXPECT_EQ(l.scratch_bytes.size(), scratch ? 1u : 0u);
      }
      // 70M elements (a stride-0 view: no memory) into one output and into 2 outputs, for every
      // reduce op: partials, then the final launch.
      const Tensor x = host({1, 1000}, t).expand({70000, 1000});
      const DType acc = is_floating(t) ? t : DType::i64;
      using ir::ReduceOp;
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::any, ReduceOp::all,
                          ReduceOp::max, ReduceOp::min}) {
        const bool logical = op == ReduceOp::any || op == ReduceOp::all;
        const bool extreme = op == ReduceOp::max || op == ReduceOp::min;
        const DType out = logical ? DType::b8 : extreme ? t : acc;
        const Tensor idx = extreme ? host({1, 1}, DType::i64) : Tensor();
        const Lowering l =
            codegen::lower(ir::Reduce{op, x, {0, 1}, host({1, 1}, out), idx}, Dialect::glsl, caps);
        check_split(l, 2, sources, t);
        EXPECT_EQ(l.launches.size(), 2u);
        EXPECT_EQ(l.scratch_bytes.size(), extreme ? 2u : 1u);
        // 128 x 35M: one 1,024-thread workgroup per output stays under the limit (2 x 35M
        // splits: few outputs share the device through partials).
        auto outputs = [&](int64_t n) {
          const Tensor y = host({n, 1}, t).expand({n, 35000000});
          return codegen::lower(ir::Reduce{op,
                                           y,
                                           {1},
                                           host({n, 1}, out),
                                           extreme ? host({n, 1}, DType::i64) : Tensor()},
                                Dialect::glsl, caps)
              .launches.size();
        };
        EXPECT_EQ(outputs(128), 1u);
        EXPECT_EQ(outputs(2), 2u);
      }
    }
  }
  if (std::system("glslangValidator --version > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "glslangValidator not installed (Debian glslang-tools)";
  EXPECT_EQ(validate(sources), "");
}

// A fused graph ending in a reduction (codegen::lower_graph_reduce): x * 2 + y folded as the
// reduce kernels read it, over 70M elements (partials, then the final launch) and over a small
// shape that also stores x * 2 + y (one launch), each followed by its `after` (the result * 0.5);
// every kernel compiles.
TEST(VulkanLimits, FusedReductionLoweringsSplitAndStore) {
  using K = ir::FusedGraph::Kind;
  std::map<std::string, std::string> sources;
  for (bool cpu : {true, false}) {
    SCOPED_TRACE(cpu ? "cpu device" : "gpu device");
    const Caps caps = caps_of(cpu);
    for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
      for (ir::ReduceOp op : {ir::ReduceOp::sum, ir::ReduceOp::max}) {
        SCOPED_TRACE(std::string(dtype_name(t)) + (op == ir::ReduceOp::sum ? " sum" : " max"));
        auto graph = [&](const Shape& shape, const Tensor& x, const Tensor& y, bool store) {
          ir::FusedGraph g;
          g.shape = shape;
          g.inputs = {x, y};
          auto node = [&](K kind, int32_t a, int32_t b) {
            ir::FusedGraph::Node n;
            n.kind = kind;
            n.dtype = t;
            n.a = a;
            n.b = b;
            if (kind == K::load) n.input = a, n.a = -1;
            if (kind == K::constant) n.value = Scalar(2.0), n.a = -1;
            if (kind == K::binary) n.binary = b == 1 ? ir::BinaryOp::mul : ir::BinaryOp::add;
            g.nodes.push_back(n);
          };
          node(K::load, 0, -1);       // 0: x
          node(K::constant, -1, -1);  // 1: 2
          node(K::binary, 0, 1);      // 2: x * 2
          node(K::load, 1, -1);       // 3: y
          node(K::binary, 2, 3);      // 4: x * 2 + y
          if (store) g.outputs.push_back({4, host(shape, t)});
          const Tensor dst = host({1, 1}, t);
          g.reductions.push_back({op, 4, {0, 1}, dst});
          ir::FusedGraph a;  // dst * 0.5
          a.shape = {1, 1};
          a.inputs = {dst};
          ir::FusedGraph::Node n;
          n.dtype = t;
          n.input = 0;
          a.nodes.push_back(n);
          n.kind = K::constant;
          n.value = Scalar(0.5);
          a.nodes.push_back(n);
          n.kind = K::binary;
          n.binary = ir::BinaryOp::mul;
          n.a = 0;
          n.b = 1;
          a.nodes.push_back(n);
          a.outputs.push_back({2, host({1, 1}, t)});
          g.after.push_back(a);
          return codegen::lower_graph(g, Dialect::glsl, caps);
        };
        const Tensor big = host({1, 1000}, t).expand({70000, 1000});
        const Lowering l = graph({70000, 1000}, big, big, false);
        check_split(l, 3, sources, t);
        EXPECT_EQ(l.launches.size(), 3u) << "partials, final, after";
        EXPECT_EQ(l.launches[0].bindings.size(), 2u + l.scratch_bytes.size()) << "x, y, partials";
        const Tensor x = host({40, 300}, t), y = host({40, 300}, t);
        const Lowering s = graph({40, 300}, x, y, true);
        check_split(s, 2, sources, t);
        EXPECT_EQ(s.launches.size(), 2u) << "the reduction storing x * 2 + y, then after";
        EXPECT_EQ(s.launches[0].bindings.size(), 4u) << "the output, x, y, dst";
      }
    }
  }
  if (std::system("glslangValidator --version > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "glslangValidator not installed (Debian glslang-tools)";
  EXPECT_EQ(validate(sources), "");
}

// ---- on the device ----

// Uniform integers in [lo, hi) as dtype t on cpu.
Tensor small_ints(const Shape& shape, DType t, int64_t lo, int64_t hi, uint64_t seed) {
  return testing::integers(shape, t, seed, lo, hi).to(Device::cpu());
}

// [m, K] @ [K, n] on the device against cpu; `scale` multiplies the integer inputs (f16 keeps
// its sums in range with 0.5).
void check_matmul(const Device& dev, DType t, int64_t m, int64_t k, int64_t n, double scale) {
  SCOPED_TRACE(std::string(dtype_name(t)) + " [" + std::to_string(m) + ", " + std::to_string(k) +
               "] @ [" + std::to_string(k) + ", " + std::to_string(n) + "]");
  const bool flt = t == DType::f32 || t == DType::f16;
  Tensor a = small_ints({m, k}, flt ? DType::f32 : t, flt ? 0 : -8, flt ? 3 : 8, 11 + k);
  Tensor b = small_ints({k, n}, flt ? DType::f32 : t, flt ? 0 : -8, flt ? 3 : 8, 12 + k);
  if (flt) {
    a = (a * scale).to(t);
    b = (b * scale).to(t);
  }
  const Tensor want = matmul(a, b);
  const Tensor got = matmul(a.to(dev), b.to(dev)).to(Device::cpu());
  EXPECT_EQ(compare(want, got), "");
}

TEST(VulkanLimits, MatmulLongKThin) {  // the one-thread-per-output kernel
  EMBER_VULKAN_OR_SKIP(dev);
  for (int64_t k : {70000, 200000}) {
    check_matmul(dev, DType::f32, 3, k, 5, 1.0);
    if (supports_dtype(dev, DType::f16)) check_matmul(dev, DType::f16, 3, k, 5, 0.5);
    if (supports_dtype(dev, DType::i8)) check_matmul(dev, DType::i8, 3, k, 5, 1.0);
  }
}

TEST(VulkanLimits, MatmulLongKTiled) {  // the tiled kernel (M, N >= 8)
  EMBER_VULKAN_OR_SKIP(dev);
  for (int64_t k : {70000, 200000}) {
    check_matmul(dev, DType::f32, 9, k, 10, 1.0);
    if (k < 100000 && supports_dtype(dev, DType::f16)) check_matmul(dev, DType::f16, 9, k, 10, 0.5);
  }
}

// 70M elements: past the 67M the single-pass reduction reached; 1-byte dtypes fit in lavapipe's
// 128 MiB buffers.
constexpr int64_t kLong = 70000000;

TEST(VulkanLimits, SumBeyond67M) {
  EMBER_VULKAN_OR_SKIP(dev);
  if (!supports_dtype(dev, DType::u8)) GTEST_SKIP() << "no u8 on this device";
  const Tensor x = small_ints({kLong}, DType::u8, 0, 256, 3);
  const Tensor xd = x.to(dev);
  EXPECT_EQ(compare(sum(x), sum(xd).to(Device::cpu())), "");
  // Two outputs of 35M each (single pass) and a sum over a strided view of all of it.
  const Tensor x2 = x.reshape({2, kLong / 2});
  EXPECT_EQ(compare(sum(x2, {1}), sum(xd.reshape({2, kLong / 2}), {1}).to(Device::cpu())), "");
  const Tensor t2 = x.reshape({kLong / 2, 2}).transpose(0, 1);
  EXPECT_EQ(
      compare(sum(t2, {1}), sum(xd.reshape({kLong / 2, 2}).transpose(0, 1), {1}).to(Device::cpu())),
      "");
}

TEST(VulkanLimits, AnyAllBeyond67M) {
  EMBER_VULKAN_OR_SKIP(dev);
  if (!supports_dtype(dev, DType::b8)) GTEST_SKIP() << "no bool on this device";
  Tensor f = zeros({kLong}, {DType::b8, Device::cpu()});
  EXPECT_FALSE(any(f.to(dev)).to(Device::cpu()).item<bool>());
  f.narrow(0, kLong - 7, 1).fill_(true);  // a single true in the last chunk
  EXPECT_TRUE(any(f.to(dev)).to(Device::cpu()).item<bool>());
  Tensor t = full({kLong}, true, {DType::b8, Device::cpu()});
  EXPECT_TRUE(all(t.to(dev)).to(Device::cpu()).item<bool>());
  t.narrow(0, kLong - 7, 1).fill_(false);  // a single false in the last chunk
  EXPECT_FALSE(all(t.to(dev)).to(Device::cpu()).item<bool>());
}

TEST(VulkanLimits, ArgmaxArgminBeyond67M) {
  EMBER_VULKAN_OR_SKIP(dev);
  if (!supports_dtype(dev, DType::i8)) GTEST_SKIP() << "no i8 on this device";
  Tensor x = small_ints({kLong}, DType::i8, -100, 100, 5);
  // The max near the end, tied later in the same chunk and in no other; the min tied across
  // chunks (the first index wins).
  x.narrow(0, kLong - 9, 1).fill_(120);
  x.narrow(0, kLong - 2, 1).fill_(120);
  x.narrow(0, 123, 1).fill_(-120);
  x.narrow(0, kLong - 5, 1).fill_(-120);
  const Tensor xd = x.to(dev);
  EXPECT_EQ(argmax(xd).to(Device::cpu()).item<int64_t>(), kLong - 9);
  EXPECT_EQ(argmin(xd).to(Device::cpu()).item<int64_t>(), 123);
  auto [v, i] = max(xd, 0);
  EXPECT_EQ(v.to(Device::cpu()).item<int8_t>(), 120);
  EXPECT_EQ(i.to(Device::cpu()).item<int64_t>(), kLong - 9);
  EXPECT_EQ(compare(argmax(x), argmax(xd).to(Device::cpu())), "");
}

// 52M f16 (104 MB) is past the single pass's bound (~50M elements for one output): max/min with
// indices and NaN, the first NaN winning across chunks, as the ref backend.
TEST(VulkanLimits, ArgmaxNaNF16Split) {
  EMBER_VULKAN_OR_SKIP(dev);
  if (!supports_dtype(dev, DType::f16)) GTEST_SKIP() << "no f16 on this device";
  const int64_t n = 52000000;
  Tensor x = small_ints({n}, DType::f32, -100, 100, 7).to(DType::f16);
  x.narrow(0, n - 3000000, 1).fill_(std::numeric_limits<float>::quiet_NaN());
  x.narrow(0, n - 3, 1).fill_(std::numeric_limits<float>::quiet_NaN());
  x.narrow(0, n - 2, 1).fill_(1000);
  const Tensor xd = x.to(dev);
  EXPECT_EQ(argmax(xd).to(Device::cpu()).item<int64_t>(), n - 3000000);
  EXPECT_EQ(argmin(xd).to(Device::cpu()).item<int64_t>(), n - 3000000);
  EXPECT_EQ(compare(argmax(x), argmax(xd).to(Device::cpu())), "");
  x.narrow(0, n - 3000000, 1).fill_(0);
  x.narrow(0, n - 3, 1).fill_(0);
  const Tensor yd = x.to(dev);
  EXPECT_EQ(argmax(yd).to(Device::cpu()).item<int64_t>(), n - 2);
  EXPECT_EQ(compare(max(x), max(yd).to(Device::cpu())), "");
}

// A stride-0 (expanded) view reaches 70M elements of any dtype without the memory: f32 sums,
// products, and max/min with indices with NaN propagation (the first NaN wins).
TEST(VulkanLimits, ExpandedFloatBeyond67M) {
  EMBER_VULKAN_OR_SKIP(dev);
  const int64_t rows = 70000, cols = 1000;
  Tensor base = small_ints({1, cols}, DType::f32, 0, 5, 9);
  const auto both = [&](const Tensor& b, const std::function<Tensor(const Tensor&)>& fn) {
    const Tensor want = fn(b.expand({rows, cols}));
    const Tensor got = fn(b.to(dev).expand({rows, cols})).to(Device::cpu());
    EXPECT_EQ(compare(want, got), "");
  };
  both(base, [](const Tensor& v) { return sum(v); });
  both(base, [](const Tensor& v) { return max(v); });
  // Columns as the reduced dim (R = 70,000 per output) and all 70M as one dim through a
  // transpose: max/min with indices.
  both(base, [](const Tensor& v) { return std::get<1>(max(v.transpose(0, 1), 1)); });
  base.narrow(1, 700, 1).fill_(std::numeric_limits<float>::quiet_NaN());
  both(base, [](const Tensor& v) { return max(v); });
  both(base, [](const Tensor& v) { return min(v); });
  both(base, [](const Tensor& v) { return std::get<1>(min(v, 0)); });
}

// A fused graph's reduction over 70M elements (an expanded view): x * 2 + 1 folded by the split
// reduce kernels with fusion on, against the cpu's eager ops.
TEST(VulkanLimits, FusedReductionBeyond67M) {
  EMBER_VULKAN_OR_SKIP(dev);
  const bool was = fusion_enabled(dev);
  set_fusion(dev, true);
  const int64_t rows = 70000, cols = 1000;
  Tensor base = small_ints({1, cols}, DType::f32, 0, 5, 13);
  base.narrow(1, 300, 1).fill_(7);
  const Tensor b = base.to(dev);
  sync(dev);
  reset_stream_stats(dev);
  // (Separate statements: a temporary held while the stream runs would be written, 280 MB.)
  Tensor s = sum(b.expand({rows, cols}) * 2.0 + 1.0);
  Tensor m = amax(b.expand({rows, cols}) - 3.0, {0});
  s = s.to(Device::cpu());
  m = m.to(Device::cpu());
  const StreamStats st = stream_stats(dev);
  set_fusion(dev, was);
  EXPECT_EQ(st.graphs, 2);
  EXPECT_EQ(st.eager_ops, 0);
  const Tensor e = base.expand({rows, cols});
  EXPECT_EQ(compare(sum(e * 2.0 + 1.0), s), "");
  EXPECT_EQ(compare(amax(e - 3.0, {0}), m), "");
}

// A fused reduction whose node runs a loop per element (erf's f64 series: lavapipe counts a
// called function's loops against the same 65,535) splits so that no invocation passes the
// limit, in every variant the autotuner times (whichever is fastest runs) and past it: rows of
// 8,192 and 524,288 elements, against the cpu.
TEST(VulkanLimits, FusedReductionOfALoopingNodeStaysInTheBudget) {
  EMBER_VULKAN_OR_SKIP(dev);
  autotune::Autotuner& t = autotune::for_device(dev);
  const autotune::Options saved = t.options();
  char dir_template[] = "/tmp/ember_limits_tune_XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  autotune::Options o;
  o.effort = autotune::Effort::full;
  o.dir = dir;
  o.check = false;  // the fastest variant runs, right or wrong (a cut-short loop is fast)
  t.set_options(o);
  const bool was = fusion_enabled(dev);
  set_fusion(dev, true);
  manual_seed(Device::cpu(), 1);
  const Tensor x = rand({64, 8192}, {DType::f32, Device::cpu()}) * 0.5 + 2.6;
  const Tensor row = rand({1, 524288}, {DType::f32, Device::cpu()}) * 0.5 + 2.6;
  const Tensor xd = x.to(dev), rd = row.to(dev);
  Tensor s = sum(erf(xd), {1});
  Tensor m = mean(nn::functional::gelu(xd), {1});
  Tensor l = sum(erf(rd.expand({4, 524288})), {1});
  s = s.to(Device::cpu());
  m = m.to(Device::cpu());
  l = l.to(Device::cpu());
  set_fusion(dev, was);
  t.set_options(saved);
  std::system(("rm -rf " + dir).c_str());
  EXPECT_EQ(compare(sum(erf(x), {1}), s, 64), "");
  EXPECT_EQ(compare(mean(nn::functional::gelu(x), {1}), m, 64), "");
  EXPECT_EQ(compare(sum(erf(row.expand({4, 524288})), {1}), l, 64), "");
}

}  // namespace
}  // namespace ember
