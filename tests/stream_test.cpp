// The lazy stream and its fusion planner (src/runtime/stream.cpp) on every device that fuses:
// the failure kinds fusion layers are known for. Each case runs with fusion on and off and
// expects the same values, and checks that the stream recorded (so it cannot pass vacuously).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "ember/ember.h"
#include "op_table.h"
#include "runtime/backend.h"

namespace ember {
namespace {

std::vector<Device> fusing_devices() {
  std::vector<Device> out;
  for (const DeviceInfo& i : available_devices())
    if (fusion_enabled(i.device)) out.push_back(i.device);
  return out;
}

// Fusion on for the whole test (EMBER_FUSION=0 in the environment turns it off at start).
struct FusionOn {
  std::vector<std::pair<Device, bool>> saved;
  FusionOn() {
    for (const DeviceInfo& i : available_devices()) {
      saved.emplace_back(i.device, fusion_enabled(i.device));
      if (i.device != Device::ref()) set_fusion(i.device, true);
    }
  }
  ~FusionOn() {
    for (auto& [d, on] : saved) set_fusion(d, on);
  }
};

std::vector<double> values(const Tensor& t) { return t.to(DType::f64).to_vector<double>(); }

// body(d) with fusion on and off on device d; every returned tensor equal (bitwise for f32 via
// f64), and the fused run recorded ops.
void expect_same(const std::string& what, const std::function<std::vector<Tensor>(Device)>& body,
                 bool expect_graphs = true) {
  FusionOn guard;
  for (const Device& d : fusing_devices()) {
    SCOPED_TRACE(what + " on " + d.str());
    set_fusion(d, false);
    std::vector<std::vector<double>> want;
    for (const Tensor& t : body(d)) want.push_back(values(t));
    set_fusion(d, true);
    reset_stream_stats(d);
    const std::vector<Tensor> got = body(d);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(values(got[i]), want[i]) << "output " << i;
    const StreamStats st = stream_stats(d);  // after the reads, which ran the stream
    EXPECT_GT(st.recorded, 0);
    if (expect_graphs) EXPECT_GT(st.graphs, 0);
  }
}

Tensor rnd(const Shape& s, uint64_t seed, const Device& d) {
  return testing::uniform(s, DType::f32, seed, -2, 2).to(d);
}

TEST(StreamTest, SomeDeviceFuses) { EXPECT_FALSE(fusing_devices().empty()); }

TEST(StreamTest, IntermediatesNobodyHoldsAreNotWritten) {
  FusionOn guard;
  for (const Device& d : fusing_devices()) {
    SCOPED_TRACE(d.str());
    const Tensor x = rnd({1000}, 1, d);
    sync(d);
    reset_stream_stats(d);
    const Tensor y = exp(nn::functional::relu(x * 2 + 1));
    const StreamStats st = stream_stats(d);
    EXPECT_EQ(st.flushes, 0) << "nothing read yet, so nothing ran";
    EXPECT_EQ(st.recorded, 6);  // fill 2, mul, fill 1, add, relu, exp
    const std::vector<float> v = y.to_vector<float>();
    const StreamStats after = stream_stats(d);
    EXPECT_EQ(after.graphs, 1);
    EXPECT_GE(after.dropped, 3);  // x*2, +1, relu (and the scalars) were never written
    const std::vector<float> xv = x.to_vector<float>();
    for (size_t i = 0; i < v.size(); ++i)
      EXPECT_FLOAT_EQ(v[i], std::exp(std::max(xv[i] * 2.0f + 1.0f, 0.0f))) << i;
  }
}

TEST(StreamTest, AThrowingOpDoesNotPoisonTheStream) {
  // Burn #4827/#4852/#5535: an error inside a recorded stream broke the ops after it.
  expect_same("throw in the middle", [](Device d) {
    Tensor x = rnd({64}, 2, d);
    Tensor a = x * 3 + 1;
    EXPECT_THROW(add(a, rnd({65}, 3, d)), Error);  // shape mismatch: nothing recorded
    EXPECT_THROW(a.view({7, 9}), Error);
    Tensor b = nn::functional::sigmoid(a) - x;
    return std::vector<Tensor>{a, b};
  });
}

TEST(StreamTest, InPlaceWritesAndViewsOfPendingTensors) {
  expect_same("in place and views", [](Device d) {
    Tensor x = rnd({8, 16}, 4, d);
    Tensor y = x * 2;                     // pending
    Tensor v = y.slice(1, 2, 10);         // a view of a pending tensor
    v.add_(1);                            // in place through the view
    Tensor t = y.t();                     // permuted view
    Tensor z = t * t + y.t();             // reads the written view
    y.mul_(0.5);                          // in place on the base after its views were read
    Tensor w = v + 1;                     // reads the view after the base changed
    Tensor e = x.expand({3, 8, 16}) * 2;  // broadcast input
    return std::vector<Tensor>{x, y, z, w, e};
  });
}

TEST(StreamTest, OverlappingViewsAndAsStrided) {
  expect_same(
      "overlap",
      [](Device d) {
        Tensor base = rnd({10}, 5, d) * 1;
        Tensor s = base.as_strided({2, 2}, {2, 1}, 1);
        s.mul_(3);
        Tensor win = (base * 1).unfold(0, 3, 1);  // windows share elements
        Tensor r = win + 1;
        return std::vector<Tensor>{base, r};
      },
      false);
}

TEST(StreamTest, ModuleToWhileConversionsArePending) {
  FusionOn guard;
  for (const Device& d : fusing_devices()) {
    SCOPED_TRACE(d.str());
    manual_seed(7);
    auto lin = std::make_shared<nn::Linear>(4, 3);
    lin->to(d);
    const std::vector<float> before = lin->weight.to_vector<float>();
    lin->to(DType::f64);  // recorded casts; the module then swaps its tensors' storage
    lin->to(DType::f32);
    EXPECT_EQ(lin->weight.to_vector<float>(), before);
    // Pending ops share the parameter's impl: the swap must not reach work recorded before it.
    const Tensor doubled = lin->weight * 2.0f;
    lin->to(DType::f64);
    std::vector<float> want = before;
    for (float& v : want) v *= 2;
    EXPECT_EQ(doubled.dtype(), DType::f32);
    EXPECT_EQ(doubled.to_vector<float>(), want);
    EXPECT_EQ(lin->weight.dtype(), DType::f64);
  }
}

TEST(StreamTest, TensorsReadFromAnotherThread) {
  FusionOn guard;
  for (const Device& d : fusing_devices()) {
    SCOPED_TRACE(d.str());
    const Tensor x = rnd({4096}, 6, d);
    const Tensor y = tanh(x * 0.5 + 0.25);  // recorded by this thread
    std::vector<float> seen;
    std::thread reader([&] { seen = y.to_vector<float>(); });
    reader.join();
    set_fusion(d, false);
    const std::vector<float> want = tanh(x * 0.5 + 0.25).to_vector<float>();
    set_fusion(d, true);
    EXPECT_EQ(seen, want);
  }
}

TEST(StreamTest, ConcurrentRecordingThreads) {
  FusionOn guard;
  for (const Device& d : fusing_devices()) {
    SCOPED_TRACE(d.str());
    std::vector<std::vector<float>> got(2), want(2);
    auto work = [&](int t) {
      Tensor a = full({2048}, float(t + 1), {DType::f32, d});
      for (int i = 0; i < 50; ++i) a = a * 0.99 + 0.01;
      return a;
    };
    std::vector<std::thread> ts;
    for (int t = 0; t < 2; ++t) ts.emplace_back([&, t] { got[t] = work(t).to_vector<float>(); });
    for (auto& th : ts) th.join();
    set_fusion(d, false);
    for (int t = 0; t < 2; ++t) want[t] = work(t).to_vector<float>();
    set_fusion(d, true);
    EXPECT_EQ(got, want);
  }
}

TEST(StreamTest, TrainingLoopWithoutASyncPoint) {
  // Many steps, nothing read until the end: the stream runs at its capacity and at each
  // non-element-wise op; parameters must come out as eager's.
  expect_same("training loop", [](Device d) {
    manual_seed(11);
    auto net = nn::make_sequential(std::make_shared<nn::Linear>(6, 8), std::make_shared<nn::ReLU>(),
                                   std::make_shared<nn::Linear>(8, 1));
    net->to(d);
    auto opt = std::make_shared<optim::Adam>(net->parameters(), optim::AdamOptions(0.01));
    const Tensor x = rnd({16, 6}, 12, d);
    const Tensor t = rnd({16, 1}, 13, d);  // a narrow [N, 1] head
    for (int step = 0; step < 30; ++step) {
      opt->zero_grad();
      Tensor loss = nn::functional::mse_loss(net->forward(x), t);
      loss.backward();
      opt->step();
    }
    std::vector<Tensor> out;
    for (const Tensor& p : net->parameters()) out.push_back(p.detach());
    return out;
  });
}

TEST(StreamTest, GraphsWithManyInputs) {
  expect_same("many inputs", [](Device d) {
    std::vector<Tensor> in;
    for (int i = 0; i < 40; ++i) in.push_back(rnd({33, 7}, 100 + uint64_t(i), d));
    Tensor acc = in[0];
    for (int i = 1; i < 40; ++i) acc = acc * 0.5 + in[size_t(i)];
    return std::vector<Tensor>{acc};
  });
}

TEST(StreamTest, HalfInputsAndCasts) {
  expect_same("f16 chain", [](Device d) {
    if (!supports_dtype(d, DType::f16)) return std::vector<Tensor>{rnd({4}, 1, d) * 2 + 1};
    Tensor h = rnd({513}, 14, d).to(DType::f16);
    Tensor a = (h * 3 + 1).to(DType::f32);
    Tensor s = sum(h.to(DType::f32) * a);  // a reduction reading a fused result
    return std::vector<Tensor>{a, s};
  });
}

TEST(StreamTest, DataPtrRunsTheStream) {
  FusionOn guard;
  const Device d = Device::cpu();
  Tensor x = full({16}, 2.0f, {DType::f32, d});
  Tensor y = x * 3;
  ASSERT_GT(y.impl()->storage->pending.load(), 0);
  const float* p = y.data_ptr<float>();
  EXPECT_EQ(y.impl()->storage->pending.load(), 0);
  EXPECT_EQ(p[5], 6.0f);
  // A host write into a tensor a recorded op reads lands after that op.
  Tensor z = x + 1;
  x.data_ptr<float>()[0] = 100;
  EXPECT_EQ(z.to_vector<float>()[0], 3.0f);
}

TEST(StreamTest, BuffersAreAllocatedWhenTheWorkRuns) {
  FusionOn guard;
  const Device d = Device::cpu();
  const Tensor x = rnd({4096}, 21, d);
  sync(d);
  const int64_t before = memory_stats(d).allocated;
  Tensor y = ((x * 2 + 1).relu()).exp();  // four results, scalar operands: nothing allocated yet
  const std::weak_ptr<Storage> ys = y.impl()->storage;
  const auto allocated = [&] {
    const std::shared_ptr<Storage> st = ys.lock();
    return st != nullptr && st->allocated();
  };
  EXPECT_FALSE(allocated());
  EXPECT_EQ(memory_stats(d).allocated, before);
  sync(d);
  // Only y's buffer: the dropped intermediates and scalars were never allocated.
  EXPECT_TRUE(allocated());
  EXPECT_EQ(memory_stats(d).allocated - before, 4096 * 4);
  const std::vector<float> xv = x.to_vector<float>(), yv = y.to_vector<float>();
  for (size_t i = 0; i < xv.size(); i += 511)
    EXPECT_FLOAT_EQ(yv[i], std::exp(std::max(xv[i] * 2 + 1, 0.0f))) << i;
}

// Within one flush, the buffer of a result no later op reads (and nobody holds) is freed once
// its readers have run, so the next results reuse it while it is in cache: a chain of products
// whose intermediates are dropped keeps about two of them, not one per step. Host devices only.
TEST(StreamTest, DeadResultsFreeTheirBuffersDuringTheFlush) {
  FusionOn guard;
  const Device d = Device::cpu();
  const int64_t rows = int64_t(1) << 22, bytes = rows * 4 * 4;  // [4M, 4] f32: 64 MiB
  const Tensor x = full({rows, 4}, 1.0f, {DType::f32, d});
  const Tensor w =
      from_vector<float>({0.5f, 0, 0, 0, 0, 0.5f, 0, 0, 0, 0, 0.5f, 0, 0, 0, 0, 2}, {4, 4}, d);
  sync(d);
  const MemoryStats before = memory_stats(d);
  if (before.peak - before.allocated >= 4 * bytes)
    GTEST_SKIP() << "an earlier test's peak hides this one's (run it alone)";
  reset_stream_stats(d);
  Tensor y = x;
  for (int i = 0; i < 8; ++i) y = matmul(y, w);  // recorded: 8 results, 7 dropped
  EXPECT_GE(stream_stats(d).recorded, 8);
  sync(d);
  EXPECT_LE(memory_stats(d).peak - before.allocated, 3 * bytes) << "every intermediate was kept";
  const std::vector<float> v = y.narrow(0, rows - 1, 1).to_vector<float>();
  EXPECT_EQ(v, (std::vector<float>{1.0f / 256, 1.0f / 256, 1.0f / 256, 256}));
}

TEST(StreamTest, AKeptDataPtrSeesLaterOpsInProgramOrder) {
  FusionOn guard;
  const Device d = Device::cpu();
  Tensor x = full({8}, 2.0f, {DType::f32, d});
  Tensor y = x * 3;  // recorded: y's pointer is not kept yet
  EXPECT_GT(y.impl()->storage->pending.load(), 0);
  float* px = x.data_ptr<float>();
  float* py = y.data_ptr<float>();
  reset_stream_stats(d);
  // Ops on storages whose pointer was kept run at once: the pointers see each write, and host
  // writes through them land before the ops that follow.
  y.mul_(2);
  EXPECT_EQ(py[0], 12.0f);
  x.add_(1);
  EXPECT_EQ(px[3], 3.0f);
  px[0] = 10;
  Tensor z = x + y;  // reads both at once
  EXPECT_EQ(z.to_vector<float>()[0], 22.0f);
  py[1] = -1;
  y.add_(x);
  EXPECT_EQ(py[1], 2.0f);
  // Nothing that touches x or y waits in the stream (the scalar operands' fills may).
  EXPECT_EQ(x.impl()->storage->pending.load(), 0);
  EXPECT_EQ(y.impl()->storage->pending.load(), 0);
  EXPECT_GT(stream_stats(d).eager_ops, 0);
  // Other tensors still record and fuse.
  Tensor w = full({8}, 1.0f, {DType::f32, d});
  Tensor v = (w * 2 + 1).exp();
  EXPECT_GT(stream_stats(d).recorded, 0);
  EXPECT_FLOAT_EQ(v.to_vector<float>()[7], std::exp(3.0f));
}

TEST(StreamTest, FusionOffRunsWhatIsRecordedAndCapacityFlushes) {
  FusionOn guard;
  const Device d = Device::cpu();
  Backend& b = backend_for(d);
  const int64_t cap = b.stream_capacity();
  b.set_stream_capacity(4);
  reset_stream_stats(d);
  Tensor a = full({8}, 1.0f, {DType::f32, d});
  for (int i = 0; i < 10; ++i) a = a + 1;
  EXPECT_GE(stream_stats(d).flushes, 2);
  EXPECT_THROW(b.set_stream_capacity(0), Error);
  b.set_stream_capacity(cap);
  Tensor c = a * 2;
  set_fusion(d, false);
  EXPECT_EQ(c.impl()->storage->pending.load(), 0);
  EXPECT_EQ(c.to_vector<float>()[0], 22.0f);
  EXPECT_FALSE(fusion_enabled(d));
  EXPECT_FALSE(fusion_enabled(Device::ref()));  // ref is the eager oracle
}

TEST(StreamTest, IntegerDivisionByZeroStillThrowsAtTheCall) {
  FusionOn guard;
  const Device d = Device::cpu();
  Tensor a = full({8}, 6, {DType::i32, d}) + 1;
  Tensor z = full({8}, 0, {DType::i32, d}) * 2;
  EXPECT_THROW(floor_divide(a, z), Error);
  EXPECT_EQ((a * 2).to_vector<int32_t>()[0], 14);
}

// EMBER_CHECK=1 (set by the ctest group StreamTest/check): every graph above also ran op by op
// and was compared; here a run with many graph shapes under it must pass.
TEST(StreamTest, CheckModeAgreesOnMixedChains) {
  FusionOn guard;
  for (const Device& d : fusing_devices()) {
    SCOPED_TRACE(d.str());
    reset_stream_stats(d);
    Tensor x = rnd({257, 3}, 21, d);
    Tensor m = gt(x, 0.5);
    Tensor y = where(m, exp(x) - 1, x * x).to(DType::f64);
    Tensor z = (y * 2).to(DType::f32) + x.t().t();
    EXPECT_EQ(z.to_vector<float>().size(), 771u);
    EXPECT_GT(stream_stats(d).graphs, 0);
  }
}

}  // namespace
}  // namespace ember
