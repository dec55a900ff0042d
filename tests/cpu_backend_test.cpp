// The cpu backend's own kernels (src/backends/cpu) against the reference backend on tensors large
// enough to run threaded (above the grain), with non-contiguous, broadcast, odd-sized and empty
// operands; its caching allocator; and thread-count independence of results.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "backends/cpu/allocator.h"
#include "backends/cpu/thread_pool.h"
#include "ember/ember.h"
#include "ember/nn/functional/conv.h"
#include "ember/nn/functional/pool.h"
#include "op_table.h"
#include "runtime/backend.h"

namespace ember {
namespace {

using ir::BinaryOp;
using ir::UnaryOp;

const Device kCpu = Device::cpu();
const Device kRef = Device::ref();

// Restores the default thread count when a test changes it.
struct ThreadGuard {
  ~ThreadGuard() { set_num_threads(0); }
};

// Deterministic values in [lo, hi) on the reference device, with a few specials sprinkled in.
Tensor values(const Shape& shape, DType dtype, uint64_t seed, double lo = -3, double hi = 3,
              bool specials = false) {
  Tensor x = testing::uniform(shape, DType::f64, seed, lo, hi);
  if (specials && x.numel() > 10) {
    double* p = x.data_ptr<double>();
    p[1] = std::numeric_limits<double>::quiet_NaN();
    p[3] = std::numeric_limits<double>::infinity();
    p[5] = -std::numeric_limits<double>::infinity();
    p[7] = 0.0;
    p[x.numel() - 2] = 100.0;   // exp overflows in f32
    p[x.numel() - 3] = -100.0;  // exp is subnormal in f32
  }
  return x.to(dtype);
}

// The layouts a kernel must handle, built identically on both devices from a [rows, cols] source.
enum class Layout { contiguous, transposed, stepped };
Tensor layout(const Tensor& x, Layout l) {
  switch (l) {
    case Layout::contiguous:
      return x;
    case Layout::transposed:
      return x.t();
    case Layout::stepped:
      return x.slice(1, 1, x.size(1), 2);
  }
  return x;
}

// Runs `op` on both devices with the same (converted) operands and expects matching outputs.
void expect_match(const Tensor& want, const Tensor& got, const std::string& what,
                  double tol = 1.0) {
  const std::string diff = testing::compare(want, got.to(kRef), tol);
  EXPECT_EQ(diff, "") << what;
}

Tensor run_unary(UnaryOp op, const Tensor& src, const Device& dev, double p0 = 0) {
  Tensor s = src.to(dev);
  Tensor d = empty(s.shape(), {s.dtype(), dev});
  backend_for(dev).execute(ir::Unary{op, s, d, p0});
  return d;
}

Tensor run_binary(BinaryOp op, const Tensor& a, const Tensor& b, const Device& dev, DType out) {
  Tensor x = a.to(dev), y = b.to(dev);
  Shape shape = x.shape();  // same rank here; broadcast size-1 dims
  for (size_t i = 0; i < shape.size(); ++i) shape[i] = std::max(x.shape()[i], y.shape()[i]);
  Tensor d = empty(shape, {out, dev});
  backend_for(dev).execute(ir::Binary{op, x.expand(shape), y.expand(shape), d});
  return d;
}

TEST(CpuBackendTest, UnaryMatchesReferenceOnLargeViews) {
  const UnaryOp ops[] = {UnaryOp::neg,        UnaryOp::abs,  UnaryOp::square,     UnaryOp::relu,
                         UnaryOp::reciprocal, UnaryOp::sqrt, UnaryOp::rsqrt,      UnaryOp::exp,
                         UnaryOp::sigmoid,    UnaryOp::silu, UnaryOp::leaky_relu, UnaryOp::tanh,
                         UnaryOp::log,        UnaryOp::isnan};
  for (DType t : {DType::f32, DType::f64}) {
    const Tensor base = values({401, 333}, t, 1, -3, 3, true);
    for (UnaryOp op : ops)
      for (Layout l : {Layout::contiguous, Layout::transposed, Layout::stepped}) {
        const Tensor x = layout(base, l);
        Tensor want, got;
        if (op == UnaryOp::isnan) {  // bool output: through the public op
          want = isnan(x);
          got = isnan(x.to(kCpu));
        } else {
          want = run_unary(op, x, kRef, 0.125);
          got = run_unary(op, x, kCpu, 0.125);
        }
        expect_match(
            want, got,
            std::string(ir::name(op)) + " " + dtype_name(t) + " layout " + std::to_string(int(l)));
      }
  }
}

TEST(CpuBackendTest, ExpF32CoversTheWholeRange) {
  // Every float from -110 to 90 in small steps, plus the ends: against std::exp within 2 ulp-ish.
  std::vector<float> xs;
  for (double v = -110; v < 90; v += 0.00123) xs.push_back(float(v));
  xs.push_back(88.72283f);
  xs.push_back(-87.33655f);
  const Tensor x = from_vector<float>(xs, {int64_t(xs.size())}, kRef);
  const auto got = run_unary(UnaryOp::exp, x, kCpu).to_vector<float>();
  for (size_t i = 0; i < xs.size(); ++i) {
    const double want = double(float(std::exp(double(xs[i]))));  // inf past FLT_MAX
    if (std::isinf(want)) {
      ASSERT_TRUE(std::isinf(got[i])) << "exp(" << xs[i] << ") = " << got[i];
      continue;
    }
    const double err = std::fabs(double(got[i]) - want);
    ASSERT_LE(err, 3e-7 * want + 1e-44) << "exp(" << xs[i] << ") = " << got[i];
  }
}

TEST(CpuBackendTest, BinaryMatchesReferenceWithBroadcastAndViews) {
  const BinaryOp ops[] = {BinaryOp::add,     BinaryOp::sub,      BinaryOp::mul, BinaryOp::div,
                          BinaryOp::maximum, BinaryOp::minimum,  BinaryOp::gt,  BinaryOp::eq,
                          BinaryOp::pow,     BinaryOp::remainder};
  for (DType t : {DType::f32, DType::f64, DType::i64, DType::i32}) {
    const bool is_int = t == DType::i64 || t == DType::i32;
    const Tensor a = values({257, 301}, t, 2, is_int ? 1 : -3, is_int ? 9 : 3, !is_int);
    const Tensor b = values({257, 301}, t, 3, is_int ? 1 : -3, is_int ? 9 : 3);
    const Tensor row = values({1, 301}, t, 4, 1, 3);
    const Tensor scalar = values({1, 1}, t, 5, 1, 3);
    const std::vector<std::pair<Tensor, Tensor>> pairs = {
        {a, b},         {a, row},       {scalar, b}, {a.slice(1, 0, 300, 2), b.slice(1, 1, 301, 2)},
        {a.t(), b.t()}, {a.t(), scalar}};
    for (BinaryOp op : ops) {
      if (is_int && op == BinaryOp::pow) continue;
      const bool cmp = op == BinaryOp::gt || op == BinaryOp::eq;
      for (size_t k = 0; k < pairs.size(); ++k) {
        const auto& [x, y] = pairs[k];
        const DType out = cmp ? DType::b8 : t;
        expect_match(
            run_binary(op, x, y, kRef, out), run_binary(op, x, y, kCpu, out),
            std::string(ir::name(op)) + " " + dtype_name(t) + " pair " + std::to_string(k));
      }
    }
  }
}

TEST(CpuBackendTest, NonContiguousDestination) {
  const Tensor a = values({300, 300}, DType::f32, 6);
  const Tensor b = values({300, 300}, DType::f32, 7);
  Tensor want = empty({300, 300}, {DType::f32, kRef});
  Tensor got = empty({300, 300}, {DType::f32, kCpu});
  backend_for(kRef).execute(ir::Binary{BinaryOp::add, a, b, want.t()});
  backend_for(kCpu).execute(ir::Binary{BinaryOp::add, a.to(kCpu), b.to(kCpu), got.t()});
  expect_match(want, got, "add into a transposed dst");
  // In place: dst aliases an operand.
  Tensor x = a.to(kCpu).clone();
  backend_for(kCpu).execute(ir::Binary{BinaryOp::mul, x, x, x});
  expect_match(a * a, x, "in-place square");
}

TEST(CpuBackendTest, IntegerDivisionByZeroThrowsFromWorkers) {
  Tensor a = ones({200000}, {DType::i32, kCpu});
  Tensor b = ones({200000}, {DType::i32, kCpu});
  b.slice(0, 150000, 150001).fill_(0);
  try {
    floor_divide(a, b);
    FAIL() << "expected ember::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("division by zero"), std::string::npos) << e.what();
  }
}

TEST(CpuBackendTest, CopyAndFill) {
  const Tensor x = values({513, 257}, DType::f32, 8);
  const Tensor xc = x.to(kCpu);
  for (Layout l : {Layout::transposed, Layout::stepped}) {
    expect_match(layout(x, l).contiguous(), layout(xc, l).contiguous(), "contiguous()");
    expect_match(layout(x, l).to(DType::f64), layout(xc, l).to(DType::f64), "to(f64)");
    expect_match(layout(x, l).to(DType::i64), layout(xc, l).to(DType::i64), "to(i64)");
    expect_match(layout(x, l).to(DType::f16), layout(xc, l).to(DType::f16), "to(f16)");
  }
  // Broadcast source (stride 0) into a contiguous dst.
  const Tensor row = values({1, 70001}, DType::f64, 9);
  expect_match(row.expand({3, 70001}).contiguous(), row.to(kCpu).expand({3, 70001}).contiguous(),
               "expand().contiguous()");
  // Fill every element size, contiguous and strided.
  for (DType t : {DType::f32, DType::f64, DType::i8, DType::f16, DType::b8, DType::i64}) {
    Tensor f = full({123457}, 3, {t, kCpu});
    expect_match(full({123457}, 3, {t, kRef}), f, std::string("full ") + dtype_name(t));
    Tensor z = zeros({400, 400}, {t, kCpu});
    z.t().slice(0, 0, 400, 3).fill_(1);
    Tensor zr = zeros({400, 400}, {t, kRef});
    zr.t().slice(0, 0, 400, 3).fill_(1);
    expect_match(zr, z, std::string("strided fill_ ") + dtype_name(t));
  }
  EXPECT_EQ(full({4}, 2.5, {DType::f32, kCpu}).to_vector<float>(),
            (std::vector<float>{2.5f, 2.5f, 2.5f, 2.5f}));
}

TEST(CpuBackendTest, ReductionsMatchReference) {
  for (DType t : {DType::f32, DType::f64}) {
    const Tensor x = values({97, 3, 1031}, t, 10, -2, 2);
    const Tensor xc = x.to(kCpu);
    const std::vector<std::vector<int64_t>> dims = {{2},    {0},       {1},   {1, 2},
                                                    {0, 1}, {0, 1, 2}, {0, 2}};
    for (const auto& d : dims) {
      const std::string tag = std::string(dtype_name(t)) + " dims " + std::to_string(d.front()) +
                              ".." + std::to_string(d.back()) + "/" + std::to_string(d.size());
      expect_match(sum(x, d), sum(xc, d), "sum " + tag);
      expect_match(amax(x, d), amax(xc, d), "amax " + tag);
      expect_match(amin(x, d), amin(xc, d), "amin " + tag);
      expect_match(sum(x.permute({2, 0, 1}), d), sum(xc.permute({2, 0, 1}), d),
                   "sum permuted " + tag);
    }
    for (int64_t d = 0; d < 3; ++d) {
      auto [v, i] = max(x, d);
      auto [vc, ic] = max(xc, d);
      expect_match(v, vc, "max values dim " + std::to_string(d));
      expect_match(i, ic, "max indices dim " + std::to_string(d));
      auto [w, j] = min(x, d, true);
      auto [wc, jc] = min(xc, d, true);
      expect_match(w, wc, "min values dim " + std::to_string(d));
      expect_match(j, jc, "min indices dim " + std::to_string(d));
    }
    // One long row: split into partial results.
    const Tensor big = values({1000003}, t, 11, -1, 1);
    expect_match(sum(big), sum(big.to(kCpu)), "sum all");
    expect_match(big.max(), big.to(kCpu).max(), "max all");
    expect_match(argmax(big), argmax(big.to(kCpu)), "argmax all");
  }
}

TEST(CpuBackendTest, ReductionsPropagateNaNAndKeepTheFirstIndex) {
  // Ties: the first index of the extreme wins; NaN wins over everything from its first position.
  Tensor x = zeros({3, 200000}, {DType::f32, kRef});
  float* p = x.data_ptr<float>();
  p[50] = 5;
  p[70000] = 5;              // tie in row 0: index 50
  p[200000 + 123456] = NAN;  // row 1: NaN at 123456
  p[200000 + 199999] = NAN;
  p[400000 + 1] = -7;
  const Tensor xc = x.to(kCpu);
  auto [v, i] = max(xc, 1);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{50, 123456, 0}));
  const auto vv = v.to_vector<float>();
  EXPECT_EQ(vv[0], 5.f);
  EXPECT_TRUE(std::isnan(vv[1]));
  EXPECT_EQ(vv[2], 0.f);
  auto [w, j] = min(xc, 1);
  EXPECT_EQ(j.to_vector<int64_t>(), (std::vector<int64_t>{0, 123456, 1}));
  EXPECT_TRUE(std::isnan(sum(xc).item<float>()));
  EXPECT_TRUE(std::isnan(xc.max().item<float>()));
  // Sum of a known series: 0 + 1 + ... + (n - 1).
  const int64_t n = 1 << 20;
  EXPECT_DOUBLE_EQ(sum(arange(n, {DType::f64, kCpu})).item<double>(), double(n) * (n - 1) / 2);
  // Window axis in the middle, as max_pool2d reduces it: NaN sticks, first max wins.
  Tensor m = zeros({2, 4, 40000}, {DType::f32, kRef});
  float* q = m.data_ptr<float>();
  q[1 * 40000 + 7] = 1;
  q[3 * 40000 + 7] = 1;
  q[2 * 40000 + 9] = NAN;
  q[3 * 40000 + 9] = 2;
  auto [mv, mi] = max(m.to(kCpu), 1);
  const auto mis = mi.to_vector<int64_t>();
  EXPECT_EQ(mis[7], 1);
  EXPECT_EQ(mis[9], 2);
  EXPECT_TRUE(std::isnan(mv.to_vector<float>()[9]));
}

TEST(CpuBackendTest, EmptyAndTinyTensors) {
  for (const Shape& s : {Shape{0}, Shape{0, 100000}, Shape{100000, 0}, Shape{1}, Shape{}}) {
    const Tensor x = values(s, DType::f32, 12);
    const Tensor xc = x.to(kCpu);
    expect_match(x + x, xc + xc, "add " + shape_str(s));
    expect_match(x.exp(), xc.exp(), "exp " + shape_str(s));
    expect_match(x.contiguous(), xc.contiguous(), "copy " + shape_str(s));
    expect_match(sum(x), sum(xc), "sum " + shape_str(s));
  }
  EXPECT_EQ(sum(zeros({0, 100000}, {DType::f32, kCpu}), {0}).to_vector<float>(),
            std::vector<float>(100000, 0.f));
}

TEST(CpuBackendTest, Im2colCol2imAndConvMatchReference) {
  namespace F = nn::functional;
  struct Case {
    Shape x, w;
    int64_t stride, pad, dil;
  };
  const std::vector<Case> cases = {{{4, 8, 29, 31}, {16, 8, 3, 3}, 1, 1, 1},
                                   {{3, 5, 33, 17}, {7, 5, 3, 5}, 2, 2, 1},
                                   {{2, 6, 20, 21}, {4, 6, 3, 3}, 1, 0, 2},
                                   {{2, 3, 9, 9}, {4, 3, 5, 5}, 3, 4, 1}};
  for (DType t : {DType::f32, DType::f64}) {
    for (const Case& c : cases) {
      const Tensor x = values(c.x, t, 13), w = values(c.w, t, 14);
      const std::string tag = std::string(dtype_name(t)) + " x " + shape_str(c.x);
      const Tensor want = F::conv2d(x, w, Tensor(), {c.stride}, {c.pad}, {c.dil});
      const Tensor got = F::conv2d(x.to(kCpu), w.to(kCpu), Tensor(), {c.stride}, {c.pad}, {c.dil});
      expect_match(want, got, "conv2d " + tag, 10);
      const Tensor cols = F::unfold(x, {c.w[2], c.w[3]}, {c.dil}, {c.pad}, {c.stride});
      const Tensor colc = F::unfold(x.to(kCpu).transpose(2, 3).transpose(2, 3), {c.w[2], c.w[3]},
                                    {c.dil}, {c.pad}, {c.stride});
      expect_match(cols, colc, "unfold " + tag);
      const Tensor back =
          F::fold(cols, {c.x[2], c.x[3]}, {c.w[2], c.w[3]}, {c.dil}, {c.pad}, {c.stride});
      const Tensor backc =
          F::fold(cols.to(kCpu), {c.x[2], c.x[3]}, {c.w[2], c.w[3]}, {c.dil}, {c.pad}, {c.stride});
      // col2im sums the taps in the reference's order: equal to the last bit.
      EXPECT_EQ(back.to_vector<double>(), backc.to_vector<double>()) << "fold " << tag;
      const Tensor gt =
          F::conv_transpose2d(x, w.transpose(0, 1).contiguous(), Tensor(), {c.stride}, {c.pad});
      const Tensor gc = F::conv_transpose2d(x.to(kCpu), w.transpose(0, 1).contiguous().to(kCpu),
                                            Tensor(), {c.stride}, {c.pad});
      expect_match(gt, gc, "conv_transpose2d " + tag, 10);
    }
    const Tensor x = values({8, 16, 26, 26}, t, 15, -3, 3, true);
    auto [v, i] = F::max_pool2d_with_indices(x, {2}, {2});
    auto [vc, ic] = F::max_pool2d_with_indices(x.to(kCpu), {2}, {2});
    expect_match(v, vc, "max_pool2d values");
    expect_match(i, ic, "max_pool2d indices");
    expect_match(F::max_pool2d(x, {3}, {2}, {1}), F::max_pool2d(x.to(kCpu), {3}, {2}, {1}),
                 "max_pool2d padded");
    expect_match(
        F::conv1d(x.flatten(2), values({4, 16, 5}, t, 16), Tensor(), {2}, {1}),
        F::conv1d(x.to(kCpu).flatten(2), values({4, 16, 5}, t, 16).to(kCpu), Tensor(), {2}, {1}),
        "conv1d", 10);
  }
}

TEST(CpuBackendTest, ResultsDoNotDependOnTheThreadCount) {
  ThreadGuard guard;
  namespace F = nn::functional;
  const Tensor x = values({8, 16, 30, 30}, DType::f32, 17).to(kCpu);
  const Tensor w = values({32, 16, 3, 3}, DType::f32, 18).to(kCpu);
  const Tensor big = values({3000001}, DType::f32, 19).to(kCpu);
  auto compute = [&] {
    std::vector<std::vector<double>> r;
    r.push_back(F::conv2d(x, w).to_vector<double>());
    r.push_back(F::fold(F::unfold(x, {3}), {30, 30}, {3}).to_vector<double>());
    r.push_back(sum(big).to_vector<double>());
    r.push_back(sum(x, {0, 1}).to_vector<double>());
    r.push_back(amax(x, {3}).to_vector<double>());
    r.push_back((x.exp() * 2 + x.transpose(2, 3)).to_vector<double>());
    r.push_back(std::get<1>(max(x.flatten(), 0)).to_vector<double>());
    return r;
  };
  set_num_threads(1);
  EXPECT_EQ(get_num_threads(), 1);
  const auto one = compute();
  cpu::use_openmp_runtime(false);  // the std::thread pool
  set_num_threads(2);
  const auto own_pool = compute();
  cpu::use_openmp_runtime(true);
  set_num_threads(3);
  EXPECT_EQ(get_num_threads(), 3);
  const auto three = compute();
  set_num_threads(0);
  EXPECT_GE(get_num_threads(), 1);
  const auto dflt = compute();
  for (size_t k = 0; k < one.size(); ++k) {
    EXPECT_EQ(one[k], three[k]) << "result " << k;
    EXPECT_EQ(one[k], dflt[k]) << "result " << k;
    EXPECT_EQ(one[k], own_pool[k]) << "result " << k;
  }
}

TEST(CpuBackendTest, ThreadCountIsCapped) {
  ThreadGuard guard;
  const int hw = int(std::max(1u, std::thread::hardware_concurrency()));
  set_num_threads(100000);  // a typo, not a plan: capped with a warning instead of failing
  EXPECT_EQ(get_num_threads(), std::max(64, 4 * hw));
  const Tensor x = values({300, 301}, DType::f32, 30);
  expect_match(run_unary(UnaryOp::exp, x, kRef), run_unary(UnaryOp::exp, x, kCpu), "exp");
  set_num_threads(3);
  EXPECT_EQ(get_num_threads(), 3);
}

TEST(CpuBackendTest, ParallelForCoversTheRangeOnce) {
  ThreadGuard guard;
  for (bool openmp : {true, false})
    for (int threads : {1, 2, 4}) {
      cpu::use_openmp_runtime(openmp);
      set_num_threads(threads);
      for (int64_t n : {0, 1, 7, 1000, 100003}) {
        for (int64_t grain : {1, 64, 100000}) {
          std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
          std::atomic<int> calls{0};
          cpu::parallel_for(0, n, grain, [&](int64_t b, int64_t e) {
            ++calls;
            EXPECT_TRUE(e - b >= std::min<int64_t>(grain, n) || threads > 1);
            for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
            // Nested calls run inline on the calling thread; a call whose outer one ran inline
            // (one chunk) is not nested and may run on several threads: an atomic sum.
            std::atomic<int64_t> inner{0};
            cpu::parallel_for(0, 10, 1, [&](int64_t b2, int64_t e2) { inner += e2 - b2; });
            EXPECT_EQ(inner.load(), 10);
          });
          for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << i;
          if (n > 0 && n <= grain) {
            EXPECT_EQ(calls.load(), 1) << "below the grain: one call";
          }
          EXPECT_LE(calls.load(), threads);
        }
      }
    }
  // An exception in any chunk reaches the caller, on either runtime.
  set_num_threads(2);
  for (bool openmp : {true, false}) {
    cpu::use_openmp_runtime(openmp);
    EXPECT_THROW(cpu::parallel_for(0, 100, 1,
                                   [](int64_t b, int64_t) {
                                     if (b > 0) EMBER_FAIL("test", "boom");
                                   }),
                 Error);
  }
  cpu::use_openmp_runtime(true);
}

TEST(CpuBackendTest, CachingAllocatorReusesBlocks) {
  empty_cache(kCpu);
  const MemoryStats s0 = memory_stats(kCpu);
  EXPECT_EQ(s0.reserved, s0.allocated) << "an empty cache holds nothing beyond live tensors";
  const int64_t bytes = 4 << 20;  // a 4 MiB tensor (exactly a size class)
  ASSERT_EQ(cpu::CachingAllocator::size_class(bytes), bytes);
  void* first = nullptr;
  {
    Tensor a = empty({bytes / 4}, {DType::f32, kCpu});
    first = a.raw_data();
    const MemoryStats s1 = memory_stats(kCpu);
    EXPECT_EQ(s1.allocated, s0.allocated + bytes);
    EXPECT_GE(s1.peak, s1.allocated);
  }
  const MemoryStats s2 = memory_stats(kCpu);
  EXPECT_EQ(s2.allocated, s0.allocated) << "freeing drops allocated";
  EXPECT_EQ(s2.reserved, s0.reserved + bytes) << "the block stays cached";
  {
    Tensor b = empty({bytes / 4 - 100}, {DType::f32, kCpu});  // same size class
    EXPECT_EQ(b.raw_data(), first) << "the cached block is reused";
    EXPECT_EQ(memory_stats(kCpu).reserved, s2.reserved) << "reuse reserves nothing new";
  }
  empty_cache(kCpu);
  const MemoryStats s3 = memory_stats(kCpu);
  EXPECT_EQ(s3.reserved, s3.allocated) << "empty_cache releases the cached blocks";
  EXPECT_GE(s3.peak, s0.allocated + bytes);
  // The reference backend does not cache.
  const MemoryStats r = memory_stats(kRef);
  EXPECT_EQ(r.allocated, 0);
  EXPECT_EQ(r.reserved, 0);
  empty_cache(kRef);
}

TEST(CpuBackendTest, SizeClassesBoundTheWaste) {
  using A = cpu::CachingAllocator;
  EXPECT_EQ(A::size_class(0), 64);
  EXPECT_EQ(A::size_class(1), 64);
  EXPECT_EQ(A::size_class(65), 128);
  EXPECT_EQ(A::size_class(513), 640);  // 512 + 512/4
  EXPECT_EQ(A::size_class(1000), 1024);
  EXPECT_EQ(A::size_class(1025), 1280);
  for (int64_t n = 1; n < (int64_t(1) << 30); n = n * 3 + 1) {
    const int64_t c = A::size_class(n);
    EXPECT_GE(c, n);
    EXPECT_LE(c, std::max<int64_t>(64, n + n / 4 + (int64_t(2) << 20))) << n;
    EXPECT_EQ(c % 64, 0);
  }
}

TEST(CpuBackendTest, AllocatorIsThreadSafe) {
  empty_cache(kCpu);
  const int64_t before = memory_stats(kCpu).allocated;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i) {
        Tensor x = full({(i * 37 + t * 11) % 5000 + 1}, float(t), {DType::f32, kCpu});
        if (x.data_ptr<float>()[0] != float(t)) std::abort();
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(memory_stats(kCpu).allocated, before);
}

}  // namespace
}  // namespace ember
