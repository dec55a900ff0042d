// The wasm backend's thread pool (the pthreads build; the single-threaded one keeps 1 thread)
// and whole models on it: the MNIST CNN's forward and a small CNN's training steps (autodiff,
// nn, optim) against the reference backend.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "backends/wasm/thread_pool.h"
#include "backends/wasm/wasm_backend.h"
#include "ember/ember.h"
#include "wasm_test_util.h"

namespace ember {
namespace {

namespace F = nn::functional;
using wasm_test::differs;
using wasm_test::expect_match;
using wasm_test::rnd;

// Restores the default thread count when a test ends.
struct ThreadsGuard {
  ~ThreadsGuard() { wasm::set_num_threads(0); }
};

TEST(WasmThreads, SetterAndDefault) {
  ThreadsGuard g;
  wasm::set_num_threads(0);
  const int def = wasm::num_threads();
#ifdef __EMSCRIPTEN_PTHREADS__
  EXPECT_GE(def, 1);
  EXPECT_LE(def, 8);
  wasm::set_num_threads(3);
  EXPECT_EQ(wasm::num_threads(), 3);
  wasm::set_num_threads(100);
  EXPECT_EQ(wasm::num_threads(), 8);
#else
  EXPECT_EQ(def, 1);
  wasm::set_num_threads(4);
  EXPECT_EQ(wasm::num_threads(), 1);
#endif
}

TEST(WasmThreads, ParallelForCoversEachIndexOnceAndRethrows) {
  ThreadsGuard g;
  for (int nt : {1, 2, 4}) {
    wasm::set_num_threads(nt);
    for (int64_t n : {0, 1, 7, 1000, 100003}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      wasm::parallel_for(n, 16, [&](int64_t b, int64_t e) {
        // A nested parallel_for runs inline.
        wasm::parallel_for(e - b, 1, [&](int64_t b2, int64_t e2) {
          for (int64_t i = b + b2; i < b + e2; ++i) hits[size_t(i)]++;
        });
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << n << " " << i;
    }
    EXPECT_THROW(wasm::parallel_for(1000, 10,
                                    [](int64_t, int64_t e) {
                                      if (e > 500) throw std::runtime_error("boom");
                                    }),
                 std::runtime_error);
  }
}

// Each kernel's result does not depend on the thread count: bit for bit.
TEST(WasmThreads, ResultsEqualForOneTwoFourThreads) {
  ThreadsGuard g;
  const Device cpu = Device::cpu();
  Tensor a = rnd({64, 288}, 1).to(cpu), b = rnd({288, 576}, 2).to(cpu);
  Tensor x = rnd({6, 32, 26, 26}, 3).to(cpu), w = rnd({64, 32, 3, 3}, 4).to(cpu);
  Tensor bias = rnd({64}, 5).to(cpu), big = rnd({300, 1001}, 6).to(cpu);
  Tensor x1 = rnd({1, 32, 26, 26}, 7).to(cpu), lin = rnd({3, 9216}, 8).to(cpu),
         lw = rnd({128, 9216}, 9).to(cpu);
  auto run = [&] {
    std::vector<Tensor> r = {matmul(a, b),
                             F::conv2d(x, w, bias),
                             F::conv2d(x1, w, bias),
                             F::max_pool2d(F::relu(F::conv2d(x, w, bias)), {2, 2}),
                             big * big.slice(0, 0, 1) + big,
                             sum(big, {-1}),
                             amax(big, {-1}),
                             linear(lin, lw),
                             big.t().contiguous()};
    for (Tensor& t : r) t = t.to(Device::ref());
    return r;
  };
  wasm::set_num_threads(1);
  const std::vector<Tensor> one = run();
  for (int nt : {2, 4}) {
    wasm::set_num_threads(nt);
    const std::vector<Tensor> got = run();
    for (size_t i = 0; i < one.size(); ++i)
      EXPECT_EQ(differs(one[i], got[i], 0.0), "") << "result " << i << ", " << nt << " threads";
  }
}

#ifdef __EMSCRIPTEN_PTHREADS__
// Two threads running kernels at once: one owns the pool, the other runs inline; both right.
TEST(WasmThreads, ConcurrentCallers) {
  ThreadsGuard g;
  wasm::set_num_threads(4);
  Tensor a = rnd({96, 200}, 11), b = rnd({200, 130}, 12);
  const Tensor want = matmul(a, b);
  const Tensor ac = a.to(Device::cpu()), bc = b.to(Device::cpu());
  std::vector<Tensor> got(2);
  std::vector<std::thread> ts;
  for (int t = 0; t < 2; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) got[size_t(t)] = matmul(ac, bc).to(Device::ref());
    });
  for (auto& t : ts) t.join();
  for (const Tensor& g2 : got) EXPECT_EQ(differs(want, g2, 0.0), "");
}
#endif

// ---- models ----

std::shared_ptr<nn::Sequential> mnist_cnn() {
  auto net = std::make_shared<nn::Sequential>();
  net->push_back(std::make_shared<nn::Conv2d>(1, 32, 3));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::Conv2d>(32, 64, 3));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::MaxPool2d>(2));
  net->push_back(std::make_shared<nn::Flatten>());
  net->push_back(std::make_shared<nn::Linear>(9216, 128));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::Linear>(128, 10));
  return net;
}

TEST(WasmModels, MnistCnnForwardMatchesRef) {
  manual_seed(42);
  auto net = mnist_cnn();
  net->to(Device::ref());
  NoGradGuard no_grad;
  for (int64_t n : {1, 3}) {
    Tensor x = rnd({n, 1, 28, 28}, 50 + uint64_t(n));
    const Tensor want = (*net)(x);
    net->to(Device::cpu());
    const Tensor got = (*net)(x.to(Device::cpu())).to(Device::ref());
    net->to(Device::ref());
    EXPECT_EQ(differs(want, got, 1e-5), "") << "batch " << n;
  }
}

std::shared_ptr<nn::Sequential> small_cnn() {
  auto net = std::make_shared<nn::Sequential>();
  net->push_back(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(2, 6, 3).padding(1)));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::MaxPool2d>(2));
  net->push_back(std::make_shared<nn::Flatten>());
  net->push_back(std::make_shared<nn::Linear>(6 * 5 * 5, 16));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::Linear>(16, 3));
  return net;
}

// Three steps of forward, cross-entropy, backward and SGD with momentum on each device from the
// same initial parameters: the parameters after them agree.
TEST(WasmModels, TrainingStepsMatchRef) {
  std::vector<std::vector<Tensor>> params;
  for (const Device& dev : {Device::ref(), Device::cpu()}) {
    manual_seed(7);
    auto net = small_cnn();
    net->to(dev);
    optim::SGD opt(net->parameters(), optim::SGDOptions(0.05).momentum(0.9));
    for (int step = 0; step < 3; ++step) {
      Tensor x = rnd({8, 2, 10, 10}, 80 + uint64_t(step)).to(dev);
      Tensor y = from_vector<int64_t>({0, 1, 2, 0, 1, 2, 2, 1}, {8}, dev);
      opt.zero_grad();
      Tensor loss = F::cross_entropy((*net)(x), y);
      loss.backward();
      opt.step();
    }
    std::vector<Tensor> p;
    for (const Tensor& t : net->parameters()) p.push_back(t.detach().to(Device::ref()));
    params.push_back(p);
  }
  ASSERT_EQ(params[0].size(), params[1].size());
  for (size_t i = 0; i < params[0].size(); ++i)
    EXPECT_EQ(differs(params[0][i], params[1][i], 1e-5), "") << "parameter " << i;
}

}  // namespace
}  // namespace ember
