// Embedding lookup table (as torch.nn.Embedding, torch 1.13).
#pragma once
#include <memory>
#include <optional>

#include "ember/nn/module.h"
#include "ember/nn/modules/options.h"

namespace ember::nn {

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  EMBER_ARG(int64_t, num_embeddings);
  EMBER_ARG(int64_t, embedding_dim);
  /// Row that gets no gradient and starts at zero; negative counts from num_embeddings.
  EMBER_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  /// Rows looked up with a larger norm are renormalized in place (see functional::embedding).
  EMBER_ARG(std::optional<double>, max_norm) = std::nullopt;
  EMBER_ARG(double, norm_type) = 2.0;
};

/// weight [num_embeddings, embedding_dim] ~ N(0, 1) with the padding_idx row zeroed, as torch.
/// forward: integer indices of any shape -> [*indices.shape, embedding_dim]; throws as
/// functional::embedding ("[embedding] index 7 is out of range ..."). The constructor throws
/// "[Embedding] padding_idx must be within num_embeddings" and for negative sizes.
/// Repr "10, 3, padding_idx=0".
class Embedding : public UnaryModule {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim)
      : Embedding(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  explicit Embedding(const EmbeddingOptions& options);
  /// A table holding `embeddings` (2-d, shared, not copied, as torch; the padding row is not
  /// zeroed), trainable unless freeze (as torch.nn.Embedding.from_pretrained). Throws for a
  /// non-2-d tensor. options' sizes are taken from the tensor.
  static std::shared_ptr<Embedding> from_pretrained(
      const Tensor& embeddings, bool freeze = true,
      std::optional<int64_t> padding_idx = std::nullopt,
      std::optional<double> max_norm = std::nullopt, double norm_type = 2.0);
  void reset_parameters();
  Tensor forward(const Tensor& indices) override;
  std::string extra_repr() const override;

  EmbeddingOptions options;
  Tensor weight;

 private:
  Embedding(const EmbeddingOptions& options, const Tensor& weight, bool freeze);
};

}  // namespace ember::nn
