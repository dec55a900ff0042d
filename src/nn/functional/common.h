// Helpers shared by the nn::functional composites. Internal.
#pragma once
#include <string>

#include "ember/ops/elementwise.h"
#include "ember/ops/reduce.h"
#include "tensor/internal.h"

namespace ember::nn::functional::detail {

/// The dtype a composite computes in: f16/bf16 go through f32 (as torch's CPU "opmath").
inline DType compute_dtype(DType t) {
  return (t == DType::f16 || t == DType::bf16) ? DType::f32 : t;
}
/// t cast to compute_dtype(t).
inline Tensor upcast(const Tensor& t) { return ember::detail::cast(t, compute_dtype(t.dtype())); }

/// Throws "[op] expected a floating-point tensor, got ..." for an undefined or non-float tensor.
inline void check_float_input(const Tensor& t, const char* op) {
  ember::detail::check_defined(t, op);
  ember::detail::check_floating(t, op);
}

enum class Reduction { none, mean, sum, batchmean };

/// Parses "none" | "mean" | "sum" (and "batchmean" when allowed).
inline Reduction parse_reduction(const std::string& r, const char* op, bool batchmean = false) {
  if (r == "none") return Reduction::none;
  if (r == "mean") return Reduction::mean;
  if (r == "sum") return Reduction::sum;
  if (batchmean && r == "batchmean") return Reduction::batchmean;
  EMBER_FAIL(op, "'", r, "' is not a valid value for reduction (expected \"mean\", \"sum\", ",
             batchmean ? "\"none\" or \"batchmean\")" : "or \"none\")");
}

/// Applies none / sum / mean to per-element losses (mean of zero elements is NaN).
inline Tensor apply_reduction(const Tensor& loss, Reduction r) {
  switch (r) {
    case Reduction::none:
      return loss;
    case Reduction::sum:
      return ember::sum(loss);
    default:
      return ember::sum(loss) / double(loss.numel());
  }
}

}  // namespace ember::nn::functional::detail
