// Finite-difference gradchecks (f64) of the nn::functional composites: activations, softmax,
// norms, embedding, scaled_dot_product_attention and every loss with its options. Inputs stay
// away from kinks (relu at 0, hardtanh at its bounds, huber at +-delta...) so the central
// differences are valid. Counted with gradcheck_nn_test.cpp's summary.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "gradcheck_nn_util.h"

namespace ember {
namespace {

namespace F = nn::functional;
using test::GradFn;
using namespace test::nn_gc;
using V = std::vector<Tensor>;

const std::vector<std::string> kReductions = {"none", "sum", "mean"};

TEST(GradcheckNnTest, Activations) {
  const Shape s{2, 3, 4};
  uint64_t seed = 600;
  struct Act {
    const char* name;
    std::function<Tensor(const Tensor&)> fn;
    std::vector<double> kinks;
  };
  const std::vector<Act> acts = {
      {"relu", [](const Tensor& x) { return F::relu(x); }, {0}},
      {"relu6", [](const Tensor& x) { return F::relu6(x * 4.0); }, {0, 1.5}},
      {"hardtanh", [](const Tensor& x) { return F::hardtanh(x, -0.5, 1.2); }, {-0.5, 1.2}},
      {"leaky_relu", [](const Tensor& x) { return F::leaky_relu(x, 0.2); }, {0}},
      {"elu", [](const Tensor& x) { return F::elu(x, 1.3); }, {0}},
      {"selu", [](const Tensor& x) { return F::selu(x); }, {0}},
      {"celu", [](const Tensor& x) { return F::celu(x, 0.7); }, {0}},
      {"gelu", [](const Tensor& x) { return F::gelu(x); }, {}},
      {"gelu tanh", [](const Tensor& x) { return F::gelu(x, "tanh"); }, {}},
      {"silu", [](const Tensor& x) { return F::silu(x); }, {}},
      {"mish", [](const Tensor& x) { return F::mish(x); }, {}},
      {"softplus", [](const Tensor& x) { return F::softplus(x); }, {}},
      {"softplus beta threshold", [](const Tensor& x) { return F::softplus(x, 2.0, 3.0); }, {1.5}},
      {"hardsigmoid", [](const Tensor& x) { return F::hardsigmoid(x); }, {-3, 3}},
      {"hardswish", [](const Tensor& x) { return F::hardswish(x); }, {-3, 3}},
      {"sigmoid", [](const Tensor& x) { return F::sigmoid(x); }, {}},
      {"log_sigmoid", [](const Tensor& x) { return F::log_sigmoid(x); }, {}},
      {"logsigmoid", [](const Tensor& x) { return F::logsigmoid(x); }, {}},
      {"tanh", [](const Tensor& x) { return F::tanh(x); }, {}},
      {"softsign", [](const Tensor& x) { return F::softsign(x); }, {0}},
      {"tanhshrink", [](const Tensor& x) { return F::tanhshrink(x); }, {}},
      {"hardshrink", [](const Tensor& x) { return F::hardshrink(x); }, {-0.5, 0.5}},
      {"softshrink", [](const Tensor& x) { return F::softshrink(x, 0.4); }, {-0.4, 0.4}},
      {"threshold", [](const Tensor& x) { return F::threshold(x, 0.3, -2.0); }, {0.3}},
      {"softmax", [](const Tensor& x) { return F::softmax(x, 1); }, {}},
      {"softmax dim -1", [](const Tensor& x) { return F::softmax(x * 3.0, -1); }, {}},
      {"log_softmax", [](const Tensor& x) { return F::log_softmax(x * 3.0, 2); }, {}},
      {"log_softmax dim 0", [](const Tensor& x) { return F::log_softmax(x, 0); }, {}},
      {"softmin", [](const Tensor& x) { return F::softmin(x, 1); }, {}},
      {"glu", [](const Tensor& x) { return F::glu(x); }, {}},
      {"glu dim 0",
       [](const Tensor& x) {
         return F::glu(x.reshape({4, 3, 2}), 0);
       },
       {}},
      {"dropout eval", [](const Tensor& x) { return F::dropout(x, 0.4, false); }, {}},
      // Re-seeding inside fn fixes the mask across the finite-difference evaluations.
      {"dropout",
       [](const Tensor& x) {
         manual_seed(3);
         return F::dropout(x, 0.4, true);
       },
       {}},
      {"dropout1d",
       [](const Tensor& x) {
         manual_seed(4);
         return F::dropout1d(x, 0.5, true);
       },
       {}},
      {"dropout2d",
       [](const Tensor& x) {
         manual_seed(5);
         return F::dropout2d(x.reshape({1, 2, 3, 4}), 0.5, true);
       },
       {}},
      {"dropout3d",
       [](const Tensor& x) {
         manual_seed(6);
         return F::dropout3d(x.reshape({1, 2, 3, 2, 2}), 0.5, true);
       },
       {}},
  };
  for (const Act& a : acts) {
    auto fn = a.fn;
    const std::string name = a.name;
    check(name.substr(0, name.find(' ')), name, [fn](const V& v) { return fn(v[0]); },
          {away(s, ++seed, -4.0, 4.0, a.kinks)});
  }
  check("prelu", "one weight", [](const V& v) { return F::prelu(v[0], v[1]); },
        {away(s, 1, -2, 2, {0}), rnd({1}, 2)});
  check("prelu", "per channel", [](const V& v) { return F::prelu(v[0], v[1]); },
        {away(s, 3, -2, 2, {0}), rnd({3}, 4)});
}

TEST(GradcheckNnTest, Norms) {
  uint64_t seed = 700;
  check("layer_norm", "[2, 3, 4] over [4]",
        [](const V& v) { return F::layer_norm(v[0], {4}, v[1], v[2]); },
        {rnd({2, 3, 4}, ++seed), rnd({4}, ++seed), rnd({4}, ++seed)});
  check("layer_norm", "over [3, 4], no affine, eps 0.1",
        [](const V& v) {
          return F::layer_norm(v[0], {3, 4}, Tensor(), Tensor(), 0.1);
        },
        {rnd({2, 3, 4}, ++seed)});
  check("group_norm", "[2, 4, 3] groups 2",
        [](const V& v) { return F::group_norm(v[0], 2, v[1], v[2]); },
        {rnd({2, 4, 3}, ++seed), rnd({4}, ++seed), rnd({4}, ++seed)});
  check("group_norm", "[2, 6, 2, 2] groups 3 no affine",
        [](const V& v) { return F::group_norm(v[0], 3); }, {rnd({2, 6, 2, 2}, ++seed)});
  for (bool training : {true, false}) {
    const std::string mode = training ? "train" : "eval";
    check("batch_norm", mode + " [4, 3]",
          [training](const V& v) {
            return F::batch_norm(v[0], v[3], v[4], v[1], v[2], training, 0.1, 1e-3);
          },
          {rnd({4, 3}, ++seed), rnd({3}, ++seed), rnd({3}, ++seed), cst({3}, ++seed),
           cst({3}, ++seed, 0.5, 1.5)});
    check("batch_norm", mode + " [3, 2, 2, 2] no affine",
          [training](const V& v) {
            return F::batch_norm(v[0], v[1], v[2], Tensor(), Tensor(), training);
          },
          {rnd({3, 2, 2, 2}, ++seed), cst({2}, ++seed), cst({2}, ++seed, 0.5, 1.5)});
  }
  check("batch_norm", "train, no running stats",
        [](const V& v) { return F::batch_norm(v[0], Tensor(), Tensor(), v[1], v[2], true); },
        {rnd({5, 2, 3}, ++seed), rnd({2}, ++seed), rnd({2}, ++seed)});
  check("instance_norm", "[2, 3, 4] affine",
        [](const V& v) { return F::instance_norm(v[0], Tensor(), Tensor(), v[1], v[2]); },
        {rnd({2, 3, 4}, ++seed), rnd({3}, ++seed), rnd({3}, ++seed)});
  check(
      "instance_norm", "[1, 2, 3, 3] with running stats",
      [](const V& v) { return F::instance_norm(v[0], v[1], v[2], Tensor(), Tensor(), true, 0.2); },
      {rnd({1, 2, 3, 3}, ++seed), cst({2}, ++seed), cst({2}, ++seed, 0.5, 1.5)});
  check("instance_norm", "running stats, use_input_stats false",
        [](const V& v) { return F::instance_norm(v[0], v[3], v[4], v[1], v[2], false); },
        {rnd({2, 2, 3}, ++seed), rnd({2}, ++seed), rnd({2}, ++seed), cst({2}, ++seed),
         cst({2}, ++seed, 0.5, 1.5)});
  check("rms_norm", "[2, 3, 4] over [4] weight",
        [](const V& v) { return F::rms_norm(v[0], {4}, v[1]); },
        {rnd({2, 3, 4}, ++seed), rnd({4}, ++seed)});
  check("rms_norm", "over [3, 4] eps 0.01",
        [](const V& v) {
          return F::rms_norm(v[0], {3, 4}, Tensor(), 0.01);
        },
        {rnd({2, 3, 4}, ++seed)});
  check("normalize", "p 2 dim 1", [](const V& v) { return F::normalize(v[0]); },
        {rnd({3, 4}, ++seed)});
  check("normalize", "p 1 dim 0", [](const V& v) { return F::normalize(v[0], 1.0, 0); },
        {away({3, 4}, ++seed, -1, 1, {0})});
  check("normalize", "p 3 dim -1", [](const V& v) { return F::normalize(v[0], 3.0, -1); },
        {rnd({2, 2, 3}, ++seed)});
}

TEST(GradcheckNnTest, EmbeddingAndAttention) {
  const Tensor idx = from_vector<int64_t>({1, 3, 1, 0, 4, 2}, {2, 3});
  check("embedding", "[2, 3] indices, repeats",
        [idx](const V& v) { return F::embedding(idx, v[0]); }, {rnd({5, 3}, 1)});
  // padding_idx: the forward reads the row, but it gets no gradient: the analytic gradient is
  // the plain one with that row zeroed.
  counts().ops.insert("embedding padding_idx");
  ++counts().checks;
  Tensor w = rnd({5, 3}, 2);
  const Tensor c = cst({2, 3, 3}, 3);
  sum(F::embedding(idx, w, 1) * c).backward();
  const Tensor with_pad = w.grad();
  Tensor w2 = w.detach().clone().requires_grad_();
  sum(F::embedding(idx, w2) * c).backward();
  Tensor expect = w2.grad().clone();
  expect.select(0, 1).fill_(0.0);
  EXPECT_EQ(with_pad.to_vector<double>(), expect.to_vector<double>());
  EXPECT_NE(w2.grad().select(0, 1).abs().sum().item<double>(), 0.0);
  // max_norm renormalizes the weight in place without recording; the gradient is the plain
  // lookup's (as torch).
  counts().ops.insert("embedding max_norm");
  ++counts().checks;
  Tensor wm = rnd({5, 3}, 5, -2, 2);
  sum(F::embedding(idx, wm, std::nullopt, 1.0) * c).backward();
  EXPECT_TRUE(wm.is_leaf());
  EXPECT_LE(norm(wm.detach().select(0, 3)).item<double>(), 1.0 + 1e-6);
  Tensor wm2 = wm.detach().clone().requires_grad_();
  sum(F::embedding(idx, wm2) * c).backward();
  EXPECT_EQ(wm.grad().to_vector<double>(), wm2.grad().to_vector<double>());
  const Tensor idx4 = from_vector<int64_t>({1, 3, 1, 0, 3, 2}, {2, 3});
  check("embedding", "negative padding_idx absent from input",
        [idx4](const V& v) { return F::embedding(idx4, v[0], -1); }, {rnd({5, 3}, 4)});

  uint64_t seed = 800;
  const char* op = "scaled_dot_product_attention";
  check(op, "[2, 3, 4] x [2, 5, 4]",
        [](const V& v) { return F::scaled_dot_product_attention(v[0], v[1], v[2]); },
        {rnd({2, 3, 4}, ++seed), rnd({2, 5, 4}, ++seed), rnd({2, 5, 3}, ++seed)});
  check(op, "4-d, scale 0.7",
        [](const V& v) {
          return F::scaled_dot_product_attention(v[0], v[1], v[2], Tensor(), 0.0, false, 0.7);
        },
        {rnd({1, 2, 3, 2}, ++seed), rnd({1, 2, 4, 2}, ++seed), rnd({1, 2, 4, 3}, ++seed)});
  // Every row keeps at least one key.
  const Tensor bmask = tensor<bool>({true, false, true, true, false, false, true, false, false,
                                     true, true, true, false, true, false},
                                    {3, 5});
  check(op, "bool mask",
        [bmask](const V& v) { return F::scaled_dot_product_attention(v[0], v[1], v[2], bmask); },
        {rnd({2, 3, 4}, ++seed), rnd({2, 5, 4}, ++seed), rnd({2, 5, 3}, ++seed)});
  check(op, "float mask (with grad)",
        [](const V& v) { return F::scaled_dot_product_attention(v[0], v[1], v[2], v[3]); },
        {rnd({2, 3, 4}, ++seed), rnd({2, 5, 4}, ++seed), rnd({2, 5, 3}, ++seed),
         rnd({2, 3, 5}, ++seed)});
  check(op, "causal L == S",
        [](const V& v) {
          return F::scaled_dot_product_attention(v[0], v[1], v[2], Tensor(), 0.0, true);
        },
        {rnd({2, 4, 3}, ++seed), rnd({2, 4, 3}, ++seed), rnd({2, 4, 2}, ++seed)});
  check(op, "causal L < S",
        [](const V& v) {
          return F::scaled_dot_product_attention(v[0], v[1], v[2], Tensor(), 0.0, true);
        },
        {rnd({3, 3}, ++seed), rnd({5, 3}, ++seed), rnd({5, 2}, ++seed)});
}

TEST(GradcheckNnTest, ClassificationLosses) {
  uint64_t seed = 900;
  const Tensor t = from_vector<int64_t>({0, 4, 2, 2}, {4});
  const Tensor t_ign = from_vector<int64_t>({1, -100, 3, 1}, {4});
  const Tensor t_ign7 = from_vector<int64_t>({7, 0, 7, 4}, {4});
  const Tensor t_k = from_vector<int64_t>({0, 2, 1, 3, 3, 0}, {2, 3});
  const Tensor w = from_vector<double>({0.5, 1.5, 1.0, 2.0, 0.3}, {5});
  for (const std::string& r : kReductions) {
    check("cross_entropy", "indices " + r,
          [=](const V& v) { return F::cross_entropy(v[0], t, Tensor(), -100, r); },
          {rnd({4, 5}, ++seed, -2, 2)});
    check("cross_entropy", "weight, ignore_index -100 " + r,
          [=](const V& v) { return F::cross_entropy(v[0], t_ign, w, -100, r); },
          {rnd({4, 5}, ++seed, -2, 2)});
    check("cross_entropy", "ignore_index 7, label_smoothing " + r,
          [=](const V& v) { return F::cross_entropy(v[0], t_ign7, w, 7, r, 0.2); },
          {rnd({4, 5}, ++seed, -2, 2)});
    check("cross_entropy", "[2, 4, 3] K-dim, smoothing " + r,
          [=](const V& v) { return F::cross_entropy(v[0], t_k, Tensor(), -100, r, 0.1); },
          {rnd({2, 4, 3}, ++seed, -2, 2)});
    check("cross_entropy", "probabilities, weight, smoothing " + r,
          [=](const V& v) { return F::cross_entropy(v[0], F::softmax(v[1], 1), w, -100, r, 0.15); },
          {rnd({4, 5}, ++seed, -2, 2), rnd({4, 5}, ++seed, -2, 2)});
    check("nll_loss", r, [=](const V& v) { return F::nll_loss(v[0], t, Tensor(), -100, r); },
          {rnd({4, 5}, ++seed, -3, 0)});
    check("nll_loss", "weight, ignore_index " + r,
          [=](const V& v) { return F::nll_loss(v[0], t_ign7, w, 7, r); },
          {rnd({4, 5}, ++seed, -3, 0)});
    check("nll_loss", "K-dim " + r,
          [=](const V& v) { return F::nll_loss(v[0], t_k, Tensor(), -100, r); },
          {rnd({2, 4, 3}, ++seed, -3, 0)});
    check("binary_cross_entropy", r,
          [=](const V& v) { return F::binary_cross_entropy(v[0], v[1], Tensor(), r); },
          {rnd({3, 4}, ++seed, 0.05, 0.95), rnd({3, 4}, ++seed, 0, 1)});
    check("binary_cross_entropy", "weight " + r,
          [=](const V& v) { return F::binary_cross_entropy(v[0], v[1], v[2], r); },
          {rnd({3, 4}, ++seed, 0.05, 0.95), cst({3, 4}, ++seed, 0, 1), cst({4}, ++seed, 0.5, 2)});
    check("binary_cross_entropy_with_logits", r,
          [=](const V& v) { return F::binary_cross_entropy_with_logits(v[0], v[1], Tensor(), r); },
          {rnd({3, 4}, ++seed, -3, 3), rnd({3, 4}, ++seed, 0, 1)});
    check(
        "binary_cross_entropy_with_logits", "weight, pos_weight " + r,
        [=](const V& v) { return F::binary_cross_entropy_with_logits(v[0], v[1], v[2], r, v[3]); },
        {rnd({3, 4}, ++seed, -3, 3), rnd({3, 4}, ++seed, 0, 1), rnd({3, 1}, ++seed, 0.5, 2),
         rnd({4}, ++seed, 0.5, 3)});
  }
  check("cross_entropy", "unbatched [5], 0-d target",
        [](const V& v) { return F::cross_entropy(v[0], from_vector<int64_t>({3}, {})); },
        {rnd({5}, ++seed)});
}

TEST(GradcheckNnTest, RegressionLosses) {
  uint64_t seed = 1000;
  std::vector<std::string> kl_red = kReductions;
  kl_red.push_back("batchmean");
  for (const std::string& r : kReductions) {
    check("mse_loss", r, [=](const V& v) { return F::mse_loss(v[0], v[1], r); },
          {rnd({3, 4}, ++seed), rnd({3, 4}, ++seed)});
    check("mse_loss", "broadcast " + r, [=](const V& v) { return F::mse_loss(v[0], v[1], r); },
          {rnd({3, 4}, ++seed), rnd({4}, ++seed)});
    // |input - target| and the huber/smooth_l1 switch points stay away from the inputs.
    const Tensor base = cst({3, 4}, ++seed);
    auto shifted = [base](const std::vector<double>& kinks, uint64_t sd) {
      Tensor d = away({3, 4}, sd, -2, 2, kinks);
      return (d.detach() + base).requires_grad_();
    };
    Tensor tgt = base.clone().requires_grad_();
    check("l1_loss", r, [=](const V& v) { return F::l1_loss(v[0], v[1], r); },
          {shifted({0}, ++seed), tgt});
    check("huber_loss", "delta 0.7 " + r,
          [=](const V& v) { return F::huber_loss(v[0], v[1], r, 0.7); },
          {shifted({-0.7, 0.7}, ++seed), tgt});
    check("smooth_l1_loss", "beta 0.5 " + r,
          [=](const V& v) { return F::smooth_l1_loss(v[0], v[1], r, 0.5); },
          {shifted({-0.5, 0.5}, ++seed), tgt});
    check("smooth_l1_loss", "beta 0 " + r,
          [=](const V& v) { return F::smooth_l1_loss(v[0], v[1], r, 0.0); },
          {shifted({0}, ++seed), tgt});
  }
  for (const std::string& r : kl_red) {
    check("kl_div", r, [=](const V& v) { return F::kl_div(F::log_softmax(v[0], 1), v[1], r); },
          {rnd({3, 4}, ++seed), rnd({3, 4}, ++seed, 0.05, 1)});
    check("kl_div", "log_target " + r, [=](const V& v) { return F::kl_div(v[0], v[1], r, true); },
          {rnd({3, 4}, ++seed, -3, 0), rnd({3, 4}, ++seed, -3, 0)});
  }
}

}  // namespace
}  // namespace ember
