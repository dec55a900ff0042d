// The autotuner (runtime/autotune.h): the cache file across instances (two processes), corrupt
// and foreign files, effort levels, check mode, and the cpu ops that use it (GEMM library, conv
// layout, fused-graph tile) giving the default's results whichever variant wins. No test
// asserts on speed: which candidate wins is never checked, only that a choice is made, kept,
// persisted and harmless.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/autotune_util.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/kernels.h"
#include "backends/ref/kernels.h"
#include "ember/ember.h"
#include "ember/nn/functional/conv.h"
#include "ir/ops.h"
#include "op_table.h"
#include "runtime/autotune.h"

namespace ember {
namespace {

namespace fs = std::filesystem;
using autotune::Autotuner;
using autotune::Bench;
using autotune::Candidate;
using autotune::Effort;
using autotune::Options;

// Every test of this binary tunes into a temporary folder, never the user's cache (unless the
// environment names one already, as ctest may).
const bool kCacheInTemp = [] {
  if (!std::getenv("EMBER_AUTOTUNE_CACHE")) {
    static const std::string dir =
        (fs::temp_directory_path() / ("ember_tests_autotune_" + std::to_string(getpid()))).string();
    setenv("EMBER_AUTOTUNE_CACHE", dir.c_str(), 1);
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(dir, ec);
    });
  }
  return true;
}();

// A fresh folder per test.
struct TempDir {
  std::string path;
  TempDir() {
    static int n = 0;
    path = (fs::temp_directory_path() /
            ("ember_autotune_test_" + std::to_string(getpid()) + "_" + std::to_string(n++)))
               .string();
    fs::remove_all(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

Options opts(const std::string& dir, Effort e = Effort::balanced, bool check = false) {
  Options o;
  o.dir = dir;
  o.effort = e;
  o.check = check;
  return o;
}

// An op whose candidates only count their runs (and write `out`, for check mode).
struct Counting {
  std::vector<Candidate> cands;
  std::vector<int> runs;
  std::vector<double> out;
  Bench bench;
  explicit Counting(std::vector<Candidate> c) : cands(std::move(c)), runs(cands.size(), 0) {
    bench.run = [this](size_t i) {
      ++runs[i];
      out = {1.0, 2.0, 3.0};
    };
    bench.result = [this] { return out; };
  }
  int total() const {
    int t = 0;
    for (int r : runs) t += r;
    return t;
  }
  size_t pick(Autotuner& t, const std::string& shape = "s1") {
    return t.pick("test.op", "f32", shape, cands, bench);
  }
};

std::vector<Candidate> three() { return {{"a"}, {"b", Effort::minimal}, {"c", Effort::minimal}}; }

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(AutotuneTest, SecondCallUsesTheChoiceWithoutTiming) {
  TempDir d;
  Autotuner t("dev", "test device", opts(d.path));
  Counting op(three());
  const size_t first = op.pick(t);
  ASSERT_LT(first, 3u);
  const int runs = op.total();
  EXPECT_EQ(runs, 9);  // balanced: 3 timed runs of each of the 3 candidates
  EXPECT_EQ(t.stats().tuned, 1);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(op.pick(t), first);
  EXPECT_EQ(op.total(), runs);  // no more timing
  EXPECT_EQ(t.stats().tuned, 1);
  EXPECT_EQ(t.stats().timed_runs, 9);
  // Another shape class is tuned on its own.
  op.pick(t, "s2");
  EXPECT_EQ(t.stats().tuned, 2);
}

TEST(AutotuneTest, CacheRoundTripAcrossTwoInstances) {
  TempDir d;
  size_t chosen = 0;
  {
    Autotuner first("dev", "test device", opts(d.path));  // the first process
    Counting op(three());
    chosen = op.pick(first);
    EXPECT_EQ(first.stats().tuned, 1);
    EXPECT_EQ(first.file(), d.path + "/dev.json");
  }
  ASSERT_TRUE(fs::exists(d.path + "/dev.json"));
  const nlohmann::json j = nlohmann::json::parse(read(d.path + "/dev.json"));
  EXPECT_EQ(j.at("device"), "test device");
  EXPECT_EQ(j.at("entries").at("test.op|f32|s1").at("variant"), three()[chosen].name);

  Autotuner second("dev", "test device", opts(d.path));  // the second process
  Counting op(three());
  EXPECT_EQ(op.pick(second), chosen);
  EXPECT_EQ(op.total(), 0);  // nothing timed: the choice came from the file
  EXPECT_EQ(second.stats().loaded, 1);
  EXPECT_EQ(second.stats().tuned, 0);
  // A candidate list in another order still finds the same variant by name.
  std::vector<Candidate> reordered{three()[2], three()[0], three()[1]};
  Counting op2(reordered);
  EXPECT_EQ(reordered[op2.pick(second)].name, three()[chosen].name);
  EXPECT_EQ(op2.total(), 0);
}

// Two processes tuning at once: each save keeps what the other wrote meanwhile.
TEST(AutotuneTest, SaveKeepsAnotherProcesssChoices) {
  TempDir d;
  Autotuner a("dev", "test device", opts(d.path)), b("dev", "test device", opts(d.path));
  Counting op_a(three()), op_b(three());
  op_a.pick(a, "s1");  // a loads (no file) and writes s1
  op_b.pick(b, "s2");  // b loads s1 and writes s1 + s2
  op_a.pick(a, "s3");  // a merges s2 in and writes all three
  const nlohmann::json j = nlohmann::json::parse(read(d.path + "/dev.json"));
  EXPECT_EQ(j.at("entries").size(), 3u);
  Autotuner c("dev", "test device", opts(d.path));
  Counting op_c(three());
  for (const char* s : {"s1", "s2", "s3"}) op_c.pick(c, s);
  EXPECT_EQ(op_c.total(), 0);
  EXPECT_EQ(c.stats().loaded, 3);
}

// Writes `text` as the cache file, then checks that a tuner ignores it with one warning naming
// `why`, tunes, and rewrites the file so that the next instance loads it.
void expect_ignored_then_rewritten(const std::string& text, const std::string& why) {
  TempDir d;
  fs::create_directories(d.path);
  { std::ofstream(d.path + "/dev.json") << text; }
  Autotuner t("dev", "test device", opts(d.path));
  Counting op(three());
  ::testing::internal::CaptureStderr();
  op.pick(t);
  op.pick(t, "s2");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("warning: [autotune] cache " + d.path + "/dev.json ignored"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find(why), std::string::npos) << err;
  EXPECT_EQ(err.find("ignored"), err.rfind("ignored")) << "one warning: " << err;
  EXPECT_EQ(t.stats().tuned, 2);
  EXPECT_EQ(t.stats().loaded, 0);
  Autotuner again("dev", "test device", opts(d.path));
  Counting op2(three());
  ::testing::internal::CaptureStderr();
  op2.pick(again);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(again.stats().loaded, 2);
  EXPECT_EQ(op2.total(), 0);
}

TEST(AutotuneTest, CorruptFileIsIgnoredWithAWarningAndRewritten) {
  expect_ignored_then_rewritten("{\"format\": \"ember-autotune\", \"vers", "unreadable");
  expect_ignored_then_rewritten("[1, 2, 3]", "not an Ember autotune cache");
  expect_ignored_then_rewritten(
      R"({"format": "ember-autotune", "version": 1, "device": "test device",
          "entries": {"test.op|f32|s1": {"variant": 7}}})",
      "unreadable");
}

TEST(AutotuneTest, ForeignFileIsIgnoredWithAWarningAndRewritten) {
  TempDir d;
  {
    Autotuner other("dev", "another device", opts(d.path));
    Counting op(three());
    op.pick(other);
  }
  const std::string theirs = read(d.path + "/dev.json");
  expect_ignored_then_rewritten(theirs, "made for device 'another device'");
  nlohmann::json j = nlohmann::json::parse(theirs);
  j["device"] = "test device";
  j["version"] = 99;
  expect_ignored_then_rewritten(j.dump(), "format version 99");
}

// The tuning still happens (and is used by this process); the cache file cannot be written, once
// said.
TEST(AutotuneTest, UnwritableCacheWarnsOnceWithTheReason) {
  TempDir d;
  fs::create_directories(d.path);
  const std::string file = d.path + "/a-file";
  std::ofstream(file) << "not a folder";
  struct Case {
    std::string dir, why;
  };
  // A regular file where the folder should be, and a folder that cannot be made inside it.
  for (const Case& c :
       {Case{file, file + " is not a folder"}, Case{file + "/sub", file + " is not a folder"}}) {
    Autotuner t("dev", "test device", opts(c.dir));
    Counting op(three());
    ::testing::internal::CaptureStderr();
    const size_t first = op.pick(t);
    op.pick(t, "s2");  // a second save: no second warning
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(t.stats().tuned, 2);
    EXPECT_EQ(op.pick(t), first);
    // The variable that chose the folder is named (it was only the path and the reason).
    const std::string want = "warning: [autotune] cannot write the cache file " + c.dir +
                             "/dev.json: " + c.why +
                             "; the choices are kept in memory only (set EMBER_AUTOTUNE_CACHE to "
                             "a writable folder, or to 0 for no file)\n";
    EXPECT_EQ(err, want) << c.dir;
  }
}

TEST(AutotuneTest, OffNeverTimesAndWritesNoFile) {
  TempDir d;
  Autotuner t("dev", "test device", opts(d.path, Effort::off));
  Counting op(three());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(op.pick(t), 0u);  // the default
  EXPECT_EQ(op.total(), 0);
  EXPECT_FALSE(fs::exists(d.path));
  EXPECT_EQ(t.file(), "");
  EXPECT_EQ(t.stats().tuned, 0);
  // The environment's spelling.
  setenv("EMBER_AUTOTUNE", "off", 1);
  EXPECT_EQ(Options::from_env().effort, Effort::off);
  setenv("EMBER_AUTOTUNE", "full", 1);
  EXPECT_EQ(Options::from_env().effort, Effort::full);
  setenv("EMBER_AUTOTUNE", "fast", 1);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Options::from_env().effort, Effort::balanced);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find(
                "warning: [env] EMBER_AUTOTUNE=fast is not one of off|minimal|balanced|full; "
                "using the default 'balanced'\n"),
            std::string::npos);
  // Flag words, as every switch reads them; levels in any case.
  for (const char* off : {"0", "false", "OFF", "No"}) {
    setenv("EMBER_AUTOTUNE", off, 1);
    EXPECT_EQ(Options::from_env().effort, Effort::off) << off;
  }
  setenv("EMBER_AUTOTUNE", "1", 1);
  EXPECT_EQ(Options::from_env().effort, Effort::balanced);
  setenv("EMBER_AUTOTUNE", "Minimal", 1);
  EXPECT_EQ(Options::from_env().effort, Effort::minimal);
  unsetenv("EMBER_AUTOTUNE");
  EXPECT_EQ(Options::from_env().effort, Effort::balanced);
}

TEST(AutotuneTest, EffortChoosesHowManyCandidatesRun) {
  const std::vector<Candidate> four{
      {"dflt"}, {"min", Effort::minimal}, {"bal", Effort::balanced}, {"full", Effort::full}};
  struct Want {
    Effort e;
    std::vector<int> runs;  // per candidate
  };
  for (const Want& w : {Want{Effort::minimal, {2, 2, 0, 0}}, Want{Effort::balanced, {3, 3, 3, 0}},
                        Want{Effort::full, {5, 5, 5, 5}}}) {
    TempDir d;
    Autotuner t("dev", "test device", opts(d.path, w.e));
    Counting op(four);
    const size_t got = op.pick(t);
    EXPECT_EQ(op.runs, w.runs) << autotune::effort_name(w.e);
    EXPECT_GT(w.runs[got], 0) << "the choice was one of the timed candidates";
  }
  // A choice made at a lower effort is tuned again at a higher one, not the other way.
  TempDir d;
  {
    Autotuner low("dev", "test device", opts(d.path, Effort::minimal));
    Counting op(four);
    op.pick(low);
  }
  Autotuner high("dev", "test device", opts(d.path, Effort::full));
  Counting op(four);
  op.pick(high);
  EXPECT_EQ(op.total(), 20);
  Autotuner low_again("dev", "test device", opts(d.path, Effort::minimal));
  Counting op2(four);
  op2.pick(low_again);
  EXPECT_EQ(op2.total(), 0);
  // One eligible candidate: nothing to time, nothing remembered.
  Autotuner t("dev2", "test device", opts(d.path, Effort::minimal));
  Counting single({{"dflt"}, {"bal", Effort::balanced}});
  EXPECT_EQ(single.pick(t), 0u);
  EXPECT_EQ(single.total(), 0);
  EXPECT_EQ(t.stats().entries, 0);
}

TEST(AutotuneTest, ForcedVariantSkipsTiming) {
  TempDir d;
  Autotuner t("dev", "test device", opts(d.path));
  Counting op(three());
  t.force("test.op", "c");
  EXPECT_EQ(op.pick(t), 2u);
  t.force("test.op", "no such variant");  // ignored: tuned as usual
  op.pick(t);
  EXPECT_EQ(op.total(), 9);
  t.force("test.op", "");
}

TEST(AutotuneTest, ForcingAFamilyPicksItsFirstMember) {
  TempDir d;
  Autotuner t("dev", "test device", opts(d.path));
  Counting op({{"x/1"}, {"y/1", Effort::minimal}, {"y/2", Effort::minimal}, {"yy"}});
  t.force("test.op", "y");
  EXPECT_EQ(op.pick(t), 1u);
  t.force("test.op", "yy");  // an exact name wins
  EXPECT_EQ(op.pick(t), 3u);
  t.force("test.op", "x/");  // no family "x/": ignored, tuned as usual
  op.pick(t);
  EXPECT_GT(op.total(), 0);
  t.force("test.op", "");
}

TEST(AutotuneTest, CheckModeNamesTheKeyVariantAndElement) {
  TempDir d;
  Autotuner t("dev", "test device", opts(d.path, Effort::balanced, true));
  Counting op(three());
  op.bench.run = [&](size_t i) { op.out = {1.0, 2.0, i == 2 ? 3.5 : 3.0}; };
  op.bench.rtol = 1e-3;
  op.bench.detail = [] { return std::string("f32 [3]"); };
  try {
    op.pick(t);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("'c' of test.op|f32|s1 (f32 [3])"), std::string::npos) << m;
    EXPECT_NE(m.find("default 'a'"), std::string::npos) << m;
    EXPECT_NE(m.find("element 2: variant 3.5, default 3"), std::string::npos) << m;
  }
  // Within the tolerance: no error.
  op.bench.run = [&](size_t i) { op.out = {1.0, 2.0, i == 2 ? 3.001 : 3.0}; };
  op.bench.rtol = 1e-3;
  EXPECT_NO_THROW(op.pick(t, "s2"));
  // Check mode off: a mismatch is not looked for.
  Autotuner quiet("dev3", "test device", opts(d.path));
  op.bench.run = [&](size_t i) { op.out = {i == 1 ? 9.0 : 1.0}; };
  EXPECT_NO_THROW(op.pick(quiet));
}

// Sets the cpu tuner's options for one test (a fresh folder, check mode), restored after.
struct CpuTuner {
  TempDir dir;
  Options saved = cpu::tuner().options();
  explicit CpuTuner(Effort e = Effort::full, bool check = true) {
    cpu::tuner().set_options(opts(dir.path, e, check));
  }
  ~CpuTuner() { cpu::tuner().set_options(saved); }
};

struct Gemm {
  int64_t B, M, N, K;
};
const Gemm kGemms[] = {{1, 64, 48, 32}, {1, 130, 129, 140}, {4, 32, 40, 24}, {3, 150, 140, 160}};

Tensor rnd(Shape s, uint64_t seed) {
  manual_seed(Device::cpu(), seed);
  return randn(std::move(s), {DType::f32, Device::cpu()});
}

std::vector<std::string> gemm_variants(int64_t B) {
  if (B == 1) return {"onednn", "openblas"};
  return {"onednn/item-per-thread", "onednn/threaded-gemm", "openblas/item-per-thread",
          "openblas/threaded-gemm"};
}

TEST(AutotuneTest, EveryGemmVariantEqualsTheDefault) {
  if (cpu::gemm::sgemm_choice_forced()) GTEST_SKIP() << "EMBER_GEMM forces a library";
  CpuTuner ct;  // full effort, check mode: every candidate is compared with the default
  for (const Gemm& g : kGemms) {
    SCOPED_TRACE(std::to_string(g.B) + "x" + std::to_string(g.M) + "x" + std::to_string(g.N) + "x" +
                 std::to_string(g.K));
    const Tensor a = rnd({g.B, g.M, g.K}, 1), b = rnd({g.B, g.K, g.N}, 2);
    // Outputs are sums of K unit-variance products: rounding in another summation order grows
    // with sqrt(K), and a cancelling sum near zero is judged by the absolute bound.
    const double tol = 4 * std::sqrt(double(g.K));
    const Tensor want = empty({g.B, g.M, g.N}, {DType::f32, Device::cpu()});
    sync(Device::cpu());
    ref::matmul(ir::Matmul{a, b, want});
    const int64_t tuned = cpu::tuner().stats().tuned;
    const Tensor got = empty({g.B, g.M, g.N}, {DType::f32, Device::cpu()});
    ASSERT_TRUE(cpu::sgemm_matmul(ir::Matmul{a, b, got}));
    EXPECT_EQ(cpu::tuner().stats().tuned, tuned + 1) << "tuned (and checked) once";
    EXPECT_EQ(testing::compare(want, got, tol), "");
    // Each variant forced, against the reference kernel.
    for (const std::string& v : gemm_variants(g.B)) {
      if (v.rfind("openblas", 0) == 0 && !cpu::gemm::have_openblas()) continue;
      cpu::tuner().force("cpu.matmul", v);
      const Tensor d = empty({g.B, g.M, g.N}, {DType::f32, Device::cpu()});
      ASSERT_TRUE(cpu::sgemm_matmul(ir::Matmul{a, b, d}));
      EXPECT_EQ(testing::compare(want, d, tol), "") << v;
    }
    cpu::tuner().force("cpu.matmul", "");
  }
}

TEST(AutotuneTest, EveryConvLayoutEqualsTheDefault) {
  namespace F = nn::functional;
  CpuTuner ct;
  const Device cpu = Device::cpu();
  manual_seed(5);
  // A 3x3 kernel (default blocked) and a 1x1 kernel (default NHWC).
  for (int64_t k : {3, 1}) {
    SCOPED_TRACE("kernel " + std::to_string(k));
    const Tensor x0 = randn({2, 8, 9, 7}, {cpu}), w0 = randn({12, 8, k, k}, {cpu}) * 0.2f;
    auto run = [&](bool cl, std::vector<Tensor>& grads) {
      Tensor x = (cl ? x0.contiguous(MemoryFormat::channels_last) : x0.clone()).requires_grad_();
      Tensor w = w0.clone().requires_grad_();
      Tensor y = F::conv2d(x, w, Tensor(), {1, 1}, {k / 2, k / 2});
      (y * y).sum().backward();
      grads = {x.grad(), w.grad()};
      return y.detach();
    };
    std::vector<Tensor> want_g;
    const Tensor want = run(false, want_g);  // NCHW: one way only, not tuned
    const int64_t tuned = cpu::tuner().stats().tuned;
    std::vector<Tensor> g;
    const Tensor y = run(true, g);  // channels-last: both ways timed and checked
    // The forward and backward-weights passes (their ts[0] is the channels-last input); the
    // backward-data pass too when grad_dst is channels-last.
    EXPECT_GE(cpu::tuner().stats().tuned, tuned + 2);
    EXPECT_EQ(testing::compare(want, y, 16), "");
    for (size_t i = 0; i < 2; ++i) EXPECT_EQ(testing::compare(want_g[i], g[i], 64), "") << i;
    for (const char* v : {"nhwc", "blocked"}) {
      cpu::tuner().force("cpu.conv", v);
      const Tensor yv = run(true, g);
      EXPECT_EQ(testing::compare(want, yv, 16), "") << v;
      for (size_t i = 0; i < 2; ++i) EXPECT_EQ(testing::compare(want_g[i], g[i], 64), "") << v;
    }
    cpu::tuner().force("cpu.conv", "");
  }
}

// Burn #5257 was silently wrong only with fusion and autotuning both on: the same graph (a
// fused element-wise chain big enough for the tile to be tuned, a matmul, a conv), run
// repeatedly with both on, stays equal to the eager run.
TEST(AutotuneTest, FusionAndAutotuningOnRepeatedlyEqualEager) {
  namespace F = nn::functional;
  const Device cpu = Device::cpu();
  CpuTuner ct(Effort::balanced, false);
  const bool fusion_was = fusion_enabled(cpu);
  manual_seed(11);
  const Tensor x = randn({1 << 20}, {cpu}), m = randn({96, 160}, {cpu}),
               w = randn({160, 144}, {cpu}),
               img = randn({2, 4, 12, 12}, {cpu}).contiguous(MemoryFormat::channels_last),
               k = randn({6, 4, 3, 3}, {cpu});
  auto graph = [&] {
    const Tensor e = exp((x * 2.0f + 1.0f).relu() * 0.1f) - x;
    const Tensor p = (matmul(m, w) + 1.0f).relu();
    const Tensor c = F::conv2d(img, k) * 0.5f;
    return std::vector<Tensor>{e, p, c};
  };
  set_fusion(cpu, false);
  std::vector<std::vector<double>> eager;
  for (const Tensor& t : graph()) eager.push_back(t.to_vector<double>());
  set_fusion(cpu, true);
  reset_stream_stats(cpu);
  for (int rep = 0; rep < 4; ++rep) {
    const std::vector<Tensor> got = graph();
    for (size_t i = 0; i < got.size(); ++i) {
      const std::vector<double> g = got[i].to_vector<double>();
      ASSERT_EQ(g.size(), eager[i].size());
      for (size_t j = 0; j < g.size(); ++j)
        ASSERT_NEAR(g[j], eager[i][j], 1e-5 * (1 + std::abs(eager[i][j])))
            << "rep " << rep << " output " << i << " element " << j;
    }
  }
  set_fusion(cpu, fusion_was);
  EXPECT_GT(stream_stats(cpu).graphs, 0) << "fusion ran";
  EXPECT_GT(cpu::tuner().stats().tuned, 0) << "autotuning ran";
}

TEST(AutotuneTest, PublicStatsAndClear) {
  const Device cpu = Device::cpu();
  CpuTuner ct(Effort::minimal, false);
  clear_autotune_cache(cpu);
  EXPECT_EQ(autotune_stats(cpu).entries, 0);
  EXPECT_EQ(autotune_stats(cpu).cache_file, ct.dir.path + "/cpu.json");
  if (!cpu::gemm::have_openblas() || cpu::gemm::sgemm_choice_forced())
    GTEST_SKIP() << "one GEMM library: nothing to tune";
  const Tensor a = rnd({50, 70}, 3), b = rnd({70, 60}, 4);
  (void)matmul(a, b).to_vector<float>();
  const AutotuneStats s = autotune_stats(cpu);
  EXPECT_EQ(s.tuned, 1);
  EXPECT_EQ(s.timed_runs, 6);  // minimal: a warm-up and 2 timed runs of each library
  EXPECT_EQ(s.entries, 1);
  EXPECT_TRUE(fs::exists(s.cache_file));
  clear_autotune_cache(cpu);
  EXPECT_EQ(autotune_stats(cpu).entries, 0);
  EXPECT_FALSE(fs::exists(s.cache_file));
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

// Vulkan and OpenCL matmuls big enough to be tuned: every candidate (CLBlast where it takes the
// product, each generated tile, "simple") is compared with the default in check mode, and the
// result with the reference.
// body(device, its autotuner) on each Vulkan and OpenCL device, the tuner's options restored
// after each; the test skips when there is none.
void on_each_kernel_gpu(const std::function<void(const Device&, Autotuner&)>& body) {
  int devices = 0;
  for (const DeviceInfo& info : available_devices()) {
    const Device dev = info.device;
    if (dev.type() != DeviceType::vulkan && dev.type() != DeviceType::opencl) continue;
    ++devices;
    SCOPED_TRACE(dev.str());
    Autotuner& t = autotune::for_device(dev);
    const Options saved = t.options();
    body(dev, t);
    t.set_options(saved);
  }
  if (devices == 0) GTEST_SKIP() << "no Vulkan or OpenCL device";
}

TEST(AutotuneGpu, MatmulVariantsEqualTheDefault) {
  on_each_kernel_gpu([&](const Device& dev, Autotuner& t) {
    TempDir d;
    t.set_options(opts(d.path, Effort::full, true));
    for (const Gemm& g : {Gemm{1, 96, 80, 64}, Gemm{2, 40, 72, 48}}) {
      const Tensor a = rnd({g.B, g.M, g.K}, 7), b = rnd({g.B, g.K, g.N}, 8);
      const double tol = 4 * std::sqrt(double(g.K));  // as in EveryGemmVariantEqualsTheDefault
      const Tensor want = matmul(a.to(Device::ref()), b.to(Device::ref()));
      const int64_t tuned = t.stats().tuned;
      const Tensor got = matmul(a.to(dev), b.to(dev)).to(Device::ref());
      EXPECT_EQ(t.stats().tuned, tuned + 1) << "tuned and checked";
      EXPECT_EQ(testing::compare(want, got, tol), "");
      // The second call runs the choice untimed.
      const int64_t runs = t.stats().timed_runs;
      const Tensor again = matmul(a.to(dev), b.to(dev)).to(Device::ref());
      EXPECT_EQ(t.stats().timed_runs, runs);
      EXPECT_EQ(testing::compare(got, again, 1), "");
    }
    EXPECT_TRUE(fs::exists(d.path + "/" + autotune::stem_of(dev) + ".json"));
  });
}

// Vulkan and OpenCL reductions of 2^18 elements or more: each workgroup-size variant ("thread",
// "group32" ... "group256") is compared with the default in check mode, the result with the
// reference; plain reductions over rows and columns, with indices, and fused graphs ending in a
// reduction (one that writes its input in place is never tuned: tuning reruns it).
TEST(AutotuneGpu, ReductionVariantsEqualTheDefault) {
  on_each_kernel_gpu([&](const Device& dev, Autotuner& t) {
    const bool fusion_was = fusion_enabled(dev);
    TempDir d;
    t.set_options(opts(d.path, Effort::full, true));
    const Tensor x = rnd({64, 4096}, 9), y = rnd({64, 4096}, 10);
    const Tensor xd = x.to(dev), yd = y.to(dev);
    auto expect_tuned = [&](const std::string& what,
                            const std::function<Tensor(const Tensor&, const Tensor&)>& f,
                            bool tuned) {
      SCOPED_TRACE(what);
      const Tensor want = f(x.to(Device::ref()), y.to(Device::ref()));
      const int64_t before = t.stats().tuned;
      const Tensor got = f(xd, yd).to(Device::ref());
      EXPECT_EQ(t.stats().tuned, before + (tuned ? 1 : 0));
      EXPECT_EQ(testing::compare(want, got, 64), "");
      const int64_t runs = t.stats().timed_runs;
      const Tensor again = f(xd, yd).to(Device::ref());
      EXPECT_EQ(t.stats().timed_runs, runs) << "the second call runs the choice untimed";
      EXPECT_EQ(testing::compare(got, again, 1), "");
    };
    set_fusion(dev, false);
    expect_tuned(
        "sum over rows", [](const Tensor& a, const Tensor&) { return sum(a, {1}); }, true);
    expect_tuned(
        "amax over columns", [](const Tensor& a, const Tensor&) { return amax(a, {0}); }, true);
    expect_tuned(
        "argmax", [](const Tensor& a, const Tensor&) { return std::get<1>(max(a, 1)); }, true);
    set_fusion(dev, true);
    expect_tuned(
        "fused sum(x * y + 1) over columns",
        [](const Tensor& a, const Tensor& b) {
          Tensor s = sum(a * b + 1.0, {0});
          return s;
        },
        true);
    // (keys differ by op, dtype, extent classes and rows vs columns: each case its own key)
    Tensor held;
    expect_tuned(
        "an in-place write reduced",
        [&held](const Tensor& a, const Tensor&) {
          held = a * 1.0;  // held: the graph writes it
          sync(held.device());
          held.add_(2.0);
          Tensor s = amin(held, {1});
          return s;
        },
        false);
    set_fusion(dev, false);
    expect_tuned(
        "the same key unfused", [](const Tensor& a, const Tensor&) { return amin(a, {1}); }, true);
    set_fusion(dev, fusion_was);
  });
}

// Tuning syncs the device while the stream runs. The index checks gather defers (amin/amax
// of the index, read at the next sync) must wait until the stream has written those values:
// they were read mid-stream, unwritten, and a right index was "out of range" (a max-pool's
// argmax taps through a fresh cache, with conv and relu before it in the same stream).
TEST(AutotuneGpu, DeferredIndexChecksWaitForTheStream) {
  on_each_kernel_gpu([&](const Device& dev, Autotuner& t) {
    for (const Effort e : {Effort::minimal, Effort::balanced}) {
      TempDir d;
      t.set_options(opts(d.path, e));
      const Tensor x = rnd({64, 64, 4, 144}, 12);
      auto f = [](const Tensor& a) {
        // Recorded element-wise ops make the index; its amin/amax are recorded reductions of
        // 2^19 elements (tuned) in the same stream.
        const Tensor i = clamp(floor(a * 2.0) + 2.0, Scalar(0), Scalar(3)).to(DType::i64);
        const Tensor taps = i.narrow(2, 1, 1);
        return gather(a, 2, taps) * 2.0;
      };
      const Tensor want = f(x.to(Device::ref()));
      const int64_t tuned = t.stats().tuned;
      Tensor got;
      ASSERT_NO_THROW(got = f(x.to(dev)).to(Device::ref()));
      EXPECT_GT(t.stats().tuned, tuned) << "the index's reductions were tuned";
      EXPECT_EQ(testing::compare(want, got, 1), "");
    }
  });
}

}  // namespace
}  // namespace ember
