// Joining, splitting and rearranging tensors (as torch). Every dtype is accepted. Throws
// ember::Error naming the op and the shapes on mismatched shapes, dims out of range, undefined
// tensors, or mixed devices.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ember/tensor.h"

namespace ember {

/// torch.cat: concatenate along dim (negative counts from the end); all shapes equal except dim;
/// dtypes promote (promote_types). 1-d empty tensors [0] are skipped as torch does (they still
/// take part in the promotion). A new tensor. Throws on an empty list, a 0-d tensor, or
/// mismatched shapes ("tensor 0 has shape [2, 3] but tensor 1 has shape [2, 4]").
Tensor cat(const std::vector<Tensor>& ts, int64_t dim = 0);
/// torch.stack: join along a new dim in [-rank-1, rank]; all shapes equal; dtypes promote.
Tensor stack(const std::vector<Tensor>& ts, int64_t dim = 0);
/// torch.split: views of `split_size` along dim (the last may be smaller; one empty view when the
/// dim is empty). Throws when split_size <= 0 for a non-empty dim or x is 0-d.
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
/// torch.split with sizes: views with the given sizes (non-negative, summing to the dim's size).
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim = 0);
/// torch.chunk: views of ceil(size / chunks) (so possibly fewer than `chunks`); an empty dim
/// gives `chunks` empty views. Throws when chunks <= 0.
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
/// Tensor.repeat: tile by `repeats` (len >= rank; extra leading entries add dims; 0 gives an
/// empty dim). Always a new tensor. Throws on fewer repeats than dims or a negative repeat.
Tensor repeat(const Tensor& x, const std::vector<int64_t>& repeats);
/// torch.tile: like repeat, but fewer reps than dims are padded with leading 1s.
Tensor tile(const Tensor& x, const std::vector<int64_t>& reps);
/// torch.roll: rolls elements by shifts[i] along dims[i] (any sign, any size); with dims empty,
/// one shift over the flattened tensor. A new tensor. Throws when the lengths do not align.
Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts,
            const std::vector<int64_t>& dims = {});
/// torch.tril / torch.triu: x [*, M, N] keeping entries with col - row <= diagonal (tril) or
/// >= diagonal (triu); others 0. Throws for fewer than 2 dims.
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
/// torch.diag: 1-d [n] -> 2-d [n + |k|, n + |k|] with x on diagonal k; 2-d -> 1-d copy of that
/// diagonal. Throws for other ranks.
Tensor diag(const Tensor& x, int64_t diagonal = 0);
/// torch.diagonal as a function (a view; the diagonal becomes the last dim).
Tensor diagonal(const Tensor& x, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
/// torch.as_strided as a function: x.as_strided(size, stride, storage_offset) (a view).
Tensor as_strided(const Tensor& x, Shape size, Strides stride,
                  std::optional<int64_t> storage_offset = std::nullopt);
/// torch.meshgrid of 0-d/1-d tensors of one dtype: k outputs of shape [n0, n1, ...] (views).
/// indexing "ij" (default, matrix) or "xy" (Cartesian: the first two output dims are swapped).
std::vector<Tensor> meshgrid(const std::vector<Tensor>& ts, const std::string& indexing = "ij");
/// torch.nn.functional.pad: pads the last len(pad)/2 dims; pad = {last_left, last_right,
/// 2nd_last_left, 2nd_last_right, ...}. mode: "constant" (fills `value`, cast to x's dtype;
/// negative pads crop), "reflect" (pads < size), "replicate" (non-empty dim), "circular"
/// (pads <= size). A new tensor of x's dtype. Throws on an odd length, more padded dims than x
/// has, an unknown mode, or pads out of those ranges.
Tensor pad(const Tensor& x, const std::vector<int64_t>& pad, const std::string& mode = "constant",
           double value = 0.0);
/// torch.flip: reverses the given dims (a copy) — the function form of Tensor::flip.
Tensor flip(const Tensor& x, const std::vector<int64_t>& dims);

}  // namespace ember
