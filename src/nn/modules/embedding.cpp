#include "ember/nn/modules/embedding.h"

#include "ember/autograd.h"
#include "ember/nn/functional/attention.h"
#include "ember/nn/init.h"
#include "tensor/internal.h"

namespace ember::nn {

namespace {
// Validates sizes and padding_idx; returns padding_idx made non-negative.
std::optional<int64_t> checked_padding(const EmbeddingOptions& o) {
  if (o.num_embeddings() < 0 || o.embedding_dim() < 0)
    EMBER_FAIL("Embedding", "num_embeddings and embedding_dim must be >= 0, got ",
               o.num_embeddings(), " and ", o.embedding_dim());
  if (!o.padding_idx()) return std::nullopt;
  const int64_t p = *o.padding_idx(), n = o.num_embeddings();
  if (p >= n || p < -n)
    EMBER_FAIL("Embedding", "padding_idx must be within num_embeddings (padding_idx ", p,
               ", num_embeddings ", n, ")");
  return p < 0 ? p + n : p;
}
}  // namespace

Embedding::Embedding(const EmbeddingOptions& o) : UnaryModule("Embedding"), options(o) {
  options.padding_idx(checked_padding(o));
  weight = register_parameter("weight", empty({o.num_embeddings(), o.embedding_dim()}));
  reset_parameters();
}

Embedding::Embedding(const EmbeddingOptions& o, const Tensor& w, bool freeze)
    : UnaryModule("Embedding"), options(o) {
  options.padding_idx(checked_padding(o));
  weight = register_parameter("weight", w, !freeze);
}

std::shared_ptr<Embedding> Embedding::from_pretrained(const Tensor& embeddings, bool freeze,
                                                      std::optional<int64_t> padding_idx,
                                                      std::optional<double> max_norm,
                                                      double norm_type) {
  ember::detail::check_defined(embeddings, "Embedding.from_pretrained");
  if (embeddings.dim() != 2)
    EMBER_FAIL("Embedding.from_pretrained",
               "embeddings parameter is expected to be 2-dimensional, got ",
               shape_str(embeddings.shape()));
  auto o = EmbeddingOptions(embeddings.size(0), embeddings.size(1))
               .padding_idx(padding_idx)
               .max_norm(max_norm)
               .norm_type(norm_type);
  Tensor w = embeddings.detach();
  if (!freeze) ember::detail::check_floating(w, "Embedding.from_pretrained");
  return std::shared_ptr<Embedding>(new Embedding(o, w, freeze));
}

void Embedding::reset_parameters() {
  init::normal_(weight);
  if (options.padding_idx()) {
    NoGradGuard g;
    weight.select(0, *options.padding_idx()).fill_(0);
  }
}

Tensor Embedding::forward(const Tensor& indices) {
  return functional::embedding(indices, weight, options.padding_idx(), options.max_norm(),
                               options.norm_type());
}

std::string Embedding::extra_repr() const {
  std::string s =
      std::to_string(options.num_embeddings()) + ", " + std::to_string(options.embedding_dim());
  if (options.padding_idx()) s += ", padding_idx=" + std::to_string(*options.padding_idx());
  if (options.max_norm()) s += ", max_norm=" + detail::float_str(*options.max_norm());
  if (options.norm_type() != 2.0) s += ", norm_type=" + detail::float_str(options.norm_type());
  return s;
}

}  // namespace ember::nn
