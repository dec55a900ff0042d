// Positional encodings for sequence models: fixed sinusoids (Vaswani et al. 2017), a learned
// table (as GPT-2 / BERT position embeddings) and rotary embeddings (RoPE, Su et al. 2021).
// Composites of tensor ops, so autodiff differentiates through them.
#pragma once
#include <cstdint>
#include <string>
#include <utility>

#include "ember/nn/module.h"
#include "ember/nn/modules/options.h"

namespace ember::nn {

/// Adds the fixed encoding of "Attention Is All You Need" (Vaswani et al. 2017, section 3.5):
///   pe[pos, 2i] = sin(pos / 10000^(2i / d_model)),  pe[pos, 2i + 1] = cos(pos / 10000^(2i /
///   d_model))
/// then applies dropout (training mode only), as the PyTorch transformer tutorial's
/// PositionalEncoding. The table is the buffer "pe" [max_len, d_model] (f32, computed in f64;
/// the tutorial's is [max_len, 1, d_model]); an odd d_model is allowed (the last column is a sin).
/// forward(x, offset): x [L, N, d_model] ([N, L, d_model] if batch_first, [L, d_model] unbatched),
/// floating; adds pe[offset : offset + L] along the sequence dim; returns x's shape and dtype.
/// Throws "[SinusoidalPositionalEncoding] ..." for non-positive sizes, dropout outside [0, 1], an
/// input that is not 2-d or 3-d, a last dim other than d_model, or offset + L > max_len.
class SinusoidalPositionalEncoding : public UnaryModule {
 public:
  explicit SinusoidalPositionalEncoding(int64_t d_model, int64_t max_len = 5000,
                                        double dropout = 0.0, bool batch_first = false);
  Tensor forward(const Tensor& x) override { return forward(x, 0); }
  Tensor forward(const Tensor& x, int64_t offset);
  /// "d_model=8, max_len=5000"
  std::string extra_repr() const override;

  int64_t d_model, max_len;
  double dropout;
  bool batch_first;
  Tensor pe;  // buffer [max_len, d_model]
};

/// A learned position table added to the input: parameter "weight" [max_len, d_model] ~ N(0, 1)
/// (torch.nn.Embedding's initialization). forward(x, offset) adds weight[offset : offset + L]
/// along the sequence dim of x [L, N, d_model] ([N, L, d_model] if batch_first, [L, d_model]
/// unbatched). Throws "[LearnedPositionalEmbedding] ..." for non-positive sizes, an input that is
/// not 2-d or 3-d, a last dim other than d_model, offset < 0 or offset + L > max_len.
class LearnedPositionalEmbedding : public UnaryModule {
 public:
  LearnedPositionalEmbedding(int64_t max_len, int64_t d_model, bool batch_first = false);
  Tensor forward(const Tensor& x) override { return forward(x, 0); }
  Tensor forward(const Tensor& x, int64_t offset);
  /// Redraws weight from N(0, 1).
  void reset_parameters();
  /// "max_len=16, d_model=8"
  std::string extra_repr() const override;

  int64_t max_len, d_model;
  bool batch_first;
  Tensor weight;  // [max_len, d_model]
};

/// Rotary position embedding (RoPE, Su et al. 2021, "RoFormer"), with the rotate-half
/// convention of GPT-NeoX / LLaMA (Hugging Face's apply_rotary_pos_emb): for a feature vector x
/// at position m, the first `dim` features split into halves x1 = x[:dim/2], x2 = x[dim/2:dim]
/// and become
///   x[:dim] * cos(m * theta) + cat(-x2, x1) * sin(m * theta),
///   theta_j = base^(-2j / dim) for j < dim/2, repeated for both halves;
/// features past `dim` pass through unchanged (GPT-NeoX's partial rotary). So q_m . k_n depends
/// only on m - n, and each rotation preserves the norm. No parameters; the angles are computed in
/// f64 on each call and cast to x's dtype.
/// apply(x, offset): x [..., L, head_dim] (e.g. [N, num_heads, L, head_dim]), floating, head_dim
/// >= dim; row l gets position offset + l. forward(q, k, offset) applies it to both.
/// Throws "[RotaryEmbedding] ..." for an odd or non-positive dim, base <= 0, an input with fewer
/// than 2 dims or fewer than dim features, a non-floating input, or offset < 0.
class RotaryEmbedding : public Module {
 public:
  explicit RotaryEmbedding(int64_t dim, double base = 10000.0);
  Tensor apply(const Tensor& x, int64_t offset = 0) const;
  std::pair<Tensor, Tensor> forward(const Tensor& q, const Tensor& k, int64_t offset = 0) const {
    return {apply(q, offset), apply(k, offset)};
  }
  std::pair<Tensor, Tensor> operator()(const Tensor& q, const Tensor& k, int64_t offset = 0) const {
    return forward(q, k, offset);
  }
  /// "dim=64, base=10000.0"
  std::string extra_repr() const override;

  int64_t dim;
  double base;
};

}  // namespace ember::nn
