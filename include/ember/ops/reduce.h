// Reductions, scans and sorting, as the torch functions of the same names. `dims` empty means all
// dims; negative dims count from the end; a 0-d tensor accepts dim 0 and -1. Results are squeezed
// over the reduced dims unless `keepdim` (then those dims have size 1).
// dtypes: sum/prod/cumsum/cumprod of integer and bool tensors accumulate in and return i64 (also
// for unsigned types, as torch); floats accumulate in f64 and return their own dtype.
// Empty reductions: sum 0, prod 1, any false, all true, mean/var NaN, logsumexp -inf.
// Throws ember::Error naming the op, the dim and the tensor for a dim out of range or repeated,
// for an undefined tensor, for a wrong dtype (mean/var/std/norm need floating point) and for an
// empty reduction where torch throws (max/min/amax/amin/argmax/argmin over a zero-size dim).
#pragma once
#include <tuple>
#include <vector>

#include "ember/tensor.h"

namespace ember {

Tensor sum(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
/// Floating input only; integer input throws as torch.mean does.
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
/// i64 index of the first max/min along dim (the first NaN when there is one). Also accepts bool
/// (torch does not).
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& x);  // index into the flattened tensor, 0-d i64
Tensor argmin(const Tensor& x);
Tensor any(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);  // bool
Tensor all(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);  // bool
/// Variance sum((x - mean)^2) / max(0, N - correction), N the reduced count (correction 1 =
/// unbiased, as torch.var's default). Floating only; two passes; f16/bf16 compute in f32.
Tensor var(const Tensor& x, std::vector<int64_t> dims = {}, int64_t correction = 1,
           bool keepdim = false);
Tensor std(const Tensor& x, std::vector<int64_t> dims = {}, int64_t correction = 1,
           bool keepdim = false);
/// (var, mean) / (std, mean) in one call.
std::tuple<Tensor, Tensor> var_mean(const Tensor& x, std::vector<int64_t> dims = {},
                                    int64_t correction = 1, bool keepdim = false);
/// log(sum(exp(x))) computed stably (max subtracted, as torch.logsumexp). Integer and bool input
/// promote to f32.
Tensor logsumexp(const Tensor& x, std::vector<int64_t> dims, bool keepdim = false);
/// Vector norm over dims, as torch.linalg.vector_norm: p = 0 (count of non-zeros), 1, 2, any
/// other p (sum(|x|^p)^(1/p)), INFINITY (max |x|), -INFINITY (min |x|); "fro" is p = 2.
/// Floating only; the +-inf norms throw over a zero-size dim; other strings throw.
Tensor norm(const Tensor& x, double p = 2.0, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor norm(const Tensor& x, const std::string& p, std::vector<int64_t> dims = {},
            bool keepdim = false);
/// Number of non-zero elements over dims (i64), as torch.count_nonzero.
Tensor count_nonzero(const Tensor& x, std::vector<int64_t> dims = {});

/// Inclusive scans along dim; same shape as x. cumsum/cumprod of integers and bool return i64.
Tensor cumsum(const Tensor& x, int64_t dim);
Tensor cumprod(const Tensor& x, int64_t dim);
/// (values, indices i64): running max/min and where it was attained (last index on ties, and
/// NaN sticks once seen, as torch).
std::tuple<Tensor, Tensor> cummax(const Tensor& x, int64_t dim);
std::tuple<Tensor, Tensor> cummin(const Tensor& x, int64_t dim);

/// (values, indices i64) sorted along dim, as torch.sort. Always stable (`stable` is accepted for
/// torch compatibility); NaN sorts last ascending (first descending).
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false,
                                bool stable = true);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = true);
/// (values, indices i64): the k largest (or smallest) along dim, as torch.topk; always returned
/// sorted (ties in original order). NaN counts as the largest. Throws unless 0 <= k <= size.
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                                bool sorted = true);

}  // namespace ember
