// The cpu backend's oneDNN pooling (ir::Pool / ir::PoolBackward, src/backends/cpu/pool.cpp): the
// frontend takes it on cpu for f32 (counted by cpu::pool_dnnl_runs()), its forward and gradient
// equal the composite's (the same cpu run with the oneDNN path disabled, and ref), on contiguous,
// channels-last and non-contiguous inputs, with ties; and the cases whose semantics oneDNN does
// not share (divisor_override, torch's clipped divisor, indices, NaN / -inf, padding-only
// windows, f64) decline to the composite; f16/bf16 pool in f32.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "backends/cpu/kernels.h"
#include "ember/ember.h"
#include "ember/nn/functional/pool.h"
#include "op_table.h"

namespace ember {
namespace {

namespace F = ember::nn::functional;
using testing::compare;
using Fn = std::function<Tensor(const Tensor&)>;

const Device kCpu = Device::cpu();
const Device kRef = Device::ref();

struct PoolRun {
  Tensor y, dx;
  int64_t dnnl = 0;  // oneDNN pooling passes (forward + backward)
  std::string grad_fn;
};

// y = fn(x) and d sum(y * g) / dx on device d, x laid out by `layout` (0 contiguous, 1 channels
// last, 2 a transposed view of the batch and channel dims).
PoolRun run(Device d, const Tensor& x0, int layout, const Fn& fn, bool grad = true) {
  Tensor x = x0.detach().to(d);  // a fresh leaf: x0 itself never requires grad
  if (layout == 1)
    x = x.contiguous(x.dim() == 4 ? MemoryFormat::channels_last : MemoryFormat::channels_last_3d);
  Tensor leaf = layout == 2 ? x.transpose(0, 1).contiguous() : x;
  if (grad) leaf.requires_grad_(true);
  const Tensor in = layout == 2 ? leaf.transpose(0, 1) : leaf;
  PoolRun r;
  const int64_t before = cpu::pool_dnnl_runs();
  r.y = fn(in);
  r.grad_fn = r.y.grad_fn_name();
  if (grad) {
    const Tensor g = testing::uniform(r.y.shape(), DType::f32, 7).to(d);
    sum(r.y * g).backward();
    r.dx = layout == 2 ? leaf.grad().transpose(0, 1) : leaf.grad();
  }
  r.dnnl = cpu::pool_dnnl_runs() - before;
  return r;
}

struct Case {
  const char* name;
  Shape xs;
  Fn fn;
};

const std::vector<Case>& fused_cases() {
  static const std::vector<Case> cases = {
      {"max2d_stem",
       {2, 5, 13, 12},
       [](const Tensor& x) { return F::max_pool2d(x, {3}, {2}, {1}); }},
      {"max2d_ceil_dil",
       {1, 3, 11, 9},
       [](const Tensor& x) {
         return F::max_pool2d(x, {3, 2}, {2, 1}, {1}, {2, 1}, true);
       }},
      {"max1d_ceil",
       {2, 3, 10},
       [](const Tensor& x) { return F::max_pool1d(x, {3}, {2}, {1}, {1}, true); }},
      {"max3d", {1, 2, 5, 6, 5}, [](const Tensor& x) { return F::max_pool3d(x, {2}, {2}, {1}); }},
      {"max2d_unbatched", {3, 7, 7}, [](const Tensor& x) { return F::max_pool2d(x, {2}, {1}); }},
      {"avg2d_pad", {2, 4, 9, 8}, [](const Tensor& x) { return F::avg_pool2d(x, {3}, {2}, {1}); }},
      {"avg2d_nopad_ceil",
       {2, 3, 7, 6},
       [](const Tensor& x) { return F::avg_pool2d(x, {3}, {2}, {1}, true, false); }},
      {"avg2d_ceil_within_pad",  // ceil adds no window past the padding: torch's divisor is 9
       {1, 2, 9, 9},
       [](const Tensor& x) { return F::avg_pool2d(x, {3}, {2}, {1}, true, true); }},
      {"avg1d", {2, 3, 11}, [](const Tensor& x) { return F::avg_pool1d(x, {4}, {3}, {2}); }},
      {"max2d_disjoint",  // windows share no input: the f16/bf16 backward runs natively too
       {2, 6, 8, 8},
       [](const Tensor& x) { return F::max_pool2d(x, {2}); }},
      {"avg2d_disjoint", {2, 6, 8, 8}, [](const Tensor& x) { return F::avg_pool2d(x, {2}); }},
      {"avg3d_nopad",
       {1, 2, 5, 5, 4},
       [](const Tensor& x) { return F::avg_pool3d(x, {2}, {2}, {1}, true, false); }},
  };
  return cases;
}

void expect_same(const PoolRun& want, const PoolRun& got, const std::string& what) {
  EXPECT_EQ(compare(want.y.to(kRef), got.y.to(kRef)), "") << what << " forward";
  EXPECT_EQ(compare(want.dx.to(kRef), got.dx.to(kRef)), "") << what << " grad";
  EXPECT_EQ(want.y.strides(), got.y.strides()) << what;
}

TEST(CpuPoolFusedTest, TakenForF32AndEqualToComposite) {
  for (const Case& c : fused_cases())
    for (int layout : {0, 1, 2}) {
      if (layout == 1 && c.xs.size() < 4) continue;
      const std::string what = std::string(c.name) + " layout " + std::to_string(layout);
      const Tensor x = testing::uniform(c.xs, DType::f32, 3);
      const PoolRun got = run(kCpu, x, layout, c.fn);
      cpu::set_pool_dnnl_enabled(false);
      const PoolRun composite = run(kCpu, x, layout, c.fn);
      cpu::set_pool_dnnl_enabled(true);
      const PoolRun ref = run(kRef, x, layout, c.fn);
      EXPECT_EQ(got.dnnl, 2) << what;  // forward and backward
      EXPECT_EQ(composite.dnnl, 0) << what;
      const bool is_max = c.name[0] == 'm';
      if (c.name != std::string("max2d_unbatched"))
        EXPECT_EQ(got.grad_fn, is_max ? "MaxPoolBackward" : "AvgPoolBackward") << what;
      expect_same(composite, got, what);
      expect_same(ref, got, what);
    }
}

// Many equal values (integers in [-2, 2)): the gradient goes to each window's first maximal tap,
// as the composite's (a tie sent elsewhere moves a whole g value; the tolerance only absorbs the
// order in which overlapping windows add into one input).
TEST(CpuPoolFusedTest, MaxBackwardWithTiesRoutesToFirstMaximum) {
  const Tensor x = floor(testing::uniform({2, 3, 10, 9}, DType::f32, 5));
  const Fn fn = [](const Tensor& t) { return F::max_pool2d(t, {3}, {1}, {1}); };
  for (int layout : {0, 1}) {
    const PoolRun got = run(kCpu, x, layout, fn);
    const PoolRun ref = run(kRef, x, layout, fn);
    EXPECT_EQ(got.dnnl, 2);
    EXPECT_EQ(compare(ref.dx.to(kRef), got.dx.to(kRef)), "") << layout;
    EXPECT_EQ(compare(ref.y.to(kRef), got.y.to(kRef), 0.0), "") << layout;
  }
}

TEST(CpuPoolFusedTest, StemShapeValues) {
  // A channels-last ResNet-stem-like input: the fused result keeps the layout and the values.
  const Tensor x = testing::uniform({2, 16, 28, 28}, DType::f32, 9);
  const Fn fn = [](const Tensor& t) { return F::max_pool2d(t, {3}, {2}, {1}); };
  const PoolRun got = run(kCpu, x, 1, fn, false);
  const PoolRun ref = run(kRef, x, 1, fn, false);
  EXPECT_EQ(got.dnnl, 1);
  EXPECT_TRUE(got.y.is_contiguous(MemoryFormat::channels_last));
  EXPECT_EQ(compare(ref.y, got.y.to(kRef), 0.0), "");
}

// Each declined case runs the composite (no oneDNN pass) and still equals ref.
// f16/bf16: pooled by oneDNN in f32 and rounded once, as the reference kernel: max equal, the
// average and the gradients (summed over overlapping windows in f32) within one rounding.
TEST(CpuPoolFusedTest, HalfDtypesPoolInF32AndRoundOnce) {
  for (DType dt : {DType::bf16, DType::f16})
    for (const Case& c : fused_cases())
      for (int layout : {0, 1}) {
        if (layout == 1 && c.xs.size() < 4) continue;
        const std::string what =
            std::string(dtype_name(dt)) + " " + c.name + " layout " + std::to_string(layout);
        const Tensor x = testing::uniform(c.xs, DType::f32, 3).to(dt);
        const PoolRun got = run(kCpu, x, layout, c.fn);
        const PoolRun ref = run(kRef, x, layout, c.fn);
        EXPECT_EQ(got.dnnl, 2) << what;
        EXPECT_EQ(got.y.dtype(), dt) << what;
        EXPECT_EQ(got.dx.dtype(), dt) << what;
        const bool is_max = c.name[0] == 'm';
        const double tol = dt == DType::bf16 ? 1.0 / 128 : 1.0 / 1024;
        const auto gy = got.y.to(DType::f64).to_vector<double>();
        const auto ry = ref.y.to(DType::f64).to_vector<double>();
        const auto gd = got.dx.to(DType::f64).to_vector<double>();
        const auto rd = ref.dx.to(DType::f64).to_vector<double>();
        for (size_t i = 0; i < gy.size(); ++i)
          EXPECT_NEAR(gy[i], ry[i], is_max ? 0.0 : tol * std::max(1.0, std::fabs(ry[i])))
              << what << " y at " << i;
        for (size_t i = 0; i < gd.size(); ++i)
          EXPECT_NEAR(gd[i], rd[i], tol * std::max(1.0, std::fabs(rd[i]))) << what << " dx " << i;
      }
}

TEST(CpuPoolFusedTest, DeclinedCasesRunTheComposite) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> v = testing::uniform({1, 2, 6, 6}, DType::f32, 4).to_vector<float>();
  v[36 + 2 * 6 + 3] = nan;
  const Tensor with_nan = from_vector<float>(v, {1, 2, 6, 6}, kRef);
  v[36 + 2 * 6 + 3] = 0.5f;
  for (size_t i : {0, 1, 6, 7}) v[i] = -inf;  // the first 2x2 window is all -inf
  const Tensor neg_inf = from_vector<float>(v, {1, 2, 6, 6}, kRef);
  const Tensor x = testing::uniform({1, 2, 7, 7}, DType::f32, 4);
  struct Declined {
    const char* name;
    Tensor x;
    Fn fn;
  };
  const std::vector<Declined> cases = {
      {"divisor_override", x,
       [](const Tensor& t) { return F::avg_pool2d(t, {2}, {}, {0}, false, true, 3); }},
      // ceil_mode adds a window reaching past the padding: torch's divisor is clipped there.
      {"avg_ceil_clipped", testing::uniform({1, 2, 8, 8}, DType::f32, 4),
       [](const Tensor& t) { return F::avg_pool2d(t, {3}, {2}, {1}, true, true); }},
      {"with_indices", x,
       [](const Tensor& t) { return std::get<0>(F::max_pool2d_with_indices(t, {2})); }},
      {"nan", with_nan, [](const Tensor& t) { return F::max_pool2d(t, {2}); }},
      {"neg_inf_window", neg_inf, [](const Tensor& t) { return F::max_pool2d(t, {2}); }},
      // dilation 3 with padding 1 on a size-2 dim: the window's taps are -1 and 2 (padding only).
      {"padding_only_window", testing::uniform({1, 2, 2, 5}, DType::f32, 4),
       [](const Tensor& t) {
         return F::max_pool2d(t, {2, 1}, {1}, {1, 0}, {3, 1});
       }},
      {"f64", x.to(DType::f64), [](const Tensor& t) { return F::max_pool2d(t, {3}, {2}, {1}); }},
  };
  for (const Declined& c : cases) {
    const PoolRun got = run(kCpu, c.x, 0, c.fn, false);
    const PoolRun ref = run(kRef, c.x, 0, c.fn, false);
    EXPECT_EQ(got.dnnl, 0) << c.name;
    EXPECT_EQ(compare(ref.y, got.y.to(kRef)), "") << c.name;
  }
}

}  // namespace
}  // namespace ember
