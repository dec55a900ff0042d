// ember::dist in one process: the local engine, the default group's set-up from the environment,
// and the group's own logic over fake engines (dtype conversions, mean, timeouts enforced by the
// waiter, failures that break the group). Multi-process runs are tests/dist (ember_dist_tests).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "dist/engine.h"
#include "ember/dist/dist.h"
#include "test_util.h"

namespace ember {
namespace {

using dist::ReduceOp;
using test::EnvGuard;
using test::error_of;
using test::expect_error;
using test::expect_near;

dist::InitOptions no_threads() {
  dist::InitOptions o;
  o.set_threads = false;
  return o;
}

TEST(DistLocal, DefaultsWithoutAGroup) {
  ASSERT_FALSE(dist::is_initialized());
  EXPECT_EQ(dist::rank(), 0);
  EXPECT_EQ(dist::world_size(), 1);
  EXPECT_EQ(dist::local_rank(), 0);
  EXPECT_EQ(dist::local_world_size(), 1);
  expect_error([] { dist::default_group(); }, {"[dist]", "dist::init_process_group() first"});
  expect_error([] { dist::all_reduce(ones({2})); }, {"init_process_group"});
  EXPECT_TRUE(dist::is_available("local"));
  EXPECT_FALSE(dist::is_available("nccl"));
}

TEST(DistLocal, InitFromTheEnvironment) {
  EnvGuard no_mpi("OMPI_COMM_WORLD_SIZE", nullptr), no_ws("WORLD_SIZE", nullptr);
  {
    EnvGuard t("EMBER_DIST_TIMEOUT", "2.5");
    dist::init_process_group(no_threads());
  }
  EXPECT_TRUE(dist::is_initialized());
  EXPECT_EQ(dist::default_group().backend(), "local");
  EXPECT_EQ(dist::default_group().timeout_seconds(), 2.5);
  Tensor x = tensor<float>({1, 2, 3});
  dist::all_reduce(x, ReduceOp::mean);
  expect_near(x, {1, 2, 3});
  dist::barrier();
  dist::destroy_process_group();
  EXPECT_FALSE(dist::is_initialized());
  dist::init_process_group(no_threads());  // a new group after destroy
  EXPECT_EQ(dist::default_group().timeout_seconds(), 300);
  dist::destroy_process_group();
}

TEST(DistLocal, InitErrorsNameTheVariable) {
  EnvGuard no_mpi("OMPI_COMM_WORLD_SIZE", nullptr);
  {
    EnvGuard b("EMBER_DIST_BACKEND", "nccl");
    expect_error([] { dist::init_process_group(no_threads()); },
                 {"[dist::init_process_group]", "EMBER_DIST_BACKEND=nccl", "mpi, gloo or local"});
  }
  {
    EnvGuard t("EMBER_DIST_TIMEOUT", "soon");
    expect_error([] { dist::init_process_group(no_threads()); },
                 {"EMBER_DIST_TIMEOUT=soon", "positive number of seconds"});
  }
  {
    EnvGuard ws("WORLD_SIZE", "2");
    dist::InitOptions o = no_threads();
    o.backend = "local";
    expect_error([&] { dist::init_process_group(o); },
                 {"local backend runs one process", "WORLD_SIZE=2"});
  }
  for (const char* b : {"mpi", "gloo"}) {
    if (dist::is_available(b)) continue;
    dist::InitOptions o = no_threads();
    o.backend = b;
    expect_error([&] { dist::init_process_group(o); },
                 {"[dist::init_process_group]", std::string("the ") + b + " backend was not built",
                  std::string(b) == "mpi" ? "libopenmpi-dev" : "libgloo-dev"});
  }
  EXPECT_FALSE(dist::is_initialized());
}

TEST(DistLocal, LocalGroupCollectives) {
  dist::ProcessGroup g(dist::detail::make_local_engine(), 10);
  EXPECT_EQ(g.rank(), 0);
  EXPECT_EQ(g.world_size(), 1);
  Tensor h = tensor<float>({1.5f, -2}).to(DType::f16);
  g.all_reduce(h, ReduceOp::mean);
  expect_near(h, {1.5, -2});
  std::vector<Tensor> outs{zeros({2, 2}, {DType::i16, Device::ref()})};
  g.all_gather(outs, tensor<int16_t>({1, 2, 3, 4}, {2, 2}).t());
  expect_near(outs[0], {1, 3, 2, 4});
  Tensor rs = zeros({3});
  g.reduce_scatter_tensor(rs, tensor<float>({4, 5, 6}), ReduceOp::max, true).wait();
  expect_near(rs, {4, 5, 6});
  expect_error([&] { g.broadcast(rs, 1); }, {"[dist::broadcast]", "src 1 is not a rank"});
}

// A world of `size` ranks that all hold this rank's values; reduces only f32, i64, u8 (and f16
// when `f16`).
class MirrorEngine : public dist::ProcessGroup::Engine {
 public:
  explicit MirrorEngine(int size, bool f16 = false) : size_(size), f16_(f16) {}
  const char* name() const override { return "mirror"; }
  int rank() const override { return 0; }
  int size() const override { return size_; }
  int local_rank() const override { return 0; }
  int local_size() const override { return size_; }
  bool reduces(DType t) const override {
    return t == DType::f32 || t == DType::i64 || t == DType::u8 || (f16_ && t == DType::f16);
  }
  void all_reduce(const char*, void* data, int64_t count, DType dtype, ReduceOp op,
                  double) override {
    // The group checks each call first (8 int64 values, max): the same on every mirrored rank.
    if (count == 8 && dtype == DType::i64 && op == ReduceOp::max) {
      ++call_checks;
      return;
    }
    seen.push_back(dtype);
    seen_ops.push_back(op);
    if (op != ReduceOp::sum) return;  // max / min of equal values
    for (int64_t i = 0; i < count; ++i) {
      if (dtype == DType::f32) static_cast<float*>(data)[i] *= float(size_);
      if (dtype == DType::i64) static_cast<int64_t*>(data)[i] *= size_;
      if (dtype == DType::u8) static_cast<uint8_t*>(data)[i] *= uint8_t(size_);
      if (dtype == DType::f16) {
        Half& h = static_cast<Half*>(data)[i];
        h = Half(float(h) * float(size_));
      }
    }
  }
  void broadcast(const char*, void*, int64_t, int, double) override {}
  void all_gather(const char*, const void* in, void* out, int64_t bytes, double) override {
    for (int r = 0; r < size_; ++r) std::memcpy(static_cast<char*>(out) + r * bytes, in, bytes);
  }
  void reduce_scatter(const char*, const void* in, void* out, int64_t count, DType dtype,
                      ReduceOp op, double t) override {
    std::memcpy(out, in, size_t(count * dtype_size(dtype)));  // block 0 is this rank's
    all_reduce("", out, count, dtype, op, t);
  }
  void barrier(const char*, double) override {}

  std::vector<DType> seen;
  std::vector<ReduceOp> seen_ops;
  int call_checks = 0;

 private:
  int size_;
  bool f16_;
};

TEST(DistGroup, ConvertsWhatTheEngineDoesNotReduce) {
  auto engine = std::make_unique<MirrorEngine>(4);
  MirrorEngine& e = *engine;
  dist::ProcessGroup g(std::move(engine), 10);
  Tensor h = tensor<float>({1, 2.5f, -3}).to(DType::f16);
  g.all_reduce(h, ReduceOp::sum);  // in f32, rounded once
  EXPECT_EQ(h.dtype(), DType::f16);
  expect_near(h, {4, 10, -12});
  Tensor b = tensor<float>({0.1f, 3}).to(DType::bf16);
  g.all_reduce(b, ReduceOp::mean);  // sum in f32, then / 4
  expect_near(b, {0.1, 3}, 1e-3);
  Tensor i8 = tensor<int8_t>({-3, 7});
  g.all_reduce(i8, ReduceOp::sum);
  expect_near(i8, {-12, 28});
  Tensor flags = tensor<bool>({true, false});
  g.all_reduce(flags, ReduceOp::sum);  // or: the max of bytes 0/1, never 4
  expect_near(flags, {1, 0});
  Tensor m = tensor<float>({2, 6});
  g.all_reduce(m, ReduceOp::mean);
  expect_near(m, {2, 6});
  EXPECT_EQ(e.call_checks, 5);  // one before each collective
  EXPECT_EQ(e.seen,
            (std::vector<DType>{DType::f32, DType::f32, DType::i64, DType::u8, DType::f32}));
  EXPECT_EQ(e.seen_ops, (std::vector<ReduceOp>{ReduceOp::sum, ReduceOp::sum, ReduceOp::sum,
                                               ReduceOp::max, ReduceOp::sum}));
  Tensor out = zeros({2}, {DType::f16, Device::cpu()});
  g.reduce_scatter_tensor(out, tensor<float>({1, 2, 0, 0, 0, 0, 0, 0}).to(DType::f16),
                          ReduceOp::mean);
  expect_near(out, {1, 2});
  expect_error(
      [&] {
        g.all_reduce(zeros({2}, {DType::u64, Device::cpu()}));
      },
      {"[dist::all_reduce]", "the mirror engine cannot reduce uint64"});
  EXPECT_FALSE(g.broken());
}

TEST(DistGroup, MeanInTheDtypeTheEngineReduces) {
  auto engine = std::make_unique<MirrorEngine>(4, /*f16=*/true);
  MirrorEngine& e = *engine;
  dist::ProcessGroup g(std::move(engine), 10);
  Tensor h = tensor<float>({1, 2.5f, -3, 0.1f}).to(DType::f16);
  g.all_reduce(h, ReduceOp::mean);  // sum of 4 in f16, then / 4 in f16
  expect_near(h, {1, 2.5, -3, 0.1}, 1e-3);
  EXPECT_EQ(e.seen, std::vector<DType>{DType::f16});
}

// A handle may outlive its group: the group's end ran the op, wait() writes the staged result.
TEST(DistGroup, WorkOutlivesItsGroup) {
  auto g = std::make_unique<dist::ProcessGroup>(std::make_unique<MirrorEngine>(3), 10);
  Tensor x = tensor<float>({1, 2, 3, 4}, {2, 2}).t();  // staged: not contiguous
  dist::Work w = g->all_reduce(x, ReduceOp::sum, true);
  g.reset();
  EXPECT_TRUE(w.is_completed());
  w.wait();
  expect_near(x, {3, 9, 6, 12});
}

// all_reduce blocks until released (a peer that never arrives); counts on_failure calls.
class StuckEngine : public MirrorEngine {
 public:
  StuckEngine() : MirrorEngine(2) {}
  void all_reduce(const char*, void*, int64_t, DType, ReduceOp, double) override {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return released; });
  }
  void on_failure() noexcept override { ++failures; }
  void release() {
    std::lock_guard<std::mutex> lk(mu);
    released = true;
    cv.notify_all();
  }
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  std::atomic<int> failures{0};
};

TEST(DistGroup, TimeoutBreaksTheGroup) {
  auto engine = std::make_unique<StuckEngine>();
  StuckEngine& e = *engine;
  dist::ProcessGroup g(std::move(engine), 0.3);
  Tensor x = ones({3});
  const auto start = std::chrono::steady_clock::now();
  dist::Work w = g.all_reduce(x, ReduceOp::sum, true);  // returns at once
  dist::Work behind = g.broadcast(ones({2}), 0, true);  // queued behind the stuck one
  EXPECT_FALSE(w.is_completed());
  const std::string err = error_of([&] { w.wait(); });
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(err,
            "[dist::all_reduce] timed out after 0.3 s waiting for the other ranks (one may have "
            "died or hang); the process group is now unusable");
  EXPECT_GE(secs, 0.3);
  EXPECT_LT(secs, 30);  // generous: a loaded machine
  EXPECT_TRUE(g.broken());
  EXPECT_EQ(e.failures.load(), 1);
  EXPECT_TRUE(w.is_completed());
  EXPECT_TRUE(behind.is_completed());
  expect_error([&] { behind.wait(); }, {"[dist::broadcast]", "timed out after 0.3 s"});
  expect_error([&] { g.all_reduce(x); },
               {"[dist::all_reduce]", "unusable after an earlier failure", "timed out"});
  expect_error([&] { g.barrier(); }, {"[dist::barrier]", "unusable"});
  EXPECT_EQ(e.failures.load(), 1);
  e.release();  // the group's end then joins its thread
}

class FailingEngine : public MirrorEngine {
 public:
  FailingEngine() : MirrorEngine(2) {}
  void broadcast(const char* op, void*, int64_t, int, double) override {
    EMBER_FAIL(op, "connection to rank 1 closed");
  }
  void on_failure() noexcept override { ++failures; }
  std::atomic<int> failures{0};
};

TEST(DistGroup, EngineFailureBreaksTheGroup) {
  auto engine = std::make_unique<FailingEngine>();
  FailingEngine& e = *engine;
  dist::ProcessGroup g(std::move(engine), 60);
  Tensor x = ones({2});
  dist::Work first = g.broadcast(x, 1, true);
  // The next call fails when it is made (the communication thread already ran the broadcast) or
  // when it is waited on (it was queued behind it): either way naming the first failure.
  expect_error([&] { g.all_reduce(x, ReduceOp::sum, true).wait(); },
               {"[dist::all_reduce]", "connection to rank 1 closed"});
  EXPECT_EQ(error_of([&] { first.wait(); }), "[dist::broadcast] connection to rank 1 closed");
  EXPECT_TRUE(g.broken());
  EXPECT_EQ(e.failures.load(), 1);
  expect_error([&] { g.all_gather_into_tensor(zeros({4}), x); },
               {"[dist::all_gather_into_tensor]", "unusable", "connection to rank 1 closed"});
}

}  // namespace
}  // namespace ember
