// Matmul epilogues on the GPU backends (KernelBackend::execute_anchored, codegen
// lower_matmul_epilogue): on every non-host device the stream records a float matmul as an
// anchor, the element-wise ops reading its whole result join it, and the generated matmul kernel
// stores the epilogue's outputs instead of the product. Each case compares fusion on with fusion
// off (1e-4 * (1 + |eager|)) and with the ref backend, and checks stream_stats says what ran.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "runtime/autotune.h"
#include "runtime/backend.h"
#include "test_util.h"

namespace ember {
namespace {

namespace F = nn::functional;

using test::gpu_devices;

void on_each_gpu(const std::function<void(const Device&)>& body) {
  const std::vector<Device> gpus = gpu_devices();
  if (gpus.empty()) GTEST_SKIP() << "no GPU device";
  for (const Device& d : gpus) {
    SCOPED_TRACE(d.str());
    body(d);
  }
}

// Values in [-1, 1) from a fixed generator, made on the host (uploads are no recorded ops).
Tensor host_values(const Shape& shape, uint32_t seed) {
  std::vector<float> v(size_t(numel_of(shape)));
  uint32_t s = seed * 2654435761u + 12345u;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = float(s >> 8) / float(1 << 24) * 2.0f - 1.0f;
  }
  return from_vector<float>(v, shape, Device::ref());
}

std::vector<double> values(const Tensor& t) {
  return t.to(Device::ref()).to(DType::f64).to_vector<double>();
}

// Compares every tensor of got with want within rtol * (1 + |want|).
void expect_near(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double rtol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].shape(), want[i].shape()) << what << " output " << i;
    const std::vector<double> g = values(got[i]), w = values(want[i]);
    ASSERT_EQ(g.size(), w.size()) << what << " output " << i;
    for (size_t k = 0; k < g.size(); ++k)
      if (!(std::fabs(g[k] - w[k]) <= rtol * (1 + std::fabs(w[k])))) {
        ADD_FAILURE() << what << " output " << i << " element " << k << ": " << g[k] << " vs "
                      << w[k];
        break;
      }
  }
}

using Body = std::function<std::vector<Tensor>(const Device&)>;

// body() on `d` with fusion on, then off (within 1e-4 (1 + |eager|)), and on ref (within
// ref_tol: the GPU's f32 sums against ref's). Returns the fused run's stream counters.
StreamStats expect_close(const Device& d, const std::string& what, const Body& body,
                         double ref_tol = 1e-3) {
  SCOPED_TRACE(what);
  set_fusion(d, true);
  sync(d);
  reset_stream_stats(d);
  const std::vector<Tensor> fused = body(d);
  sync(d);
  const StreamStats st = stream_stats(d);
  set_fusion(d, false);
  const std::vector<Tensor> eager = body(d);
  set_fusion(d, true);
  EXPECT_GT(st.recorded, 0);
  expect_near(fused, eager, 1e-4, what + ": fused vs eager");
  expect_near(fused, body(Device::ref()), ref_tol, what + ": fused vs ref");
  return st;
}

// One kernel: the matmul with its epilogue (no eager op, one graph), the product never written.
void expect_one_kernel(const StreamStats& st, const std::string& what) {
  EXPECT_EQ(st.graphs, 1) << what;
  EXPECT_EQ(st.eager_ops, 0) << what << ": the matmul ran alone";
  EXPECT_GE(st.dropped, 1) << what << ": the product was written";
}

// The epilogue's other inputs, uploaded before the matmul (an upload runs the stream first).
struct Inputs {
  Tensor bias, res, col;
};

struct Case {
  std::string name;
  std::function<Tensor(const Tensor& y, const Inputs& in)> epilogue;
};

TEST(GpuEpilogueTest, LinearStyleEpiloguesAreOneKernel) {
  const Tensor xh = host_values({70, 48}, 1), wh = host_values({48, 40}, 2);
  const Tensor bh = host_values({40}, 3), rh = host_values({70, 40}, 4);
  const Tensor ch = host_values({70, 1}, 5);
  const std::vector<Case> cases = {
      {"bias", [&](const Tensor& y, const Inputs& in) { return y + in.bias; }},
      {"bias + relu", [&](const Tensor& y, const Inputs& in) { return F::relu(y + in.bias); }},
      {"bias + gelu", [&](const Tensor& y, const Inputs& in) { return F::gelu(y + in.bias); }},
      {"gelu tanh", [](const Tensor& y, const Inputs&) { return F::gelu(y, "tanh"); }},
      {"bias + silu", [&](const Tensor& y, const Inputs& in) { return F::silu(y + in.bias); }},
      {"sigmoid", [](const Tensor& y, const Inputs&) { return F::sigmoid(y); }},
      {"tanh", [](const Tensor& y, const Inputs&) { return tanh(y); }},
      {"scale", [](const Tensor& y, const Inputs&) { return y * 0.125; }},
      {"residual", [&](const Tensor& y, const Inputs& in) { return y + in.res; }},
      {"row broadcast", [&](const Tensor& y, const Inputs& in) { return y * in.col; }},
      {"branch: y * sigmoid(y) + |y|",
       [](const Tensor& y, const Inputs&) { return y * F::sigmoid(y) + abs(y); }},
      {"bias + gelu + residual, scaled",
       [&](const Tensor& y, const Inputs& in) { return (F::gelu(y + in.bias) + in.res) * 0.5; }},
  };
  on_each_gpu([&](const Device& d) {
    const Tensor x = xh.to(d), w = wh.to(d);
    for (const Case& c : cases) {
      const StreamStats st = expect_close(d, c.name, [&](const Device& e) {
        const Inputs in{bh.to(e), rh.to(e), ch.to(e)};
        return std::vector<Tensor>{c.epilogue(matmul(x.to(e), w.to(e)), in)};
      });
      expect_one_kernel(st, c.name);
    }
  });
}

TEST(GpuEpilogueTest, LinearBatchedAndTransposedOperands) {
  const Tensor xh = host_values({4, 6, 32}, 6), wh = host_values({24, 32}, 7);
  const Tensor bh = host_values({24}, 8);
  const Tensor ah = host_values({3, 17, 20}, 9), b3h = host_values({3, 20, 9}, 10);
  const Tensor b9h = host_values({9}, 11), ath = host_values({20, 17}, 12);
  on_each_gpu([&](const Device& d) {
    StreamStats st = expect_close(d, "linear + tanh", [&](const Device& e) {
      const Tensor x = xh.to(e), w = wh.to(e), b = bh.to(e);
      return std::vector<Tensor>{tanh(linear(x, w, b))};
    });
    expect_one_kernel(st, "linear");
    st = expect_close(d, "batched + broadcast bias + relu", [&](const Device& e) {
      const Tensor a = ah.to(e), b = b3h.to(e), bias = b9h.to(e);
      return std::vector<Tensor>{F::relu(matmul(a, b) + bias)};
    });
    expect_one_kernel(st, "batched");
    st = expect_close(d, "transposed a", [&](const Device& e) {
      const Tensor a = ath.to(e).t(), b = b3h.to(e)[1], bias = b9h.to(e);
      return std::vector<Tensor>{F::gelu(matmul(a, b) + bias)};
    });
    expect_one_kernel(st, "transposed");
  });
}

TEST(GpuEpilogueTest, NonContiguousInputsAndOutputs) {
  const Tensor xh = host_values({12, 16}, 13), wh = host_values({16, 10}, 14);
  const Tensor bh = host_values({20}, 15), rh = host_values({10, 12}, 16);
  on_each_gpu([&](const Device& d) {
    const StreamStats st =
        expect_close(d, "strided bias, transposed residual", [&](const Device& e) {
          const Tensor bias = bh.to(e).slice(0, 0, 20, 2);  // [10], stride 2
          const Tensor res = rh.to(e).t();                  // [12, 10], strides (1, 12)
          const Tensor x = xh.to(e), w = wh.to(e);
          return std::vector<Tensor>{F::relu(matmul(x, w) + bias) + res};
        });
    expect_one_kernel(st, "strided inputs");
    const Tensor oh = host_values({10, 12}, 44);
    const StreamStats so = expect_close(d, "transposed output", [&](const Device& e) {
      Tensor out = (e == Device::ref() ? oh.clone() : oh.to(e)).t();  // a fresh [12, 10] view
      const Tensor x = xh.to(e), w = wh.to(e);
      out.copy_(F::gelu(matmul(x, w)));
      return std::vector<Tensor>{out};
    });
    expect_one_kernel(so, "the copy into the transposed view joins the epilogue");
  });
}

TEST(GpuEpilogueTest, AHeldProductFallsBackAndBothAreRight) {
  const Tensor xh = host_values({40, 30}, 17), wh = host_values({30, 24}, 18);
  const Tensor bh = host_values({24}, 19);
  on_each_gpu([&](const Device& d) {
    const StreamStats st = expect_close(d, "held", [&](const Device& e) {
      const Tensor x = xh.to(e), w = wh.to(e), b = bh.to(e);
      Tensor y = matmul(x, w);
      Tensor z = F::gelu(y + b);
      return std::vector<Tensor>{y, z};  // y is read too: the matmul writes it
    });
    EXPECT_EQ(st.eager_ops, 1) << "the matmul alone";
    EXPECT_EQ(st.graphs, 1) << "then its epilogue as a graph";
  });
}

TEST(GpuEpilogueTest, AnOperandNotViewableAsTheProductFallsBack) {
  // [2, 3, 5, 20] x [20, 9] is one [30, 20] x [20, 9] product; a residual permuted across the
  // folded batch dims cannot be indexed as [1, 30, 9].
  const Tensor xh = host_values({2, 3, 5, 20}, 20), wh = host_values({20, 9}, 21);
  const Tensor rh = host_values({3, 2, 5, 9}, 22);
  on_each_gpu([&](const Device& d) {
    const StreamStats st = expect_close(d, "permuted residual", [&](const Device& e) {
      const Tensor r = rh.to(e).permute({1, 0, 2, 3});
      const Tensor x = xh.to(e), w = wh.to(e);
      return std::vector<Tensor>{F::relu(matmul(x, w) + r)};
    });
    EXPECT_EQ(st.eager_ops, 1) << "the matmul alone";
    EXPECT_EQ(st.graphs, 1) << "then add + relu as a graph";
  });
}

TEST(GpuEpilogueTest, MoreBuffersThanTheDeviceBindsFallsBack) {
  const Tensor xh = host_values({16, 8}, 23), wh = host_values({8, 12}, 24);
  on_each_gpu([&](const Device& d) {
    const int64_t limit = backend_for(d).max_graph_buffers();
    ASSERT_GE(limit, 6);
    // n residuals: the graph binds n + 2 buffers (the product, n residuals, one output); the
    // matmul kernel a, b, a split-K carrier, the n residuals and the output: n + 4.
    for (int64_t n : {limit - 4, limit - 2}) {
      std::vector<Tensor> res;
      for (int64_t i = 0; i < n; ++i) res.push_back(host_values({16, 12}, uint32_t(100 + i)));
      const StreamStats st =
          expect_close(d, "residuals " + std::to_string(n), [&](const Device& e) {
            std::vector<Tensor> on;
            for (const Tensor& r : res) on.push_back(r.to(e));
            const Tensor x = xh.to(e), w = wh.to(e);
            Tensor y = matmul(x, w);
            for (const Tensor& r : on) y = y + r;
            return std::vector<Tensor>{y};
          });
      if (n + 4 <= limit)
        expect_one_kernel(st, "within the limit");
      else
        EXPECT_EQ(st.eager_ops, 1) << "over the limit: the matmul alone, then the graph";
      EXPECT_EQ(st.graphs, 1);
    }
  });
}

TEST(GpuEpilogueTest, SplitKProductsRunTheEpilogueOnce) {
  // K past one invocation's loop budget (codegen/matmul.cpp): several chunk launches, the
  // epilogue in the last.
  const Tensor xh = host_values({8, 50000}, 25), wh = host_values({50000, 8}, 26);
  const Tensor rh = host_values({8, 8}, 27);
  on_each_gpu([&](const Device& d) {
    const StreamStats st = expect_close(d, "split K", [&](const Device& e) {
      // The residual is written in place: an epilogue run twice would add it twice.
      Tensor r = e == Device::ref() ? rh.clone() : rh.to(e);
      const Tensor x = xh.to(e), w = wh.to(e);
      r.add_(F::relu(matmul(x, w)) * 0.01);
      return std::vector<Tensor>{r};
    });
    expect_one_kernel(st, "split K");
  });
}

TEST(GpuEpilogueTest, TiledProductsOfAutotunedSize) {
  // Big enough to be autotuned (2^18 multiply-adds and 4096 outputs): the anchored kernel takes
  // the tile chosen for the plain matmul; when the library (CLBlast) is chosen, the matmul runs
  // alone through it and the epilogue as a graph.
  const Tensor xh = host_values({96, 64}, 28), wh = host_values({64, 80}, 29);
  const Tensor bh = host_values({80}, 30);
  const Body body = [&](const Device& e) {
    const Tensor x = xh.to(e), w = wh.to(e), b = bh.to(e);
    return std::vector<Tensor>{F::silu(matmul(x, w) + b)};
  };
  on_each_gpu([&](const Device& d) {
    autotune::Autotuner& tuner = autotune::for_device(d);
    tuner.force("matmul", "tiled64x16t16");  // the default tile on lavapipe and PoCL
    StreamStats st = expect_close(d, "generated tile", body);
    expect_one_kernel(st, "generated tile");
    tuner.force("matmul", "library");  // ignored where no library takes the product
    st = expect_close(d, "library", body);
    tuner.force("matmul", "");
    EXPECT_EQ(st.graphs, 1);
    if (d.str().rfind("opencl", 0) != 0) {
      expect_one_kernel(st, "no library");
    } else {
      EXPECT_LE(st.eager_ops, 1) << "CLBlast alone (when installed), then the graph";
    }
    st = expect_close(d, "tuned", body);
    EXPECT_EQ(st.graphs, 1);
  });
}

TEST(GpuEpilogueTest, HalfPrecisionWhereTheDeviceHasIt) {
  const Tensor xh = host_values({33, 24}, 31), wh = host_values({24, 20}, 32);
  const Tensor bh = host_values({20}, 33);
  on_each_gpu([&](const Device& d) {
    for (DType t : {DType::f16, DType::bf16}) {
      if (!supports_dtype(d, t)) continue;
      const Tensor x = xh.to(d).to(t), w = wh.to(d).to(t), b = bh.to(d).to(t);
      set_fusion(d, true);
      sync(d);
      reset_stream_stats(d);
      const Tensor fused = F::gelu(matmul(x, w) + b);
      sync(d);
      const StreamStats st = stream_stats(d);
      set_fusion(d, false);
      const Tensor eager = F::gelu(matmul(x, w) + b);
      set_fusion(d, true);
      expect_one_kernel(st, dtype_name(t));
      EXPECT_EQ(fused.dtype(), t);
      // The product rounded to 16 bits as the eager matmul stored it, then each op rounded.
      expect_near({fused}, {eager}, 1e-4, dtype_name(t));
    }
  });
}

TEST(GpuEpilogueTest, FusionOffRunsTheMatmulEagerly) {
  const Tensor xh = host_values({10, 8}, 34), wh = host_values({8, 6}, 35);
  on_each_gpu([&](const Device& d) {
    const Tensor x = xh.to(d), w = wh.to(d);
    set_fusion(d, false);
    reset_stream_stats(d);
    const Tensor y = F::relu(matmul(x, w) + 1.0);
    sync(d);
    const StreamStats st = stream_stats(d);
    set_fusion(d, true);
    EXPECT_EQ(st.recorded, 0);
    EXPECT_EQ(st.graphs, 0);
    expect_near({y}, {F::relu(matmul(xh, wh) + 1.0)}, 1e-4, "fusion off");
  });
}

TEST(GpuEpilogueTest, GradientsThroughLinearGeluAreUnchanged) {
  const Tensor xh = host_values({6, 10}, 36), wh = host_values({7, 10}, 37);
  const Tensor bh = host_values({7}, 38), gh = host_values({6, 7}, 39);
  on_each_gpu([&](const Device& d) {
    auto grads = [&](bool fusion) {
      set_fusion(d, fusion);
      Tensor x = xh.to(d).requires_grad_(true);
      Tensor w = wh.to(d).requires_grad_(true);
      Tensor b = bh.to(d).requires_grad_(true);
      Tensor loss = (F::gelu(linear(x, w, b)) * gh.to(d)).sum();
      loss.backward();
      std::vector<Tensor> g{x.grad(), w.grad(), b.grad(), loss};
      sync(d);
      set_fusion(d, true);
      return g;
    };
    const std::vector<Tensor> on = grads(true), off = grads(false);
    expect_near(on, off, 1e-4, "gradients");
    // The same from the ref backend.
    Tensor x = xh.clone().requires_grad_(true), w = wh.clone().requires_grad_(true),
           b = bh.clone().requires_grad_(true);
    (F::gelu(linear(x, w, b)) * gh).sum().backward();
    expect_near({on[0], on[1], on[2]}, {x.grad(), w.grad(), b.grad()}, 1e-3, "vs ref");
  });
}

TEST(GpuEpilogueTest, AThrowingOpDoesNotPoisonAPendingAnchor) {
  const Tensor xh = host_values({12, 8}, 40), wh = host_values({8, 5}, 41);
  const Tensor bh = host_values({5}, 42), oh = host_values({7}, 43);
  on_each_gpu([&](const Device& d) {
    const StreamStats st = expect_close(d, "throw", [&](const Device& e) {
      const Tensor x = xh.to(e), w = wh.to(e), b = bh.to(e), o = oh.to(e);
      Tensor y = F::relu(matmul(x, w) + b);  // recorded, pending
      EXPECT_THROW(matmul(x, x), Error);     // [12, 8] x [12, 8]: nothing recorded
      EXPECT_THROW(y + o, Error);
      Tensor z = F::gelu(matmul(y, w.t()));  // y [12, 5] x [5, 8]
      return std::vector<Tensor>{y, z};
    });
    EXPECT_GE(st.graphs, 2) << "both matmuls with their epilogues";
    EXPECT_EQ(st.eager_ops, 0);
  });
}

// Ops independent of the product run first as a side group; a value of it the epilogue reads
// is written even when its reader was recorded before the side group's last op (it was dropped
// and the epilogue read an unwritten buffer: -2 -1 0 1 instead of -4 -3 -2 -1).
TEST(GpuEpilogueTest, SideValuesTheEpilogueReadsEarlyAreWritten) {
  on_each_gpu([&](const Device& d) {
    if (!supports_dtype(d, DType::f64)) GTEST_SKIP() << "no float64 on " << d.str();
    expect_close(d, "side values", [&](const Device& e) {
      const Tensor x = matmul(arange(4, TensorOptions(DType::f64, e)).reshape({2, 2}),
                              eye(2, 2, TensorOptions(DType::f64, e)));
      const Tensor s = full({}, 2.0, TensorOptions(DType::f32, e));
      const Tensor a = neg(s), b = neg(s);  // the side group
      Tensor y = x + a.to(DType::f64);      // the epilogue reads a's cast, a side value...
      y = y + b.to(DType::f64);             // ...before the side group's last op, b's cast
      EXPECT_EQ(values(y), (std::vector<double>{-4, -3, -2, -1}));
      return std::vector<Tensor>{y};
    });
  });
}

}  // namespace
}  // namespace ember
