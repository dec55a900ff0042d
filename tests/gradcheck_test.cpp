// Gradients of every differentiable op against central finite differences (f64), on random values
// and random shapes for several seeds: elementwise, views, in-place ops on views, conversion, the
// reduce family and the indexing family. Each check also runs gradgradcheck (the gradients of the
// recorded backward, create_graph). Prints "gradcheck: N ops, M checks" at the end.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <random>
#include <set>

#include "gradcheck.h"
#include "tensor/internal.h"

using namespace ember;
using test::GradFn;
using test::random_input;
using test::random_shape;

namespace {

struct Tally {
  std::set<std::string> ops;
  int64_t checks = 0;
};
Tally& tally() {
  static Tally t;
  return t;
}
class PrintTally : public ::testing::Environment {
 public:
  void TearDown() override {
    if (tally().checks)
      std::printf("gradcheck: %zu ops, %lld checks\n", tally().ops.size(),
                  static_cast<long long>(tally().checks));
  }
};
[[maybe_unused]] ::testing::Environment* const kTallyEnv =
    ::testing::AddGlobalTestEnvironment(new PrintTally);

// Tighter than gradcheck's defaults: f64 central differences are good to ~1e-9 on these small
// inputs, so a rule off by 0.01% still fails.
// second_order: also gradgradcheck (create_graph backward against differences of the gradient).
void check(const std::string& op, const GradFn& fn, const std::vector<Tensor>& inputs,
           double atol = 1e-7, double rtol = 1e-6, bool second_order = true) {
  tally().ops.insert(op);
  ++tally().checks;
  const std::string r = test::gradcheck(fn, inputs, 1e-6, atol, rtol);
  EXPECT_TRUE(r.empty()) << op << ": " << r;
  // Every rule is differentiable again (create_graph): its gradient's gradients against finite
  // differences of the gradient.
  if (!second_order) return;
  const std::string r2 = test::gradgradcheck(fn, inputs, 1e-6, atol, rtol);
  EXPECT_TRUE(r2.empty()) << op << " (second order): " << r2;
}

constexpr uint64_t kSeeds[] = {1, 2, 3};

Tensor in(const Shape& s, uint64_t seed, double lo = -1, double hi = 1) {
  return random_input(s, seed, lo, hi);
}
// |values| in [lo, hi] with random signs: away from a kink at 0.
Tensor signed_in(const Shape& s, uint64_t seed, double lo, double hi) {
  const Tensor u = random_input(s, seed, lo, hi, false);
  const Tensor sg = random_input(s, seed + 1000, -1, 1, false);
  return where(gt(sg, 0), u, -u).requires_grad_();
}
// n + u, n integer in [-3, 2], u in [0.1, 0.4]: away from the jumps of floor/ceil/round/trunc.
Tensor off_integer_in(const Shape& s, uint64_t seed) {
  const Tensor n = floor(random_input(s, seed + 2000, -3, 3, false));
  return (n + random_input(s, seed, 0.1, 0.4, false)).requires_grad_();
}
Tensor const_in(const Shape& s, uint64_t seed, double lo = -1, double hi = 1) {
  return random_input(s, seed, lo, hi, false);
}
// A shape that broadcasts to s: some leading dims dropped, some dims set to 1.
Shape broadcastable(const Shape& s, uint64_t seed) {
  std::mt19937_64 rng(seed + 77);
  Shape b(s.begin() + int64_t(rng() % (s.size() + 1)), s.end());
  for (int64_t& d : b)
    if (rng() & 1) d = 1;
  return b;
}
Tensor rand_index(const Shape& s, int64_t hi, uint64_t seed) {
  std::mt19937_64 rng(seed + 5);
  std::vector<int64_t> v(size_t(numel_of(s)));
  for (int64_t& x : v) x = int64_t(rng() % uint64_t(hi));
  return from_vector<int64_t>(v, s);
}
// Index of shape s whose entries along `dim` are distinct in [0, n) (s[dim] <= n).
Tensor unique_index(const Shape& s, int64_t dim, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed + 9);
  std::map<int64_t, std::vector<int64_t>> perms;
  std::vector<int64_t> v(size_t(numel_of(s)));
  for (int64_t f = 0; f < int64_t(v.size()); ++f) {
    int64_t rest = f, key = 0, mult = 1, pos = 0;
    for (int64_t k = int64_t(s.size()) - 1; k >= 0; --k) {
      const int64_t c = rest % s[size_t(k)];
      rest /= s[size_t(k)];
      if (k == dim)
        pos = c;
      else
        key += c * mult;
      mult *= s[size_t(k)];
    }
    auto it = perms.find(key);
    if (it == perms.end()) {
      std::vector<int64_t> p(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) p[size_t(i)] = i;
      std::shuffle(p.begin(), p.end(), rng);
      it = perms.emplace(key, p).first;
    }
    v[size_t(f)] = it->second[size_t(pos)];
  }
  return from_vector<int64_t>(v, s);
}
Tensor rand_mask(const Shape& s, uint64_t seed) { return gt(const_in(s, seed + 31), 0); }

GradFn f1(std::function<Tensor(const Tensor&)> f) {
  return [f](const std::vector<Tensor>& v) { return f(v[0]); };
}
GradFn f2(std::function<Tensor(const Tensor&, const Tensor&)> f) {
  return [f](const std::vector<Tensor>& v) { return f(v[0], v[1]); };
}
GradFn f3(std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)> f) {
  return [f](const std::vector<Tensor>& v) { return f(v[0], v[1], v[2]); };
}

}  // namespace

// ---------------------------------------------------------------- elementwise

TEST(GradcheckTest, UnaryOps) {
  using ir::UnaryOp;
  enum Domain { kRange, kSigned, kOffInteger };
  struct U {
    const char* name;
    std::function<Tensor(const Tensor&)> f;
    Domain dom;
    double lo, hi;
  };
  auto act = [](UnaryOp op, double p0 = 0, double p1 = 0) {
    return [=](const Tensor& x) { return detail::unary(op, x, p0, p1); };
  };
  const std::vector<U> ops = {
      {"neg", [](const Tensor& x) { return neg(x); }, kRange, -1, 1},
      {"abs", [](const Tensor& x) { return abs(x); }, kSigned, 0.1, 1},
      {"sign", [](const Tensor& x) { return sign(x); }, kSigned, 0.1, 1},
      {"exp", [](const Tensor& x) { return exp(x); }, kRange, -1, 1},
      {"exp2", [](const Tensor& x) { return exp2(x); }, kRange, -1, 1},
      {"expm1", [](const Tensor& x) { return expm1(x); }, kRange, -1, 1},
      {"log", [](const Tensor& x) { return log(x); }, kRange, 0.5, 2},
      {"log2", [](const Tensor& x) { return log2(x); }, kRange, 0.5, 2},
      {"log10", [](const Tensor& x) { return log10(x); }, kRange, 0.5, 2},
      {"log1p", [](const Tensor& x) { return log1p(x); }, kRange, -0.5, 1},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, kRange, 0.5, 2},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, kRange, 0.5, 2},
      {"square", [](const Tensor& x) { return square(x); }, kRange, -1, 1},
      {"reciprocal", [](const Tensor& x) { return reciprocal(x); }, kSigned, 0.5, 2},
      {"sin", [](const Tensor& x) { return sin(x); }, kRange, -2, 2},
      {"cos", [](const Tensor& x) { return cos(x); }, kRange, -2, 2},
      {"tan", [](const Tensor& x) { return tan(x); }, kRange, -1, 1},
      {"asin", [](const Tensor& x) { return asin(x); }, kRange, -0.9, 0.9},
      {"acos", [](const Tensor& x) { return acos(x); }, kRange, -0.9, 0.9},
      {"atan", [](const Tensor& x) { return atan(x); }, kRange, -2, 2},
      {"sinh", [](const Tensor& x) { return sinh(x); }, kRange, -1, 1},
      {"cosh", [](const Tensor& x) { return cosh(x); }, kRange, -1, 1},
      {"tanh", [](const Tensor& x) { return tanh(x); }, kRange, -1.5, 1.5},
      {"asinh", [](const Tensor& x) { return asinh(x); }, kRange, -2, 2},
      {"acosh", [](const Tensor& x) { return acosh(x); }, kRange, 1.2, 3},
      {"atanh", [](const Tensor& x) { return atanh(x); }, kRange, -0.9, 0.9},
      {"erf", [](const Tensor& x) { return erf(x); }, kRange, -1.5, 1.5},
      {"erfinv", [](const Tensor& x) { return erfinv(x); }, kRange, -0.9, 0.9},
      {"floor", [](const Tensor& x) { return floor(x); }, kOffInteger, 0, 0},
      {"ceil", [](const Tensor& x) { return ceil(x); }, kOffInteger, 0, 0},
      {"round", [](const Tensor& x) { return round(x); }, kOffInteger, 0, 0},
      {"trunc", [](const Tensor& x) { return trunc(x); }, kOffInteger, 0, 0},
      {"frac", [](const Tensor& x) { return frac(x); }, kOffInteger, 0, 0},
      {"nan_to_num", [](const Tensor& x) { return nan_to_num(x); }, kRange, -1, 1},
      {"relu", [](const Tensor& x) { return x.relu(); }, kSigned, 0.1, 1},
      {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }, kRange, -2, 2},
      {"log_sigmoid", act(UnaryOp::log_sigmoid), kRange, -2, 2},
      {"silu", act(UnaryOp::silu), kRange, -2, 2},
      {"mish", act(UnaryOp::mish), kRange, -2, 2},
      {"gelu", act(UnaryOp::gelu), kRange, -2, 2},
      {"gelu_tanh", act(UnaryOp::gelu_tanh), kRange, -2, 2},
      {"selu", act(UnaryOp::selu), kSigned, 0.1, 2},
      {"hardsigmoid", act(UnaryOp::hardsigmoid), kRange, -2.5, 2.5},
      {"hardswish", act(UnaryOp::hardswish), kRange, -2.5, 2.5},
      {"elu", act(UnaryOp::elu, 1.3), kSigned, 0.1, 2},
      {"leaky_relu", act(UnaryOp::leaky_relu, 0.1), kSigned, 0.1, 2},
      {"softplus", act(UnaryOp::softplus, 2.0, 20.0), kRange, -2, 2},
  };
  for (const U& u : ops)
    for (uint64_t seed : kSeeds) {
      const Shape s = random_shape(seed, 0, 3);
      const Tensor x = u.dom == kRange    ? in(s, seed, u.lo, u.hi)
                       : u.dom == kSigned ? signed_in(s, seed, u.lo, u.hi)
                                          : off_integer_in(s, seed);
      check(u.name, f1(u.f), {x});
    }
}

TEST(GradcheckTest, BinaryOpsWithBroadcasting) {
  struct B {
    const char* name;
    std::function<Tensor(const Tensor&, const Tensor&)> f;
    double alo, ahi, blo, bhi;
    bool b_signed;  // b's magnitude in [blo, bhi] with random signs
  };
  const std::vector<B> ops = {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b, 2); }, -1, 1, -1, 1, false},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b, -0.5); }, -1, 1, -1, 1,
       false},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }, -1, 1, -1, 1, false},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }, -1, 1, 0.5, 2, true},
      {"div_floor", [](const Tensor& a, const Tensor& b) { return div(a, b, "floor"); }, -3, 3, 0.7,
       1.3, true},
      {"div_trunc", [](const Tensor& a, const Tensor& b) { return div(a, b, "trunc"); }, -3, 3, 0.7,
       1.3, true},
      {"remainder", [](const Tensor& a, const Tensor& b) { return remainder(a, b); }, -3, 3, 0.7,
       1.3, true},
      {"fmod", [](const Tensor& a, const Tensor& b) { return fmod(a, b); }, -3, 3, 0.7, 1.3, true},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); }, 0.5, 2, -2, 2, false},
      {"atan2", [](const Tensor& a, const Tensor& b) { return atan2(a, b); }, -1, 1, 0.3, 1, true},
      {"hypot", [](const Tensor& a, const Tensor& b) { return hypot(a, b); }, 0.2, 1, 0.2, 1, true},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }, -1, 1, -1, 1,
       false},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }, -1, 1, -1, 1,
       false},
      {"copysign", [](const Tensor& a, const Tensor& b) { return copysign(a, b); }, 0.2, 1, 0.2, 1,
       true},
  };
  for (const B& op : ops)
    for (uint64_t seed : kSeeds) {
      const Shape s = random_shape(seed, 1, 3);
      const Shape sb = broadcastable(s, seed);
      const Tensor a = in(s, seed, op.alo, op.ahi);
      const Tensor b =
          op.b_signed ? signed_in(sb, seed + 1, op.blo, op.bhi) : in(sb, seed + 1, op.blo, op.bhi);
      check(op.name, f2(op.f), {a, b});
      // The broadcast operand first.
      const Tensor a2 = in(sb, seed + 2, op.alo, op.ahi);
      const Tensor b2 =
          op.b_signed ? signed_in(s, seed + 3, op.blo, op.bhi) : in(s, seed + 3, op.blo, op.bhi);
      check(op.name, f2(op.f), {a2, b2});
    }
  for (uint64_t seed : kSeeds) {
    const Shape s = random_shape(seed, 0, 3);
    check("pow_scalar_exponent", f1([](const Tensor& x) { return pow(x, 3); }), {in(s, seed)});
    check("pow_square", f1([](const Tensor& x) { return pow(x, 2); }), {in(s, seed)});
    check("pow_scalar_exponent", f1([](const Tensor& x) { return pow(x, 2.5); }),
          {in(s, seed, 0.3, 2)});
    check("pow_scalar_base", f1([](const Tensor& x) { return pow(2.5, x); }), {in(s, seed)});
    check("rsub_scalar", f1([](const Tensor& x) { return 2.0 - x / 3.0; }), {in(s, seed)});
  }
}

TEST(GradcheckTest, TernaryOps) {
  for (uint64_t seed : kSeeds) {
    const Shape s = random_shape(seed, 1, 3);
    const Shape sb = broadcastable(s, seed);
    const Tensor cond = rand_mask(sb, seed);
    check("where", f2([cond](const Tensor& a, const Tensor& b) { return where(cond, a, b); }),
          {in(s, seed), in(sb, seed + 1)});
    check("where", f1([cond](const Tensor& a) { return where(cond, a, 0.5); }), {in(s, seed)});
    check("clamp_scalar", f1([](const Tensor& x) { return clamp(x, -0.5, 0.5); }), {in(s, seed)});
    check("clamp_min", f1([](const Tensor& x) { return clamp_min(x, 0.2); }), {in(s, seed)});
    check("clamp_max", f1([](const Tensor& x) { return clamp_max(x, 0.2); }), {in(s, seed)});
    check("clamp_tensor",
          f3([](const Tensor& x, const Tensor& lo, const Tensor& hi) { return clamp(x, lo, hi); }),
          {in(s, seed, -1.5, 1.5), in(sb, seed + 1, -1, -0.3),
           in(broadcastable(s, seed + 5), seed + 2, 0.3, 1)});
    check("clamp_tensor",
          f2([](const Tensor& x, const Tensor& lo) { return clamp(x, lo, Tensor()); }),
          {in(s, seed), in(sb, seed + 1)});
    check("lerp",
          f3([](const Tensor& a, const Tensor& b, const Tensor& w) { return lerp(a, b, w); }),
          {in(s, seed), in(sb, seed + 1), in(broadcastable(s, seed + 5), seed + 2, 0, 1)});
    check("lerp", f2([](const Tensor& a, const Tensor& b) { return lerp(a, b, 0.3); }),
          {in(sb, seed), in(s, seed + 1)});
    check("addcmul", f3([](const Tensor& x, const Tensor& a, const Tensor& b) {
            return addcmul(x, a, b, 0.7);
          }),
          {in(sb, seed), in(s, seed + 1), in(broadcastable(s, seed + 5), seed + 2)});
    check("addcdiv", f3([](const Tensor& x, const Tensor& a, const Tensor& b) {
            return addcdiv(x, a, b, 0.7);
          }),
          {in(s, seed), in(sb, seed + 1), signed_in(broadcastable(s, seed + 5), seed + 2, 0.5, 2)});
  }
}

// ---------------------------------------------------------------- views and in-place ops

TEST(GradcheckTest, ViewOps) {
  for (uint64_t seed : kSeeds) {
    const Shape s = random_shape(seed, 3, 3, 2, 4);
    const Tensor x = in(s, seed);
    check("view", f1([](const Tensor& t) { return t.view({-1}) * 1.0; }), {x});
    check("reshape", f1([](const Tensor& t) {
            return t.permute({2, 0, 1}).reshape({t.size(2), -1});
          }),
          {x});
    check("flatten", f1([](const Tensor& t) { return t.flatten(1); }), {x});
    check("permute", f1([](const Tensor& t) { return t.permute({1, 2, 0}); }), {x});
    check("transpose", f1([](const Tensor& t) { return t.transpose(0, 2); }), {x});
    check("mT", f1([](const Tensor& t) { return t.mT(); }), {x});
    check("slice", f1([](const Tensor& t) { return t.slice(1, 0, t.size(1), 2); }), {x});
    check("slice", f1([](const Tensor& t) { return t.slice(2, 1, t.size(2)); }), {x});
    check("narrow", f1([](const Tensor& t) { return t.narrow(0, 1, t.size(0) - 1); }), {x});
    check("select", f1([](const Tensor& t) { return t.select(1, -1); }), {x});
    check("expand", f1([](const Tensor& t) { return t.narrow(1, 0, 1).expand({-1, 3, -1}); }), {x});
    check("expand", f1([](const Tensor& t) {
            return t.expand({2, t.size(0), t.size(1), t.size(2)});
          }),
          {x});
    check("squeeze", f1([](const Tensor& t) { return t.narrow(1, 0, 1).squeeze(1); }), {x});
    check("squeeze", f1([](const Tensor& t) { return t.narrow(0, 0, 1).squeeze(); }), {x});
    check("unsqueeze", f1([](const Tensor& t) { return t.unsqueeze(2); }), {x});
    check("unfold", f1([](const Tensor& t) { return t.unfold(2, 2, 1); }), {x});
    check("diagonal", f1([](const Tensor& t) { return t.diagonal(0, 0, 2); }), {x});
    check("diagonal", f1([](const Tensor& t) { return t.diagonal(1, 1, 2); }), {x});
    check("flip", f1([](const Tensor& t) { return t.flip({0, 2}); }), {x});
    // Overlapping windows over the storage, a stride-0 dim, and an input that is a view.
    check("as_strided", f1([](const Tensor& t) {
            return t.as_strided({3, 3}, {1, 1}) * t.as_strided({3, 3}, {2, 1}, 1);
          }),
          {x});
    check("as_strided", f1([](const Tensor& t) {
            return t.narrow(0, 1, t.size(0) - 1).as_strided({2, 2, 2}, {0, 2, 1});
          }),
          {x});
    check("contiguous", f1([](const Tensor& t) { return t.t().contiguous(); }), {in({3, 4}, seed)});
    check("clone", f1([](const Tensor& t) { return t.clone() * t; }), {x});
  }
}

TEST(GradcheckTest, InPlaceOpsOnViewsOfNonLeaves) {
  for (uint64_t seed : kSeeds) {
    const Shape s = random_shape(seed, 2, 2, 3, 5);
    const int64_t n1 = s[1];
    const Shape part{s[0], (n1 + 1) / 2};  // t.slice(1, 0, n1, 2)
    const Tensor x = in(s, seed), y = in(part, seed + 1);
    auto body = [](std::function<void(Tensor)> op) {
      return [op](const std::vector<Tensor>& v) {
        Tensor h = v[0] * 1.5;
        op(h.slice(1, 0, h.size(1), 2));
        return h * v[0];
      };
    };
    auto body2 = [](std::function<void(Tensor, const Tensor&)> op) {
      return [op](const std::vector<Tensor>& v) {
        Tensor h = v[0] * 1.5;
        op(h.slice(1, 0, h.size(1), 2), v[1]);
        return h * v[0];
      };
    };
    check("add_", body2([](Tensor t, const Tensor& o) { t.add_(o, 2); }), {x, y});
    check("sub_", body2([](Tensor t, const Tensor& o) { t.sub_(o); }), {x, y});
    check("mul_", body2([](Tensor t, const Tensor& o) { t.mul_(o); }), {x, y});
    check("div_", body2([](Tensor t, const Tensor& o) { t.div_(o); }),
          {x, signed_in(part, seed + 1, 0.5, 2)});
    check("copy_", body2([](Tensor t, const Tensor& o) { t.copy_(o); }), {x, y});
    check("copy_", body2([](Tensor t, const Tensor& o) { t.copy_(o.narrow(0, 0, 1)); }),
          {x, y});  // broadcast source
    check("fill_", body([](Tensor t) { t.fill_(0.25); }), {x});
    check("mul_scalar_", body([](Tensor t) { t.mul_(3.0); }), {x});
    check("clamp_", body([](Tensor t) { t.clamp_(-0.5, 0.5); }), {x});
    const Tensor mask = rand_mask(part, seed);
    check("masked_fill_", body([mask](Tensor t) { t.masked_fill_(mask, 0.5); }), {x});
    check("slice_assign_", f2([](const Tensor& a, const Tensor& b) {
            Tensor h = a * 2;
            slice_assign_(h, 1, 0, h.size(1), 2, b);
            return h * a;
          }),
          {x, y});
  }
}

TEST(GradcheckTest, ConversionKeepsTheInputDtype) {
  tally().ops.insert("to");
  ++tally().checks;
  Tensor x = in({2, 3}, 1);
  (x.to(DType::f32) * 2).to(DType::f64).sum().backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().dtype(), DType::f64);
  for (double g : x.grad().to_vector<double>()) EXPECT_EQ(g, 2.0);
  Tensor y = ones({3}, DType::f32).requires_grad_();
  (y.to(DType::f64) * 3).sum().backward();
  EXPECT_EQ(y.grad().dtype(), DType::f32);
  EXPECT_EQ(y.grad().to_vector<float>(), (std::vector<float>{3, 3, 3}));
}

// ---------------------------------------------------------------- reduce family

TEST(GradcheckTest, Reductions) {
  for (uint64_t seed : kSeeds) {
    const Shape s = random_shape(seed, 2, 3, 2, 4);
    const Tensor x = in(s, seed);
    const Tensor pos = in(s, seed, 0.5, 1.5);
    check("sum", f1([](const Tensor& t) { return sum(t); }), {x});
    check("sum", f1([](const Tensor& t) { return sum(t, {0, -1}, true); }), {x});
    check("sum", f1([](const Tensor& t) { return t.sum({1}); }), {x});
    check("mean", f1([](const Tensor& t) { return mean(t); }), {x});
    check("mean", f1([](const Tensor& t) { return mean(t, {-1}, true); }), {x});
    check("prod", f1([](const Tensor& t) { return prod(t); }), {pos});
    check("prod", f1([](const Tensor& t) { return prod(t, {0}); }), {x});
    check("prod", f1([](const Tensor& t) { return prod(t, {0, -1}, true); }), {x});
    check("max", f1([](const Tensor& t) { return max(t); }), {x});
    check("min", f1([](const Tensor& t) { return min(t); }), {x});
    check("max_dim", f1([](const Tensor& t) { return std::get<0>(max(t, 1)); }), {x});
    check("max_dim", f1([](const Tensor& t) { return std::get<0>(max(t, -1, true)); }), {x});
    check("min_dim", f1([](const Tensor& t) { return std::get<0>(min(t, 0)); }), {x});
    check("amax", f1([](const Tensor& t) { return amax(t, {0, -1}); }), {x});
    check("amin", f1([](const Tensor& t) { return amin(t, {1}, true); }), {x});
    check("var", f1([](const Tensor& t) { return var(t); }), {x});
    check("var", f1([](const Tensor& t) { return var(t, {1}, 0, true); }), {x});
    check("std", f1([](const Tensor& t) { return ember::std(t, {-1}); }), {x});
    check("var_mean", f1([](const Tensor& t) {
            auto [v, m] = var_mean(t, {0});
            return v + m * 2;
          }),
          {x});
    check("logsumexp", f1([](const Tensor& t) { return logsumexp(t, {1}); }), {in(s, seed, -3, 3)});
    check("logsumexp", f1([](const Tensor& t) { return logsumexp(t, {0, -1}, true); }), {x});
    check("norm", f1([](const Tensor& t) { return norm(t); }), {x});
    check("norm", f1([](const Tensor& t) { return norm(t, 2.0, {1}); }), {x});
    check("norm", f1([](const Tensor& t) { return norm(t, 1.0, {0}); }),
          {signed_in(s, seed, 0.1, 1)});
    check("norm", f1([](const Tensor& t) { return norm(t, 3.0, {-1}, true); }), {x});
    check("norm", f1([](const Tensor& t) { return norm(t, 1.5); }), {signed_in(s, seed, 0.1, 1)});
    check("norm", f1([](const Tensor& t) { return norm(t, 0.5, {1}); }),
          {signed_in(s, seed, 0.1, 1)});
    check("norm", f1([](const Tensor& t) { return norm(t, INFINITY, {1}); }), {x});
    check("norm", f1([](const Tensor& t) { return norm(t, -INFINITY); }), {x});
    check("norm", f1([](const Tensor& t) { return norm(t, 0.0, {0}); }),
          {signed_in(s, seed, 0.1, 1)});
    check("norm", f1([](const Tensor& t) { return norm(t, "fro", {0, 1}); }), {x});
  }
  // 0-d inputs.
  const Tensor z = in({}, 4);
  check("sum", f1([](const Tensor& t) { return sum(t); }), {z});
  check("prod", f1([](const Tensor& t) { return prod(t); }), {z});
  check("max_dim", f1([](const Tensor& t) { return std::get<0>(max(t, 0)); }), {z});
  check("amax", f1([](const Tensor& t) { return amax(t); }), {z});
  check("norm", f1([](const Tensor& t) { return norm(t); }), {z});
}

TEST(GradcheckTest, ProdAndCumprodWithZeros) {
  // One zero in a group (its gradient is the product of the others) and two zeros (all zero).
  Tensor x = tensor<double>({0.5, 0, 1.5, -2, 0.7, 0, 0, 1.2, 0.9, -1.1, 0.8, 1.3}, {3, 4});
  x.requires_grad_();
  check("prod", f1([](const Tensor& t) { return prod(t, {1}); }), {x});
  check("prod", f1([](const Tensor& t) { return prod(t, {0}); }), {x});
  check("prod", f1([](const Tensor& t) { return prod(t); }), {x});
  check("cumprod", f1([](const Tensor& t) { return cumprod(t, 1); }), {x});
  check("cumprod", f1([](const Tensor& t) { return cumprod(t, 0); }), {x});
}

TEST(GradcheckTest, ScansAndSorts) {
  for (uint64_t seed : kSeeds) {
    const Shape s = random_shape(seed, 1, 3, 2, 5);
    const Tensor x = in(s, seed);
    const int64_t last = int64_t(s.size()) - 1;
    check("cumsum", f1([](const Tensor& t) { return cumsum(t, 0); }), {x});
    check("cumsum", f1([last](const Tensor& t) { return cumsum(t, last); }), {x});
    check("cumprod", f1([](const Tensor& t) { return cumprod(t, -1); }),
          {signed_in(s, seed, 0.5, 1.5)});
    check("cumprod", f1([](const Tensor& t) { return cumprod(t, 0); }), {x});
    check("cummax", f1([](const Tensor& t) { return std::get<0>(cummax(t, -1)); }), {x});
    check("cummin", f1([](const Tensor& t) { return std::get<0>(cummin(t, 0)); }), {x});
    check("sort", f1([](const Tensor& t) { return std::get<0>(sort(t)); }), {x});
    check("sort", f1([](const Tensor& t) { return std::get<0>(sort(t, 0, true)); }), {x});
    check("topk", f1([](const Tensor& t) { return std::get<0>(topk(t, 2)); }), {x});
    check("topk", f1([](const Tensor& t) { return std::get<0>(topk(t, 1, 0, false)); }), {x});
  }
  const Tensor z = in({}, 5);
  check("cumsum", f1([](const Tensor& t) { return cumsum(t, 0); }), {z});
  check("cumprod", f1([](const Tensor& t) { return cumprod(t, 0); }), {z});
  check("sort", f1([](const Tensor& t) { return std::get<0>(sort(t, 0)); }), {z});
}

// ---------------------------------------------------------------- indexing family

TEST(GradcheckTest, GatherAndScatter) {
  for (uint64_t seed : kSeeds) {
    const Shape s = random_shape(seed, 2, 3, 2, 4);
    const int64_t d = int64_t(seed % s.size());
    Shape is = s;
    is[size_t(d)] = s[size_t(d)] + 1;  // more reads than rows: duplicates
    const Tensor x = in(s, seed);
    const Tensor dup = rand_index(is, s[size_t(d)], seed);
    check("gather", f1([d, dup](const Tensor& t) { return gather(t, d, dup); }), {x});
    check("take_along_dim", f1([d, dup](const Tensor& t) { return take_along_dim(t, dup, d); }),
          {x});
    check("take_along_dim",
          f1([dup](const Tensor& t) { return take_along_dim(t, dup, std::nullopt); }), {x});

    Shape us = s;
    us[size_t(d)] = std::max<int64_t>(1, s[size_t(d)] - 1);
    const Tensor uniq = unique_index(us, d, s[size_t(d)], seed);
    Shape src_s = us;
    for (int64_t& k : src_s) k += 1;  // src larger than the index: only its leading part is read
    const Tensor src = in(src_s, seed + 1);
    auto sc = [d, uniq](const Tensor& t, const Tensor& u) { return scatter(t, d, uniq, u); };
    check("scatter", f2(sc), {x, src});
    check("scatter", f1([d, uniq](const Tensor& t) { return scatter(t, d, uniq, 0.5); }), {x});
    Shape ds = is;
    const Tensor dsrc = in(ds, seed + 2);
    check("scatter_add",
          f2([d, dup](const Tensor& t, const Tensor& u) { return scatter_add(t, d, dup, u); }),
          {x, dsrc});
    for (const char* r : {"sum", "mean", "prod", "amax", "amin"})
      for (bool self : {true, false}) {
        const std::string name = std::string("scatter_reduce_") + r;
        const std::string red = r;
        check(name, f2([d, dup, red, self](const Tensor& t, const Tensor& u) {
                return scatter_reduce(t, d, dup, u, red, self);
              }),
              {red == "prod" ? signed_in(s, seed, 0.5, 1.5) : x,
               red == "prod" ? signed_in(ds, seed + 2, 0.5, 1.5) : dsrc},
              1e-7, 1e-6);
      }
  }
  // prod with zeros in the sources (one and two per group) and in self.
  const Tensor x = tensor<double>({0.5, 0, 1.5, -2, 0.7, 1.1}, {2, 3}).requires_grad_();
  const Tensor src = tensor<double>({0, 1.2, 0.9, -1.1, 0, 0}, {2, 3}).requires_grad_();
  const Tensor idx = tensor<int64_t>({0, 2, 1, 0, 2, 2}, {2, 3});
  for (bool self : {true, false})
    check("scatter_reduce_prod", f2([idx, self](const Tensor& t, const Tensor& u) {
            return scatter_reduce(t, 1, idx, u, "prod", self);
          }),
          {x, src});
}

TEST(GradcheckTest, IndexSelectAndIndexAdd) {
  for (uint64_t seed : kSeeds) {
    const Shape s = random_shape(seed, 1, 3, 2, 4);
    const int64_t d = int64_t(seed % s.size());
    const Tensor x = in(s, seed);
    const Tensor idx = rand_index({s[size_t(d)] + 2}, s[size_t(d)], seed);  // duplicates
    check("index_select", f1([d, idx](const Tensor& t) { return index_select(t, d, idx); }), {x});
    Shape ss = s;
    ss[size_t(d)] = idx.numel();
    check("index_add",
          f2([d, idx](const Tensor& t, const Tensor& u) { return index_add(t, d, idx, u, 0.5); }),
          {x, in(ss, seed + 1)});
    const Tensor base = const_in(s, seed + 2);  // only src requires grad
    check("index_add",
          f1([d, idx, base](const Tensor& u) { return index_add(base, d, idx, u, 2); }),
          {in(ss, seed + 3)});
  }
}

TEST(GradcheckTest, AdvancedIndexingAndMasks) {
  for (uint64_t seed : kSeeds) {
    const Shape s = random_shape(seed, 3, 3, 2, 4);
    const Tensor x = in(s, seed);
    const Tensor i0 = rand_index({5}, s[0], seed) - s[0] * (seed % 2 ? 1 : 0);  // negative too
    const Tensor i2 = rand_index({2, 1}, s[2], seed + 1);
    const Tensor i1 = rand_index({3}, s[1], seed + 2);
    check("index", f1([i0](const Tensor& t) { return index(t, {i0}); }), {x});
    check("index", f1([i1, i2](const Tensor& t) { return index(t, {Tensor(), i1, i2}); }), {x});
    check("index", f1([i0, i2](const Tensor& t) {
            return index(t, {i0.narrow(0, 0, 2), Tensor(), i2});
          }),
          {x});
    const Tensor mask = rand_mask({s[0], s[1]}, seed);
    check("index", f1([mask](const Tensor& t) { return index(t, {mask}); }), {x});
    // index_put: accumulate with duplicates; plain with distinct rows.
    Shape vs{5, s[1], s[2]};
    check("index_put",
          f2([i0](const Tensor& t, const Tensor& v) { return index_put(t, {i0}, v, true); }),
          {x, in(vs, seed + 3)});
    const Tensor rows = unique_index({s[0] - 1}, 0, s[0], seed);
    check("index_put",
          f2([rows](const Tensor& t, const Tensor& v) { return index_put(t, {rows}, v); }),
          {x, in({s[2]}, seed + 4)});  // values broadcast
    check("index_put", f2([i1, i2](const Tensor& t, const Tensor& v) {
            return index_put(t, {Tensor(), i1, i2}, v, true);
          }),
          {x, in({s[0], 2, 3}, seed + 5)});
    const Tensor m3 = rand_mask(s, seed + 6);
    check("masked_select", f1([m3](const Tensor& t) { return masked_select(t, m3); }), {x});
    const Tensor mb = rand_mask({s[2]}, seed + 7);  // broadcast mask
    check("masked_select", f1([mb](const Tensor& t) { return masked_select(t, mb); }), {x});
    check("masked_fill", f1([m3](const Tensor& t) { return masked_fill(t, m3, 0.5); }), {x});
    check("masked_fill",
          f2([mb](const Tensor& t, const Tensor& v) { return masked_fill(t, mb, v); }),
          {x, in({}, seed + 8)});
  }
}

// ---------------------------------------------------------------- the checker itself

TEST(GradcheckTest, ReportsAWrongGradient) {
  // d(x * detach(x))/dx is x to autodiff but 2x to finite differences.
  const std::string r =
      test::gradcheck(f1([](const Tensor& t) { return t * t.detach(); }), {in({2, 2}, 1, 0.5, 1)});
  EXPECT_NE(r.find("input 0 [2, 2] element [0, 0]"), std::string::npos) << r;
  EXPECT_NE(r.find("analytic"), std::string::npos) << r;
  EXPECT_NE(test::gradcheck(f1([](const Tensor& t) { return t; }), {const_in({2}, 1)})
                .find("no input requires grad"),
            std::string::npos);
  EXPECT_EQ(test::gradcheck(f1([](const Tensor& t) { return t * t; }), {in({3}, 2)}), "");
  EXPECT_EQ(random_shape(7), random_shape(7));
  // gradgradcheck: checkpoint's gradient is right but has no history (checkpointing is first
  // order only), so its second derivative reads as 0 where finite differences give 6 x.
  const GradFn cube = f1([](const Tensor& t) {
    return autograd::checkpoint(
        [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] * v[0] * v[0]}; },
        {t})[0];
  });
  EXPECT_EQ(test::gradcheck(cube, {in({3}, 3, 0.5, 1)}), "");
  const std::string r2 = test::gradgradcheck(cube, {in({3}, 3, 0.5, 1)});
  EXPECT_NE(r2.find("gradgradcheck failed"), std::string::npos) << r2;
  EXPECT_NE(r2.find("analytic 0 vs numeric"), std::string::npos) << r2;
  EXPECT_EQ(test::gradgradcheck(f1([](const Tensor& t) { return t * t * t; }), {in({3}, 2)}), "");
  const Shape s = random_shape(11, 2, 2, 3, 3);
  EXPECT_EQ(s, (Shape{3, 3}));
}
