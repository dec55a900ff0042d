// Random tensors from the per-device Philox generator.
#include "ember/ops/elementwise.h"
#include "ember/ops/indexing.h"
#include "ember/ops/reduce.h"
#include "tensor/internal.h"
#include "tensor/overlap.h"
#include "tensor/suggest_format.h"

namespace ember {

using detail::make_tensor;

namespace {
void draw(Tensor& t, ir::RandomDist dist, double p0, double p1, const Tensor& prob = Tensor()) {
  Backend& b = backend_for(t.device());
  const uint64_t off = b.next_random_offset(uint64_t(t.numel()));
  if (t.is_contiguous()) {
    run(ir::Random{dist, t, p0, p1, b.seed(), off, prob});
  } else {
    Tensor tmp = make_tensor(t.shape(), t.dtype(), t.device());
    run(ir::Random{dist, tmp, p0, p1, b.seed(), off, prob});
    t.copy_(tmp);
  }
}
}  // namespace

void manual_seed(uint64_t seed) { seed_all_backends(seed); }
void manual_seed(const Device& device, uint64_t seed) { backend_for(device).set_seed(seed); }

RandomState random_state(const Device& device) {
  const Backend& b = backend_for(device);
  return RandomState{b.seed(), b.random_offset()};
}
void set_random_state(const Device& device, const RandomState& state) {
  backend_for(device).set_random_state(state.seed, state.offset);
}

Tensor& Tensor::uniform_(double lo, double hi) {
  detail::check_floating(*this, "uniform_");
  detail::check_inplace(*this, {}, "uniform_");
  if (!(lo <= hi)) EMBER_FAIL("uniform_", "expects from <= to, got from=", lo, " to=", hi);
  draw(*this, ir::RandomDist::uniform, lo, hi);
  return *this;
}

Tensor& Tensor::normal_(double mean, double std) {
  detail::check_floating(*this, "normal_");
  detail::check_inplace(*this, {}, "normal_");
  if (!(std >= 0)) EMBER_FAIL("normal_", "expects std >= 0, got ", std);
  draw(*this, ir::RandomDist::normal, mean, std);
  return *this;
}

Tensor rand(Shape shape, TensorOptions o) {
  Tensor t = make_tensor(shape, o.dtype_, o.device_, false, "rand");
  return t.uniform_(0, 1);
}

Tensor randn(Shape shape, TensorOptions o) {
  Tensor t = make_tensor(shape, o.dtype_, o.device_, false, "randn");
  return t.normal_(0, 1);
}

Tensor randint(int64_t low, int64_t high, Shape shape, TensorOptions o) {
  if (high <= low) EMBER_FAIL("randint", "expects low < high, got low=", low, " high=", high);
  if (is_bool(o.dtype_)) EMBER_FAIL("randint", "dtype bool is not supported");
  Tensor t = make_tensor(shape, o.dtype_, o.device_, false, "randint");
  draw(t, ir::RandomDist::randint, double(low), double(high));
  return t;
}

Tensor bernoulli(const Tensor& p) {
  detail::check_floating(p, "bernoulli");
  Tensor t = make_tensor(p.shape(), p.dtype(), p.device());
  if (p.numel()) {
    // NaN is outside [0, 1] too. Checked on the device (read at the next sync on GPUs).
    const Tensor bad = logical_not(logical_and(ge(p, Scalar(0)), le(p, Scalar(1))));
    const Tensor any_bad = any(bad);
    const Shape shape = p.shape();
    detail::check_device_data(p.device(), [=] {
      if (!any_bad.item<bool>()) return;
      const double v = masked_select(p, bad).to(DType::f64).to_vector<double>()[0];
      EMBER_FAIL("bernoulli", "probabilities must be in [0, 1], got ", v, " (shape ",
                 shape_str(shape), ")");
    });
  }
  draw(t, ir::RandomDist::bernoulli, 0, 0, p);
  return t;
}

Tensor bernoulli(Shape shape, double p, TensorOptions o) {
  if (!(p >= 0 && p <= 1)) EMBER_FAIL("bernoulli", "p must be in [0, 1], got ", p);
  Tensor t = make_tensor(shape, o.dtype_, o.device_, false, "bernoulli");
  draw(t, ir::RandomDist::bernoulli, p, 0);
  return t;
}

Tensor randperm(int64_t n, TensorOptions o) {
  if (n < 0) EMBER_FAIL("randperm", "n must be non-negative, got ", n);
  // Sort random keys: the same permutation on every backend for a given seed.
  Tensor keys = make_tensor({n}, DType::f64, o.device_);
  draw(keys, ir::RandomDist::uniform, 0, 1);
  Tensor values = make_tensor({n}, DType::f64, o.device_);
  Tensor idx = make_tensor({n}, DType::i64, o.device_);
  run(ir::Sort{keys, 0, false, values, idx});
  return detail::cast(idx, o.dtype_);
}

// Laid out as t (torch's memory_format=preserve), with the values rand/randn give its shape.
Tensor rand_like(const Tensor& t) {
  return rand(t.shape(), {t.dtype(), t.device()}).contiguous(detail::preserve_format(t));
}
Tensor randn_like(const Tensor& t) {
  return randn(t.shape(), {t.dtype(), t.device()}).contiguous(detail::preserve_format(t));
}

}  // namespace ember
