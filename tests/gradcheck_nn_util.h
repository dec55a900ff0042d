// Helpers shared by the nn gradcheck tests (gradcheck_nn_test.cpp,
// gradcheck_nn_composite_test.cpp): a counted gradcheck and input generators that keep finite
// differences away from kinks and ties.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gradcheck.h"

namespace ember::test::nn_gc {

struct Counts {
  std::set<std::string> ops;
  int64_t checks = 0;
};
inline Counts& counts() {
  static Counts c;
  return c;
}

/// One gradcheck, counted under `op`; `what` names the case in the failure message.
inline void check(const std::string& op, const std::string& what, const GradFn& fn,
                  const std::vector<Tensor>& inputs, double atol = 1e-5, double rtol = 1e-3) {
  counts().ops.insert(op);
  ++counts().checks;
  std::string msg;
  try {
    msg = gradcheck(fn, inputs, 1e-6, atol, rtol);
  } catch (const std::exception& e) {
    msg = std::string("threw: ") + e.what();
  }
  EXPECT_TRUE(msg.empty()) << op << " (" << what << "): " << msg;
  // The recorded backward of the backward (create_graph), as torch's gradgradcheck.
  try {
    msg = gradgradcheck(fn, inputs, 1e-6, atol, rtol);
  } catch (const std::exception& e) {
    msg = std::string("threw: ") + e.what();
  }
  EXPECT_TRUE(msg.empty()) << op << " (" << what << ", second order): " << msg;
}

/// f64 input in [lo, hi) that requires grad.
inline Tensor rnd(const Shape& s, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  return random_input(s, seed, lo, hi, true);
}
/// f64 constant (no grad).
inline Tensor cst(const Shape& s, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  return random_input(s, seed, lo, hi, false);
}

/// f64 input whose values are pairwise at least 1/numel apart in [-1, 1] (no ties for max).
inline Tensor distinct(const Shape& s, uint64_t seed) {
  const int64_t n = numel_of(s);
  std::vector<int64_t> perm(size_t(n), 0);
  std::iota(perm.begin(), perm.end(), int64_t(0));
  std::mt19937_64 rng(seed);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[size_t(i)] = -1.0 + 2.0 * (double(perm[size_t(i)]) + 0.5) / double(n);
  return from_vector<double>(v, s).requires_grad_();
}

/// f64 input in [lo, hi) with every value at least `margin` from each kink.
inline Tensor away(const Shape& s, uint64_t seed, double lo, double hi,
                   const std::vector<double>& kinks, double margin = 0.05) {
  std::vector<double> v = random_input(s, seed, lo, hi, false).to_vector<double>();
  for (double& x : v)
    for (double k : kinks)
      if (std::abs(x - k) < margin) x = x < k ? k - margin : k + margin;
  return from_vector<double>(v, s).requires_grad_();
}

/// i64 tensor of values in [lo, hi).
inline Tensor ints(const Shape& s, uint64_t seed, int64_t lo, int64_t hi) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> v(static_cast<size_t>(numel_of(s)));
  for (int64_t& x : v) x = lo + int64_t(rng() % uint64_t(hi - lo));
  return from_vector<int64_t>(v, s);
}

/// A seeded integer in [lo, hi].
inline int64_t pick(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return lo + int64_t(rng() % uint64_t(hi - lo + 1));
}

}  // namespace ember::test::nn_gc
