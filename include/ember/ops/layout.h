// Joining, splitting and rearranging tensors (as torch). Throws ember::Error naming the op and
// the shapes on mismatched shapes, dims out of range, or mixed devices.
#pragma once
#include <string>
#include <vector>

#include "ember/tensor.h"

namespace ember {

/// Concatenate along dim; all shapes equal except dim; dtypes promote. 1-d empty tensors [0]
/// are skipped as torch does.
Tensor cat(const std::vector<Tensor>& ts, int64_t dim = 0);
/// Stack along a new dim; all shapes equal.
Tensor stack(const std::vector<Tensor>& ts, int64_t dim = 0);
/// Views of `split_size` along dim (the last may be smaller).
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
/// Views with the given sizes (must sum to the dim's size).
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim = 0);
/// `chunks` views of ceil(size / chunks) (fewer when the dim is small), as torch.chunk.
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
/// Tensor.repeat: tile by `repeats` (len >= rank; leading new dims allowed).
Tensor repeat(const Tensor& x, const std::vector<int64_t>& repeats);
/// torch.tile: like repeat, but fewer repeats than dims are padded with leading 1s.
Tensor tile(const Tensor& x, const std::vector<int64_t>& reps);
/// Rolls elements along dims (flattened when dims is empty).
Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts,
            const std::vector<int64_t>& dims = {});
/// Lower / upper triangle of the last two dims; other entries 0.
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
/// 1-d -> 2-d with x on the given diagonal; 2-d -> 1-d of that diagonal (a copy).
Tensor diag(const Tensor& x, int64_t diagonal = 0);
/// torch.diagonal as a function (a view).
Tensor diagonal(const Tensor& x, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
/// indexing "ij" (default, matrix) or "xy" (Cartesian).
std::vector<Tensor> meshgrid(const std::vector<Tensor>& ts, const std::string& indexing = "ij");
/// Pads the last len(pad)/2 dims; pad = {last_left, last_right, 2nd_last_left, ...} as
/// torch.nn.functional.pad. mode: "constant" (value), "reflect", "replicate", "circular".
/// Negative padding crops (constant mode).
Tensor pad(const Tensor& x, const std::vector<int64_t>& pad, const std::string& mode = "constant",
           double value = 0.0);
/// Flips (a copy) — the function form of Tensor::flip.
Tensor flip(const Tensor& x, const std::vector<int64_t>& dims);

}  // namespace ember
