// Higher-order gradients (backward / autograd::grad with create_graph): gradients that carry
// history, a Hessian-vector product against the explicit Hessian of a small MLP, and gradients of
// gradients through the cpu backend's fused ops (conv, pooling, softmax, norms) against the
// reference backend's composites. The second-order gradchecks of every op are in the gradcheck
// tables (gradcheck_test.cpp, gradcheck_nn*_test.cpp), which run gradgradcheck too.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "ember/autograd.h"
#include "ember/ember.h"
#include "gradcheck.h"

namespace ember {
namespace {

namespace F = nn::functional;

std::vector<double> vec(const Tensor& t) { return t.detach().contiguous().to_vector<double>(); }

void expect_near(const std::vector<double>& a, const std::vector<double>& b, double atol,
                 double rtol, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::abs(a[i] - b[i]) <= atol + rtol * std::abs(b[i])) && bad++ < 4)
      ADD_FAILURE() << what << " element " << i << ": " << a[i] << " vs " << b[i];
}

TEST(HigherOrderTest, BackwardCreateGraphGivesAGradWithHistory) {
  // y = sum(x^3): x.grad = 3 x^2 has a grad_fn; d(sum(x.grad))/dx = 6 x.
  Tensor x = from_vector<double>({1.0, -2.0, 0.5}, {3}).requires_grad_();
  Tensor y = (x * x * x).sum();
  y.backward(Tensor(), std::nullopt, true);
  const Tensor g = x.grad();
  EXPECT_TRUE(g.requires_grad());
  EXPECT_NE(g.grad_fn_name(), "");
  expect_near(vec(g), {3.0, 12.0, 0.75}, 1e-12, 0, "x.grad");
  x.set_grad(Tensor());
  g.sum().backward();
  expect_near(vec(x.grad()), {6.0, -12.0, 3.0}, 1e-12, 0, "d sum(x.grad)/dx");
  EXPECT_FALSE(x.grad().requires_grad());  // a plain backward leaves no history
}

TEST(HigherOrderTest, WithoutCreateGraphGradientsHaveNoHistory) {
  Tensor x = from_vector<double>({1.0, 2.0}, {2}).requires_grad_();
  Tensor y = exp(x).sum();
  const Tensor g = autograd::grad({y}, {x})[0];
  EXPECT_FALSE(g.requires_grad());
  (x * x).sum().backward();
  EXPECT_FALSE(x.grad().requires_grad());
}

TEST(HigherOrderTest, SavedOutputsCarryTheirNodesHistory) {
  // exp, tanh, sigmoid and softmax save their output; the second derivative goes through it.
  const Tensor x0 = from_vector<double>({0.3, -0.7, 1.1}, {3});
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> f;
    std::function<double(double)> d2;  // f'' per element (elementwise cases)
  };
  const std::vector<Case> cases = {
      {"exp", [](const Tensor& x) { return exp(x); }, [](double v) { return std::exp(v); }},
      {"tanh", [](const Tensor& x) { return tanh(x); },
       [](double v) {
         const double t = std::tanh(v);
         return -2 * t * (1 - t * t);
       }},
      {"sigmoid", [](const Tensor& x) { return x.sigmoid(); },
       [](double v) {
         const double s = 1 / (1 + std::exp(-v));
         return s * (1 - s) * (1 - 2 * s);
       }},
  };
  for (const Case& c : cases) {
    Tensor x = x0.clone().requires_grad_();
    Tensor g = autograd::grad({c.f(x).sum()}, {x}, {}, std::nullopt, false, true)[0];
    Tensor h = autograd::grad({g.sum()}, {x})[0];
    std::vector<double> want;
    for (double v : vec(x0)) want.push_back(c.d2(v));
    expect_near(vec(h), want, 1e-12, 1e-12, c.name);
  }
  // softmax: the Hessian-vector product of sum(softmax(x) * w) against finite differences.
  Tensor x = x0.clone().requires_grad_();
  const Tensor w = from_vector<double>({0.5, -1.0, 2.0}, {3});
  const Tensor v = from_vector<double>({1.0, 0.25, -0.5}, {3});
  Tensor g = autograd::grad({(F::softmax(x, 0) * w).sum()}, {x}, {}, std::nullopt, false, true)[0];
  Tensor hv = autograd::grad({(g * v).sum()}, {x})[0];
  auto grad_at = [&](const Tensor& at) {
    Tensor xa = at.clone().requires_grad_();
    return vec(autograd::grad({(F::softmax(xa, 0) * w).sum()}, {xa})[0]);
  };
  const double eps = 1e-6;
  const std::vector<double> gp = grad_at(x0 + v * eps), gm = grad_at(x0 - v * eps);
  std::vector<double> fd(3);
  for (size_t i = 0; i < 3; ++i) fd[i] = (gp[i] - gm[i]) / (2 * eps);
  expect_near(vec(hv), fd, 1e-8, 1e-6, "softmax Hv");
}

TEST(HigherOrderTest, RetainGraphDefaultsToCreateGraph) {
  Tensor x = from_vector<double>({0.5, 1.5}, {2}).requires_grad_();
  Tensor y = (exp(x) * x).sum();
  Tensor g1 = autograd::grad({y}, {x}, {}, std::nullopt, false, true)[0];
  Tensor g2 = autograd::grad({y}, {x})[0];  // the graph was retained
  expect_near(vec(g1), vec(g2), 0, 0, "second grad");
  // create_graph with retain_graph=false frees the first graph: differentiating the gradient
  // then needs it again and fails, as torch.
  Tensor z = exp(x).sum();
  Tensor gz = autograd::grad({z}, {x}, {}, false, false, true)[0];
  try {
    autograd::grad({gz.sum()}, {x});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a second time"), std::string::npos) << e.what();
  }
}

TEST(HigherOrderTest, GradOutputsWithHistory) {
  // d/dv of <d<x*x, v>/dx, u> = 2 x u: the gradient is differentiable in grad_outputs.
  Tensor x = from_vector<double>({1.0, -3.0}, {2}).requires_grad_();
  Tensor v = from_vector<double>({0.5, 2.0}, {2}).requires_grad_();
  const Tensor u = from_vector<double>({1.0, 4.0}, {2});
  Tensor g = autograd::grad({x * x}, {x}, {v}, std::nullopt, false, true)[0];
  auto hs = autograd::grad({(g * u).sum()}, {x, v});
  expect_near(vec(hs[0]), {2 * 0.5 * 1.0, 2 * 2.0 * 4.0}, 1e-12, 0, "d/dx");
  expect_near(vec(hs[1]), {2 * 1.0 * 1.0, 2 * -3.0 * 4.0}, 1e-12, 0, "d/dv");
}

TEST(HigherOrderTest, ThirdOrder) {
  Tensor x = from_vector<double>({0.4, -1.2}, {2}).requires_grad_();
  Tensor g1 = autograd::grad({sin(x).sum()}, {x}, {}, std::nullopt, false, true)[0];
  Tensor g2 = autograd::grad({g1.sum()}, {x}, {}, std::nullopt, false, true)[0];
  Tensor g3 = autograd::grad({g2.sum()}, {x})[0];
  expect_near(vec(g3), {-std::cos(0.4), -std::cos(-1.2)}, 1e-12, 0, "sin'''");
}

// ---------------------------------------------------------------- Hessian-vector product

struct Mlp {
  Tensor w1, b1, w2, b2;
  std::vector<Tensor> params() const { return {w1, b1, w2, b2}; }
};

// loss = mse(tanh(x W1^T + b1) W2^T + b2, t), a 3 -> 4 -> 2 tanh MLP on a batch of 5.
Tensor mlp_loss(const std::vector<Tensor>& p, const Tensor& x, const Tensor& t) {
  Tensor h = tanh(matmul(x, p[0].t()) + p[1]);
  return F::mse_loss(matmul(h, p[2].t()) + p[3], t);
}

TEST(HigherOrderTest, HessianVectorProductOfAnMlp) {
  const Mlp m{test::random_input({4, 3}, 1), test::random_input({4}, 2),
              test::random_input({2, 4}, 3), test::random_input({2}, 4)};
  const Tensor x = test::random_input({5, 3}, 5, -2, 2, false);
  const Tensor t = test::random_input({5, 2}, 6, -1, 1, false);
  const std::vector<Tensor> p = m.params();
  std::vector<int64_t> sizes;
  int64_t n = 0;
  for (const Tensor& q : p) {
    sizes.push_back(q.numel());
    n += q.numel();
  }
  // Flat gradient at flat parameters theta (first order only).
  auto flat_grad = [&](const std::vector<double>& theta) {
    std::vector<Tensor> q;
    int64_t off = 0;
    for (size_t k = 0; k < p.size(); ++k) {
      std::vector<double> part(theta.begin() + off, theta.begin() + off + sizes[k]);
      q.push_back(from_vector<double>(part, p[k].shape()).requires_grad_());
      off += sizes[k];
    }
    std::vector<double> out;
    for (const Tensor& g : autograd::grad({mlp_loss(q, x, t)}, q))
      for (double v : vec(g)) out.push_back(v);
    return out;
  };
  std::vector<double> theta;
  for (const Tensor& q : p)
    for (double v : vec(q)) theta.push_back(v);
  // The explicit Hessian by central differences of the gradient, column by column.
  const double eps = 1e-5;
  std::vector<double> hess(size_t(n * n));
  for (int64_t j = 0; j < n; ++j) {
    std::vector<double> tp = theta, tm = theta;
    tp[size_t(j)] += eps;
    tm[size_t(j)] -= eps;
    const std::vector<double> gp = flat_grad(tp), gm = flat_grad(tm);
    for (int64_t i = 0; i < n; ++i)
      hess[size_t(i * n + j)] = (gp[size_t(i)] - gm[size_t(i)]) / (2 * eps);
  }
  std::vector<double> vflat(static_cast<size_t>(n));
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> uni(-1, 1);
  for (double& v : vflat) v = uni(rng);
  std::vector<double> want(static_cast<size_t>(n), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) want[size_t(i)] += hess[size_t(i * n + j)] * vflat[size_t(j)];

  // H v = d <grad(loss), v> / d theta.
  std::vector<Tensor> q;
  for (const Tensor& e : p) q.push_back(e.detach().clone().requires_grad_());
  const std::vector<Tensor> g =
      autograd::grad({mlp_loss(q, x, t)}, q, {}, std::nullopt, false, true);
  Tensor dot_gv = zeros({}, {DType::f64});
  int64_t off = 0;
  for (size_t k = 0; k < g.size(); ++k) {
    std::vector<double> part(vflat.begin() + off, vflat.begin() + off + sizes[k]);
    dot_gv = dot_gv + (g[k] * from_vector<double>(part, g[k].shape())).sum();
    off += sizes[k];
  }
  std::vector<double> hv;
  for (const Tensor& e : autograd::grad({dot_gv}, q))
    for (double v : vec(e)) hv.push_back(v);
  expect_near(hv, want, 1e-7, 1e-5, "H v");
  // The Hessian is symmetric and its rows by autograd (H e_i) match the finite differences.
  for (int64_t i = 0; i < n; i += 5) {
    std::vector<Tensor> qi;
    for (const Tensor& e : p) qi.push_back(e.detach().clone().requires_grad_());
    const std::vector<Tensor> gi =
        autograd::grad({mlp_loss(qi, x, t)}, qi, {}, std::nullopt, false, true);
    int64_t k = 0, rest = i;
    while (rest >= sizes[size_t(k)]) rest -= sizes[size_t(k++)];
    const Tensor gik = gi[size_t(k)].reshape({-1}).narrow(0, rest, 1).sum();
    std::vector<double> row;
    const std::vector<Tensor> hi = autograd::grad({gik}, qi, {}, std::nullopt, true);
    for (size_t c = 0; c < hi.size(); ++c)
      for (double v : hi[c].defined() ? vec(hi[c]) : std::vector<double>(size_t(sizes[c]), 0.0))
        row.push_back(v);
    std::vector<double> fd_row(hess.begin() + i * n, hess.begin() + (i + 1) * n);
    expect_near(row, fd_row, 1e-7, 1e-5, "Hessian row " + std::to_string(i));
  }
}

// ---------------------------------------------------------------- fused ops on cpu vs ref

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

struct SecondOrder {
  std::string grad_fn;                    // the forward's node (tells a fused op was run)
  std::vector<std::vector<double>> g, h;  // first gradients, then d<g, u>/d(inputs)
};

// f32 on `dev`: g = d<f(ins), v>/d(ins) with create_graph, h = d<g, u>/d(ins). Inputs listed in
// `grads` require grad; the others (indices, constants) are passed as given.
SecondOrder second_order(const Fn& f, const std::vector<Tensor>& host,
                         const std::vector<bool>& grads, const Device& dev) {
  std::vector<Tensor> ins, wrt;
  for (size_t i = 0; i < host.size(); ++i) {
    Tensor t = host[i].to(dev);
    if (grads[i]) {
      t.requires_grad_();
      wrt.push_back(t);
    }
    ins.push_back(t);
  }
  const Tensor y = f(ins);
  SecondOrder r;
  r.grad_fn = y.grad_fn_name();
  // v requires grad too: for an op linear in x, h is then the gradient's derivative in v.
  Tensor v = test::random_input(y.shape(), 11, -1, 1, false).to(y.dtype()).to(dev);
  v.requires_grad_();
  const std::vector<Tensor> g = autograd::grad({y}, wrt, {v}, std::nullopt, true, true);
  Tensor s = zeros({}, {y.dtype(), dev});
  for (size_t k = 0; k < g.size(); ++k) {
    r.g.push_back(vec(g[k]));
    const Tensor u = test::random_input(wrt[k].shape(), 20 + k, -1, 1, false).to(y.dtype()).to(dev);
    if (g[k].requires_grad()) s = s + (g[k] * u).sum();
  }
  if (s.requires_grad()) {
    std::vector<Tensor> all = wrt;
    all.push_back(v);
    const std::vector<Tensor> h = autograd::grad({s}, all, {}, std::nullopt, true);
    for (size_t k = 0; k < h.size(); ++k)
      r.h.push_back(h[k].defined() ? vec(h[k]) : std::vector<double>(size_t(all[k].numel()), 0.0));
  }
  return r;
}

Tensor f32(const Shape& s, uint64_t seed, double lo = -1, double hi = 1) {
  return test::random_input(s, seed, lo, hi, false).to(DType::f32);
}

void compare_cpu_ref(const std::string& name, const Fn& f, const std::vector<Tensor>& host,
                     const std::vector<bool>& grads, const std::string& cpu_node) {
  SCOPED_TRACE(name);
  const SecondOrder c = second_order(f, host, grads, Device::cpu());
  const SecondOrder r = second_order(f, host, grads, Device::ref());
  if (!cpu_node.empty()) EXPECT_EQ(c.grad_fn, cpu_node);  // the fused op ran on cpu
  ASSERT_EQ(c.g.size(), r.g.size());
  for (size_t k = 0; k < c.g.size(); ++k) expect_near(c.g[k], r.g[k], 1e-5, 1e-4, "g");
  ASSERT_EQ(c.h.size(), r.h.size());
  ASSERT_FALSE(c.h.empty());
  for (size_t k = 0; k < c.h.size(); ++k) expect_near(c.h[k], r.h[k], 1e-5, 1e-4, "h");
}

TEST(HigherOrderTest, FusedOpsOnCpuMatchTheReferenceComposites) {
  const std::vector<bool> all3 = {true, true, true};
  compare_cpu_ref(
      "matmul", [](const std::vector<Tensor>& v) { return tanh(matmul(v[0], v[1])); },
      {f32({3, 4}, 1), f32({4, 2}, 2)}, {true, true}, "");
  // Through a non-linearity so the second derivative in x is non-zero.
  compare_cpu_ref(
      "conv2d",
      [](const std::vector<Tensor>& v) {
        return tanh(F::conv2d(v[0], v[1], v[2], {2, 1}, {1, 0}));
      },
      {f32({2, 3, 6, 5}, 3), f32({4, 3, 3, 2}, 4), f32({4}, 5)}, all3, "");
  compare_cpu_ref(
      "conv2d (fused node)",
      [](const std::vector<Tensor>& v) { return F::conv2d(v[0], v[1], v[2], {1}, {1}); },
      {f32({2, 3, 5, 5}, 6), f32({2, 3, 3, 3}, 7), f32({2}, 8)}, all3, "ConvolutionBackward");
  compare_cpu_ref(
      "conv2d squared",
      [](const std::vector<Tensor>& v) {
        const Tensor y = F::conv2d(v[0], v[1], v[2], {1}, {1});
        return y * y;
      },
      {f32({2, 3, 5, 5}, 9), f32({2, 3, 3, 3}, 10), f32({2}, 11)}, all3, "");
  compare_cpu_ref(
      "conv_transpose2d",
      [](const std::vector<Tensor>& v) {
        return tanh(F::conv_transpose2d(v[0], v[1], v[2], {2}, {1}));
      },
      {f32({2, 3, 4, 4}, 12), f32({3, 2, 3, 3}, 13), f32({2}, 14)}, all3, "");
  compare_cpu_ref(
      "max_pool2d",
      [](const std::vector<Tensor>& v) { return F::max_pool2d(v[0] * v[0], {2}, {2}); },
      {f32({2, 3, 6, 6}, 15)}, {true}, "");
  compare_cpu_ref(
      "max_pool2d (fused node)",
      [](const std::vector<Tensor>& v) { return F::max_pool2d(v[0], {3}, {2}, {1}); },
      {f32({2, 3, 7, 6}, 16)}, {true}, "MaxPoolBackward");
  compare_cpu_ref(
      "avg_pool2d (fused node)",
      [](const std::vector<Tensor>& v) { return F::avg_pool2d(v[0], {3}, {2}, {1}); },
      {f32({2, 3, 7, 6}, 17)}, {true}, "AvgPoolBackward");
  compare_cpu_ref(
      "avg_pool2d", [](const std::vector<Tensor>& v) { return tanh(F::avg_pool2d(v[0], {2})); },
      {f32({2, 2, 6, 4}, 18)}, {true}, "");
  compare_cpu_ref(
      "adaptive pools",
      [](const std::vector<Tensor>& v) {
        return tanh(F::adaptive_avg_pool2d(v[0], {3, 2})) +
               F::adaptive_max_pool2d(v[0] * v[0], {3, 2});
      },
      {f32({2, 2, 7, 5}, 19)}, {true}, "");
  compare_cpu_ref(
      "interpolate",
      [](const std::vector<Tensor>& v) {
        return tanh(F::interpolate(v[0], {5, 7}, {}, "bilinear", false));
      },
      {f32({2, 2, 3, 4}, 20)}, {true}, "");
  compare_cpu_ref(
      "softmax (fused node)", [](const std::vector<Tensor>& v) { return F::softmax(v[0], -1); },
      {f32({4, 5}, 21, -2, 2)}, {true}, "");
  compare_cpu_ref(
      "log_softmax (fused node)",
      [](const std::vector<Tensor>& v) { return F::log_softmax(v[0], 1); },
      {f32({4, 5}, 22, -2, 2)}, {true}, "");
  compare_cpu_ref(
      "layer_norm (fused node)",
      [](const std::vector<Tensor>& v) { return F::layer_norm(v[0], {6}, v[1], v[2]); },
      {f32({3, 6}, 23, -2, 2), f32({6}, 24), f32({6}, 25)}, all3, "LayerNormBackward");
  compare_cpu_ref(
      "batch_norm",
      [](const std::vector<Tensor>& v) {
        return F::batch_norm(v[0], Tensor(), Tensor(), v[1], v[2], true);
      },
      {f32({4, 3, 2, 2}, 26, -2, 2), f32({3}, 27), f32({3}, 28)}, all3, "");
  compare_cpu_ref(
      "group_norm", [](const std::vector<Tensor>& v) { return F::group_norm(v[0], 2, v[1], v[2]); },
      {f32({2, 4, 3, 2}, 29, -2, 2), f32({4}, 30), f32({4}, 31)}, all3, "");
  const Tensor target = from_vector<int64_t>({0, 3, 1, 4}, {4});
  compare_cpu_ref(
      "cross_entropy", [](const std::vector<Tensor>& v) { return F::cross_entropy(v[0], v[1]); },
      {f32({4, 5}, 32, -2, 2), target}, {true, false}, "");
}

}  // namespace
}  // namespace ember
