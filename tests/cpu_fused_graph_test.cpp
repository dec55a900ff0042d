// The cpu backend's fused element-wise graphs (src/backends/cpu/fused_graph.cpp): chains built
// through the public API with fusion on must give the bits the same chains give op by op
// (fusion off), and must actually have run as fused graphs.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "op_table.h"
#include "runtime/backend.h"

namespace ember {
namespace {

const Device kCpu = Device::cpu();

Tensor input(const Shape& s, DType t, uint64_t seed, double lo = -3, double hi = 3) {
  return testing::uniform(s, t, seed, lo, hi).to(kCpu);
}

// The element bits of t in row-major order.
std::vector<unsigned char> bits(const Tensor& t) {
  const Tensor c = t.contiguous();
  backend_for(kCpu).sync();
  const auto* p = static_cast<const unsigned char*>(c.impl()->storage->data()) +
                  c.offset() * int64_t(c.element_size());
  return std::vector<unsigned char>(p, p + c.numel() * int64_t(c.element_size()));
}

// Runs chain() with fusion on and off; expects equal bits for every tensor it returns and at
// least one fused graph run.
void expect_fused_matches(const std::string& what,
                          const std::function<std::vector<Tensor>()>& chain) {
  SCOPED_TRACE(what);
  set_fusion(kCpu, true);
  reset_stream_stats(kCpu);
  const std::vector<Tensor> fused = chain();
  backend_for(kCpu).sync();
  const StreamStats st = stream_stats(kCpu);
  set_fusion(kCpu, false);
  const std::vector<Tensor> eager = chain();
  std::vector<std::vector<unsigned char>> fb, eb;
  for (const Tensor& t : fused) fb.push_back(bits(t));
  for (const Tensor& t : eager) eb.push_back(bits(t));
  set_fusion(kCpu, true);
  EXPECT_GT(st.graphs, 0) << "no fused graph ran";
  ASSERT_EQ(fused.size(), eager.size());
  for (size_t i = 0; i < fused.size(); ++i) {
    ASSERT_EQ(fused[i].dtype(), eager[i].dtype()) << "output " << i;
    ASSERT_EQ(fused[i].shape(), eager[i].shape()) << "output " << i;
    if (fb[i] != eb[i]) {
      const int64_t es = int64_t(fused[i].element_size());
      size_t k = 0;
      while (k < fb[i].size() && fb[i][k] == eb[i][k]) ++k;
      ADD_FAILURE() << "output " << i << " (" << dtype_name(fused[i].dtype())
                    << "): first differing element " << int64_t(k) / es << " of "
                    << fused[i].numel() << " ("
                    << testing::compare(eager[i].to(Device::ref()), fused[i].to(Device::ref()))
                    << ")";
    }
  }
}

const std::vector<int64_t> kSizes = {1, 7, 4097, 100003};
const std::vector<DType> kFloats = {DType::f32, DType::f64, DType::f16, DType::bf16};

std::string tag(const char* name, DType t, int64_t n) {
  return std::string(name) + " " + dtype_name(t) + " n=" + std::to_string(n);
}

TEST(CpuFusedGraph, ExpReluChain) {
  for (DType t : kFloats)
    for (int64_t n : kSizes)
      expect_fused_matches(tag("exp(relu(x * 2 + 1))", t, n), [&] {
        const Tensor x = input({n}, t, 1);
        return std::vector<Tensor>{exp(add(mul(x, 2.0), 1.0).relu())};
      });
}

TEST(CpuFusedGraph, ActivationsAndMath) {
  for (DType t : kFloats)
    for (int64_t n : {int64_t(7), int64_t(4097), int64_t(100003)})
      expect_fused_matches(tag("activations", t, n), [&] {
        const Tensor x = input({n}, t, 2), y = input({n}, t, 3, 0.5, 4);
        const Tensor a = add(x.sigmoid(), tanh(y));
        const Tensor b = div(sqrt(y), maximum(abs(x), y));
        const Tensor c = sub(mul(a, b), neg(x).relu());
        return std::vector<Tensor>{c, exp(minimum(c, y))};
      });
}

// tanh, erf and gelu: the reference at or below the eager kernels' grain, the lane templates
// (simd_math.h) above it, on contiguous and strided operands.
TEST(CpuFusedGraph, TanhErfGelu) {
  namespace F = nn::functional;
  for (DType t : kFloats)
    for (int64_t n : {int64_t(7), int64_t(4097), int64_t(100003)})
      expect_fused_matches(tag("tanh erf gelu", t, n), [&] {
        const Tensor x = input({n}, t, 40, -6, 6);
        const Tensor s = input({2, n}, t, 41, -6, 6).slice(1, 0, n, 2);  // stepped
        const Tensor a = F::gelu(mul(x, 1.5)), b = F::gelu(add(x, 0.5), "tanh");
        return std::vector<Tensor>{add(a, b), erf(mul(x, 0.7)), tanh(add(s, 1.0)),
                                   F::gelu(mul(s, 2.0))};
      });
}

TEST(CpuFusedGraph, MixedCasts) {
  for (int64_t n : kSizes)
    expect_fused_matches(tag("casts", DType::f16, n), [&] {
      const Tensor h = input({n}, DType::f16, 4);
      const Tensor f = input({n}, DType::f32, 5);
      const Tensor a = mul(h.to(DType::f32), f);                   // f16 -> f32
      const Tensor b = add(a.to(DType::bf16), h.to(DType::bf16));  // f32 -> bf16, f16 -> bf16
      const Tensor c = mul(b.to(DType::f64), 3.0);                 // bf16 -> f64
      const Tensor d = add(c.to(DType::f16), h);                   // f64 -> f16 (via f32)
      const Tensor i = add(mul(f, 10.0).to(DType::i32), 3);        // f32 -> i32, integer ops
      const Tensor u = mul(i.to(DType::u8), i.to(DType::u8));      // wrapping u8
      return std::vector<Tensor>{d, c, add(i.to(DType::f32), f), u, i.to(DType::i64)};
    });
}

TEST(CpuFusedGraph, ComparisonsAndWhere) {
  for (DType t : kFloats)
    for (int64_t n : kSizes)
      expect_fused_matches(tag("where", t, n), [&] {
        const Tensor x = input({n}, t, 6), y = input({n}, t, 7);
        const Tensor m = gt(x, 0.5);
        const Tensor k = logical_and(m, lt(y, x));
        const Tensor w = where(k, mul(x, y), add(y, 1.0));
        return std::vector<Tensor>{w, k, where(m, w, 0.0), isnan(div(x, y))};
      });
}

TEST(CpuFusedGraph, Broadcasting) {
  for (DType t : {DType::f32, DType::f16})
    for (int64_t n : {int64_t(7), int64_t(301)})
      expect_fused_matches(tag("broadcast", t, n), [&] {
        const Tensor col = input({n, 1}, t, 8), row = input({1, 333}, t, 9);
        const Tensor s = exp(mul(add(col, row), 0.5));
        // x and the outputs are contiguous over the whole walk (read and written in place
        // across the tile's rows); col is not.
        const Tensor x = input({n, 333}, t, 10);
        return std::vector<Tensor>{s, mul(s, row).sigmoid(), add(mul(x, col), x)};
      });
}

TEST(CpuFusedGraph, PermutedAndStridedInputs) {
  for (DType t : kFloats)
    for (int64_t n : {int64_t(5), int64_t(257)})
      expect_fused_matches(tag("strided inputs", t, n), [&] {
        const Tensor a = input({n, 300}, t, 10).t();                        // [300, n], transposed
        const Tensor b = input({300, 2 * n}, t, 11).slice(1, 0, 2 * n, 2);  // stepped
        const Tensor c = input({2, 3, n, 50}, t, 12).contiguous(MemoryFormat::channels_last);
        const Tensor d = input({2, 3, n, 50}, t, 13);
        return std::vector<Tensor>{exp(add(mul(a, b), 1.0).relu()), exp(add(c, 1.0)).sigmoid(),
                                   exp(mul(c, d))};
      });
}

TEST(CpuFusedGraph, StridedOutputsAndInPlace) {
  for (DType t : kFloats)
    for (int64_t n : {int64_t(7), int64_t(4097), int64_t(100003)})
      expect_fused_matches(tag("in place", t, n), [&] {
        const Tensor x = input({n}, t, 14), y = input({n}, t, 15);
        Tensor z = x.clone();
        z.add_(y).mul_(2.0);
        z.add_(exp(y), 0.5);
        // A strided destination: every other element of a bigger buffer.
        Tensor big = input({2 * n}, t, 16);
        Tensor view = big.slice(0, 0, 2 * n, 2);
        view.mul_(y).add_(1.0);
        // A transposed destination.
        Tensor m = input({64, 33}, t, 17);
        Tensor mt = m.t();
        mt.add_(input({33, 64}, t, 18)).mul_(3.0);
        return std::vector<Tensor>{z, big, m};
      });
}

TEST(CpuFusedGraph, SeveralOutputsKeptAlive) {
  for (DType t : kFloats)
    for (int64_t n : kSizes)
      expect_fused_matches(tag("outputs", t, n), [&] {
        const Tensor x = input({n}, t, 19);
        const Tensor a = mul(x, 2.0);
        const Tensor b = exp(a);
        const Tensor c = add(a, b);
        const Tensor d = x.clone();  // a copy of an input
        return std::vector<Tensor>{a, b, c, d, gt(c, a)};
      });
}

TEST(CpuFusedGraph, LongChainsAndIntegers) {
  for (int64_t n : kSizes) {
    expect_fused_matches(tag("long chain", DType::f32, n), [&] {
      Tensor x = input({n}, DType::f32, 20);
      for (int i = 0; i < 30; ++i) x = add(mul(x, 0.9), i % 3 == 0 ? x.sigmoid() : x.relu());
      return std::vector<Tensor>{x};
    });
    expect_fused_matches(tag("integers", DType::i64, n), [&] {
      const Tensor a = testing::integers({n}, DType::i64, 21, -1000, 1000).to(kCpu);
      const Tensor b = testing::integers({n}, DType::i16, 22, -50, 50).to(kCpu);
      const Tensor s = add(mul(a, a), b.to(DType::i64));
      const Tensor q = mul(b, b);  // i16 wraps
      return std::vector<Tensor>{s, q, maximum(s, a), abs(neg(q)), gt(s, 0), where(gt(a, 0), a, s)};
    });
  }
}

}  // namespace
}  // namespace ember
