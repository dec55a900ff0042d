// Finite-difference gradient checking (see gradcheck.h).
#include "gradcheck.h"

#include <cmath>
#include <random>
#include <sstream>

namespace ember::test {

namespace {

std::string index_str(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    idx[k] = shape[k] ? flat % shape[k] : 0;
    flat = shape[k] ? flat / shape[k] : 0;
  }
  return shape_str(Shape(idx.begin(), idx.end()));
}

// sum(out * w) in f64 on the host.
double weighted_sum(const Tensor& out, const std::vector<double>& w) {
  const std::vector<double> v = out.to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) s += v[i] * w[i];
  return s;
}

}  // namespace

std::string gradcheck(const GradFn& fn, const std::vector<Tensor>& inputs, double eps, double atol,
                      double rtol) {
  std::ostringstream msg;
  // Fresh leaves, so the check never depends on (or changes) the caller's graph.
  std::vector<Tensor> leaves;
  std::vector<size_t> grad_pos;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    if (!in.defined()) {
      leaves.push_back(in);
      continue;
    }
    Tensor leaf = in.detach().clone();
    if (in.requires_grad()) {
      if (in.dtype() != DType::f64)
        return "gradcheck: input " + std::to_string(i) + " requires grad but is " +
               dtype_name(in.dtype()) + " (use f64)";
      leaf.requires_grad_();
      grad_pos.push_back(i);
    }
    leaves.push_back(leaf);
  }
  if (grad_pos.empty()) return "gradcheck: no input requires grad";

  const Tensor out = fn(leaves);
  if (!out.defined()) return "gradcheck: fn returned an undefined tensor";
  if (!is_floating(out.dtype()))
    return std::string("gradcheck: fn returned a non-floating tensor (") + dtype_name(out.dtype()) +
           ")";
  std::mt19937_64 rng(0x5eed);
  std::uniform_real_distribution<double> uni(0.5, 1.5);
  std::vector<double> w(size_t(out.numel()));
  for (double& x : w) x = uni(rng) * (rng() & 1 ? 1 : -1);

  std::vector<Tensor> grad_inputs;
  for (size_t p : grad_pos) grad_inputs.push_back(leaves[p]);
  std::vector<Tensor> analytic;
  if (out.requires_grad()) {
    const Tensor wt = from_vector<double>(w, out.shape(), out.device()).to(out.dtype());
    const Tensor loss = sum(out * wt);
    analytic = autograd::grad({loss}, grad_inputs, {}, false, true);
  } else {
    analytic.resize(grad_inputs.size());  // no graph: every gradient must be zero
  }

  NoGradGuard no_grad;
  int64_t failures = 0;
  for (size_t k = 0; k < grad_pos.size(); ++k) {
    const size_t p = grad_pos[k];
    const Tensor& x = leaves[p];
    Tensor a = analytic[k];
    if (!a.defined()) a = zeros_like(x);
    if (a.shape() != x.shape() || a.dtype() != x.dtype()) {
      msg << "input " << p << ": gradient is " << dtype_name(a.dtype()) << " "
          << shape_str(a.shape()) << ", expected " << dtype_name(x.dtype()) << " "
          << shape_str(x.shape()) << "\n";
      ++failures;
      continue;
    }
    const std::vector<double> av = a.contiguous().to_vector<double>();
    std::vector<double> xv = x.contiguous().to_vector<double>();
    int64_t bad = 0;
    for (size_t e = 0; e < xv.size(); ++e) {
      const double orig = xv[e];
      std::vector<Tensor> args = leaves;
      xv[e] = orig + eps;
      args[p] = from_vector<double>(xv, x.shape(), x.device());
      const double plus = weighted_sum(fn(args), w);
      xv[e] = orig - eps;
      args[p] = from_vector<double>(xv, x.shape(), x.device());
      const double minus = weighted_sum(fn(args), w);
      xv[e] = orig;
      const double numeric = (plus - minus) / (2 * eps);
      const double diff = std::abs(av[e] - numeric);
      if (!(diff <= atol + rtol * std::abs(numeric))) {
        if (bad < 4)
          msg << "input " << p << " " << shape_str(x.shape()) << " element "
              << index_str(int64_t(e), x.shape()) << " (value " << orig << "): analytic " << av[e]
              << " vs numeric " << numeric << " (|diff| " << diff << ")\n";
        ++bad;
      }
    }
    if (bad > 4) msg << "input " << p << ": " << bad << " of " << xv.size() << " elements differ\n";
    failures += bad;
  }
  return failures ? "gradcheck failed:\n" + msg.str() : std::string();
}

std::string gradgradcheck(const GradFn& fn, const std::vector<Tensor>& inputs, double eps,
                          double atol, double rtol) {
  std::vector<size_t> grad_pos;
  std::vector<Tensor> args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined() && inputs[i].requires_grad()) grad_pos.push_back(i);
    args.push_back(inputs[i]);
  }
  if (grad_pos.empty()) return "gradgradcheck: no input requires grad";
  Tensor out;
  {
    NoGradGuard no_grad;
    std::vector<Tensor> plain;
    for (const Tensor& t : inputs) plain.push_back(t.defined() ? t.detach() : t);
    out = fn(plain);
  }
  if (!out.defined()) return "gradgradcheck: fn returned an undefined tensor";
  if (out.dtype() != DType::f64)
    return std::string("gradgradcheck: fn returned ") + dtype_name(out.dtype()) + " (use f64)";
  // v: the output's gradient, a further input of the checked function.
  args.push_back(random_input(out.shape(), 0x9a9a + uint64_t(out.numel()), -1.0, 1.0, true));
  const GradFn first = [fn, grad_pos](const std::vector<Tensor>& a) {
    EnableGradGuard grad_on;  // gradcheck runs its finite differences under NoGradGuard
    std::vector<Tensor> xs(a.begin(), a.end() - 1), wrt;
    for (size_t p : grad_pos) {
      // gradcheck's leaves already require grad (its analytic pass); perturbed copies do not.
      if (!xs[p].requires_grad()) xs[p] = xs[p].detach().requires_grad_();
      wrt.push_back(xs[p]);
    }
    const Tensor y = fn(xs);
    std::vector<Tensor> g(wrt.size());
    if (y.requires_grad()) g = autograd::grad({y}, wrt, {a.back()}, std::nullopt, true, true);
    std::vector<Tensor> flat;
    for (size_t k = 0; k < wrt.size(); ++k)
      flat.push_back((g[k].defined() ? g[k] : zeros_like(wrt[k])).reshape({-1}));
    return cat(flat, 0);
  };
  const std::string r = gradcheck(first, args, eps, atol, rtol);
  return r.empty() ? r : "gradgrad" + r.substr(4);
}

Shape random_shape(uint64_t seed, int64_t min_rank, int64_t max_rank, int64_t min_size,
                   int64_t max_size) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 1);
  const int64_t rank = min_rank + int64_t(rng() % uint64_t(max_rank - min_rank + 1));
  Shape s;
  for (int64_t k = 0; k < rank; ++k)
    s.push_back(min_size + int64_t(rng() % uint64_t(max_size - min_size + 1)));
  return s;
}

Tensor random_input(const Shape& shape, uint64_t seed, double lo, double hi, bool grad) {
  std::mt19937_64 rng(seed * 0xD1B54A32D192ED03ull + 7);
  std::uniform_real_distribution<double> uni(lo, hi);
  std::vector<double> v(size_t(numel_of(shape)));
  for (double& x : v) x = uni(rng);
  Tensor t = from_vector<double>(v, shape);
  if (grad) t.requires_grad_();
  return t;
}

}  // namespace ember::test
