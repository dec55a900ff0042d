// The failure kinds fusion layers are known for (issue 16, item 7), beyond stream_test.cpp:
// gradchecks with fusion on, errors raised while the stream runs, in-place writes through
// views of pending tensors, other threads, long loops with no sync point, wide graphs, half
// precision reductions after a fused chain and a narrow [N, 1] head. Every case compares the
// fused run with the same device's eager run (fusion off) and checks that the fused run
// recorded ops, so none can pass vacuously. Devices: every one that fuses (cpu, and Vulkan /
// OpenCL when present: lavapipe and PoCL here); ref is the eager oracle and never records.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "ember/autograd.h"
#include "ember/ember.h"
#include "ember/optim/optim.h"
#include "gradcheck.h"
#include "op_table.h"
#include "runtime/kernel_backend.h"

namespace ember {
namespace {

namespace F = nn::functional;

std::vector<Device> fusing_devices() {
  std::vector<Device> out;
  for (const DeviceInfo& i : available_devices())
    if (i.device != Device::ref()) out.push_back(i.device);
  return out;
}

// Fusion on for the whole test on every device but ref, restored at its end.
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

// The bits of t's values (as f64, which holds every f32/f16/bf16 value exactly).
std::vector<uint64_t> bits(const Tensor& t) {
  const std::vector<double> v = t.detach().to(DType::f64).to_vector<double>();
  std::vector<uint64_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) std::memcpy(&out[i], &v[i], sizeof(double));
  return out;
}

// body(d) eagerly, then fused; every returned tensor bit for bit equal. Returns the fused run's
// stream counts (after the reads, which ran the stream); it recorded and ran graphs.
StreamStats expect_same(const Device& d, const std::string& what,
                        const std::function<std::vector<Tensor>(const Device&)>& body) {
  SCOPED_TRACE(what + " on " + d.str());
  set_fusion(d, false);
  std::vector<std::vector<uint64_t>> want;
  for (const Tensor& t : body(d)) want.push_back(bits(t));
  set_fusion(d, true);
  reset_stream_stats(d);
  const std::vector<Tensor> got = body(d);
  std::vector<std::vector<uint64_t>> have;
  for (const Tensor& t : got) have.push_back(bits(t));
  const StreamStats st = stream_stats(d);
  EXPECT_EQ(have.size(), want.size());
  for (size_t i = 0; i < std::min(have.size(), want.size()); ++i)
    EXPECT_EQ(have[i], want[i]) << "output " << i;
  EXPECT_GT(st.recorded, 0);
  EXPECT_GT(st.graphs, 0);
  return st;
}

Tensor rnd(const Shape& s, uint64_t seed, const Device& d, double lo = -2, double hi = 2) {
  return testing::uniform(s, DType::f32, seed, lo, hi).to(d);
}

// The buffers one kernel may bind on a GPU device (codegen::Caps::max_buffers), 0 on the cpu.
struct CapsOf : runtime::KernelBackend {
  static int64_t max_buffers(const Device& d) {
    auto* kb = dynamic_cast<runtime::KernelBackend*>(&backend_for(d));
    if (!kb) return 0;
    const auto caps = &CapsOf::caps;  // protected: named through the derived class
    return int64_t((kb->*caps)().max_buffers);
  }
};

// ---- gradcheck with fusion on ----

// Composites whose forward and backward are element-wise chains (and, for the norms, a
// reduction or two): finite differences agree with the fused analytic gradients, the backward
// ran fused graphs, and its gradients are eager's bit for bit.
TEST(StreamFaultTest, GradchecksPassWithFusionOn) {
  FusionOn guard;
  const Device d = Device::cpu();
  struct Fn {
    const char* name;
    test::GradFn fn;
    Shape shape;
    bool affine = false;  // in[1], in[2]: a norm's weight and bias [6]
  };
  auto one = [](std::function<Tensor(const Tensor&)> f) {
    return [f](const std::vector<Tensor>& in) { return f(in[0]); };
  };
  const std::vector<Fn> fns = {
      {"gelu", one([](const Tensor& x) { return F::gelu(x); }), {3, 5}},
      {"gelu tanh", one([](const Tensor& x) { return F::gelu(x, "tanh"); }), {3, 5}},
      {"silu", one([](const Tensor& x) { return F::silu(x); }), {3, 5}},
      {"softplus", one([](const Tensor& x) { return F::softplus(x * 2.0, 1.5, 3.0); }), {3, 5}},
      {"mish", one([](const Tensor& x) { return F::mish(x); }), {3, 5}},
      {"sigmoid(x) * x", one([](const Tensor& x) { return F::sigmoid(x) * x; }), {3, 5}},
      {"x * tanh(log1p(exp(x)))",
       one([](const Tensor& x) { return x * tanh(log1p(exp(x))); }),
       {3, 5}},
      {"layer_norm composite",
       [](const std::vector<Tensor>& in) {
         const Tensor& x = in[0];
         const Tensor mu = mean(x, {-1}, true);
         const Tensor xc = x - mu;
         const Tensor v = mean(xc * xc, {-1}, true);
         return xc / sqrt(v + 1e-5) * in[1] + in[2];
       },
       {4, 6},
       true},
      {"layer_norm",
       [](const std::vector<Tensor>& in) { return F::layer_norm(in[0], {6}, in[1], in[2]); },
       {4, 6},
       true},
      {"softmax composite",
       [](const std::vector<Tensor>& in) {
         const Tensor e = exp(in[0] - amax(in[0], {-1}, true));
         return e / sum(e, {-1}, true);
       },
       {4, 6}},
      {"softmax", one([](const Tensor& x) { return F::softmax(x * 2.0, -1); }), {4, 6}},
  };
  for (const Fn& f : fns) {
    SCOPED_TRACE(f.name);
    auto inputs = [&] {
      std::vector<Tensor> in = {test::random_input(f.shape, 41).to(d)};
      if (f.affine) {
        in.push_back(test::random_input({6}, 42, 0.5, 1.5).to(d));
        in.push_back(test::random_input({6}, 43).to(d));
      }
      for (Tensor& t : in) t = t.detach().requires_grad_();
      return in;
    };
    const std::vector<Tensor> in = inputs();
    reset_stream_stats(d);
    EXPECT_EQ(test::gradcheck(f.fn, in), "");
    EXPECT_GT(stream_stats(d).graphs, 0);
    // One backward, fused and eager: the same gradients, and the fused one ran graphs.
    auto grads = [&](bool fused) {
      set_fusion(d, fused);
      const std::vector<Tensor> x = inputs();
      const Tensor y = f.fn(x);
      const Tensor w = testing::uniform(y.shape(), DType::f64, 44).to(d);
      sync(d);
      reset_stream_stats(d);
      sum(y * w).backward();
      std::vector<std::vector<uint64_t>> out;
      for (const Tensor& t : x) out.push_back(bits(t.grad()));
      return std::make_pair(out, stream_stats(d));
    };
    const auto eager = grads(false);
    const auto fused = grads(true);
    EXPECT_EQ(fused.first, eager.first);
    EXPECT_GT(fused.second.graphs, 0) << "the backward fused nothing";
    EXPECT_LT(fused.second.kernels(), eager.second.kernels());
  }
}

// ---- errors while the stream runs ----

// On the cpu no recorded op throws when the stream runs: integer division (the one element-wise
// host kernel that throws) is never recorded, and the data checks (index ranges, class targets,
// BCE inputs) read the device at the call, running the stream first. On GPUs those checks are
// deferred to the next sync or read, which runs the stream: the error comes from the sync. Either
// way the ops recorded before and after the failing one run and give eager's values, and the
// stream keeps working.
TEST(StreamFaultTest, DataErrorsRaisedAtTheCallOrAtTheSyncDoNotPoisonTheStream) {
  FusionOn guard;
  struct Bad {
    const char* name;
    std::function<void(const Tensor&, const Device&)> op;
  };
  const std::vector<Bad> bads = {
      {"index_select out of range",
       [](const Tensor& a, const Device& d) {
         index_select(a, 0, from_vector<int64_t>({0, 70}, {2}, d));
       }},
      {"cross_entropy class out of range",
       [](const Tensor& a, const Device& d) {
         F::cross_entropy(a.view({8, 8}), from_vector<int64_t>({0, 1, 2, 3, 9, 5, 6, 7}, {8}, d));
       }},
      {"binary_cross_entropy input outside [0, 1]",
       [](const Tensor& a, const Device&) { F::binary_cross_entropy(a, F::sigmoid(a)); }},
      // Its call ends with nothing recorded after the check, so on GPUs the check is still
      // pending when the next graph runs: under EMBER_CHECK=1 the checker's reads of that
      // graph's outputs once ran it there and threw, and the graph's ops never ran (b stayed
      // unwritten); ctest runs this suite with EMBER_CHECK=1 too.
      {"bernoulli p outside [0, 1]", [](const Tensor& a, const Device&) { bernoulli(a); }},
      {"embedding index out of range",
       [](const Tensor& a, const Device& d) {
         F::embedding(from_vector<int64_t>({1, 8}, {2}, d), a.view({8, 8}));
       }},
  };
  for (const Device& d : fusing_devices()) {
    for (const Bad& bad : bads) {
      bool at_call = false, at_sync = false;
      expect_same(d, bad.name, [&](const Device& d) {
        const Tensor x = rnd({64}, 2, d);
        Tensor a = x * 3 + 1;  // pending when the bad op comes
        bool call = false, later = false;
        try {
          bad.op(a, d);
        } catch (const Error&) {
          call = true;
        }
        Tensor b = F::sigmoid(a) - x;  // recorded after it
        try {
          sync(d);
        } catch (const Error&) {
          later = true;
        }
        if (fusion_enabled(d)) at_call = call, at_sync = later;
        Tensor c = exp(b * 0.5) + a;  // after the error, in a fresh stream
        return std::vector<Tensor>{a, b, c};
      });
      SCOPED_TRACE(std::string(bad.name) + " on " + d.str());
      EXPECT_NE(at_call, at_sync) << "the error is raised exactly once";
      EXPECT_EQ(at_call, d.is_host());
    }
  }
}

// ---- in-place writes and views of pending tensors ----

TEST(StreamFaultTest, InPlaceWritesThroughViewsOfPendingTensors) {
  FusionOn guard;
  for (const Device& d : fusing_devices()) {
    expect_same(d, "add_ on a slice of a pending tensor", [](const Device& d) {
      Tensor y = rnd({6, 8}, 3, d) * 2 + 1;
      Tensor v = y.slice(1, 2, 6);
      v.add_(1);
      Tensor r = y * 3;  // reads the base after the view's write
      return std::vector<Tensor>{y, v, r};
    });
    expect_same(d, "in place on the transpose of a pending result", [](const Device& d) {
      const Tensor x = rnd({5, 7}, 4, d);
      Tensor y = exp(x * 0.5);
      Tensor t = y.t();
      t.mul_(2).add_(x.t());  // writes y through a permuted view
      Tensor z = y + t.t() * 0.25;
      return std::vector<Tensor>{y, z};
    });
    expect_same(d, "disjoint views of one pending storage", [](const Device& d) {
      Tensor y = rnd({16}, 5, d) * 1.5;
      Tensor lo = y.slice(0, 0, 8), hi = y.slice(0, 8, 16);
      lo.add_(hi);  // reads one half, writes the other
      hi.mul_(lo);  // and back
      Tensor s = y + 1;
      return std::vector<Tensor>{y, s};
    });
    expect_same(d, "fill_ and zero_ of pending tensors, read through views", [](const Device& d) {
      Tensor y = rnd({4, 6}, 6, d) * 2 + 1;
      Tensor r = y.select(0, 1);
      r.fill_(3.5);                 // a partial fill
      Tensor a = exp(y * 0.5) - y;  // reads the filled row through the base
      Tensor w = rnd({4, 6}, 7, d) * 3 + 1;
      Tensor wt = w.t();
      w.zero_();                        // a whole-storage fill
      Tensor b = (wt + a.t()) * 2 + 1;  // reads it through a permuted view
      return std::vector<Tensor>{y, a, w, b};
    });
    expect_same(d, "copy_ between views of pending tensors", [](const Device& d) {
      Tensor a = rnd({3, 4}, 8, d) * 3;
      Tensor b = rnd({4, 3}, 9, d) - 1;
      a.copy_(b.t() * 2);
      b.t().copy_(a + 1);
      Tensor c = where(gt(a, 0.0), a, b.t());
      return std::vector<Tensor>{a, b, c};
    });
    expect_same(d, "expand of a pending row, then in place on the row", [](const Device& d) {
      Tensor row = rnd({1, 9}, 10, d) * 2 + 2;
      Tensor e = row.expand({5, 9}) * 2 + 1;
      row.mul_(-1).add_(0.5);
      Tensor f = (row.expand({5, 9}) + e) * 3;
      return std::vector<Tensor>{row, e, f};
    });
  }
}

// ---- threads ----

// A thread reads pending tensors while this thread records ops on other tensors of the same
// device (the stream is one per device, shared); the reader sees its tensors' right values.
TEST(StreamFaultTest, ReaderThreadWhileTheMainThreadRecords) {
  FusionOn guard;
  for (const Device& d : fusing_devices()) {
    SCOPED_TRACE(d.str());
    const Tensor x = rnd({4096}, 11, d);
    auto chain = [](const Tensor& t) { return tanh(t * 0.5 + 0.25) * 3 - 1; };
    auto loop = [](Tensor a) {
      for (int i = 0; i < 200; ++i) a = a * 0.999 + 0.001;
      return a;
    };
    set_fusion(d, false);
    const std::vector<float> want_y = chain(x).to_vector<float>();
    const std::vector<float> want_z = loop(rnd({1000}, 12, d)).to_vector<float>();
    set_fusion(d, true);
    reset_stream_stats(d);
    const Tensor y = chain(x);  // pending
    const Tensor z0 = rnd({1000}, 12, d);
    sync(d);
    std::atomic<bool> go{false};
    std::vector<std::vector<float>> seen;
    std::thread reader([&] {
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < 10; ++i) seen.push_back(y.to_vector<float>());
    });
    go = true;
    const Tensor z = loop(z0);  // recorded while the reader reads
    const std::vector<float> got_z = z.to_vector<float>();
    reader.join();
    ASSERT_EQ(seen.size(), 10u);
    for (const auto& s : seen) EXPECT_EQ(s, want_y);
    EXPECT_EQ(got_z, want_z);
    EXPECT_GT(stream_stats(d).recorded, 200);
  }
}

// Two threads record on one device, each its own chain with in-place updates, and read their
// results while the other records.
TEST(StreamFaultTest, TwoThreadsRecordingOnOneDevice) {
  FusionOn guard;
  for (const Device& d : fusing_devices()) {
    SCOPED_TRACE(d.str());
    // The inputs come from the seeded global generator, so they are drawn before the threads.
    const Tensor w0 = rnd({512}, 20, d), w1 = rnd({512}, 21, d);
    auto work = [&](int t) {
      Tensor w = (t == 0 ? w0 : w1).clone();
      Tensor m = zeros_like(w);
      std::vector<float> sums;
      for (int i = 0; i < 40; ++i) {
        m.mul_(0.9).add_(w * 0.1);
        w.add_(m, -0.05);
        if (i % 10 == 9) sums.push_back(w.to_vector<float>()[size_t(i)]);  // a read mid-loop
      }
      std::vector<float> out = w.to_vector<float>();
      out.insert(out.end(), sums.begin(), sums.end());
      return out;
    };
    set_fusion(d, false);
    const std::vector<float> want0 = work(0), want1 = work(1);
    set_fusion(d, true);
    reset_stream_stats(d);
    std::vector<float> got0, got1;
    std::thread t0([&] { got0 = work(0); });
    std::thread t1([&] { got1 = work(1); });
    t0.join();
    t1.join();
    EXPECT_EQ(got0, want0);
    EXPECT_EQ(got1, want1);
    EXPECT_GT(stream_stats(d).graphs, 0);
  }
}

// ---- no sync point for many steps ----

// 300 SGD steps with no read: a loop of element-wise ops only runs the stream at its capacity
// (EMBER_STREAM_OPS, 256 by default), a loop with a model at its matmuls and reductions; both
// end with eager's parameters bit for bit.
TEST(StreamFaultTest, ThreeHundredStepsWithoutASyncPoint) {
  FusionOn guard;
  for (const Device& d : fusing_devices()) {
    const StreamStats st = expect_same(d, "element-wise SGD, 300 steps", [](const Device& d) {
      Tensor w = rnd({3, 50}, 30, d);
      const Tensor target = rnd({3, 50}, 31, d);
      Tensor m = zeros_like(w);
      for (int step = 0; step < 300; ++step) {
        const Tensor grad = (w - target) * 2.0;  // d/dw of (w - target)^2
        m.mul_(0.9).add_(grad);
        w.add_(m, -0.01);
      }
      return std::vector<Tensor>{w, m};
    });
    EXPECT_GE(st.flushes, 300 * 9 / 256) << d.str() << ": 9 ops a step, run at the capacity";
    expect_same(d, "Linear-ReLU-Linear, SGD, 300 steps", [](const Device& d) {
      manual_seed(32);
      auto net =
          nn::make_sequential(std::make_shared<nn::Linear>(5, 12), std::make_shared<nn::ReLU>(),
                              std::make_shared<nn::Linear>(12, 3));
      net->to(d);
      optim::SGD opt(net->parameters(), optim::SGDOptions(0.05).momentum(0.8));
      const Tensor x = rnd({10, 5}, 33, d), t = rnd({10, 3}, 34, d);
      for (int step = 0; step < 300; ++step) {
        opt.zero_grad();
        F::mse_loss(net->forward(x), t).backward();
        opt.step();
      }
      std::vector<Tensor> out;
      for (const Tensor& p : net->parameters()) out.push_back(p.detach());
      return out;
    });
  }
}

// ---- graphs with many inputs ----

// n distinct inputs summed: the cpu has no buffer limit (one graph); a GPU splits the chain
// under its max_graph_buffers (codegen::Caps::max_buffers, 31 on lavapipe and PoCL).
TEST(StreamFaultTest, SumsOfManyDistinctInputs) {
  FusionOn guard;
  for (const Device& d : fusing_devices()) {
    for (int n : {40, 100}) {
      std::vector<Tensor> in;
      for (int i = 0; i < n; ++i) in.push_back(rnd({17, 3}, 200 + uint64_t(i), d));
      sync(d);
      const StreamStats st = expect_same(d, std::to_string(n) + " inputs", [&](const Device&) {
        Tensor acc = in[0];
        for (int i = 1; i < n; ++i) acc = acc + in[size_t(i)];
        return std::vector<Tensor>{acc};
      });
      const int64_t mb = CapsOf::max_buffers(d);
      SCOPED_TRACE(std::to_string(n) + " inputs on " + d.str() + ", max_buffers " +
                   std::to_string(mb));
      EXPECT_EQ(st.eager_ops, 0);
      if (mb == 0) {
        EXPECT_EQ(st.graphs, 1);
        continue;
      }
      // A graph binding only what it loads and its one output holds mb - 2 additions after its
      // first (the previous graph's sum and mb - 2 new inputs, or two inputs to start):
      //   graphs <= ceil((n - 1) / (mb - 2)) + 1.
      // TODO(planner arity count, being fixed in main): today the planner counts every write of
      // the graph (each dead partial sum too) against the limit, so a graph holds only
      // (mb - 1) / 2 additions; assert that bound until the fix lands, then the one above.
      const int64_t per_graph = (mb - 1) / 2;
      EXPECT_LE(st.graphs, (n - 1 + per_graph - 1) / per_graph + 1);
      EXPECT_GE(st.graphs, (n - 1 + (mb - 2) - 1) / (mb - 2));  // no graph can hold more
    }
  }
}

// ---- half precision into reductions after a fused chain ----

TEST(StreamFaultTest, HalfPrecisionReductionsAfterAFusedChain) {
  FusionOn guard;
  for (const Device& d : fusing_devices()) {
    for (DType t : {DType::f16, DType::bf16}) {
      if (!supports_dtype(d, t)) continue;  // PoCL has no f16
      expect_same(d, std::string("sum(x * y) in ") + dtype_name(t), [&](const Device& d) {
        const Tensor x = rnd({33, 65}, 40, d).to(t), y = rnd({33, 65}, 41, d).to(t);
        const Tensor p = x * y + 0.5;  // a fused chain, each node rounded to t
        return std::vector<Tensor>{sum(p), sum(p, {1}), mean(F::relu(p), {0}), amax(p * p, {1}), p};
      });
    }
  }
}

// ---- a narrow [N, 1] output head ----

TEST(StreamFaultTest, NarrowHeadLinearSigmoidBceTraining) {
  FusionOn guard;
  for (const Device& d : fusing_devices()) {
    expect_same(d, "Linear(16, 1) + sigmoid + BCE, 8 Adam steps", [](const Device& d) {
      manual_seed(50);
      auto head = std::make_shared<nn::Linear>(16, 1);
      head->to(d);
      optim::Adam opt(head->parameters(), optim::AdamOptions(0.05));
      const Tensor x = rnd({24, 16}, 51, d);
      const Tensor target = gt(rnd({24, 1}, 52, d), 0.0).to(DType::f32);
      std::vector<Tensor> out;
      for (int step = 0; step < 8; ++step) {
        opt.zero_grad();
        const Tensor p = F::sigmoid(head->forward(x));  // [24, 1]
        const Tensor loss = F::binary_cross_entropy(p, target);
        loss.backward();
        opt.step();
        out.push_back(loss.detach());
      }
      out.push_back(head->weight.detach());
      out.push_back(head->bias.detach());
      return out;
    });
  }
}

// ---- planner: each chain's leading Fills go with it ----

// Two chains of different shapes, each led by its scalars' Fills: two graphs and nothing eager
// (the second chain's Fills once joined the first graph, were written and loaded back).
TEST(StreamFaultTest, FillsLeadingAChainOfAnotherShapeStartItsGraph) {
  FusionOn guard;
  for (const Device& d : fusing_devices()) {
    SCOPED_TRACE(d.str());
    const Tensor x = rnd({10}, 60, d), y = rnd({3, 4}, 61, d);
    auto chains = [&] {
      Tensor a = x * 2 + 1;
      Tensor b = y * 3 - 1;
      Tensor c = (zeros_like(x) + a) * 2;  // a whole-tensor Fill leading a chain of x's shape
      return std::vector<Tensor>{a, b, c};
    };
    set_fusion(d, false);
    std::vector<std::vector<uint64_t>> want;
    for (const Tensor& t : chains()) want.push_back(bits(t));
    set_fusion(d, true);
    sync(d);
    reset_stream_stats(d);
    const std::vector<Tensor> got = chains();
    sync(d);
    const StreamStats st = stream_stats(d);
    EXPECT_EQ(st.recorded, 12);  // four each: Fill, op, Fill, op
    EXPECT_EQ(st.graphs, 3);     // one per chain
    EXPECT_EQ(st.eager_ops, 0);
    EXPECT_EQ(st.fused_ops, 12);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(bits(got[i]), want[i]) << "output " << i;
  }
}

}  // namespace
}  // namespace ember
