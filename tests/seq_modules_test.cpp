// Sequence modules (MultiheadAttention, Transformer layers/stacks, LSTM, GRU, positional
// encodings) against PyTorch 1.13: tests/golden/make_seq_golden.py writes
// tests/data/golden/seq.json (torch state_dicts, inputs and outputs, float64); each case is
// rebuilt here from its config, loaded with load_state_dict (so every parameter name and shape
// must be torch's) and run in eval mode. Plus parameter counts, initialization, errors, RoPE and
// sinusoid properties, and gradients through an LSTM.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ember/autograd.h"
#include "ember/ember.h"
#include "ember/nn/modules/encoding.h"
#include "ember/nn/modules/rnn.h"
#include "ember/nn/modules/transformer.h"

using json = nlohmann::json;
using namespace ember;
using namespace ember::nn;

namespace {

const json& golden() {
  static const json j = [] {
    const std::string path = std::string(EMBER_TEST_DATA_DIR) + "/golden/seq.json";
    std::ifstream f(path);
    if (!f)
      throw std::runtime_error("cannot open " + path + " (run tests/golden/make_seq_golden.py)");
    return json::parse(f);
  }();
  return j;
}

std::vector<const json*> cases_of(const std::string& type) {
  std::vector<const json*> out;
  for (const auto& c : golden()["cases"])
    if (c["type"] == type) out.push_back(&c);
  return out;
}

Shape shape_of(const json& j) { return j["shape"].get<std::vector<int64_t>>(); }

// A golden tensor (f64, or bool for masks); null gives an undefined Tensor.
Tensor tensor_of(const json& j) {
  if (j.is_null()) return Tensor();
  if (j.contains("dtype") && j["dtype"] == "bool") {
    std::vector<int64_t> v = j["data"].get<std::vector<int64_t>>();
    return from_vector<int64_t>(v, shape_of(j)).to(DType::b8);
  }
  return from_vector<double>(j["data"].get<std::vector<double>>(), shape_of(j));
}

StateDict dict_of(const json& sd) {
  StateDict d;
  for (const auto& [k, v] : sd.items()) d.set(k, tensor_of(v));
  return d;
}

void expect_close(const Tensor& got, const json& want, const std::string& what, double rtol = 1e-7,
                  double atol = 1e-9) {
  ASSERT_TRUE(got.defined()) << what;
  ASSERT_EQ(got.shape(), shape_of(want)) << what;
  std::vector<double> g = got.to(DType::f64).to_vector<double>();
  std::vector<double> w = want["data"].get<std::vector<double>>();
  for (size_t i = 0; i < w.size(); ++i)
    ASSERT_NEAR(g[i], w[i], atol + rtol * std::fabs(w[i])) << what << " at flat index " << i;
}

// Loads the case's torch state_dict (strict: every key must match), checks the parameter count.
void load(Module& m, const json& c) {
  m.to(DType::f64);
  m.load_state_dict(dict_of(c["state_dict"]));
  m.eval();
  int64_t numel = 0;
  for (const Tensor& p : m.parameters()) numel += p.numel();
  EXPECT_EQ(numel, c["num_params"].get<int64_t>()) << c["name"];
  EXPECT_EQ(int64_t(m.parameters().size()), c["num_tensors"].get<int64_t>()) << c["name"];
}

const json& in(const json& c, const char* k) { return c["inputs"][k]; }

RNNOptionsBase rnn_options(const json& cfg) {
  return RNNOptionsBase(cfg["input_size"], cfg["hidden_size"])
      .num_layers(cfg["num_layers"])
      .bias(cfg["bias"])
      .batch_first(cfg["batch_first"])
      .dropout(cfg["dropout"])
      .bidirectional(cfg["bidirectional"]);
}

// Elementwise |a - b| <= atol + rtol * |b| with equal shapes.
bool close_all(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8) {
  if (a.shape() != b.shape()) return false;
  std::vector<double> x = a.to(DType::f64).to_vector<double>(),
                      y = b.to(DType::f64).to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i)
    if (!(std::fabs(x[i] - y[i]) <= atol + rtol * std::fabs(y[i]))) return false;
  return true;
}

bool same_values(const Tensor& a, const Tensor& b) { return close_all(a, b, 0, 0); }

template <typename F>
void expect_error(F&& f, const std::string& tag, const std::string& part = "") {
  try {
    f();
    ADD_FAILURE() << "expected an ember::Error tagged [" << tag << "]";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[" + tag + "]"), std::string::npos) << msg;
    EXPECT_NE(msg.find(part), std::string::npos) << msg;
  }
}

}  // namespace

// ---- golden parity ----

TEST(SeqModulesTest, LSTMMatchesTorch) {
  auto cases = cases_of("LSTM");
  ASSERT_EQ(cases.size(), 4u);
  for (const json* cp : cases) {
    const json& c = *cp;
    LSTM m(rnn_options(c["config"]));
    load(m, c);
    auto [out, hc] = m(tensor_of(in(c, "input")), tensor_of(in(c, "h0")), tensor_of(in(c, "c0")));
    const std::string name = c["name"];
    expect_close(out, c["outputs"]["output"], name + " output");
    expect_close(std::get<0>(hc), c["outputs"]["h_n"], name + " h_n");
    expect_close(std::get<1>(hc), c["outputs"]["c_n"], name + " c_n");
  }
}

TEST(SeqModulesTest, GRUMatchesTorch) {
  auto cases = cases_of("GRU");
  ASSERT_EQ(cases.size(), 3u);
  for (const json* cp : cases) {
    const json& c = *cp;
    GRU m(rnn_options(c["config"]));
    load(m, c);
    auto [out, hn] = m(tensor_of(in(c, "input")), tensor_of(in(c, "h0")));
    expect_close(out, c["outputs"]["output"], c["name"].get<std::string>() + " output");
    expect_close(hn, c["outputs"]["h_n"], c["name"].get<std::string>() + " h_n");
  }
}

TEST(SeqModulesTest, RotaryEmbeddingMatchesNeoXReference) {
  auto cases = cases_of("RotaryEmbedding");
  ASSERT_EQ(cases.size(), 3u);
  for (const json* cp : cases) {
    const json& c = *cp;
    RotaryEmbedding rope(c["config"]["dim"], c["config"]["base"]);
    auto [q, k] = rope(tensor_of(in(c, "q")), tensor_of(in(c, "k")), c["config"]["offset"]);
    expect_close(q, c["outputs"]["q"], c["name"].get<std::string>() + " q", 1e-12, 1e-12);
    expect_close(k, c["outputs"]["k"], c["name"].get<std::string>() + " k", 1e-12, 1e-12);
  }
}

TEST(SeqModulesTest, LSTMFloat32MatchesTorchToRtol1e4) {
  const json& c = *cases_of("LSTM")[0];
  LSTM m(rnn_options(c["config"]));
  m.load_state_dict(dict_of(c["state_dict"]));  // f64 values into f32 parameters
  m.eval();
  auto [out, hc] = m(tensor_of(in(c, "input")).to(DType::f32),
                     tensor_of(in(c, "h0")).to(DType::f32), tensor_of(in(c, "c0")).to(DType::f32));
  EXPECT_EQ(out.dtype(), DType::f32);
  expect_close(out, c["outputs"]["output"], "f32 output", 1e-4, 1e-5);
  expect_close(std::get<1>(hc), c["outputs"]["c_n"], "f32 c_n", 1e-4, 1e-5);
}

// ---- parameters and initialization ----

TEST(SeqModulesTest, ParameterCountsOfDefaultSizesMatchTorch) {
  auto count = [](const Module& m) {
    int64_t n = 0;
    for (const Tensor& p : m.parameters()) n += p.numel();
    return n;
  };
  // torch: sum(p.numel() for p in nn.X(...).parameters())
  EXPECT_EQ(count(LSTM(LSTMOptions(10, 20).num_layers(2).bidirectional(true))), 15040);
  EXPECT_EQ(count(GRU(GRUOptions(10, 20).num_layers(2))), 4440);
  LSTM lstm(LSTMOptions(3, 4).num_layers(2).bidirectional(true));
  std::vector<std::string> names;
  for (auto& [n, p] : lstm.named_parameters()) names.push_back(n);
  const std::vector<std::string> want = {
      "weight_ih_l0",         "weight_hh_l0",         "bias_ih_l0",         "bias_hh_l0",
      "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse",
      "weight_ih_l1",         "weight_hh_l1",         "bias_ih_l1",         "bias_hh_l1",
      "weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse", "bias_hh_l1_reverse"};
  EXPECT_EQ(names, want);
  EXPECT_EQ(lstm.layer_weights(1, true)[0].shape(), (Shape{16, 8}));
}

TEST(SeqModulesTest, DefaultInitializationFollowsTorch) {
  manual_seed(3);
  LSTM lstm(LSTMOptions(5, 16).num_layers(2));
  for (auto& [n, p] : lstm.named_parameters()) {
    EXPECT_LE(amax(abs(p)).item<double>(), 0.25) << n;  // U(-1/sqrt(16), 1/sqrt(16))
    EXPECT_GT(amax(abs(p)).item<double>(), 0.2) << n;
  }
}

// ---- behaviour ----

TEST(SeqModulesTest, RotaryEmbeddingPreservesNormsAndIsRelative) {
  manual_seed(2);
  RotaryEmbedding rope(8);
  Tensor x = randn({3, 6, 8}, DType::f64);
  Tensor y = rope.apply(x, 5);
  EXPECT_TRUE(close_all(norm(x, 2.0, std::vector<int64_t>{-1}),
                        norm(y, 2.0, std::vector<int64_t>{-1}), 1e-12, 1e-12));
  // The same q and k placed at every position: q_m . k_n depends only on m - n.
  Tensor q = randn({1, 8}, DType::f64).expand({10, 8}).contiguous();
  Tensor k = randn({1, 8}, DType::f64).expand({10, 8}).contiguous();
  auto [qr, kr] = rope(q, k);
  Tensor dots = matmul(qr, kr.t());  // [m, n]
  for (int64_t m = 0; m + 3 < 10; ++m)
    for (int64_t n = 0; n + 3 < 10; ++n)
      EXPECT_NEAR(dots[m][n].item<double>(), dots[m + 3][n + 3].item<double>(), 1e-12);
  EXPECT_GT(std::fabs(dots[0][1].item<double>() - dots[0][2].item<double>()), 1e-6);
  // Position 0 is the identity; the offset shifts positions.
  EXPECT_TRUE(close_all(rope.apply(x).select(1, 0), x.select(1, 0)));
  EXPECT_TRUE(
      close_all(rope.apply(x.narrow(1, 2, 4), 2), rope.apply(x).narrow(1, 2, 4), 1e-12, 1e-12));
}

TEST(SeqModulesTest, SinusoidalEncodingValuesFollowTheFormula) {
  SinusoidalPositionalEncoding pe(6, 50);
  EXPECT_EQ(pe.pe.shape(), (Shape{50, 6}));
  auto row = [&](int64_t p) { return pe.pe[p].to_vector<double>(); };
  const std::vector<double> r0 = row(0);
  for (int j = 0; j < 6; ++j) EXPECT_DOUBLE_EQ(r0[j], j % 2 ? 1.0 : 0.0);
  for (int64_t p : {1, 7, 49}) {
    const std::vector<double> r = row(p);
    for (int i = 0; i < 3; ++i) {
      const double angle = double(p) / std::pow(10000.0, 2.0 * i / 6.0);
      EXPECT_NEAR(r[2 * i], std::sin(angle), 1e-6) << p << " " << i;
      EXPECT_NEAR(r[2 * i + 1], std::cos(angle), 1e-6) << p << " " << i;
    }
  }
  EXPECT_NEAR(row(1)[0], 0.8414709848, 1e-7);                // sin(1)
  EXPECT_NEAR(row(7)[3], std::cos(7.0 / 21.5443469), 1e-6);  // 10000^(1/3) = 21.544...
  // forward adds rows along the sequence dim: seq-first [L, N, d], offset 2.
  Tensor x = zeros({3, 2, 6});
  Tensor y = pe(x);
  EXPECT_TRUE(close_all(y.select(1, 1), pe.pe.narrow(0, 0, 3)));
  EXPECT_TRUE(close_all(pe.forward(zeros({3, 6}), 2), pe.pe.narrow(0, 2, 3)));
  SinusoidalPositionalEncoding bf(6, 50, 0.0, true);
  EXPECT_TRUE(close_all(bf(zeros({2, 4, 6})).select(0, 1), pe.pe.narrow(0, 0, 4)));
  EXPECT_EQ(pe.state_dict().size(), 1u);
}

TEST(SeqModulesTest, LearnedPositionalEmbeddingAddsRows) {
  LearnedPositionalEmbedding emb(10, 4, true);
  EXPECT_EQ(emb.parameters().size(), 1u);
  Tensor x = ones({2, 3, 4});
  Tensor y = emb.forward(x, 5);
  EXPECT_TRUE(close_all(y.select(0, 1), emb.weight.narrow(0, 5, 3) + 1.0));
  y.sum().backward();
  EXPECT_TRUE(close_all(emb.weight.grad().narrow(0, 5, 3), full({3, 4}, 2.0)));
  EXPECT_TRUE(close_all(emb.weight.grad().narrow(0, 0, 5), zeros({5, 4})));
}

TEST(SeqModulesTest, LSTMBackwardReachesEveryParameter) {
  manual_seed(4);
  LSTM m(LSTMOptions(3, 4).num_layers(2).bidirectional(true).batch_first(true));
  m.to(DType::f64);
  Tensor x = randn({2, 5, 3}, DType::f64).requires_grad_();
  Tensor h0 = randn({4, 2, 4}, DType::f64).requires_grad_();
  Tensor c0 = randn({4, 2, 4}, DType::f64);
  auto loss_of = [&]() {
    auto [out, hc] = m(x, h0, c0);
    return (out * out).sum() + std::get<1>(hc).sum();
  };
  loss_of().backward();
  for (auto& [n, p] : m.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << n;
    EXPECT_EQ(p.grad().shape(), p.shape()) << n;
    EXPECT_GT(amax(abs(p.grad())).item<double>(), 0.0) << n;
  }
  ASSERT_TRUE(x.grad().defined());
  ASSERT_TRUE(h0.grad().defined());
  // Central differences on a few elements of a reverse-direction weight and of the input.
  auto check = [&](Tensor t, int64_t flat, const std::string& what) {
    const double analytic = t.grad().reshape({-1})[flat].item<double>();
    const double eps = 1e-6;
    NoGradGuard ng;
    Tensor e = t.view({-1}).narrow(0, flat, 1);
    const double orig = e.item<double>();
    e.fill_(orig + eps);
    const double up = loss_of().item<double>();
    e.fill_(orig - eps);
    const double down = loss_of().item<double>();
    e.fill_(orig);
    EXPECT_NEAR(analytic, (up - down) / (2 * eps), 1e-6 * (1 + std::fabs(analytic))) << what;
  };
  Tensor w = m.layer_weights(0, true)[1];
  for (int64_t i : {0, 17, 40, 63}) check(w, i, "weight_hh_l0_reverse");
  check(m.layer_weights(1)[3], 9, "bias_hh_l1");
  for (int64_t i : {0, 13, 29}) check(x, i, "input");
}

TEST(SeqModulesTest, GRUBackwardAndTrainingDropout) {
  manual_seed(5);
  GRU m(GRUOptions(3, 4).num_layers(2).dropout(0.5));
  Tensor x = randn({4, 2, 3});
  auto [a, ha] = m(x);
  auto [b, hb] = m(x);
  EXPECT_FALSE(close_all(a, b));  // dropout between layers in training mode
  m.eval();
  auto [c, hc] = m(x);
  auto [d, hd] = m(x);
  EXPECT_TRUE(close_all(c, d));
  // Last step of the output is the last layer's final state.
  EXPECT_TRUE(close_all(c.select(0, 3), hc.select(0, 1)));
  c.sum().backward();
  for (auto& [n, p] : m.named_parameters()) EXPECT_TRUE(p.grad().defined()) << n;
}

// ---- errors ----

TEST(SeqModulesTest, ErrorsNameTheModuleAndShapes) {
  LSTM lstm(3, 4);
  expect_error([&] { lstm(randn({2, 3, 3, 3})); }, "LSTM", "[2, 3, 3, 3]");
  expect_error([&] { lstm(randn({2, 2, 5})); }, "LSTM", "input_size");
  expect_error(
      [&] {
        lstm(randn({2, 2, 3}), randn({1, 3, 4}), randn({1, 2, 4}));
      },
      "LSTM", "[1, 2, 4]");
  expect_error([&] { lstm(randn({2, 2, 3}), randn({1, 2, 4})); }, "LSTM", "together");
  expect_error([&] { lstm(randn({0, 2, 3})); }, "LSTM", "sequence length");
  expect_error([&] { lstm(ones({2, 2, 3}, DType::i64)); }, "LSTM");
  expect_error([] { LSTM(LSTMOptions(3, 4).dropout(1.5)); }, "LSTM", "dropout");
  GRU gru(3, 4);
  expect_error([&] { gru(randn({2, 2, 3}), randn({2, 2, 4})); }, "GRU", "h_0");
  expect_error([&] { gru.layer_weights(1); }, "GRU", "layer 1");

  expect_error([] { RotaryEmbedding(7); }, "RotaryEmbedding", "even");
  RotaryEmbedding rope(8);
  expect_error([&] { rope.apply(randn({4, 6})); }, "RotaryEmbedding", "[4, 6]");
  expect_error([&] { rope.apply(ones({4, 8}, DType::i32)); }, "RotaryEmbedding");
  SinusoidalPositionalEncoding pe(4, 10);
  expect_error([&] { pe.forward(zeros({8, 4}), 3); }, "SinusoidalPositionalEncoding", "max_len");
  expect_error([&] { pe(zeros({8, 5})); }, "SinusoidalPositionalEncoding", "d_model");
  LearnedPositionalEmbedding lpe(10, 4);
  expect_error([&] { lpe(zeros({2, 3, 4, 5})); }, "LearnedPositionalEmbedding", "[2, 3, 4, 5]");
}

// ---- attention and transformer layers ----
namespace {

TransformerLayerOptions layer_options(const json& cfg) {
  return TransformerLayerOptions(cfg["d_model"], cfg["nhead"])
      .dim_feedforward(cfg["dim_feedforward"])
      .dropout(cfg["dropout"])
      .activation(cfg["activation"].get<std::string>())
      .layer_norm_eps(cfg["layer_norm_eps"])
      .batch_first(cfg["batch_first"])
      .norm_first(cfg["norm_first"]);
}

std::shared_ptr<UnaryModule> final_norm(const json& cfg) {
  if (!cfg["final_norm"].get<bool>()) return nullptr;
  return std::make_shared<LayerNorm>(
      LayerNormOptions({cfg["d_model"].get<int64_t>()}).eps(cfg["layer_norm_eps"]));
}

}  // namespace

TEST(SeqModulesTest, MultiheadAttentionMatchesTorch) {
  auto cases = cases_of("MultiheadAttention");
  ASSERT_EQ(cases.size(), 5u);
  for (const json* cp : cases) {
    const json& c = *cp;
    const json& cfg = c["config"];
    MultiheadAttentionOptions o(cfg["embed_dim"], cfg["num_heads"]);
    o.bias(cfg.value("bias", true)).batch_first(cfg.value("batch_first", false));
    if (cfg.contains("kdim")) o.kdim(cfg["kdim"].get<int64_t>());
    if (cfg.contains("vdim")) o.vdim(cfg["vdim"].get<int64_t>());
    MultiheadAttention m(o);
    load(m, c);
    auto [out, w] = m(tensor_of(in(c, "query")), tensor_of(in(c, "key")), tensor_of(in(c, "value")),
                      tensor_of(in(c, "key_padding_mask")), cfg["need_weights"],
                      tensor_of(in(c, "attn_mask")), cfg["average_attn_weights"]);
    expect_close(out, c["outputs"]["output"], c["name"].get<std::string>() + " output");
    if (c["outputs"]["weights"].is_null())
      EXPECT_FALSE(w.defined());
    else
      expect_close(w, c["outputs"]["weights"], c["name"].get<std::string>() + " weights");
  }
}

TEST(SeqModulesTest, TransformerEncoderLayersMatchTorch) {
  auto layers = cases_of("TransformerEncoderLayer");
  auto stacks = cases_of("TransformerEncoder");
  ASSERT_EQ(layers.size(), 2u);
  ASSERT_EQ(stacks.size(), 2u);
  for (const json* cp : layers) {
    const json& c = *cp;
    TransformerEncoderLayer m(layer_options(c["config"]));
    load(m, c);
    Tensor y = m(tensor_of(in(c, "src")), tensor_of(in(c, "src_mask")),
                 tensor_of(in(c, "src_key_padding_mask")));
    expect_close(y, c["outputs"]["output"], c["name"]);
  }
  for (const json* cp : stacks) {
    const json& c = *cp;
    TransformerEncoder m(layer_options(c["config"]), c["config"]["num_layers"],
                         final_norm(c["config"]));
    load(m, c);
    Tensor y = m(tensor_of(in(c, "src")), tensor_of(in(c, "src_mask")),
                 tensor_of(in(c, "src_key_padding_mask")));
    expect_close(y, c["outputs"]["output"], c["name"]);
  }
}

TEST(SeqModulesTest, TransformerDecoderLayersMatchTorch) {
  auto layers = cases_of("TransformerDecoderLayer");
  auto stacks = cases_of("TransformerDecoder");
  ASSERT_EQ(layers.size(), 2u);
  ASSERT_EQ(stacks.size(), 1u);
  auto run = [](auto& m, const json& c) {
    return m(tensor_of(in(c, "tgt")), tensor_of(in(c, "memory")), tensor_of(in(c, "tgt_mask")),
             tensor_of(in(c, "memory_mask")), tensor_of(in(c, "tgt_key_padding_mask")),
             tensor_of(in(c, "memory_key_padding_mask")));
  };
  for (const json* cp : layers) {
    TransformerDecoderLayer m(layer_options((*cp)["config"]));
    load(m, *cp);
    expect_close(run(m, *cp), (*cp)["outputs"]["output"], (*cp)["name"]);
  }
  for (const json* cp : stacks) {
    const json& cfg = (*cp)["config"];
    TransformerDecoder m(layer_options(cfg), cfg["num_layers"], final_norm(cfg));
    load(m, *cp);
    expect_close(run(m, *cp), (*cp)["outputs"]["output"], (*cp)["name"]);
  }
}

TEST(SeqModulesTest, TransformerParameterCountsAndInitFollowTorch) {
  auto count = [](const Module& m) {
    int64_t n = 0;
    for (const Tensor& p : m.parameters()) n += p.numel();
    return n;
  };
  // torch: sum(p.numel() for p in nn.X(...).parameters())
  EXPECT_EQ(count(TransformerEncoderLayer(512, 8)), 3152384);
  EXPECT_EQ(count(TransformerDecoderLayer(512, 8)), 4204032);
  EXPECT_EQ(count(MultiheadAttention(512, 8)), 1050624);
  manual_seed(3);
  MultiheadAttention mha(8, 2);
  const double bound = std::sqrt(6.0 / (8 + 24));  // xavier_uniform_ on [24, 8]
  EXPECT_LE(amax(abs(mha.in_proj_weight)).item<double>(), bound);
  EXPECT_GT(amax(abs(mha.in_proj_weight)).item<double>(), 0.8 * bound);
  EXPECT_EQ(amax(abs(mha.in_proj_bias)).item<double>(), 0.0);
  EXPECT_EQ(amax(abs(mha.out_proj->bias)).item<double>(), 0.0);
  // Stacks start from copies of one layer, as torch's deepcopy.
  TransformerEncoder enc(TransformerEncoderLayerOptions(8, 2).dim_feedforward(16), 3);
  EXPECT_TRUE(same_values(enc.layers->at<TransformerEncoderLayer>(0)->linear1->weight,
                          enc.layers->at<TransformerEncoderLayer>(2)->linear1->weight));
  EXPECT_FALSE(enc.layers->at<TransformerEncoderLayer>(0)->linear1->weight.is_alias_of(
      enc.layers->at<TransformerEncoderLayer>(2)->linear1->weight));
  EXPECT_EQ(enc.state_dict().size(), 3u * 12u);
}

TEST(SeqModulesTest, MultiheadAttentionIsCausalEqualsExplicitMask) {
  manual_seed(1);
  MultiheadAttention m(MultiheadAttentionOptions(8, 2).batch_first(true));
  Tensor x = randn({2, 5, 8});
  Tensor causal = triu(ones({5, 5}, DType::b8), 1);
  auto [a, wa] = m(x, x, x, Tensor(), true, causal);
  auto [b, wb] = m(x, x, x, Tensor(), true, Tensor(), true, true);
  EXPECT_TRUE(close_all(a, b));
  EXPECT_TRUE(close_all(wa, wb));
  // Row 0 attends only to key 0; weights rows sum to 1.
  EXPECT_NEAR(wa.select(1, 0).select(1, 0).sum().item<double>(), 2.0, 1e-6);
  EXPECT_NEAR(wa.select(1, 0).select(1, 1).sum().item<double>(), 0.0, 1e-7);
  EXPECT_TRUE(close_all(wa.sum({-1}), ones({2, 5})));
}

TEST(SeqModulesTest, TransformerErrorsNameTheModuleAndShapes) {
  expect_error([] { MultiheadAttention(8, 3); }, "MultiheadAttention", "divisible");
  MultiheadAttention mha(8, 2);
  expect_error(
      [&] {
        mha(randn({2, 3, 4, 8}), randn({2, 3, 4, 8}), randn({2, 3, 4, 8}));
      },
      "MultiheadAttention", "[2, 3, 4, 8]");
  expect_error(
      [&] {
        mha(randn({3, 2, 7}), randn({3, 2, 7}), randn({3, 2, 7}));
      },
      "MultiheadAttention", "[3, 2, 7]");
  expect_error(
      [&] {
        mha(randn({3, 2, 8}), randn({4, 2, 8}), randn({5, 2, 8}));
      },
      "MultiheadAttention", "same length");
  expect_error(
      [&] {
        mha(randn({3, 2, 8}), randn({4, 2, 8}), randn({4, 2, 8}), zeros({2, 5}, DType::b8));
      },
      "MultiheadAttention", "key_padding_mask");
  expect_error(
      [&] {
        mha(randn({3, 2, 8}), randn({4, 2, 8}), randn({4, 2, 8}), Tensor(), true, zeros({3, 3}));
      },
      "MultiheadAttention", "[3, 4]");
  expect_error(
      [&] {
        mha(randn({3, 2, 8}, DType::f64), randn({3, 2, 8}), randn({3, 2, 8}));
      },
      "MultiheadAttention", "dtype");

  expect_error(
      [] { TransformerEncoderLayer(TransformerEncoderLayerOptions(8, 2).activation("tanh")); },
      "TransformerEncoderLayer", "tanh");
  TransformerEncoderLayer layer(TransformerEncoderLayerOptions(8, 2).dim_feedforward(16));
  expect_error([&] { layer(randn({3, 2, 6})); }, "TransformerEncoderLayer", "[3, 2, 6]");
  TransformerDecoderLayer dec(TransformerDecoderLayerOptions(8, 2).dim_feedforward(16));
  expect_error([&] { dec(randn({3, 2, 8}), randn({8})); }, "TransformerDecoderLayer", "memory");
  expect_error([] { TransformerEncoder(TransformerEncoderLayerOptions(8, 2), 0); },
               "TransformerEncoder", "num_layers");
}
