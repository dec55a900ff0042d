// Reductions, scans and sorting. `dims` empty means all dims; negative dims count from the end.
// Sums of integer/bool tensors accumulate in and return i64 (u64 for unsigned), as torch.sum;
// floats accumulate in f64 and return their own dtype. Throws ember::Error naming the op, the dim
// and the shape for a dim out of range, and for an empty reduction where torch throws
// (max/min/argmax/argmin over a zero-sized dim).
#pragma once
#include <tuple>
#include <vector>

#include "ember/tensor.h"

namespace ember {

Tensor sum(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
/// Floating (or given dtype) only; integer input throws as torch.mean does.
Tensor mean(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor prod(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
/// Largest / smallest over everything (0-d). NaN propagates.
Tensor max(const Tensor& x);
Tensor min(const Tensor& x);
/// (values, indices) along one dim; indices i64, first occurrence on ties.
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor amax(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
/// i64 index of the first max/min; dim < 0 after wrapping... `flat` variants reduce everything.
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& x);  // over the flattened tensor, 0-d i64
Tensor argmin(const Tensor& x);
Tensor any(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);  // bool
Tensor all(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);  // bool
/// Variance with Bessel's `correction` (1 = unbiased, as torch.var's default). Floating only.
Tensor var(const Tensor& x, std::vector<int64_t> dims = {}, int64_t correction = 1,
           bool keepdim = false);
Tensor std(const Tensor& x, std::vector<int64_t> dims = {}, int64_t correction = 1,
           bool keepdim = false);
/// (var, mean) / (std, mean) in one call.
std::tuple<Tensor, Tensor> var_mean(const Tensor& x, std::vector<int64_t> dims = {},
                                    int64_t correction = 1, bool keepdim = false);
/// log(sum(exp(x))) computed stably (max subtracted). Floating only (ints promote to f32).
Tensor logsumexp(const Tensor& x, std::vector<int64_t> dims, bool keepdim = false);
/// Vector norm over dims: p = 1, 2, any positive p, INFINITY, -INFINITY; "fro" is p = 2.
Tensor norm(const Tensor& x, double p = 2.0, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor norm(const Tensor& x, const std::string& p, std::vector<int64_t> dims = {},
            bool keepdim = false);
/// Number of non-zero elements (i64).
Tensor count_nonzero(const Tensor& x, std::vector<int64_t> dims = {});

/// Inclusive scans along dim. cumsum/cumprod of integers return i64, as torch.
Tensor cumsum(const Tensor& x, int64_t dim);
Tensor cumprod(const Tensor& x, int64_t dim);
/// (values, indices): running max/min and where it was attained (last index on ties, as torch).
std::tuple<Tensor, Tensor> cummax(const Tensor& x, int64_t dim);
std::tuple<Tensor, Tensor> cummin(const Tensor& x, int64_t dim);

/// (values, indices) sorted along dim; stable; NaN sorts last ascending (first descending).
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false,
                                bool stable = true);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = true);
/// The k largest (or smallest) along dim, sorted when `sorted`. Throws when k > size.
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                                bool sorted = true);

}  // namespace ember
