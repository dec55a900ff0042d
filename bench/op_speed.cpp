// The cpu backend against the reference backend, op by op, in one process: every op family of
// the op table (elementwise unary/binary/compare/where/cast, reductions, scans, sort, indexing,
// layout/copies, matmul, conv, pooling, interpolation, softmax, norms, losses) on 1M-element f32
// inputs (2^20; [1024, 1024] or [8, 32, 64, 64]), timed on `cpu` and on `ref`. Prints each op's
// time on both and the speed ratio ref_time / cpu_time (> 1: cpu is faster), then the minimum
// and the ops below 1.0. Issue 5's target: no op slower on cpu than on ref at this size.
//   bench_op_speed [--only SUBSTRING] [--min-time SECONDS]
// Threads: EMBER_NUM_THREADS (the cpu backend); ref is single-threaded by design.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/functional/activation.h"
#include "ember/nn/functional/conv.h"
#include "ember/nn/functional/interpolate.h"
#include "ember/nn/functional/loss.h"
#include "ember/nn/functional/norm.h"
#include "ember/nn/functional/pool.h"

namespace {

using namespace ember;
namespace F = ember::nn::functional;
using Clock = std::chrono::steady_clock;

// The inputs of one device (the same values on both: made on ref, copied).
struct In {
  Tensor x, y, p, row, col, mask, idx_rows, idx_cols, img, wconv, w1024, v1024, target, i32;
  Tensor xh, yh, xb, yb, xd;  // x, y as f16 and bf16; x as f64
};

In make_inputs(const Device& d) {
  manual_seed(7);
  const TensorOptions f(DType::f32, Device::ref());
  In r;
  r.x = rand({1024, 1024}, f) * 4 - 2;
  r.y = rand({1024, 1024}, f) * 4 - 2;
  r.p = rand({1024, 1024}, f) + 0.1;
  r.row = rand({1024}, f);
  r.col = rand({1024, 1}, f);
  r.mask = gt(rand({1024, 1024}, f), 0.5);
  r.idx_rows = randint(0, 1024, {1024}, TensorOptions(DType::i64, Device::ref()));
  r.idx_cols = randint(0, 1024, {1024, 1024}, TensorOptions(DType::i64, Device::ref()));
  r.img = rand({8, 32, 64, 64}, f) * 2 - 1;
  r.wconv = (rand({32, 32, 3, 3}, f) - 0.5) * 0.2;
  r.w1024 = rand({1024}, f) + 0.5;
  r.v1024 = rand({1024}, f) - 0.5;
  r.target = randint(0, 1024, {1024}, TensorOptions(DType::i64, Device::ref()));
  r.i32 = randint(-1000, 1000, {1024, 1024}, TensorOptions(DType::i32, Device::ref()));
  for (Tensor* t : {&r.x, &r.y, &r.p, &r.row, &r.col, &r.mask, &r.idx_rows, &r.idx_cols, &r.img,
                    &r.wconv, &r.w1024, &r.v1024, &r.target, &r.i32})
    *t = t->to(d);
  r.xh = r.x.to(DType::f16);
  r.yh = r.y.to(DType::f16);
  r.xb = r.x.to(DType::bf16);
  r.yb = r.y.to(DType::bf16);
  r.xd = r.x.to(DType::f64);
  return r;
}

struct Op {
  const char* family;
  const char* name;
  std::function<void(const In&)> fn;
};

std::vector<Op> ops() {
  std::vector<Op> v;
  auto reg = [&](const char* fam, const char* name, std::function<void(const In&)> fn) {
    v.push_back({fam, name, std::move(fn)});
  };
  // elementwise unary
  reg("unary", "neg", [](const In& a) { neg(a.x); });
  reg("unary", "abs", [](const In& a) { abs(a.x); });
  reg("unary", "exp", [](const In& a) { exp(a.x); });
  reg("unary", "log", [](const In& a) { log(a.p); });
  reg("unary", "sqrt", [](const In& a) { sqrt(a.p); });
  reg("unary", "rsqrt", [](const In& a) { rsqrt(a.p); });
  reg("unary", "sin", [](const In& a) { sin(a.x); });
  reg("unary", "tanh", [](const In& a) { tanh(a.x); });
  reg("unary", "erf", [](const In& a) { erf(a.x); });
  reg("unary", "floor", [](const In& a) { floor(a.x); });
  reg("unary", "round", [](const In& a) { round(a.x); });
  reg("unary", "sigmoid", [](const In& a) { F::sigmoid(a.x); });
  reg("unary", "relu", [](const In& a) { F::relu(a.x); });
  reg("unary", "gelu", [](const In& a) { F::gelu(a.x); });
  reg("unary", "silu", [](const In& a) { F::silu(a.x); });
  reg("unary", "isnan", [](const In& a) { isnan(a.x); });
  reg("unary", "bitwise_not i32", [](const In& a) { bitwise_not(a.i32); });
  // elementwise binary, compare, where, clamp
  reg("binary", "add", [](const In& a) { add(a.x, a.y); });
  reg("binary", "sub", [](const In& a) { sub(a.x, a.y); });
  reg("binary", "mul", [](const In& a) { mul(a.x, a.y); });
  reg("binary", "div", [](const In& a) { div(a.x, a.p); });
  reg("binary", "add scalar", [](const In& a) { add(a.x, Scalar(1.5)); });
  reg("binary", "add row bcast", [](const In& a) { add(a.x, a.row); });
  reg("binary", "add col bcast", [](const In& a) { add(a.x, a.col); });
  reg("binary", "add transposed", [](const In& a) { add(a.x, a.y.t()); });
  reg("binary", "maximum", [](const In& a) { maximum(a.x, a.y); });
  reg("binary", "pow", [](const In& a) { pow(a.p, a.y); });
  reg("binary", "atan2", [](const In& a) { atan2(a.x, a.y); });
  reg("binary", "fmod", [](const In& a) { fmod(a.x, a.p); });
  reg("binary", "remainder", [](const In& a) { remainder(a.x, a.p); });
  reg("binary", "lt", [](const In& a) { lt(a.x, a.y); });
  reg("binary", "eq", [](const In& a) { eq(a.x, a.y); });
  reg("binary", "logical_and", [](const In& a) { logical_and(a.mask, a.mask); });
  reg("binary", "add i32", [](const In& a) { add(a.i32, a.i32); });
  reg("binary", "floor_divide i32",
      [](const In& a) { floor_divide(a.i32, add(abs(a.i32), Scalar(1))); });
  reg("where", "where", [](const In& a) { where(a.mask, a.x, a.y); });
  reg("where", "clamp", [](const In& a) { clamp(a.x, Scalar(-1.0), Scalar(1.0)); });
  reg("where", "lerp", [](const In& a) { lerp(a.x, a.y, Scalar(0.3)); });
  // casts and copies
  reg("cast", "to f16", [](const In& a) { a.x.to(DType::f16); });
  reg("cast", "to bf16", [](const In& a) { a.x.to(DType::bf16); });
  reg("cast", "to f64", [](const In& a) { a.x.to(DType::f64); });
  reg("cast", "to i32", [](const In& a) { a.x.to(DType::i32); });
  reg("cast", "to bool", [](const In& a) { a.x.to(DType::b8); });
  reg("cast", "to i64", [](const In& a) { a.x.to(DType::i64); });
  reg("cast", "f16 to f32", [](const In& a) { a.xh.to(DType::f32); });
  reg("cast", "bf16 to f32", [](const In& a) { a.xb.to(DType::f32); });
  reg("cast", "f64 to f32", [](const In& a) { a.xd.to(DType::f32); });
  reg("cast", "i32 to f32", [](const In& a) { a.i32.to(DType::f32); });
  reg("cast", "transposed to f16", [](const In& a) { a.x.t().to(DType::f16); });
  // f16 / bf16 elementwise (computed in f32, rounded once)
  reg("half", "exp f16", [](const In& a) { exp(a.xh); });
  reg("half", "relu bf16", [](const In& a) { F::relu(a.xb); });
  reg("half", "silu bf16", [](const In& a) { F::silu(a.xb); });
  reg("half", "add f16", [](const In& a) { add(a.xh, a.yh); });
  reg("half", "mul bf16", [](const In& a) { mul(a.xb, a.yb); });
  reg("half", "lt f16", [](const In& a) { lt(a.xh, a.yh); });
  reg("unary", "neg i32", [](const In& a) { neg(a.i32); });
  reg("unary", "abs i32", [](const In& a) { abs(a.i32); });
  reg("layout", "clone", [](const In& a) { a.x.clone(); });
  reg("layout", "transpose contiguous", [](const In& a) { a.x.t().contiguous(); });
  reg("layout", "permute4d contiguous", [](const In& a) {
    a.img.permute({0, 2, 3, 1}).contiguous();
  });
  reg("layout", "cat", [](const In& a) { cat({a.x, a.y}, 1); });
  reg("layout", "stack", [](const In& a) { stack({a.x, a.y}, 0); });
  reg("layout", "flip", [](const In& a) { flip(a.x, {1}); });
  reg("layout", "roll", [](const In& a) { roll(a.x, {3}, {1}); });
  reg("layout", "pad", [](const In& a) { pad(a.x, {1, 1, 1, 1}); });
  reg("layout", "repeat", [](const In& a) { repeat(a.x, {2, 1}); });
  reg("layout", "tril", [](const In& a) { tril(a.x); });
  reg("layout", "fill zeros", [](const In& a) { zeros({1024, 1024}, {DType::f32, a.x.device()}); });
  // reductions
  reg("reduce", "sum all", [](const In& a) { sum(a.x); });
  reg("reduce", "sum dim0", [](const In& a) { sum(a.x, {0}); });
  reg("reduce", "sum dim1", [](const In& a) { sum(a.x, {1}); });
  reg("reduce", "mean", [](const In& a) { mean(a.x, {1}); });
  reg("reduce", "amax dim1", [](const In& a) { amax(a.x, {1}); });
  reg("reduce", "amax dim0", [](const In& a) { amax(a.x, {0}); });
  reg("reduce", "prod dim1", [](const In& a) { prod(a.p, {1}); });
  reg("reduce", "argmax dim1", [](const In& a) { argmax(a.x, 1); });
  reg("reduce", "max dim1 (values, indices)", [](const In& a) { max(a.x, 1); });
  reg("reduce", "var dim1", [](const In& a) { var(a.x, {1}); });
  reg("reduce", "norm", [](const In& a) { norm(a.x); });
  reg("reduce", "logsumexp dim1", [](const In& a) { logsumexp(a.x, {1}); });
  reg("reduce", "any", [](const In& a) { any(a.mask); });
  reg("reduce", "sum i32", [](const In& a) { sum(a.i32, {1}); });
  // scans
  reg("scan", "cumsum dim1", [](const In& a) { cumsum(a.x, 1); });
  reg("scan", "cumsum dim0", [](const In& a) { cumsum(a.x, 0); });
  reg("scan", "cumprod dim1", [](const In& a) { cumprod(a.p, 1); });
  reg("scan", "cummax dim1", [](const In& a) { cummax(a.x, 1); });
  // sort
  reg("sort", "sort dim1", [](const In& a) { sort(a.x, 1); });
  reg("sort", "argsort dim0", [](const In& a) { argsort(a.x, 0); });
  reg("sort", "topk 10 dim1", [](const In& a) { topk(a.x, 10, 1); });
  // indexing
  reg("indexing", "gather", [](const In& a) { gather(a.x, 1, a.idx_cols); });
  reg("indexing", "take_along_dim", [](const In& a) { take_along_dim(a.x, a.idx_cols, 1); });
  reg("indexing", "scatter", [](const In& a) { scatter(a.x, 1, a.idx_cols, a.y); });
  reg("indexing", "scatter_add", [](const In& a) { scatter_add(a.x, 1, a.idx_cols, a.y); });
  reg("indexing", "index_select dim0", [](const In& a) { index_select(a.x, 0, a.idx_rows); });
  reg("indexing", "index_select dim1", [](const In& a) { index_select(a.x, 1, a.idx_rows); });
  reg("indexing", "index_add dim0", [](const In& a) { index_add(a.x, 0, a.idx_rows, a.y); });
  reg("indexing", "index_put accumulate",
      [](const In& a) { index_put(a.x, {a.idx_rows}, a.y, true); });
  reg("indexing", "masked_fill", [](const In& a) { masked_fill(a.x, a.mask, Scalar(0.0)); });
  reg("indexing", "masked_select", [](const In& a) { masked_select(a.x, a.mask); });
  reg("indexing", "nonzero", [](const In& a) { nonzero(a.mask); });
  // matmul
  reg("matmul", "matmul 1024", [](const In& a) { matmul(a.x, a.y); });
  reg("matmul", "linear 1024", [](const In& a) { linear(a.x, a.y, a.row); });
  reg("matmul", "bmm 256x64x64", [](const In& a) {
    matmul(a.x.reshape({256, 64, 64}), a.y.reshape({256, 64, 64}));
  });
  // conv, pooling, interpolation
  reg("conv", "conv2d 3x3 32->32",
      [](const In& a) { F::conv2d(a.img, a.wconv, Tensor(), {1}, {1}); });
  reg("conv", "conv2d depthwise",
      [](const In& a) { F::conv2d(a.img, a.wconv.slice(1, 0, 1), Tensor(), {1}, {1}, {1}, 32); });
  reg("conv", "conv_transpose2d",
      [](const In& a) { F::conv_transpose2d(a.img, a.wconv, Tensor(), {2}, {1}, {1}); });
  reg("conv", "unfold 3x3", [](const In& a) { F::unfold(a.img.slice(0, 0, 1), {3, 3}); });
  reg("pool", "max_pool2d 2", [](const In& a) { F::max_pool2d(a.img, {2}); });
  reg("pool", "max_pool2d 3 s1 p1", [](const In& a) { F::max_pool2d(a.img, {3}, {1}, {1}); });
  reg("pool", "avg_pool2d 2", [](const In& a) { F::avg_pool2d(a.img, {2}); });
  reg("pool", "adaptive_avg_pool2d 7", [](const In& a) { F::adaptive_avg_pool2d(a.img, {7, 7}); });
  reg("interpolate", "nearest x2", [](const In& a) {
    F::interpolate(a.img.slice(0, 0, 2), {}, {2.0, 2.0}, "nearest");
  });
  reg("interpolate", "bilinear x2", [](const In& a) {
    F::interpolate(a.img.slice(0, 0, 2), {}, {2.0, 2.0}, "bilinear", false);
  });
  // softmax, norms, losses
  reg("softmax", "softmax dim1", [](const In& a) { F::softmax(a.x, 1); });
  reg("softmax", "softmax dim0", [](const In& a) { F::softmax(a.x, 0); });
  reg("softmax", "log_softmax dim1", [](const In& a) { F::log_softmax(a.x, 1); });
  reg("norm", "layer_norm 1024", [](const In& a) { F::layer_norm(a.x, {1024}, a.w1024, a.v1024); });
  reg("norm", "rms_norm 1024", [](const In& a) { F::rms_norm(a.x, {1024}, a.w1024); });
  reg("norm", "batch_norm train",
      [](const In& a) { F::batch_norm(a.img, Tensor(), Tensor(), Tensor(), Tensor(), true); });
  reg("norm", "group_norm 8", [](const In& a) { F::group_norm(a.img, 8); });
  reg("loss", "cross_entropy", [](const In& a) { F::cross_entropy(a.x, a.target); });
  reg("loss", "mse_loss", [](const In& a) { F::mse_loss(a.x, a.y); });
  return v;
}

// Seconds per call: the fastest of repeated calls, until `min_time` has passed (at least 3
// calls after a warm-up; a single call when one takes longer than min_time).
double time_op(const Op& op, const In& in, double min_time) {
  auto once = [&] {
    const auto t0 = Clock::now();
    op.fn(in);
    sync(in.x.device());
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  double best = once();
  if (best > min_time) return best;
  double total = 0;
  for (int i = 0; i < 3 || total < min_time; ++i) {
    const double t = once();
    best = std::min(best, t);
    total += t;
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  double min_time = 0.2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--only"))
      only = argv[i + 1];
    else if (!std::strcmp(argv[i], "--min-time"))
      min_time = std::stod(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: bench_op_speed [--only SUBSTRING] [--min-time SECONDS]\n");
      return 2;
    }
  }
  const In cpu_in = make_inputs(Device::cpu()), ref_in = make_inputs(Device::ref());
  std::printf("cpu vs ref, 1M-element f32 inputs; ratio = ref time / cpu time (>1: cpu faster)\n");
  std::printf("%-12s %-28s %10s %10s %8s\n", "family", "op", "cpu ms", "ref ms", "ratio");
  double min_ratio = 1e30;
  std::string min_name;
  std::vector<std::string> below;
  int n = 0;
  for (const Op& op : ops()) {
    if (!only.empty() && std::string(op.name).find(only) == std::string::npos &&
        std::string(op.family).find(only) == std::string::npos)
      continue;
    double tc = 0, tr = 0;
    try {
      tc = time_op(op, cpu_in, min_time);
      tr = time_op(op, ref_in, min_time);
    } catch (const std::exception& e) {
      std::printf("%-12s %-28s failed: %s\n", op.family, op.name, e.what());
      continue;
    }
    const double ratio = tr / tc;
    ++n;
    std::printf("%-12s %-28s %10.3f %10.3f %8.2f%s\n", op.family, op.name, tc * 1e3, tr * 1e3,
                ratio, ratio < 1.0 ? "  < 1" : "");
    std::fflush(stdout);
    if (ratio < min_ratio) {
      min_ratio = ratio;
      min_name = op.name;
    }
    if (ratio < 1.0) below.push_back(std::string(op.name) + " (" + std::to_string(ratio) + ")");
  }
  std::printf("\n%d ops; min ratio %.2f (%s); %zu below 1.0", n, min_ratio, min_name.c_str(),
              below.size());
  for (size_t i = 0; i < below.size(); ++i) std::printf("%s%s", i ? ", " : ": ", below[i].c_str());
  std::printf("\n");
  return 0;
}
