// MultiheadAttention and the transformer encoder/decoder layers and stacks, as composites of
// Linear, LayerNorm, Dropout and tensor ops (matmul, softmax, where).
#include "ember/nn/modules/transformer.h"

#include <cmath>
#include <limits>

#include "ember/autograd.h"
#include "ember/nn/functional/activation.h"
#include "ember/nn/init.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/layout.h"
#include "ember/ops/linalg.h"
#include "ember/ops/reduce.h"
#include "tensor/internal.h"

namespace ember::nn {

namespace {

constexpr const char* kMha = "MultiheadAttention";

// A mask turned into an additive float mask of dtype dt: bool true -> -inf (torch MHA's meaning:
// true = not allowed), floating -> itself.
Tensor additive_mask(const Tensor& mask, DType dt, const char* name) {
  if (is_bool(mask.dtype())) {
    const double inf = std::numeric_limits<double>::infinity();
    return where(mask, ember::detail::scalar_to_tensor(-inf, dt, mask.device()),
                 ember::detail::scalar_to_tensor(0.0, dt, mask.device()));
  }
  if (!is_floating(mask.dtype()))
    EMBER_FAIL(kMha, "only bool and floating types of ", name, " are supported, got ",
               dtype_name(mask.dtype()));
  return ember::detail::cast(mask, dt);
}

}  // namespace

MultiheadAttention::MultiheadAttention(const MultiheadAttentionOptions& o)
    : Module("MultiheadAttention"), options(o) {
  const int64_t e = o.embed_dim(), h = o.num_heads();
  const int64_t kdim = o.kdim().value_or(e), vdim = o.vdim().value_or(e);
  if (e <= 0 || h <= 0 || kdim <= 0 || vdim <= 0)
    EMBER_FAIL(kMha, "embed_dim, num_heads, kdim and vdim must be positive, got ", e, ", ", h, ", ",
               kdim, ", ", vdim);
  if (e % h != 0) EMBER_FAIL(kMha, "embed_dim must be divisible by num_heads, got ", e, " and ", h);
  if (!(o.dropout() >= 0 && o.dropout() <= 1))
    EMBER_FAIL(kMha, "dropout probability has to be between 0 and 1, but got ", o.dropout());
  head_dim = e / h;
  if (kdim == e && vdim == e) {
    in_proj_weight = register_parameter("in_proj_weight", empty({3 * e, e}));
  } else {
    q_proj_weight = register_parameter("q_proj_weight", empty({e, e}));
    k_proj_weight = register_parameter("k_proj_weight", empty({e, kdim}));
    v_proj_weight = register_parameter("v_proj_weight", empty({e, vdim}));
  }
  if (o.bias()) in_proj_bias = register_parameter("in_proj_bias", empty({3 * e}));
  out_proj = register_module("out_proj", std::make_shared<Linear>(e, e, o.bias()));
  reset_parameters();
}

void MultiheadAttention::reset_parameters() {
  if (in_proj_weight.defined()) {
    init::xavier_uniform_(in_proj_weight);
  } else {
    init::xavier_uniform_(q_proj_weight);
    init::xavier_uniform_(k_proj_weight);
    init::xavier_uniform_(v_proj_weight);
  }
  if (in_proj_bias.defined()) init::zeros_(in_proj_bias);
  if (out_proj->bias.defined()) init::zeros_(out_proj->bias);
}

std::tuple<Tensor, Tensor> MultiheadAttention::forward(const Tensor& query, const Tensor& key,
                                                       const Tensor& value,
                                                       const Tensor& key_padding_mask,
                                                       bool need_weights, const Tensor& attn_mask,
                                                       bool average_attn_weights, bool is_causal) {
  const int64_t e = options.embed_dim(), nh = options.num_heads();
  const int64_t kdim = options.kdim().value_or(e), vdim = options.vdim().value_or(e);
  const Tensor& w0 = in_proj_weight.defined() ? in_proj_weight : q_proj_weight;
  for (const Tensor* t : {&query, &key, &value}) {
    ember::detail::check_defined(*t, kMha);
    ember::detail::check_floating(*t, kMha);
    ember::detail::check_same_device(*t, w0, kMha);
    if (t->dtype() != w0.dtype())
      EMBER_FAIL(kMha, "input dtype ", dtype_name(t->dtype()), " does not match the parameters' ",
                 dtype_name(w0.dtype()), " (use Module::to)");
  }
  const int64_t rank = query.dim();
  if ((rank != 2 && rank != 3) || key.dim() != rank || value.dim() != rank)
    EMBER_FAIL(kMha, "query, key and value must be all 3-d (batched) or all 2-d (unbatched), got ",
               shape_str(query.shape()), ", ", shape_str(key.shape()), ", ",
               shape_str(value.shape()));
  const bool batched = rank == 3;
  // Seq-first [L, N, E] from here on.
  auto seq_first = [&](const Tensor& t) {
    return batched ? (options.batch_first() ? t.transpose(0, 1) : t) : t.unsqueeze(1);
  };
  Tensor q = seq_first(query), k = seq_first(key), v = seq_first(value);
  const int64_t l = q.size(0), n = q.size(1), s = k.size(0);
  if (q.size(2) != e || k.size(2) != kdim || v.size(2) != vdim)
    EMBER_FAIL(kMha, "expected feature sizes (embed_dim, kdim, vdim) = (", e, ", ", kdim, ", ",
               vdim, "), got query ", shape_str(query.shape()), ", key ", shape_str(key.shape()),
               ", value ", shape_str(value.shape()));
  if (k.size(1) != n || v.size(1) != n || v.size(0) != s)
    EMBER_FAIL(kMha,
               "key and value must have the query's batch size and the same length, got query ",
               shape_str(query.shape()), ", key ", shape_str(key.shape()), ", value ",
               shape_str(value.shape()));
  const DType dt = w0.dtype();

  // Masks as one additive [N or 1, H or 1, L, S] mask.
  Tensor mask;
  if (attn_mask.defined()) {
    ember::detail::check_same_device(attn_mask, w0, kMha);
    if (attn_mask.dim() == 2) {
      if (attn_mask.size(0) != l || attn_mask.size(1) != s)
        EMBER_FAIL(kMha, "the shape of the 2-d attn_mask is ", shape_str(attn_mask.shape()),
                   ", but should be [", l, ", ", s, "]");
      mask = additive_mask(attn_mask, dt, "attn_mask");
    } else if (attn_mask.dim() == 3) {
      if (attn_mask.size(0) != n * nh || attn_mask.size(1) != l || attn_mask.size(2) != s)
        EMBER_FAIL(kMha, "the shape of the 3-d attn_mask is ", shape_str(attn_mask.shape()),
                   ", but should be [", n * nh, ", ", l, ", ", s, "]");
      mask = additive_mask(attn_mask, dt, "attn_mask").reshape({n, nh, l, s});
    } else {
      EMBER_FAIL(kMha, "attn_mask must be 2-d or 3-d, got ", shape_str(attn_mask.shape()));
    }
  } else if (is_causal) {
    mask = additive_mask(triu(ones({l, s}, {DType::b8, w0.device()}), 1), dt, "attn_mask");
  }
  if (key_padding_mask.defined()) {
    ember::detail::check_same_device(key_padding_mask, w0, kMha);
    const Shape want = batched ? Shape{n, s} : Shape{s};
    if (key_padding_mask.shape() != want)
      EMBER_FAIL(kMha, "expected key_padding_mask of shape ", shape_str(want), ", got ",
                 shape_str(key_padding_mask.shape()));
    Tensor kpm = additive_mask(key_padding_mask, dt, "key_padding_mask").reshape({n, 1, 1, s});
    mask = mask.defined() ? mask + kpm : kpm;
  }

  // Projections, then heads: [L, N, E] -> [N, H, L, head_dim].
  Tensor wq, wk, wv, bq, bk, bv;
  if (in_proj_weight.defined()) {
    wq = in_proj_weight.narrow(0, 0, e);
    wk = in_proj_weight.narrow(0, e, e);
    wv = in_proj_weight.narrow(0, 2 * e, e);
  } else {
    wq = q_proj_weight, wk = k_proj_weight, wv = v_proj_weight;
  }
  if (in_proj_bias.defined()) {
    bq = in_proj_bias.narrow(0, 0, e);
    bk = in_proj_bias.narrow(0, e, e);
    bv = in_proj_bias.narrow(0, 2 * e, e);
  }
  auto heads = [&](const Tensor& t) {
    return t.reshape({t.size(0), n, nh, head_dim}).permute({1, 2, 0, 3});
  };
  Tensor qh = heads(linear(q, wq, bq)) * (1.0 / std::sqrt(double(head_dim)));
  Tensor kh = heads(linear(k, wk, bk)), vh = heads(linear(v, wv, bv));
  Tensor scores = matmul(qh, kh.mT());  // [N, H, L, S]
  if (mask.defined()) scores = scores + mask;
  Tensor weights = functional::softmax(scores, -1);
  if (options.dropout() > 0 && is_training())
    weights = functional::dropout(weights, options.dropout(), true);
  Tensor out = matmul(weights, vh).permute({2, 0, 1, 3}).reshape({l, n, e});  // [L, N, E]
  out = (*out_proj)(out);
  out = batched ? (options.batch_first() ? out.transpose(0, 1) : out) : out.squeeze(1);
  Tensor w;
  if (need_weights) {
    w = average_attn_weights ? mean(weights, {1}) : weights;
    if (!batched) w = w.squeeze(0);
  }
  return {out, w};
}

// ---- transformer layers ----

namespace {

Tensor activate(const std::string& name, const Tensor& x) {
  return name == "relu" ? functional::relu(x) : functional::gelu(x);
}

void check_activation(const std::string& name, const char* op) {
  if (name != "relu" && name != "gelu")
    EMBER_FAIL(op, "activation should be relu/gelu, not ", name);
}

void check_layer_input(const Tensor& x, int64_t d_model, const char* what, const char* op) {
  ember::detail::check_defined(x, op);
  if ((x.dim() != 2 && x.dim() != 3) || x.size(-1) != d_model)
    EMBER_FAIL(op, "expected ", what, " [L, N, d_model = ", d_model,
               "] (batch_first [N, L, d_model], unbatched [L, d_model]), got ",
               shape_str(x.shape()));
}

MultiheadAttentionOptions attention_options(const TransformerLayerOptions& o) {
  return MultiheadAttentionOptions(o.d_model(), o.nhead())
      .dropout(o.dropout())
      .batch_first(o.batch_first());
}

std::shared_ptr<LayerNorm> make_norm(const TransformerLayerOptions& o) {
  return std::make_shared<LayerNorm>(LayerNormOptions({o.d_model()}).eps(o.layer_norm_eps()));
}

}  // namespace

TransformerEncoderLayer::TransformerEncoderLayer(const TransformerEncoderLayerOptions& o)
    : Module("TransformerEncoderLayer"), options(o) {
  check_activation(o.activation(), "TransformerEncoderLayer");
  self_attn =
      register_module("self_attn", std::make_shared<MultiheadAttention>(attention_options(o)));
  linear1 = register_module("linear1", std::make_shared<Linear>(o.d_model(), o.dim_feedforward()));
  dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout()));
  linear2 = register_module("linear2", std::make_shared<Linear>(o.dim_feedforward(), o.d_model()));
  norm1 = register_module("norm1", make_norm(o));
  norm2 = register_module("norm2", make_norm(o));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(o.dropout()));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(o.dropout()));
}

Tensor TransformerEncoderLayer::forward(const Tensor& src, const Tensor& src_mask,
                                        const Tensor& src_key_padding_mask, bool is_causal) {
  check_layer_input(src, options.d_model(), "src", "TransformerEncoderLayer");
  auto sa = [&](const Tensor& x) {
    return (*dropout1)(
        std::get<0>((*self_attn)(x, x, x, src_key_padding_mask, false, src_mask, true, is_causal)));
  };
  auto ff = [&](const Tensor& x) {
    return (*dropout2)((*linear2)((*dropout)(activate(options.activation(), (*linear1)(x)))));
  };
  Tensor x = src;
  if (options.norm_first()) {
    x = x + sa((*norm1)(x));
    x = x + ff((*norm2)(x));
  } else {
    x = (*norm1)(x + sa(x));
    x = (*norm2)(x + ff(x));
  }
  return x;
}

TransformerDecoderLayer::TransformerDecoderLayer(const TransformerDecoderLayerOptions& o)
    : Module("TransformerDecoderLayer"), options(o) {
  check_activation(o.activation(), "TransformerDecoderLayer");
  self_attn =
      register_module("self_attn", std::make_shared<MultiheadAttention>(attention_options(o)));
  multihead_attn =
      register_module("multihead_attn", std::make_shared<MultiheadAttention>(attention_options(o)));
  linear1 = register_module("linear1", std::make_shared<Linear>(o.d_model(), o.dim_feedforward()));
  dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout()));
  linear2 = register_module("linear2", std::make_shared<Linear>(o.dim_feedforward(), o.d_model()));
  norm1 = register_module("norm1", make_norm(o));
  norm2 = register_module("norm2", make_norm(o));
  norm3 = register_module("norm3", make_norm(o));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(o.dropout()));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(o.dropout()));
  dropout3 = register_module("dropout3", std::make_shared<Dropout>(o.dropout()));
}

Tensor TransformerDecoderLayer::forward(const Tensor& tgt, const Tensor& memory,
                                        const Tensor& tgt_mask, const Tensor& memory_mask,
                                        const Tensor& tgt_key_padding_mask,
                                        const Tensor& memory_key_padding_mask, bool tgt_is_causal,
                                        bool memory_is_causal) {
  const char* op = "TransformerDecoderLayer";
  check_layer_input(tgt, options.d_model(), "tgt", op);
  check_layer_input(memory, options.d_model(), "memory", op);
  auto sa = [&](const Tensor& x) {
    return (*dropout1)(std::get<0>(
        (*self_attn)(x, x, x, tgt_key_padding_mask, false, tgt_mask, true, tgt_is_causal)));
  };
  auto mha = [&](const Tensor& x) {
    return (*dropout2)(std::get<0>((*multihead_attn)(x, memory, memory, memory_key_padding_mask,
                                                     false, memory_mask, true, memory_is_causal)));
  };
  auto ff = [&](const Tensor& x) {
    return (*dropout3)((*linear2)((*dropout)(activate(options.activation(), (*linear1)(x)))));
  };
  Tensor x = tgt;
  if (options.norm_first()) {
    x = x + sa((*norm1)(x));
    x = x + mha((*norm2)(x));
    x = x + ff((*norm3)(x));
  } else {
    x = (*norm1)(x + sa(x));
    x = (*norm2)(x + mha(x));
    x = (*norm3)(x + ff(x));
  }
  return x;
}

// ---- stacks ----

namespace {

// Builds num_layers layers of type L, each starting as a copy of the first (torch deep-copies).
template <typename L>
std::shared_ptr<ModuleList> clones(const TransformerLayerOptions& o, int64_t num_layers,
                                   const char* op) {
  if (num_layers < 1) EMBER_FAIL(op, "num_layers must be >= 1, got ", num_layers);
  auto list = std::make_shared<ModuleList>();
  auto first = std::make_shared<L>(o);
  list->push_back(first);
  const StateDict init = first->state_dict();
  for (int64_t i = 1; i < num_layers; ++i) {
    auto layer = std::make_shared<L>(o);
    layer->load_state_dict(init);
    list->push_back(layer);
  }
  return list;
}

}  // namespace

TransformerEncoder::TransformerEncoder(const TransformerEncoderLayerOptions& layer,
                                       int64_t num_layers, std::shared_ptr<UnaryModule> norm_)
    : Module("TransformerEncoder"), num_layers(num_layers) {
  layers = register_module(
      "layers", clones<TransformerEncoderLayer>(layer, num_layers, "TransformerEncoder"));
  if (norm_) norm = register_module("norm", std::move(norm_));
}

Tensor TransformerEncoder::forward(const Tensor& src, const Tensor& mask,
                                   const Tensor& src_key_padding_mask, bool is_causal) {
  Tensor x = src;
  for (int64_t i = 0; i < num_layers; ++i)
    x = (*layers->at<TransformerEncoderLayer>(i))(x, mask, src_key_padding_mask, is_causal);
  return norm ? (*norm)(x) : x;
}

TransformerDecoder::TransformerDecoder(const TransformerDecoderLayerOptions& layer,
                                       int64_t num_layers, std::shared_ptr<UnaryModule> norm_)
    : Module("TransformerDecoder"), num_layers(num_layers) {
  layers = register_module(
      "layers", clones<TransformerDecoderLayer>(layer, num_layers, "TransformerDecoder"));
  if (norm_) norm = register_module("norm", std::move(norm_));
}

Tensor TransformerDecoder::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                   const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                   const Tensor& memory_key_padding_mask, bool tgt_is_causal,
                                   bool memory_is_causal) {
  Tensor x = tgt;
  for (int64_t i = 0; i < num_layers; ++i)
    x = (*layers->at<TransformerDecoderLayer>(i))(x, memory, tgt_mask, memory_mask,
                                                  tgt_key_padding_mask, memory_key_padding_mask,
                                                  tgt_is_causal, memory_is_causal);
  return norm ? (*norm)(x) : x;
}

}  // namespace ember::nn
