// Attention and transformer layers (as torch.nn.MultiheadAttention, TransformerEncoderLayer,
// TransformerEncoder, TransformerDecoderLayer, TransformerDecoder; torch 1.13 semantics and
// parameter names, so a torch state_dict loads with load_state_dict). Composites of tensor ops
// (matmul, softmax, layer_norm...), so autodiff differentiates through them. Parameters are f32 on
// the default device at construction; use Module::to() to move or cast them.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "ember/nn/module.h"
#include "ember/nn/modules/container.h"
#include "ember/nn/modules/dropout.h"
#include "ember/nn/modules/linear.h"
#include "ember/nn/modules/normalization.h"
#include "ember/nn/modules/options.h"

namespace ember::nn {

struct MultiheadAttentionOptions {
  MultiheadAttentionOptions(int64_t embed_dim, int64_t num_heads)
      : embed_dim_(embed_dim), num_heads_(num_heads) {}
  EMBER_ARG(int64_t, embed_dim);
  EMBER_ARG(int64_t, num_heads);
  /// Dropout on the attention weights (training mode only).
  EMBER_ARG(double, dropout) = 0.0;
  /// Biases of the input and output projections.
  EMBER_ARG(bool, bias) = true;
  /// Feature sizes of key and value (default embed_dim).
  EMBER_ARG(std::optional<int64_t>, kdim);
  EMBER_ARG(std::optional<int64_t>, vdim);
  /// Inputs and output are [N, L, E] instead of [L, N, E].
  EMBER_ARG(bool, batch_first) = false;
};

/// Multi-head attention (Vaswani et al. 2017; as torch.nn.MultiheadAttention without
/// add_bias_kv / add_zero_attn): each head h attends with softmax(q_h k_h^T / sqrt(head_dim) +
/// mask) v_h, the heads are concatenated and projected by out_proj.
/// Parameters, as torch: in_proj_weight [3E, E] (rows q, k, v) when kdim == vdim == E, else
/// q_proj_weight [E, E], k_proj_weight [E, kdim], v_proj_weight [E, vdim]; in_proj_bias [3E]
/// (with bias); out_proj (Linear(E, E, bias)). Initialization as torch: xavier_uniform_ on the
/// input projections, zero in_proj_bias and out_proj.bias, out_proj.weight as Linear's.
/// forward shapes (E = embed_dim, L target length, S source length, N batch):
///   query [L, N, E], key [S, N, kdim], value [S, N, vdim] ([N, *, *] if batch_first; unbatched
///   [L, E], [S, kdim], [S, vdim]); floating, the parameters' dtype.
///   key_padding_mask [N, S] ([S] unbatched): bool (true = ignore that key) or floating (added).
///   attn_mask [L, S] or [N * num_heads, L, S]: bool (true = NOT allowed to attend) or floating
///   (added to the scores).
///   is_causal: when attn_mask is not given, applies the causal mask (query i attends to keys
///   j <= i); with attn_mask it is only a hint and attn_mask is used (torch 2.x's meaning).
/// Returns (output [L, N, E] (batch_first [N, L, E], unbatched [L, E]), weights): weights are
/// undefined unless need_weights; [N, L, S] averaged over heads when average_attn_weights, else
/// [N, num_heads, L, S] (unbatched without the N dim). A query whose every key is masked gets NaN,
/// as torch 1.13.
/// Throws "[MultiheadAttention] ..." at construction when embed_dim is not divisible by num_heads
/// or a size is not positive; in forward for inputs that are not all 2-d or all 3-d, mismatched
/// batch, lengths or feature sizes, a mask of the wrong shape or dtype, or a dtype or device other
/// than the parameters'.
class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t embed_dim, int64_t num_heads)
      : MultiheadAttention(MultiheadAttentionOptions(embed_dim, num_heads)) {}
  explicit MultiheadAttention(const MultiheadAttentionOptions& options);
  void reset_parameters();
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const Tensor& key_padding_mask = Tensor(),
                                     bool need_weights = true, const Tensor& attn_mask = Tensor(),
                                     bool average_attn_weights = true, bool is_causal = false);
  std::tuple<Tensor, Tensor> operator()(const Tensor& query, const Tensor& key, const Tensor& value,
                                        const Tensor& key_padding_mask = Tensor(),
                                        bool need_weights = true,
                                        const Tensor& attn_mask = Tensor(),
                                        bool average_attn_weights = true, bool is_causal = false) {
    if (!has_forward_hooks())
      return forward(query, key, value, key_padding_mask, need_weights, attn_mask,
                     average_attn_weights, is_causal);
    return call_with_hooks<std::tuple<Tensor, Tensor>>(
        {query, key, value, key_padding_mask, attn_mask}, [&](const std::vector<Tensor>& in) {
          return forward(in[0], in[1], in[2], in[3], need_weights, in[4], average_attn_weights,
                         is_causal);
        });
  }

  MultiheadAttentionOptions options;
  int64_t head_dim;
  Tensor in_proj_weight;  // undefined when kdim or vdim differ from embed_dim
  Tensor q_proj_weight, k_proj_weight, v_proj_weight;  // defined only then
  Tensor in_proj_bias;                                 // undefined without bias
  std::shared_ptr<Linear> out_proj;
};

/// Options of TransformerEncoderLayer and TransformerDecoderLayer (torch's names and defaults).
struct TransformerLayerOptions {
  TransformerLayerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  EMBER_ARG(int64_t, d_model);
  EMBER_ARG(int64_t, nhead);
  EMBER_ARG(int64_t, dim_feedforward) = 2048;
  EMBER_ARG(double, dropout) = 0.1;
  /// "relu" or "gelu" (the exact erf form).
  EMBER_ARG(std::string, activation) = "relu";
  EMBER_ARG(double, layer_norm_eps) = 1e-5;
  EMBER_ARG(bool, batch_first) = false;
  /// Pre-norm (x + f(norm(x))) instead of post-norm (norm(x + f(x))).
  EMBER_ARG(bool, norm_first) = false;
};
using TransformerEncoderLayerOptions = TransformerLayerOptions;
using TransformerDecoderLayerOptions = TransformerLayerOptions;

/// Self-attention then a feed-forward block, each with dropout, a residual and a LayerNorm (as
/// torch.nn.TransformerEncoderLayer). Children, as torch: self_attn, linear1 (d_model ->
/// dim_feedforward), dropout, linear2, norm1, norm2, dropout1, dropout2.
///   post-norm: x = norm1(x + sa(x)); x = norm2(x + ff(x))
///   norm_first: x = x + sa(norm1(x)); x = x + ff(norm2(x))
///   sa(x) = dropout1(self_attn(x, x, x, src_mask, src_key_padding_mask)),
///   ff(x) = dropout2(linear2(dropout(activation(linear1(x))))).
/// src [L, N, d_model] ([N, L, d_model] if batch_first, unbatched [L, d_model]); masks as
/// MultiheadAttention's attn_mask / key_padding_mask; returns src's shape.
/// Throws "[TransformerEncoderLayer] ..." for an unknown activation, or a src that is not 2-d or
/// 3-d with last dim d_model; the attention's own errors otherwise.
class TransformerEncoderLayer : public Module {
 public:
  TransformerEncoderLayer(int64_t d_model, int64_t nhead)
      : TransformerEncoderLayer(TransformerEncoderLayerOptions(d_model, nhead)) {}
  explicit TransformerEncoderLayer(const TransformerEncoderLayerOptions& options);
  Tensor forward(const Tensor& src, const Tensor& src_mask = Tensor(),
                 const Tensor& src_key_padding_mask = Tensor(), bool is_causal = false);
  Tensor operator()(const Tensor& src, const Tensor& src_mask = Tensor(),
                    const Tensor& src_key_padding_mask = Tensor(), bool is_causal = false) {
    if (!has_forward_hooks()) return forward(src, src_mask, src_key_padding_mask, is_causal);
    return call_with_hooks<Tensor>(
        {src, src_mask, src_key_padding_mask},
        [&](const std::vector<Tensor>& in) { return forward(in[0], in[1], in[2], is_causal); });
  }

  TransformerEncoderLayerOptions options;
  std::shared_ptr<MultiheadAttention> self_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2;
  std::shared_ptr<LayerNorm> norm1, norm2;
};

/// Self-attention, cross-attention over `memory`, then a feed-forward block (as
/// torch.nn.TransformerDecoderLayer). Children, as torch: self_attn, multihead_attn, linear1,
/// dropout, linear2, norm1, norm2, norm3, dropout1, dropout2, dropout3.
///   post-norm: x = norm1(x + sa(x)); x = norm2(x + mha(x, memory)); x = norm3(x + ff(x))
///   norm_first: x = x + sa(norm1(x)); x = x + mha(norm2(x), memory); x = x + ff(norm3(x))
/// tgt [T, N, d_model], memory [S, N, d_model] ([N, *, d_model] if batch_first, unbatched
/// without N); tgt_mask [T, T] / memory_mask [T, S] (or per head, as MultiheadAttention);
/// key padding masks [N, T] / [N, S]. Returns tgt's shape.
/// Throws "[TransformerDecoderLayer] ..." for an unknown activation, or a tgt or memory that is
/// not 2-d or 3-d with last dim d_model.
class TransformerDecoderLayer : public Module {
 public:
  TransformerDecoderLayer(int64_t d_model, int64_t nhead)
      : TransformerDecoderLayer(TransformerDecoderLayerOptions(d_model, nhead)) {}
  explicit TransformerDecoderLayer(const TransformerDecoderLayerOptions& options);
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = Tensor(),
                 const Tensor& memory_mask = Tensor(),
                 const Tensor& tgt_key_padding_mask = Tensor(),
                 const Tensor& memory_key_padding_mask = Tensor(), bool tgt_is_causal = false,
                 bool memory_is_causal = false);
  Tensor operator()(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = Tensor(),
                    const Tensor& memory_mask = Tensor(),
                    const Tensor& tgt_key_padding_mask = Tensor(),
                    const Tensor& memory_key_padding_mask = Tensor(), bool tgt_is_causal = false,
                    bool memory_is_causal = false) {
    if (!has_forward_hooks())
      return forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                     memory_key_padding_mask, tgt_is_causal, memory_is_causal);
    return call_with_hooks<Tensor>(
        {tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask},
        [&](const std::vector<Tensor>& in) {
          return forward(in[0], in[1], in[2], in[3], in[4], in[5], tgt_is_causal, memory_is_causal);
        });
  }

  TransformerDecoderLayerOptions options;
  std::shared_ptr<MultiheadAttention> self_attn, multihead_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2, dropout3;
  std::shared_ptr<LayerNorm> norm1, norm2, norm3;
};

/// num_layers TransformerEncoderLayers applied in turn, then `norm` when given (as
/// torch.nn.TransformerEncoder). Children: layers (a ModuleList: "layers.0.self_attn...") and
/// norm. Every layer starts as a copy of the first one's parameters, as torch deep-copies its
/// prototype layer. forward takes and returns what TransformerEncoderLayer does.
/// Throws "[TransformerEncoder] ..." for num_layers < 1.
class TransformerEncoder : public Module {
 public:
  TransformerEncoder(const TransformerEncoderLayerOptions& layer, int64_t num_layers,
                     std::shared_ptr<UnaryModule> norm = nullptr);
  Tensor forward(const Tensor& src, const Tensor& mask = Tensor(),
                 const Tensor& src_key_padding_mask = Tensor(), bool is_causal = false);
  Tensor operator()(const Tensor& src, const Tensor& mask = Tensor(),
                    const Tensor& src_key_padding_mask = Tensor(), bool is_causal = false) {
    if (!has_forward_hooks()) return forward(src, mask, src_key_padding_mask, is_causal);
    return call_with_hooks<Tensor>(
        {src, mask, src_key_padding_mask},
        [&](const std::vector<Tensor>& in) { return forward(in[0], in[1], in[2], is_causal); });
  }

  int64_t num_layers;
  std::shared_ptr<ModuleList> layers;
  std::shared_ptr<UnaryModule> norm;  // null when not given
};

/// num_layers TransformerDecoderLayers applied in turn, then `norm` when given (as
/// torch.nn.TransformerDecoder); layers start as copies of the first, as torch. forward takes
/// and returns what TransformerDecoderLayer does. Throws "[TransformerDecoder] ..." for
/// num_layers < 1.
class TransformerDecoder : public Module {
 public:
  TransformerDecoder(const TransformerDecoderLayerOptions& layer, int64_t num_layers,
                     std::shared_ptr<UnaryModule> norm = nullptr);
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = Tensor(),
                 const Tensor& memory_mask = Tensor(),
                 const Tensor& tgt_key_padding_mask = Tensor(),
                 const Tensor& memory_key_padding_mask = Tensor(), bool tgt_is_causal = false,
                 bool memory_is_causal = false);
  Tensor operator()(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = Tensor(),
                    const Tensor& memory_mask = Tensor(),
                    const Tensor& tgt_key_padding_mask = Tensor(),
                    const Tensor& memory_key_padding_mask = Tensor(), bool tgt_is_causal = false,
                    bool memory_is_causal = false) {
    if (!has_forward_hooks())
      return forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                     memory_key_padding_mask, tgt_is_causal, memory_is_causal);
    return call_with_hooks<Tensor>(
        {tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask},
        [&](const std::vector<Tensor>& in) {
          return forward(in[0], in[1], in[2], in[3], in[4], in[5], tgt_is_causal, memory_is_causal);
        });
  }

  int64_t num_layers;
  std::shared_ptr<ModuleList> layers;
  std::shared_ptr<UnaryModule> norm;
};

}  // namespace ember::nn
