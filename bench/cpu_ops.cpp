// cpu backend micro-benchmarks against the machine's peers in the same run: elementwise ops
// against a triad bandwidth probe, the elementwise chain exp(relu(x*2+1)), softmax and layer_norm
// over [4096, 4096], tanh/erf/gelu/gelu_tanh on 1M and 16M elements, conv2d 3x3 64->64 on 56x56 and
// the distinct conv shapes of ResNet-50, max_pool2d on ResNet's stem (NCHW and channels-last), and
// sgemm N = 256..4096 against oneDNN (dnnl_sgemm and the cached dnnl::matmul primitive), OpenBLAS
// (the pthread build, and the OpenMP build Ember's matmul calls) and BLIS called directly
// (OpenBLAS/BLIS are dlopen'ed when installed: libopenblas-dev, libopenblas-openmp-dev,
// libblis-dev), f64 matmul against OpenBLAS's dgemm, bf16/f16 matmul, batched small GEMMs (bmm
// 256x64x64), and LibTorch on each when built with EMBER_BENCH_LIBTORCH=ON. Prints each benchmark's
// best (minimum over repetitions) time with GB/s or GFLOP/s, then a table of ratios (Ember's speed
// / the peer's: > 1 means Ember is faster).
//
//   build-x/bench/bench_cpu_ops --benchmark_repetitions=3 [--json FILE]
//   --json FILE is --benchmark_out=FILE --benchmark_out_format=json (Google Benchmark's own
//   options, e.g. --benchmark_filter=REGEX, work as well).
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <dnnl.h>

#include <dnnl.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/functional/activation.h"
#include "ember/nn/functional/conv.h"
#include "ember/nn/functional/norm.h"
#include "ember/nn/functional/pool.h"

#ifdef EMBER_BENCH_HAVE_TORCH
#include <torch/torch.h>
#endif

namespace {

using namespace ember;
namespace F = ember::nn::functional;

constexpr int64_t kN = int64_t(1) << 24;  // 16M f32 = 64 MiB per operand

// Work per iteration, as rate counters (bytes_per_second, GFLOP/s) the summary reads back.
void note(benchmark::State& st, double bytes, double flops) {
  st.SetBytesProcessed(int64_t(bytes) * int64_t(st.iterations()));
  if (flops > 0)
    st.counters["GFLOP/s"] =
        benchmark::Counter(flops * double(st.iterations()) * 1e-9, benchmark::Counter::kIsRate);
}

Tensor input(Shape s, Device d = Device::cpu()) {
  manual_seed(d, 1);
  return randn(std::move(s), {DType::f32, d});
}

// The probe: a[i] = b[i] + 3 c[i] over the same threads the cpu backend uses (12 bytes/element).
void BM_triad_probe(benchmark::State& st) {
  std::vector<float> a(size_t(kN), 0.f), b(size_t(kN), 1.f), c(size_t(kN), 2.f);
  const int nt = get_num_threads();
  for (auto _ : st) {
    std::vector<std::thread> ts;
    for (int t = 0; t < nt; ++t)
      ts.emplace_back([&, t] {
        const int64_t lo = kN * t / nt, hi = kN * (t + 1) / nt;
        float* pa = a.data();
        const float *pb = b.data(), *pc = c.data();
        for (int64_t i = lo; i < hi; ++i) pa[i] = pb[i] + 3.f * pc[i];
      });
    for (auto& t : ts) t.join();
    benchmark::DoNotOptimize(a.data());
  }
  note(st, 12.0 * kN, 2.0 * kN);
}

template <typename Fn>
void elementwise(benchmark::State& st, Device d, double bytes_per_elem, Fn fn) {
  const Tensor x = input({kN}, d), y = input({kN}, d);
  for (auto _ : st) {
    Tensor z = fn(x, y);
    benchmark::DoNotOptimize(z.raw_data());
  }
  note(st, bytes_per_elem * kN, 0);
}

void BM_add(benchmark::State& st) {
  elementwise(st, Device::cpu(), 12, [](const Tensor& x, const Tensor& y) { return x + y; });
}
void BM_mul(benchmark::State& st) {
  elementwise(st, Device::cpu(), 12, [](const Tensor& x, const Tensor& y) { return x * y; });
}
void BM_exp(benchmark::State& st) {
  elementwise(st, Device::cpu(), 8, [](const Tensor& x, const Tensor&) { return x.exp(); });
}
void BM_add_ref(benchmark::State& st) {
  elementwise(st, Device::ref(), 12, [](const Tensor& x, const Tensor& y) { return x + y; });
}
void BM_exp_ref(benchmark::State& st) {
  elementwise(st, Device::ref(), 8, [](const Tensor& x, const Tensor&) { return x.exp(); });
}
// exp(relu(x * 2 + 1)): four unfused passes here (mul, add, relu, exp), 8 bytes/element each;
// the bytes noted are the one-pass minimum (read x, write the result) a fused kernel would move.
void BM_chain(benchmark::State& st) {
  elementwise(st, Device::cpu(), 8,
              [](const Tensor& x, const Tensor&) { return (x * 2 + 1).relu().exp(); });
}

// tanh, erf, gelu (erf form) and gelu_tanh on n f32 elements (1M: in cache, 16M: from memory;
// 8 bytes/element), registered by name in main().
const char* const kActivations[] = {"tanh", "erf", "gelu", "gelu_tanh"};
Tensor activation(int op, const Tensor& x) {
  switch (op) {
    case 0:
      return tanh(x);
    case 1:
      return erf(x);
    case 2:
      return F::gelu(x);
    default:
      return F::gelu(x, "tanh");
  }
}
void activation_ember(benchmark::State& st, int op, int64_t n) {
  const Tensor x = input({n});
  for (auto _ : st) {
    Tensor y = activation(op, x);
    benchmark::DoNotOptimize(y.raw_data());
  }
  note(st, 8.0 * double(n), 0);
}
std::string activation_name(const char* who, int op, int64_t n) {
  return std::string("BM_act/") + kActivations[op] + "/" + (n == kN ? "16M" : "1M") + "/" + who;
}

void BM_softmax(benchmark::State& st) {
  const Tensor x = input({4096, 4096});
  for (auto _ : st) {
    Tensor y = F::softmax(x, -1);
    benchmark::DoNotOptimize(y.raw_data());
  }
  note(st, 8.0 * 4096 * 4096, 0);
}

void BM_layer_norm(benchmark::State& st) {
  const Tensor x = input({4096, 4096});
  const Tensor w = input({4096}), b = input({4096});
  for (auto _ : st) {
    Tensor y = F::layer_norm(x, {4096}, w, b);
    benchmark::DoNotOptimize(y.raw_data());
  }
  note(st, 8.0 * 4096 * 4096, 0);
}

void BM_conv2d(benchmark::State& st) {
  const Tensor x = input({1, 64, 56, 56}), w = input({64, 64, 3, 3});
  for (auto _ : st) {
    Tensor y = F::conv2d(x, w, Tensor(), {1}, {1});
    benchmark::DoNotOptimize(y.raw_data());
  }
  note(st, 0, 2.0 * 64 * 64 * 9 * 56 * 56);
}

void BM_matmul(benchmark::State& st) {
  const int64_t n = st.range(0);
  const Tensor a = input({n, n}), b = input({n, n});
  for (auto _ : st) {
    Tensor c = matmul(a, b);
    benchmark::DoNotOptimize(c.raw_data());
  }
  note(st, 0, 2.0 * double(n) * double(n) * double(n));
}

// Ember's matmul in another float dtype (f64, bf16, f16), N x N x N.
void matmul_typed(benchmark::State& st, DType t) {
  const int64_t n = st.range(0);
  const Tensor a = input({n, n}).to(t), b = input({n, n}).to(t);
  for (auto _ : st) {
    Tensor c = matmul(a, b);
    benchmark::DoNotOptimize(c.raw_data());
  }
  note(st, 0, 2.0 * double(n) * double(n) * double(n));
}
void BM_matmul_f64(benchmark::State& st) { matmul_typed(st, DType::f64); }
void BM_matmul_bf16(benchmark::State& st) { matmul_typed(st, DType::bf16); }
void BM_matmul_f16(benchmark::State& st) { matmul_typed(st, DType::f16); }

// Batched small GEMMs: [256, 64, 64] @ [256, 64, 64] (attention-sized; one GEMM per thread).
void BM_bmm_small(benchmark::State& st) {
  const Tensor a = input({256, 64, 64}), b = input({256, 64, 64});
  for (auto _ : st) {
    Tensor c = matmul(a, b);
    benchmark::DoNotOptimize(c.raw_data());
  }
  note(st, 0, 2.0 * 256 * 64 * 64 * 64);
}

// oneDNN's matmul primitive, created once per shape (as a cache would keep it) and executed.
void BM_dnnl_matmul_prim(benchmark::State& st) {
  const int64_t n = st.range(0);
  std::vector<float> a(size_t(n * n), 1.f), b(size_t(n * n), 0.5f), c(size_t(n * n));
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const dnnl::memory::desc md({n, n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
  const dnnl::matmul prim(dnnl::matmul::primitive_desc(dnnl::matmul::desc(md, md, md), eng));
  dnnl::memory ma(md, eng, a.data()), mb(md, eng, b.data()), mc(md, eng, c.data());
  for (auto _ : st) {
    prim.execute(s, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
    s.wait();
    benchmark::DoNotOptimize(c.data());
  }
  note(st, 0, 2.0 * double(n) * double(n) * double(n));
}

void BM_dnnl_sgemm(benchmark::State& st) {
  const int64_t n = st.range(0);
  std::vector<float> a(size_t(n * n), 1.f), b(size_t(n * n), 0.5f), c(size_t(n * n));
  for (auto _ : st) {
    dnnl_sgemm('N', 'N', n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  note(st, 0, 2.0 * double(n) * double(n) * double(n));
}

// ---- BLAS peers, loaded at run time (no link-time symbol clash: both export cblas_sgemm) ----
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                            int, float, float*, int);
using BliSgemm = void (*)(int, int, int64_t, int64_t, int64_t, const float*, const float*, int64_t,
                          int64_t, const float*, int64_t, int64_t, const float*, float*, int64_t,
                          int64_t);
template <typename F>
F load(const char* lib, const char* sym, const char* threads_sym) {
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) return nullptr;
  if (auto set = reinterpret_cast<void (*)(int)>(dlsym(h, threads_sym))) set(get_num_threads());
  return reinterpret_cast<F>(dlsym(h, sym));
}
CblasSgemm openblas() {
  static CblasSgemm f =
      load<CblasSgemm>("libopenblas.so.0", "cblas_sgemm", "openblas_set_num_threads");
  return f;
}
// The OpenMP build Ember's matmul uses (gemm_lib.cpp): by path, RTLD_DEEPBIND so its internals
// stay apart from the pthread build loaded above and by LibTorch.
using CblasDgemm = void (*)(int, int, int, int, int, int, double, const double*, int, const double*,
                            int, double, double*, int);
void* openblas_omp_handle() {
  static void* h =
      dlopen("/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0", RTLD_NOW | RTLD_LOCAL |
#ifdef RTLD_DEEPBIND
                                                                               RTLD_DEEPBIND
#else
                                                                               0
#endif
      );
  return h;
}
CblasSgemm openblas_omp() {
  void* h = openblas_omp_handle();
  return h ? reinterpret_cast<CblasSgemm>(dlsym(h, "cblas_sgemm")) : nullptr;
}
CblasDgemm openblas_omp_dgemm() {
  void* h = openblas_omp_handle();
  return h ? reinterpret_cast<CblasDgemm>(dlsym(h, "cblas_dgemm")) : nullptr;
}
BliSgemm blis() {
  static BliSgemm f = [] {
    // bli_thread_set_num_threads takes a dim_t (int64_t).
    void* h = dlopen("libblis.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!h) return BliSgemm(nullptr);
    if (auto set = reinterpret_cast<void (*)(int64_t)>(dlsym(h, "bli_thread_set_num_threads")))
      set(get_num_threads());
    return reinterpret_cast<BliSgemm>(dlsym(h, "bli_sgemm"));
  }();
  return f;
}

template <typename Gemm>
void sgemm_peer(benchmark::State& st, Gemm gemm) {
  const int64_t n = st.range(0);
  std::vector<float> a(size_t(n * n), 1.f), b(size_t(n * n), 0.5f), c(size_t(n * n));
  for (auto _ : st) {
    gemm(int(n), a.data(), b.data(), c.data());
    benchmark::DoNotOptimize(c.data());
  }
  note(st, 0, 2.0 * double(n) * double(n) * double(n));
}
void BM_openblas_sgemm(benchmark::State& st) {
  sgemm_peer(st, [](int n, const float* a, const float* b, float* c) {
    openblas()(101, 111, 111, n, n, n, 1.f, a, n, b, n, 0.f, c, n);  // row-major, no transposes
  });
}
void BM_openblas_omp_sgemm(benchmark::State& st) {
  sgemm_peer(st, [](int n, const float* a, const float* b, float* c) {
    openblas_omp()(101, 111, 111, n, n, n, 1.f, a, n, b, n, 0.f, c, n);
  });
}
void BM_openblas_omp_dgemm(benchmark::State& st) {
  const int n = int(st.range(0));
  std::vector<double> a(size_t(n) * n, 1.0), b(size_t(n) * n, 0.5), c(size_t(n) * n);
  for (auto _ : st) {
    openblas_omp_dgemm()(101, 111, 111, n, n, n, 1.0, a.data(), n, b.data(), n, 0.0, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  note(st, 0, 2.0 * double(n) * double(n) * double(n));
}
void BM_blis_sgemm(benchmark::State& st) {
  sgemm_peer(st, [](int n, const float* a, const float* b, float* c) {
    const float one = 1.f, zero = 0.f;
    blis()(0, 0, n, n, n, &one, a, n, 1, b, n, 1, &zero, c, n, 1);  // BLIS_NO_TRANSPOSE = 0
  });
}

// ---- ResNet-50's distinct convolutions (batch 1, 224x224 input; v1.5: stride on the 3x3) ----
struct ConvShape {
  int64_t cin, cout, k, stride, pad, hw;
};
const std::vector<ConvShape>& resnet50_convs() {
  static const std::vector<ConvShape> v = {
      {3, 64, 7, 2, 3, 224},    {64, 64, 1, 1, 0, 56},    {64, 64, 3, 1, 1, 56},
      {64, 256, 1, 1, 0, 56},   {256, 64, 1, 1, 0, 56},   {256, 128, 1, 1, 0, 56},
      {128, 128, 3, 2, 1, 56},  {128, 512, 1, 1, 0, 28},  {256, 512, 1, 2, 0, 56},
      {512, 128, 1, 1, 0, 28},  {128, 128, 3, 1, 1, 28},  {512, 256, 1, 1, 0, 28},
      {256, 256, 3, 2, 1, 28},  {256, 1024, 1, 1, 0, 14}, {512, 1024, 1, 2, 0, 28},
      {1024, 256, 1, 1, 0, 14}, {256, 256, 3, 1, 1, 14},  {1024, 512, 1, 1, 0, 14},
      {512, 512, 3, 2, 1, 14},  {512, 2048, 1, 1, 0, 7},  {1024, 2048, 1, 2, 0, 14},
      {2048, 512, 1, 1, 0, 7},  {512, 512, 3, 1, 1, 7}};
  return v;
}
double conv_flops(const ConvShape& c) {
  const double o = double((c.hw + 2 * c.pad - c.k) / c.stride + 1);
  return 2.0 * double(c.cin * c.cout * c.k * c.k) * o * o;
}
std::string conv_name(const ConvShape& c) {
  return std::to_string(c.cin) + "x" + std::to_string(c.cout) + "_k" + std::to_string(c.k) + "s" +
         std::to_string(c.stride) + "_" + std::to_string(c.hw);
}
void conv_ember(benchmark::State& st, ConvShape c) {
  const Tensor x = input({1, c.cin, c.hw, c.hw}), w = input({c.cout, c.cin, c.k, c.k});
  for (auto _ : st) {
    Tensor y = F::conv2d(x, w, Tensor(), {c.stride}, {c.pad});
    benchmark::DoNotOptimize(y.raw_data());
  }
  note(st, 0, conv_flops(c));
}

// max_pool2d 3x3 stride 2 pad 1 on ResNet's stem activation [8, 64, 112, 112]; Arg 1: the
// input is channels-last. Bytes: read the input, write the output once.
constexpr double kStemPoolBytes = 4.0 * 8 * 64 * (112 * 112 + 56 * 56);
void BM_max_pool_stem(benchmark::State& st) {
  Tensor x = input({8, 64, 112, 112});
  if (st.range(0)) x = x.contiguous(MemoryFormat::channels_last);
  for (auto _ : st) {
    Tensor y = F::max_pool2d(x, {3}, {2}, {1});
    benchmark::DoNotOptimize(y.raw_data());
  }
  note(st, kStemPoolBytes, 0);
}

#ifdef EMBER_BENCH_HAVE_TORCH
// ---- LibTorch on the same inputs (its own intra-op threads set to Ember's count) ----
torch::Tensor tin(std::vector<int64_t> s) {
  torch::manual_seed(1);
  return torch::randn(s);
}
template <typename Fn>
void torch_bench(benchmark::State& st, double bytes, double flops, Fn fn) {
  torch::set_num_threads(get_num_threads());
  torch::NoGradGuard ng;
  for (auto _ : st) {
    torch::Tensor y = fn();
    benchmark::DoNotOptimize(y.data_ptr());
  }
  note(st, bytes, flops);
}
void BM_torch_add(benchmark::State& st) {
  const auto x = tin({kN}), y = tin({kN});
  torch_bench(st, 12.0 * kN, 0, [&] { return x + y; });
}
void BM_torch_mul(benchmark::State& st) {
  const auto x = tin({kN}), y = tin({kN});
  torch_bench(st, 12.0 * kN, 0, [&] { return x * y; });
}
void BM_torch_exp(benchmark::State& st) {
  const auto x = tin({kN});
  torch_bench(st, 8.0 * kN, 0, [&] { return x.exp(); });
}
void BM_torch_chain(benchmark::State& st) {
  const auto x = tin({kN});
  torch_bench(st, 8.0 * kN, 0, [&] { return (x * 2 + 1).relu().exp(); });
}
// torch::tanh etc. allocate their result; the _out forms write a tensor allocated once (at 16M
// the fresh 64 MiB result's page faults dominate the allocating form on this VM).
void activation_torch(benchmark::State& st, int op, int64_t n, bool out) {
  const auto x = tin({n});
  auto y = torch::empty_like(x);
  torch_bench(st, 8.0 * double(n), 0, [&] {
    switch (op) {
      case 0:
        return out ? torch::tanh_out(y, x) : torch::tanh(x);
      case 1:
        return out ? torch::erf_out(y, x) : torch::erf(x);
      case 2:
        return out ? torch::gelu_out(y, x) : torch::gelu(x);
      default:
        return out ? torch::gelu_out(y, x, "tanh") : torch::gelu(x, "tanh");
    }
  });
}
void BM_torch_softmax(benchmark::State& st) {
  const auto x = tin({4096, 4096});
  torch_bench(st, 8.0 * 4096 * 4096, 0, [&] { return torch::softmax(x, -1); });
}
void BM_torch_layer_norm(benchmark::State& st) {
  const auto x = tin({4096, 4096}), w = tin({4096}), b = tin({4096});
  torch_bench(st, 8.0 * 4096 * 4096, 0, [&] { return torch::layer_norm(x, {4096}, w, b); });
}
void BM_torch_conv2d(benchmark::State& st) {
  const auto x = tin({1, 64, 56, 56}), w = tin({64, 64, 3, 3});
  torch_bench(st, 0, 2.0 * 64 * 64 * 9 * 56 * 56, [&] { return torch::conv2d(x, w, {}, 1, 1); });
}
void BM_torch_max_pool_stem(benchmark::State& st) {
  auto x = tin({8, 64, 112, 112});
  if (st.range(0)) x = x.contiguous(torch::MemoryFormat::ChannelsLast);
  torch_bench(st, kStemPoolBytes, 0, [&] { return torch::max_pool2d(x, 3, 2, 1); });
}
void BM_torch_matmul(benchmark::State& st) {
  const int64_t n = st.range(0);
  const auto a = tin({n, n}), b = tin({n, n});
  torch_bench(st, 0, 2.0 * double(n) * double(n) * double(n), [&] { return torch::mm(a, b); });
}
void torch_matmul_typed(benchmark::State& st, torch::ScalarType t) {
  const int64_t n = st.range(0);
  const auto a = tin({n, n}).to(t), b = tin({n, n}).to(t);
  torch_bench(st, 0, 2.0 * double(n) * double(n) * double(n), [&] { return torch::mm(a, b); });
}
void BM_torch_matmul_f64(benchmark::State& st) { torch_matmul_typed(st, torch::kDouble); }
void BM_torch_matmul_bf16(benchmark::State& st) { torch_matmul_typed(st, torch::kBFloat16); }
void BM_torch_bmm_small(benchmark::State& st) {
  const auto a = tin({256, 64, 64}), b = tin({256, 64, 64});
  torch_bench(st, 0, 2.0 * 256 * 64 * 64 * 64, [&] { return torch::bmm(a, b); });
}
void conv_torch(benchmark::State& st, ConvShape c) {
  const auto x = tin({1, c.cin, c.hw, c.hw}), w = tin({c.cout, c.cin, c.k, c.k});
  torch_bench(st, 0, conv_flops(c), [&] { return torch::conv2d(x, w, {}, c.stride, c.pad); });
}
#endif

// One training step of the Fashion-MNIST CNN (conv 32 3x3, relu, conv 64 3x3, relu, maxpool 2,
// fc 128, relu, fc 10; batch 64): forward through nn::functional, backward written out with the
// ops autodiff's rules use (matmul, unfold/fold, scatter_add), plain SGD. Reports samples/s.
struct Cnn {
  Tensor w1, b1, w2, b2, w3, b3, w4, b4;
  explicit Cnn(Device d) {
    manual_seed(d, 7);
    auto p = [&](Shape s, double scale) { return randn(std::move(s), {DType::f32, d}) * scale; };
    w1 = p({32, 1, 3, 3}, 0.3);
    b1 = p({32}, 0.01);
    w2 = p({64, 32, 3, 3}, 0.06);
    b2 = p({64}, 0.01);
    w3 = p({128, 9216}, 0.01);
    b3 = p({128}, 0.01);
    w4 = p({10, 128}, 0.09);
    b4 = p({10}, 0.01);
  }
  // Weight and bias gradients of a 3x3 valid conv: dy [N, Co, L], cols = unfold(x) [N, Ci*9, L].
  static void conv_grads(const Tensor& dy, const Tensor& cols, const Tensor& w, Tensor& dw,
                         Tensor& db) {
    dw = sum(matmul(dy, cols.transpose(1, 2)), {0}).reshape(w.shape());
    db = sum(dy, {0, 2});
  }
  double step(const Tensor& x, const Tensor& y, double lr) {
    const int64_t n = x.size(0);
    const Tensor cols1 = F::unfold(x, {3});  // [N, 9, 676]
    const Tensor c1 = F::conv2d(x, w1, b1);  // [N, 32, 26, 26]
    const Tensor a1 = c1.relu();
    const Tensor cols2 = F::unfold(a1, {3});  // [N, 288, 576]
    const Tensor c2 = F::conv2d(a1, w2, b2);  // [N, 64, 24, 24]
    const Tensor a2 = c2.relu();
    auto [p, idx] = F::max_pool2d_with_indices(a2, {2});  // [N, 64, 12, 12]
    const Tensor f = p.flatten(1);                        // [N, 9216]
    const Tensor h = linear(f, w3, b3);
    const Tensor r = h.relu();
    const Tensor o = linear(r, w4, b4);  // [N, 10]
    const Tensor loss = F::cross_entropy(o, y);
    // Backward.
    const Tensor dlogits = (F::softmax(o, 1) - one_hot(y, 10).to(DType::f32)) / double(n);
    const Tensor dw4 = matmul(dlogits.t(), r), db4 = sum(dlogits, {0});
    const Tensor dh = matmul(dlogits, w4) * gt(h, 0).to(DType::f32);
    const Tensor dw3 = matmul(dh.t(), f), db3 = sum(dh, {0});
    const Tensor dp = matmul(dh, w3).view({n, 64, 144});
    const Tensor da2 =
        scatter_add(zeros({n, 64, 576}, {DType::f32, x.device()}), 2, idx.view({n, 64, 144}), dp);
    const Tensor dc2 = da2 * gt(c2, 0).to(DType::f32).view({n, 64, 576});
    Tensor dw2, db2, dw1, db1;
    conv_grads(dc2, cols2, w2, dw2, db2);
    const Tensor dcols2 = matmul(w2.reshape({64, 288}).t(), dc2);  // [N, 288, 576]
    const Tensor da1 = F::fold(dcols2, {26, 26}, {3});
    const Tensor dc1 = (da1 * gt(c1, 0).to(DType::f32)).view({n, 32, 676});
    conv_grads(dc1, cols1, w1, dw1, db1);
    for (auto [w, g] : {std::pair<Tensor*, const Tensor*>{&w1, &dw1},
                        {&b1, &db1},
                        {&w2, &dw2},
                        {&b2, &db2},
                        {&w3, &dw3},
                        {&b3, &db3},
                        {&w4, &dw4},
                        {&b4, &db4}})
      *w = *w - *g * lr;
    return loss.item<float>();
  }
};

void cnn_step(benchmark::State& st, Device d) {
  Cnn net(d);
  manual_seed(d, 3);
  const Tensor x = rand({64, 1, 28, 28}, {DType::f32, d});
  const Tensor y = randint(0, 10, {64}, {DType::i64, d});
  double loss = 0;
  for (auto _ : st) loss = net.step(x, y, 0.05);
  st.counters["loss"] = loss;
  st.counters["samples/s"] =
      benchmark::Counter(64.0 * double(st.iterations()), benchmark::Counter::kIsRate);
  note(st, 0, 0);
}
void BM_cnn_step(benchmark::State& st) { cnn_step(st, Device::cpu()); }

BENCHMARK(BM_triad_probe)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_add)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_mul)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_exp)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_add_ref)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_exp_ref)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_chain)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_softmax)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_layer_norm)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_conv2d)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_max_pool_stem)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_matmul)
    ->RangeMultiplier(2)
    ->Range(256, 4096)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_dnnl_sgemm)
    ->RangeMultiplier(2)
    ->Range(256, 4096)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_dnnl_matmul_prim)
    ->RangeMultiplier(2)
    ->Range(256, 4096)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_matmul_f64)
    ->RangeMultiplier(2)
    ->Range(256, 2048)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_matmul_bf16)
    ->RangeMultiplier(2)
    ->Range(256, 2048)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_matmul_f16)
    ->RangeMultiplier(2)
    ->Range(256, 2048)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_bmm_small)->Unit(benchmark::kMillisecond)->UseRealTime();
#ifdef EMBER_BENCH_HAVE_TORCH
BENCHMARK(BM_torch_matmul_f64)
    ->RangeMultiplier(2)
    ->Range(256, 2048)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_torch_matmul_bf16)
    ->RangeMultiplier(2)
    ->Range(256, 2048)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_torch_bmm_small)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_torch_add)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_torch_mul)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_torch_exp)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_torch_chain)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_torch_softmax)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_torch_layer_norm)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_torch_conv2d)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_torch_max_pool_stem)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_torch_matmul)
    ->RangeMultiplier(2)
    ->Range(256, 4096)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
#endif
BENCHMARK(BM_cnn_step)->Unit(benchmark::kMillisecond)->UseRealTime();

// Keeps the minimum time per benchmark over its repetitions (the machine is shared and noisy)
// with that run's rates.
struct Best {
  double seconds = 0, gbs = 0, gflops = 0;
};
class MinReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, Best> best;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.iterations == 0) continue;
      const std::string name = r.run_name.str();
      const double t = r.real_accumulated_time / double(r.iterations);
      auto it = best.find(name);
      if (it != best.end() && it->second.seconds <= t) continue;
      Best b;
      b.seconds = t;
      auto c = r.counters.find("bytes_per_second");
      if (c != r.counters.end()) b.gbs = double(c->second) * 1e-9;
      c = r.counters.find("GFLOP/s");
      if (c != r.counters.end()) b.gflops = double(c->second);
      best[name] = b;
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

}  // namespace

int main(int argc, char** argv) {
  // --json FILE: Google Benchmark's JSON output.
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i + 1 < args.size(); ++i)
    if (args[i] == "--json") {
      args[i] = "--benchmark_out=" + args[i + 1];
      args[i + 1] = "--benchmark_out_format=json";
    }
  std::vector<char*> av;
  for (auto& a : args) av.push_back(a.data());
  int ac = int(av.size());
  benchmark::Initialize(&ac, av.data());
  // Peers that are present, and ResNet-50's convolutions.
  for (int n = 256; n <= 4096; n *= 2) {
    if (openblas())
      benchmark::RegisterBenchmark("BM_openblas_sgemm", BM_openblas_sgemm)
          ->Arg(n)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    if (openblas_omp())
      benchmark::RegisterBenchmark("BM_openblas_omp_sgemm", BM_openblas_omp_sgemm)
          ->Arg(n)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    if (openblas_omp_dgemm() && n <= 2048)
      benchmark::RegisterBenchmark("BM_openblas_omp_dgemm", BM_openblas_omp_dgemm)
          ->Arg(n)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    if (blis())
      benchmark::RegisterBenchmark("BM_blis_sgemm", BM_blis_sgemm)
          ->Arg(n)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
  }
  for (const ConvShape& c : resnet50_convs()) {
    benchmark::RegisterBenchmark(("BM_r50conv/" + conv_name(c) + "/ember").c_str(), conv_ember, c)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
#ifdef EMBER_BENCH_HAVE_TORCH
    benchmark::RegisterBenchmark(("BM_r50conv/" + conv_name(c) + "/torch").c_str(), conv_torch, c)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
#endif
  }
  for (int op = 0; op < 4; ++op)
    for (int64_t n : {int64_t(1) << 20, kN}) {
      benchmark::RegisterBenchmark(activation_name("ember", op, n).c_str(), activation_ember, op, n)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
#ifdef EMBER_BENCH_HAVE_TORCH
      for (bool out : {false, true})
        benchmark::RegisterBenchmark(activation_name(out ? "torch_out" : "torch", op, n).c_str(),
                                     activation_torch, op, n, out)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
#endif
    }
  MinReporter rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  std::printf("\n%-40s %10s %10s %10s   (minimum over repetitions; %d threads)\n", "benchmark",
              "ms", "GB/s", "GFLOP/s", get_num_threads());
  for (const auto& [name, b] : rep.best) {
    std::printf("%-40s %10.3f %10.2f %10.2f\n", name.c_str(), b.seconds * 1e3, b.gbs, b.gflops);
    if (name.rfind("BM_cnn_step", 0) == 0)
      std::printf("%-40s %10.1f samples/s\n", "", 64.0 / b.seconds);
  }
  // Speed ratio a / b (time of b over time of a): > 1 means a is faster.
  auto ratio = [&](const std::string& label, const std::string& a, const std::string& b) {
    const std::string ra = a + "/real_time", rb = b + "/real_time";
    if (!rep.best.count(ra) || !rep.best.count(rb)) return;
    std::printf("%-52s %8.2f\n", label.c_str(), rep.best[rb].seconds / rep.best[ra].seconds);
  };
  std::printf("\nspeed ratios (> 1: the first is faster)\n");
  ratio("add GB/s / triad GB/s", "BM_add", "BM_triad_probe");
  ratio("mul GB/s / triad GB/s", "BM_mul", "BM_triad_probe");
  // exp moves 8 bytes/element against the triad's 12: compare bandwidths, not times.
  if (rep.best.count("BM_exp/real_time") && rep.best.count("BM_triad_probe/real_time"))
    std::printf("%-52s %8.2f\n", "exp GB/s / triad GB/s",
                rep.best["BM_exp/real_time"].gbs / rep.best["BM_triad_probe/real_time"].gbs);
  ratio("add: cpu over ref", "BM_add", "BM_add_ref/iterations:3");
  ratio("exp: cpu over ref", "BM_exp", "BM_exp_ref/iterations:3");
  for (const char* op : {"add", "mul", "exp", "chain", "softmax", "layer_norm", "conv2d"})
    ratio(std::string(op) + ": ember over torch", std::string("BM_") + op,
          std::string("BM_torch_") + op);
  for (int n = 256; n <= 4096; n *= 2) {
    const std::string m = "BM_matmul/" + std::to_string(n), sn = "/" + std::to_string(n);
    ratio("matmul " + std::to_string(n) + ": ember over dnnl_sgemm", m, "BM_dnnl_sgemm" + sn);
    ratio("matmul " + std::to_string(n) + ": ember over dnnl::matmul", m,
          "BM_dnnl_matmul_prim" + sn);
    ratio("matmul " + std::to_string(n) + ": ember over openblas", m, "BM_openblas_sgemm" + sn);
    ratio("matmul " + std::to_string(n) + ": ember over openblas-openmp", m,
          "BM_openblas_omp_sgemm" + sn);
    ratio("matmul " + std::to_string(n) + ": ember over blis", m, "BM_blis_sgemm" + sn);
    ratio("matmul " + std::to_string(n) + ": ember over torch", m, "BM_torch_matmul" + sn);
  }
  for (int n = 256; n <= 2048; n *= 2) {
    const std::string sn = "/" + std::to_string(n), ns = std::to_string(n);
    ratio("matmul f64 " + ns + ": ember over openblas dgemm", "BM_matmul_f64" + sn,
          "BM_openblas_omp_dgemm" + sn);
    ratio("matmul f64 " + ns + ": ember over torch", "BM_matmul_f64" + sn,
          "BM_torch_matmul_f64" + sn);
    ratio("matmul bf16 " + ns + ": ember over torch", "BM_matmul_bf16" + sn,
          "BM_torch_matmul_bf16" + sn);
    ratio("matmul bf16 " + ns + ": ember bf16 over ember f32", "BM_matmul_bf16" + sn,
          "BM_matmul" + sn);
  }
  for (int op = 0; op < 4; ++op)
    for (int64_t n : {int64_t(1) << 20, kN})
      for (const char* t : {"torch", "torch_out"})
        ratio(std::string(kActivations[op]) + (n == kN ? " 16M" : " 1M") + ": ember over " + t,
              activation_name("ember", op, n), activation_name(t, op, n));
  ratio("bmm 256x64x64: ember over torch", "BM_bmm_small", "BM_torch_bmm_small");
  ratio("max_pool2d stem NCHW: ember over torch", "BM_max_pool_stem/0", "BM_torch_max_pool_stem/0");
  ratio("max_pool2d stem channels-last: ember over torch", "BM_max_pool_stem/1",
        "BM_torch_max_pool_stem/1");
  for (const ConvShape& c : resnet50_convs())
    ratio("r50 conv " + conv_name(c) + ": ember over torch",
          "BM_r50conv/" + conv_name(c) + "/ember", "BM_r50conv/" + conv_name(c) + "/torch");
  benchmark::Shutdown();
  return 0;
}
