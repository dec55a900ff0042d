// Finite-difference gradient checking for the autodiff rules (as torch.autograd.gradcheck).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ember/autograd.h"
#include "ember/ember.h"

namespace ember::test {

using GradFn = std::function<Tensor(const std::vector<Tensor>&)>;

/// Checks the analytic gradients of fn at `inputs` against central finite differences.
/// Every input that requires grad must be f64 (the perturbation is done in f64); the others are
/// passed through unchanged. The scalar checked is L = sum(fn(inputs) * w) with fixed random
/// weights w, so every output element matters; analytic gradients come from autograd::grad.
/// An element passes when |analytic - numeric| <= atol + rtol * |numeric|.
/// Returns "" on success, else a readable message naming the input, the element's index, both
/// values and how many elements failed (also: wrong gradient shape/dtype, undefined output).
std::string gradcheck(const GradFn& fn, const std::vector<Tensor>& inputs, double eps = 1e-6,
                      double atol = 1e-5, double rtol = 1e-3);

/// Second-order check (as torch.autograd.gradgradcheck): with v a fixed random gradient of fn's
/// output, G(x, v) = d<fn(x), v>/dx is computed with create_graph, and gradcheck checks G's
/// gradients with respect to x and v (the recorded backward of the backward) against central
/// finite differences of G. Same input rules and message format as gradcheck.
std::string gradgradcheck(const GradFn& fn, const std::vector<Tensor>& inputs, double eps = 1e-6,
                          double atol = 1e-5, double rtol = 1e-3);

/// A random shape (seeded, deterministic): rank in [min_rank, max_rank], sizes in
/// [min_size, max_size].
Shape random_shape(uint64_t seed, int64_t min_rank = 1, int64_t max_rank = 3, int64_t min_size = 1,
                   int64_t max_size = 4);

/// An f64 tensor of uniform values in [lo, hi) (seeded, independent of manual_seed) that
/// requires grad when `grad`.
Tensor random_input(const Shape& shape, uint64_t seed, double lo = -1.0, double hi = 1.0,
                    bool grad = true);

}  // namespace ember::test
