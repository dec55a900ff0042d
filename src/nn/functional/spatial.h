// Argument helpers shared by the convolution, pooling and resampling frontends (the im2col /
// col2im / adaptive pooling / interpolation ops they build on are in src/ops/spatial.h). Internal.
#pragma once
#include <cstdint>
#include <vector>

#include "ember/tensor.h"
#include "tensor/internal.h"

namespace ember::nn::functional::detail {

/// One value -> nd copies; nd values -> as is; else "[op] <name> must have 1 or <nd> values,
/// got <n> (...)". Empty lists are an error unless `allow_empty`.
std::vector<int64_t> expand_param(const std::vector<int64_t>& v, int64_t nd, const char* op,
                                  const char* name, bool allow_empty = false);
/// Checks every value >= lo: "[op] <name> must be >= lo, got [..]".
void check_min(const std::vector<int64_t>& v, int64_t lo, const char* op, const char* name);
/// Checks input is [C, *S] or [N, C, *S] (nd spatial dims) and returns it batched; `unbatched`
/// says whether a batch dim was added. Throws for an undefined input or a wrong rank.
Tensor batched(const Tensor& input, int64_t nd, const char* op, bool& unbatched,
               bool allow_unbatched = true);
/// [N, C, *S] spatial sizes.
std::vector<int64_t> spatial(const Tensor& x);
/// "[1, 2]" for messages.
std::string list_str(const std::vector<int64_t>& v);

}  // namespace ember::nn::functional::detail
