// ember::nn modules: forward values against the functional ops with the module's parameters,
// parameter names/shapes, state_dict round trips and errors, dtype moves, train/eval, running
// statistics, printing, and a backward through a small model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ember/autograd.h"
#include "ember/ember.h"

using namespace ember;
using namespace ember::nn;
namespace F = ember::nn::functional;

namespace {

template <typename Fn>
void expect_error(Fn fn, std::initializer_list<const char*> pieces) {
  try {
    fn();
    ADD_FAILURE() << "expected an ember::Error containing " << *pieces.begin();
  } catch (const Error& e) {
    for (const char* p : pieces)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

void expect_close(const Tensor& got, const Tensor& want, double tol = 1e-6) {
  ASSERT_EQ(got.shape(), want.shape());
  auto g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], tol) << "at " << i;
}

void expect_values(const Tensor& got, const std::vector<double>& want, double tol = 1e-6) {
  auto g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tol) << "at " << i;
}

std::vector<std::string> keys(const StateDict& d) {
  std::vector<std::string> k;
  for (const auto& it : d.items()) k.push_back(it.first);
  return k;
}

std::shared_ptr<Sequential> mlp() {
  return make_sequential(std::make_shared<Linear>(4, 8), std::make_shared<ReLU>(),
                         std::make_shared<Linear>(8, 3));
}

}  // namespace

// ---- printing helpers ----

TEST(NnModulesTest, FloatsPrintAsPythonRepr) {
  using nn::detail::float_str;
  EXPECT_EQ(float_str(0.1), "0.1");
  EXPECT_EQ(float_str(1e-5), "1e-05");
  EXPECT_EQ(float_str(1.5e-7), "1.5e-07");
  EXPECT_EQ(float_str(0.0001), "0.0001");
  EXPECT_EQ(float_str(1.0), "1.0");
  EXPECT_EQ(float_str(-2.5), "-2.5");
  EXPECT_EQ(float_str(100000.0), "100000.0");
  EXPECT_EQ(float_str(123.456), "123.456");
  EXPECT_EQ(float_str(1e16), "1e+16");
  EXPECT_EQ(float_str(0.0), "0.0");
  EXPECT_EQ(nn::detail::tuple_str({3}), "(3,)");
  EXPECT_EQ(nn::detail::tuple_str({3, 1}), "(3, 1)");
}

// ---- Linear, Bilinear, Flatten ----

TEST(NnModulesTest, LinearMatchesFunctionalAndTorchInit) {
  manual_seed(0);
  Linear lin(16, 5);
  EXPECT_EQ(lin.weight.shape(), (Shape{5, 16}));
  EXPECT_EQ(lin.bias.shape(), (Shape{5}));
  EXPECT_TRUE(lin.weight.requires_grad());
  // kaiming_uniform_(a = sqrt(5)) and the bias are both U(-1/4, 1/4) for fan_in 16.
  for (const Tensor& p : {lin.weight, lin.bias})
    for (double v : p.to_vector<double>()) EXPECT_LE(std::fabs(v), 0.25);
  Tensor x = randn({3, 16});
  expect_close(lin(x), linear(x, lin.weight, lin.bias));
  EXPECT_EQ(lin.str(), "Linear(in_features=16, out_features=5, bias=True)");

  Linear nob(LinearOptions(3, 2).bias(false));
  EXPECT_EQ(nob.parameters().size(), 1u);
  EXPECT_FALSE(nob.bias.defined());
  EXPECT_EQ(nob.extra_repr(), "in_features=3, out_features=2, bias=False");
  expect_error([&] { nob(randn({2, 4})); }, {"[linear]"});
}

TEST(NnModulesTest, BilinearMatchesLoops) {
  manual_seed(1);
  Bilinear bl(2, 3, 4);
  EXPECT_EQ(bl.weight.shape(), (Shape{4, 2, 3}));
  Tensor x1 = randn({5, 2}), x2 = randn({5, 3});
  Tensor y = bl(x1, x2);
  ASSERT_EQ(y.shape(), (Shape{5, 4}));
  auto a = x1.to_vector<double>(), b = x2.to_vector<double>(), w = bl.weight.to_vector<double>(),
       bias = bl.bias.to_vector<double>(), got = y.to_vector<double>();
  for (int n = 0; n < 5; ++n)
    for (int o = 0; o < 4; ++o) {
      double s = bias[size_t(o)];
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j)
          s += a[size_t(n * 2 + i)] * w[size_t((o * 2 + i) * 3 + j)] * b[size_t(n * 3 + j)];
      EXPECT_NEAR(got[size_t(n * 4 + o)], s, 1e-5);
    }
  EXPECT_EQ(bl.extra_repr(), "in1_features=2, in2_features=3, out_features=4, bias=True");
  expect_error([&] { bl(randn({5, 3}), x2); }, {"[bilinear]"});
}

TEST(NnModulesTest, FlattenUnflattenIdentity) {
  Tensor x = randn({2, 3, 4, 5});
  EXPECT_EQ(Flatten()(x).shape(), (Shape{2, 60}));
  EXPECT_EQ(Flatten(0, 1)(x).shape(), (Shape{6, 4, 5}));
  EXPECT_EQ(Flatten().extra_repr(), "start_dim=1, end_dim=-1");
  Unflatten u(1, {2, -1});
  EXPECT_EQ(u(randn({3, 10})).shape(), (Shape{3, 2, 5}));
  EXPECT_EQ(Unflatten(1, {2, 5}).extra_repr(), "dim=1, unflattened_size=(2, 5)");
  expect_error([] { Unflatten(1, {3, 4})(randn({3, 10})); }, {"[unflatten]", "does not multiply"});
  Identity id;
  EXPECT_EQ(id(x).impl(), x.impl());
}

// ---- containers, state_dict ----

TEST(NnModulesTest, SequentialNamesShapesForwardAndPrint) {
  manual_seed(0);
  auto net = mlp();
  EXPECT_EQ(keys(net->state_dict()),
            (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  auto params = net->named_parameters();
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[0].second.shape(), (Shape{8, 4}));
  EXPECT_EQ(params[3].second.shape(), (Shape{3}));
  int64_t count = 0;
  for (const Tensor& p : net->parameters()) count += p.numel();
  EXPECT_EQ(count, 8 * 4 + 8 + 3 * 8 + 3);

  Tensor x = randn({2, 4});
  auto l0 = net->at<Linear>(0), l2 = net->at<Linear>(-1);
  Tensor want = linear(F::relu(linear(x, l0->weight, l0->bias)), l2->weight, l2->bias);
  expect_close((*net)(x), want);
  EXPECT_EQ(net->size(), 3u);
  EXPECT_EQ((*net)[1]->type_name(), "ReLU");
  expect_error([&] { (*net)[3]; }, {"[Sequential] index 3 is out of range"});
  expect_error([&] { net->at<Conv2d>(0); }, {"[Sequential]", "not of the requested type"});
  EXPECT_EQ(net->str(),
            "Sequential(\n  (0): Linear(in_features=4, out_features=8, bias=True)\n  (1): ReLU()\n"
            "  (2): Linear(in_features=8, out_features=3, bias=True)\n)");
  Sequential empty_seq;
  EXPECT_EQ(empty_seq(x).impl(), x.impl());
}

TEST(NnModulesTest, ModuleListAndDictNameChildren) {
  auto list = std::make_shared<ModuleList>();
  list->push_back(std::make_shared<Linear>(2, 2));
  list->push_back(std::make_shared<BatchNorm1d>(2));
  auto dict = std::make_shared<ModuleDict>();
  dict->insert("enc", std::make_shared<Linear>(2, 3, false));
  dict->insert("layers", list);
  EXPECT_EQ(keys(dict->state_dict()),
            (std::vector<std::string>{"enc.weight", "layers.0.weight", "layers.0.bias",
                                      "layers.1.weight", "layers.1.bias", "layers.1.running_mean",
                                      "layers.1.running_var", "layers.1.num_batches_tracked"}));
  EXPECT_EQ(list->at<BatchNorm1d>(-1)->options.num_features(), 2);
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"enc", "layers"}));
  EXPECT_TRUE(dict->contains("enc"));
  EXPECT_EQ(dict->at<Linear>("enc")->options.out_features(), 3);
  expect_error([&] { (*dict)["dec"]; }, {"[ModuleDict] no key 'dec'"});
  expect_error([&] { (*list)[-3]; }, {"[ModuleList] index -3 is out of range"});
  expect_error([&] { dict->insert("enc", std::make_shared<ReLU>()); }, {"already registered"});
}

TEST(NnModulesTest, StateDictRoundTrip) {
  manual_seed(1);
  auto a = mlp();
  manual_seed(2);
  auto b = mlp();
  Tensor x = randn({5, 4});
  EXPECT_NE((*a)(x).to_vector<float>(), (*b)(x).to_vector<float>());
  EXPECT_EQ(b->load_state_dict(a->state_dict()), "");
  EXPECT_EQ((*a)(x).to_vector<float>(), (*b)(x).to_vector<float>());
  // The loaded tensors are copies: changing a afterwards leaves b alone.
  {
    NoGradGuard g;
    a->at<Linear>(0)->weight.fill_(0);
  }
  EXPECT_NE(b->at<Linear>(0)->weight.to_vector<float>()[0], 0.0f);
  EXPECT_TRUE(b->at<Linear>(0)->weight.requires_grad());
}

TEST(NnModulesTest, LoadStateDictListsMissingUnexpectedAndMisshapedKeys) {
  auto net = mlp();
  StateDict d = net->state_dict();
  StateDict partial;
  partial.set("0.weight", d.at("0.weight"));
  partial.set("0.bias", d.at("0.bias"));
  partial.set("2.weight", d.at("2.weight"));
  partial.set("3.bias", zeros({3}));
  expect_error([&] { net->load_state_dict(partial); },
               {"[load_state_dict]", "missing keys: 2.bias", "unexpected keys: 3.bias"});
  EXPECT_EQ(net->load_state_dict(partial, false), "missing keys: 2.bias; unexpected keys: 3.bias");
  StateDict bad = net->state_dict();
  bad.set("2.weight", zeros({3, 7}));
  expect_error([&] { net->load_state_dict(bad, false); },
               {"size or dtype mismatch: 2.weight (checkpoint [3, 7], model [3, 8])"});
  StateDict ints = net->state_dict();
  ints.set("0.bias", zeros({8}, DType::i64));
  expect_error([&] { net->load_state_dict(ints); },
               {"dtype mismatch: 0.bias (checkpoint int64, model float32)"});
  StateDict doubles = net->state_dict();
  doubles.set("0.bias", full({8}, 0.5, DType::f64));  // floating values are cast, as torch does
  EXPECT_EQ(net->load_state_dict(doubles), "");
  EXPECT_EQ(net->at<Linear>(0)->bias.to_vector<float>()[3], 0.5f);
}

TEST(NnModulesTest, ToF64AndBack) {
  manual_seed(3);
  auto net = mlp();
  auto before = net->at<Linear>(0)->weight.to_vector<float>();
  net->to(DType::f64);
  for (const Tensor& p : net->parameters()) EXPECT_EQ(p.dtype(), DType::f64);
  EXPECT_EQ(net->at<Linear>(0)->weight.dtype(), DType::f64);  // the member follows
  Tensor x = randn({2, 4}, DType::f64);
  EXPECT_EQ((*net)(x).dtype(), DType::f64);
  auto bn = std::make_shared<BatchNorm1d>(3);
  bn->to(DType::f64);
  EXPECT_EQ(bn->running_mean.dtype(), DType::f64);
  EXPECT_EQ(bn->num_batches_tracked.dtype(), DType::i64);  // integer buffers keep their dtype
  net->to(DType::f32);
  EXPECT_EQ(net->at<Linear>(0)->weight.to_vector<float>(), before);
  EXPECT_TRUE(net->at<Linear>(0)->weight.requires_grad());
}

// ---- convolution and pooling ----

TEST(NnModulesTest, Conv2dMatchesFunctionalAndPrintsAsTorch) {
  manual_seed(4);
  Conv2d conv(Conv2dOptions(3, 6, 3).stride(2).padding(1));
  EXPECT_EQ(conv.weight.shape(), (Shape{6, 3, 3, 3}));
  const double bound = 1.0 / std::sqrt(27.0);
  for (const Tensor& p : {conv.weight, conv.bias})
    for (double v : p.to_vector<double>()) EXPECT_LE(std::fabs(v), bound);
  Tensor x = randn({2, 3, 7, 7});
  expect_close(conv(x), F::conv2d(x, conv.weight, conv.bias, {2}, {1}), 1e-5);
  EXPECT_EQ(conv(x).shape(), (Shape{2, 6, 4, 4}));
  EXPECT_EQ(conv.str(), "Conv2d(3, 6, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))");
  EXPECT_EQ(Conv2d(3, 64, 3).extra_repr(), "3, 64, kernel_size=(3, 3), stride=(1, 1)");
  EXPECT_EQ(Conv1d(Conv1dOptions(4, 4, 3).groups(2).bias(false).dilation(2)).extra_repr(),
            "4, 4, kernel_size=(3,), stride=(1,), dilation=(2,), groups=2, bias=False");
  EXPECT_EQ(Conv2d(Conv2dOptions(2, 2, {3, 1}).padding("same")).extra_repr(),
            "2, 2, kernel_size=(3, 1), stride=(1, 1), padding=same");
  expect_error([] { Conv2d(Conv2dOptions(3, 4, 3).groups(2)); },
               {"[Conv2d] in_channels 3 must be divisible by groups 2"});
  expect_error([] { Conv2d(Conv2dOptions(2, 4, 3).stride(2).padding("same")); },
               {"[Conv2d] padding='same' is not supported for strided convolutions"});
  expect_error([&] { conv(randn({2, 4, 7, 7})); }, {"[conv2d]"});
}

TEST(NnModulesTest, ConvPaddingModesAndOtherRanks) {
  manual_seed(5);
  Conv2d refl(Conv2dOptions(1, 2, 3).padding(1).padding_mode("reflect"));
  Tensor x = randn({1, 1, 5, 5});
  expect_close(refl(x), F::conv2d(pad(x, {1, 1, 1, 1}, "reflect"), refl.weight, refl.bias), 1e-5);
  EXPECT_EQ(refl.extra_repr(),
            "1, 2, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), padding_mode=reflect");
  Conv2d same(Conv2dOptions(1, 1, {2, 3}).padding("same").padding_mode("circular"));
  EXPECT_EQ(same(x).shape(), (Shape{1, 1, 5, 5}));
  expect_close(same(x), F::conv2d(pad(x, {1, 1, 0, 1}, "circular"), same.weight, same.bias), 1e-5);

  Conv1d c1(2, 3, 2);
  Tensor x1 = randn({4, 2, 6});
  expect_close(c1(x1), F::conv1d(x1, c1.weight, c1.bias), 1e-5);
  Conv3d c3(Conv3dOptions(1, 2, 2).stride({1, 2, 1}));
  Tensor x3 = randn({1, 1, 3, 4, 3});
  expect_close(c3(x3), F::conv3d(x3, c3.weight, c3.bias, {1, 2, 1}), 1e-5);
  expect_error([] { Conv2d(Conv2dOptions(1, 1, 3).padding_mode("mirror")); },
               {"[Conv2d] padding_mode"});
}

TEST(NnModulesTest, ConvTransposeMatchesFunctional) {
  manual_seed(6);
  ConvTranspose2d ct(ConvTranspose2dOptions(4, 6, 3).stride(2).padding(1).groups(2));
  EXPECT_EQ(ct.weight.shape(), (Shape{4, 3, 3, 3}));
  // fan_in of a transposed weight is size(1) * k = 27, as torch.
  for (double v : ct.bias.to_vector<double>()) EXPECT_LE(std::fabs(v), 1.0 / std::sqrt(27.0));
  Tensor x = randn({2, 4, 5, 5});
  expect_close(ct(x), F::conv_transpose2d(x, ct.weight, ct.bias, {2}, {1}, {0}, 2), 1e-5);
  EXPECT_EQ(ct(x).shape(), (Shape{2, 6, 9, 9}));
  EXPECT_EQ(ct.forward(x, {10, 10}).shape(), (Shape{2, 6, 10, 10}));
  expect_close(ct.forward(x, {10, 10}),
               F::conv_transpose2d(x, ct.weight, ct.bias, {2}, {1}, {1}, 2), 1e-5);
  expect_error(
      [&] {
        ct.forward(x, {12, 12});
      },
      {"[ConvTranspose2d] requested an output size", "range from 9 to 10"});
  EXPECT_EQ(ct.extra_repr(), "4, 6, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), groups=2");
  ConvTranspose1d t1(ConvTranspose1dOptions(2, 2, 3).output_padding(1).stride(2));
  EXPECT_EQ(t1.extra_repr(), "2, 2, kernel_size=(3,), stride=(2,), output_padding=(1,)");
  Tensor x1 = randn({1, 2, 4});
  expect_close(t1(x1), F::conv_transpose1d(x1, t1.weight, t1.bias, {2}, {0}, {1}), 1e-5);
  ConvTranspose3d t3(1, 1, 2);
  EXPECT_EQ(t3(randn({1, 1, 2, 2, 2})).shape(), (Shape{1, 1, 3, 3, 3}));
}

TEST(NnModulesTest, PoolingMatchesFunctionalAndPrintsAsTorch) {
  Tensor x = randn({2, 3, 6, 6});
  MaxPool2d mp(2);
  expect_close(mp(x), F::max_pool2d(x, {2}));
  EXPECT_EQ(mp.str(), "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)");
  MaxPool2d mp2(MaxPool2dOptions({3, 2}).stride(1).padding({1, 0}).ceil_mode(true));
  expect_close(mp2(x), F::max_pool2d(x, {3, 2}, {1}, {1, 0}, {1}, true));
  EXPECT_EQ(mp2.extra_repr(),
            "kernel_size=(3, 2), stride=1, padding=(1, 0), dilation=1, ceil_mode=True");
  auto [v, idx] = mp.forward_with_indices(x);
  EXPECT_EQ(idx.dtype(), DType::i64);
  expect_close(v, mp(x));

  AvgPool2d ap(AvgPool2dOptions(3).stride(2).padding(1).count_include_pad(false));
  expect_close(ap(x), F::avg_pool2d(x, {3}, {2}, {1}, false, false));
  EXPECT_EQ(ap.extra_repr(), "kernel_size=3, stride=2, padding=1");
  EXPECT_EQ(AvgPool1d(2).extra_repr(), "kernel_size=(2,), stride=(2,), padding=(0,)");
  Tensor x1 = randn({2, 3, 8});
  expect_close(MaxPool1d(3)(x1), F::max_pool1d(x1, {3}));
  expect_close(AvgPool1d(2)(x1), F::avg_pool1d(x1, {2}));
  Tensor x3 = randn({1, 2, 4, 4, 4});
  expect_close(MaxPool3d(2)(x3), F::max_pool3d(x3, {2}));
  expect_close(AvgPool3d(2)(x3), F::avg_pool3d(x3, {2}));

  AdaptiveAvgPool2d gap(1);
  expect_values(gap(x).flatten(), x.mean({2, 3}).flatten().to_vector<double>(), 1e-6);
  EXPECT_EQ(gap.extra_repr(), "output_size=1");
  EXPECT_EQ(AdaptiveAvgPool2d({5, 7}).extra_repr(), "output_size=(5, 7)");
  expect_close(AdaptiveAvgPool1d(3)(x1), F::adaptive_avg_pool1d(x1, {3}));
  expect_close(AdaptiveMaxPool2d({2, 3})(x), F::adaptive_max_pool2d(x, {2, 3}));
  expect_error(
      [] {
        MaxPool2d(MaxPool2dOptions(2).padding(2))(randn({1, 1, 4, 4}));
      },
      {"[max_pool2d]"});
  expect_error([] { MaxPool2dOptions({2, 2, 2}); }, {"expected 2 value(s), got a list of 3"});
}

// ---- activations ----

TEST(NnModulesTest, ActivationsMatchFunctional) {
  Tensor x = randn({3, 4}) * 3.0;
  expect_close(ReLU()(x), F::relu(x));
  expect_close(ReLU6()(x), F::relu6(x));
  expect_close(LeakyReLU(0.2)(x), F::leaky_relu(x, 0.2));
  expect_close(ELU(0.5)(x), F::elu(x, 0.5));
  expect_close(SELU()(x), F::selu(x));
  expect_close(GELU("tanh")(x), F::gelu(x, "tanh"));
  expect_close(SiLU()(x), F::silu(x));
  expect_close(Mish()(x), F::mish(x));
  expect_close(Softplus(2.0, 10.0)(x), F::softplus(x, 2.0, 10.0));
  expect_close(Hardsigmoid()(x), F::hardsigmoid(x));
  expect_close(Hardswish()(x), F::hardswish(x));
  expect_close(Sigmoid()(x), F::sigmoid(x));
  expect_close(Tanh()(x), F::tanh(x));
  expect_close(Softmax(1)(x), F::softmax(x, 1));
  expect_close(LogSoftmax(0)(x), F::log_softmax(x, 0));
  expect_close(Hardtanh(-2.0, 2.0)(x), F::hardtanh(x, -2.0, 2.0));
  // Known values: relu6 and hardtanh clamp.
  Tensor k = tensor<float>({-7.f, -0.5f, 3.f, 8.f});
  expect_values(ReLU6()(k), {0, 0, 3, 6});
  expect_values(Hardtanh()(k), {-1, -0.5, 1, 1});
  expect_values(LeakyReLU()(k), {-0.07, -0.005, 3, 8}, 1e-6);

  EXPECT_EQ(ReLU().str(), "ReLU()");
  EXPECT_EQ(LeakyReLU().extra_repr(), "negative_slope=0.01");
  EXPECT_EQ(ELU().extra_repr(), "alpha=1.0");
  EXPECT_EQ(GELU().extra_repr(), "approximate='none'");
  EXPECT_EQ(Softplus().extra_repr(), "beta=1, threshold=20");
  EXPECT_EQ(Softplus(0.5).extra_repr(), "beta=0.5, threshold=20");
  EXPECT_EQ(Hardtanh().extra_repr(), "min_val=-1.0, max_val=1.0");
  EXPECT_EQ(Softmax(1).extra_repr(), "dim=1");
  expect_error([] { GELU("fast"); }, {"[GELU] approximate must be 'none' or 'tanh'"});
  expect_error([] { Hardtanh(1.0, -1.0); }, {"[Hardtanh]"});
}

TEST(NnModulesTest, PReLUIsLearnable) {
  PReLU pr(3);
  EXPECT_EQ(pr.weight.shape(), (Shape{3}));
  EXPECT_EQ(pr.weight.to_vector<float>(), (std::vector<float>{0.25f, 0.25f, 0.25f}));
  EXPECT_EQ(keys(pr.state_dict()), (std::vector<std::string>{"weight"}));
  Tensor x = tensor<float>({-4.f, 2.f, -8.f, 1.f, -1.f, 0.f}, {2, 3});
  expect_values(pr(x), {-1, 2, -2, 1, -0.25, 0});
  pr(x).sum().backward();
  // d/dw = sum of the negative inputs of each channel.
  expect_values(pr.weight.grad(), {-4, -1, -8});
  EXPECT_EQ(pr.extra_repr(), "num_parameters=3");
  expect_error([] { PReLU(0); }, {"[PReLU]"});
}

// ---- dropout ----

TEST(NnModulesTest, DropoutHonoursTrainAndEval) {
  manual_seed(9);
  Dropout drop(0.5);
  Tensor x = ones({100, 100});
  EXPECT_TRUE(drop.is_training());
  auto v = drop(x).to_vector<float>();
  size_t zeros_count = 0;
  for (float e : v) {
    EXPECT_TRUE(e == 0.0f || e == 2.0f) << e;
    zeros_count += e == 0.0f;
  }
  EXPECT_GT(zeros_count, 4500u);
  EXPECT_LT(zeros_count, 5500u);
  drop.eval();
  EXPECT_EQ(drop(x).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(drop.str(), "Dropout(p=0.5, inplace=False)");
  drop.train();
  for (float e : Dropout(1.0)(x).to_vector<float>()) EXPECT_EQ(e, 0.0f);
  expect_error([] { Dropout(1.5); },
               {"[Dropout] dropout probability has to be between 0 and 1, but got 1.5"});

  // Dropout2d zeroes whole channels.
  Dropout2d d2(0.5);
  Tensor y = d2(ones({4, 8, 3, 3}));
  auto yv = y.to_vector<float>();
  for (size_t c = 0; c < 32; ++c)
    for (size_t i = 1; i < 9; ++i) EXPECT_EQ(yv[c * 9 + i], yv[c * 9]);
  // eval() recurses through containers.
  Sequential seq{std::make_shared<Linear>(2, 2), std::make_shared<Dropout>(0.9)};
  seq.eval();
  EXPECT_FALSE(seq[1]->is_training());
}

// ---- normalization ----

TEST(NnModulesTest, BatchNormRunningStatsAfterTwoBatches) {
  BatchNorm1d bn(2);
  EXPECT_EQ(keys(bn.state_dict()),
            (std::vector<std::string>{"weight", "bias", "running_mean", "running_var",
                                      "num_batches_tracked"}));
  Tensor b1 = tensor<float>({1, 2, 3, 6, 5, 10}, {3, 2});
  Tensor y1 = bn(b1);
  // Batch mean (3, 6), biased var (8/3, 32/3): y = (x - mean) / sqrt(var + eps).
  const double s0 = std::sqrt(8.0 / 3.0 + 1e-5), s1 = std::sqrt(32.0 / 3.0 + 1e-5);
  expect_values(y1, {-2 / s0, -4 / s1, 0, 0, 2 / s0, 4 / s1}, 1e-5);
  // running = 0.9 running + 0.1 batch, unbiased var (4, 16).
  expect_values(bn.running_mean, {0.3, 0.6});
  expect_values(bn.running_var, {1.3, 2.5}, 1e-6);
  Tensor b2 = tensor<float>({0, 1, 2, 1, 4, 1}, {3, 2});
  bn(b2);
  expect_values(bn.running_mean, {0.9 * 0.3 + 0.2, 0.9 * 0.6 + 0.1}, 1e-6);
  expect_values(bn.running_var, {0.9 * 1.3 + 0.4, 0.9 * 2.5}, 1e-6);
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 2);
  // eval normalizes with the running statistics and leaves them alone.
  bn.eval();
  Tensor y = bn(b2);
  expect_values(y,
                {(0 - 0.47) / std::sqrt(1.57 + 1e-5), (1 - 0.64) / std::sqrt(2.25 + 1e-5),
                 (2 - 0.47) / std::sqrt(1.57 + 1e-5), (1 - 0.64) / std::sqrt(2.25 + 1e-5),
                 (4 - 0.47) / std::sqrt(1.57 + 1e-5), (1 - 0.64) / std::sqrt(2.25 + 1e-5)},
                1e-5);
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 2);
  EXPECT_EQ(bn.str(),
            "BatchNorm1d(2, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
}

TEST(NnModulesTest, BatchNormCumulativeAverageAndOptions) {
  BatchNorm1d bn(BatchNormOptions(2).momentum(std::nullopt));
  bn(tensor<float>({1, 2, 3, 6, 5, 10}, {3, 2}));
  bn(tensor<float>({0, 1, 2, 1, 4, 1}, {3, 2}));
  // momentum None: the plain average of the batch statistics.
  expect_values(bn.running_mean, {2.5, 3.5});
  expect_values(bn.running_var, {4.0, 8.0});
  EXPECT_EQ(bn.extra_repr(), "2, eps=1e-05, momentum=None, affine=True, track_running_stats=True");

  BatchNorm2d plain(BatchNormOptions(3).affine(false).track_running_stats(false));
  EXPECT_EQ(plain.parameters().size(), 0u);
  EXPECT_EQ(plain.state_dict().size(), 0u);
  plain.eval();  // no running stats: batch statistics even in eval
  Tensor x = randn({2, 3, 4, 4});
  expect_close(plain(x), F::batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true), 1e-5);
  expect_error([&] { plain(randn({2, 3, 4})); }, {"[BatchNorm2d] expected 4D input (got 3D input"});
  expect_error(
      [] {
        BatchNorm1d(2)(randn({2, 2, 2, 2}));
      },
      {"[BatchNorm1d] expected 2D or 3D input (got 4D input"});

  BatchNorm2d bn2(3);
  Tensor x2 = randn({4, 3, 2, 2});
  Tensor want_rm = x2.mean({0, 2, 3}) * 0.1;
  bn2(x2);
  expect_close(bn2.running_mean, want_rm, 1e-6);
}

TEST(NnModulesTest, LayerGroupInstanceRmsNormMatchFunctional) {
  manual_seed(8);
  Tensor x = randn({2, 6, 3, 3});
  LayerNorm ln(LayerNormOptions({3, 3}).eps(1e-3));
  EXPECT_EQ(ln.weight.shape(), (Shape{3, 3}));
  {
    NoGradGuard g;
    ln.weight.normal_();
    ln.bias.normal_();
  }
  expect_close(ln(x), F::layer_norm(x, {3, 3}, ln.weight, ln.bias, 1e-3), 1e-5);
  EXPECT_EQ(LayerNorm(Shape{10}).extra_repr(), "(10,), eps=1e-05, elementwise_affine=True");

  GroupNorm gn(3, 6);
  expect_close(gn(x), F::group_norm(x, 3, gn.weight, gn.bias), 1e-5);
  EXPECT_EQ(gn.extra_repr(), "3, 6, eps=1e-05, affine=True");
  expect_error([] { GroupNorm(4, 6); },
               {"[GroupNorm] num_channels must be divisible by num_groups"});

  InstanceNorm2d in(6);
  EXPECT_EQ(in.parameters().size(), 0u);
  expect_close(in(x), F::instance_norm(x), 1e-5);
  expect_close(in(x[0]), F::instance_norm(x[0].unsqueeze(0)).squeeze(0), 1e-5);
  EXPECT_EQ(in.str(),
            "InstanceNorm2d(6, eps=1e-05, momentum=0.1, affine=False, track_running_stats=False)");
  InstanceNorm2d tracked(InstanceNormOptions(6).track_running_stats(true).affine(true));
  tracked(x);
  tracked.eval();
  expect_close(tracked(x),
               F::instance_norm(x, tracked.running_mean, tracked.running_var, tracked.weight,
                                tracked.bias, false),
               1e-5);

  RMSNorm rms(RMSNormOptions({3}).eps(1e-6));
  expect_close(rms(x), F::rms_norm(x, {3}, rms.weight, 1e-6), 1e-5);
  EXPECT_EQ(RMSNorm(Shape{4}).extra_repr(), "(4,), eps=None, elementwise_affine=True");
}

// ---- embedding ----

TEST(NnModulesTest, EmbeddingInitLookupAndPretrained) {
  manual_seed(10);
  Embedding emb(EmbeddingOptions(10, 3).padding_idx(-1));
  EXPECT_EQ(*emb.options.padding_idx(), 9);
  EXPECT_EQ(emb.weight.select(0, 9).to_vector<float>(), (std::vector<float>{0, 0, 0}));
  Tensor idx = tensor<int64_t>({1, 9, 4, 1}, {2, 2});
  Tensor y = emb(idx);
  EXPECT_EQ(y.shape(), (Shape{2, 2, 3}));
  expect_close(y, F::embedding(idx, emb.weight));
  EXPECT_EQ(emb.str(), "Embedding(10, 3, padding_idx=9)");
  expect_error([] { Embedding(EmbeddingOptions(4, 2).padding_idx(4)); },
               {"[Embedding] padding_idx must be within num_embeddings"});
  expect_error([&] { emb(tensor<int64_t>({10})); }, {"[embedding]"});

  Embedding big(1000, 20);  // N(0, 1)
  auto v = big.weight.to_vector<double>();
  double m = 0, s = 0;
  for (double e : v) m += e;
  m /= double(v.size());
  for (double e : v) s += (e - m) * (e - m);
  s /= double(v.size() - 1);
  EXPECT_NEAR(m, 0.0, 0.03);
  EXPECT_NEAR(s, 1.0, 0.05);

  Tensor table = tensor<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  auto frozen = Embedding::from_pretrained(table);
  EXPECT_FALSE(frozen->weight.requires_grad());
  expect_values((*frozen)(tensor<int64_t>({2, 0})), {5, 6, 1, 2});
  auto trainable = Embedding::from_pretrained(table, false);
  EXPECT_TRUE(trainable->weight.requires_grad());
  EXPECT_EQ(trainable->extra_repr(), "3, 2");
}

// ---- losses ----

TEST(NnModulesTest, LossModulesMatchFunctional) {
  manual_seed(12);
  Tensor logits = randn({4, 3});
  Tensor target = tensor<int64_t>({0, 2, 1, 2});
  Tensor w = tensor<float>({1.f, 2.f, 0.5f});
  CrossEntropyLoss ce(CrossEntropyLossOptions().weight(w).ignore_index(1).label_smoothing(0.1));
  expect_close(ce(logits, target), F::cross_entropy(logits, target, w, 1, "mean", 0.1));
  EXPECT_EQ(keys(ce.state_dict()), (std::vector<std::string>{"weight"}));
  EXPECT_EQ(CrossEntropyLoss().state_dict().size(), 0u);
  EXPECT_EQ(ce.str(), "CrossEntropyLoss()");
  // Known value: uniform logits give log(C).
  EXPECT_NEAR(CrossEntropyLoss()(zeros({2, 4}), tensor<int64_t>({0, 3})).item<double>(),
              std::log(4.0), 1e-6);

  Tensor logp = F::log_softmax(logits, 1);
  expect_close(NLLLoss(NLLLossOptions().reduction("sum"))(logp, target),
               F::nll_loss(logp, target, Tensor(), -100, "sum"));
  Tensor a = randn({3, 5}), b = randn({3, 5});
  expect_close(MSELoss()(a, b), F::mse_loss(a, b));
  expect_close(L1Loss("none")(a, b), F::l1_loss(a, b, "none"));
  expect_close(HuberLoss("sum", 0.5)(a, b), F::huber_loss(a, b, "sum", 0.5));
  expect_close(SmoothL1Loss("mean", 0.3)(a, b), F::smooth_l1_loss(a, b, "mean", 0.3));
  Tensor p = F::sigmoid(a), t = rand({3, 5});
  expect_close(BCELoss()(p, t), F::binary_cross_entropy(p, t), 1e-6);
  Tensor pw = tensor<float>({1.f, 2.f, 3.f, 4.f, 5.f});
  BCEWithLogitsLoss bce(Tensor(), "mean", pw);
  expect_close(bce(a, t), F::binary_cross_entropy_with_logits(a, t, Tensor(), "mean", pw), 1e-6);
  EXPECT_EQ(keys(bce.state_dict()), (std::vector<std::string>{"pos_weight"}));
  Tensor q = F::softmax(randn({4, 3}), 1);
  expect_close(KLDivLoss("batchmean")(logp, q), F::kl_div(logp, q, "batchmean"));
  expect_close(KLDivLoss("sum", true)(logp, logp * 0.5), F::kl_div(logp, logp * 0.5, "sum", true));
  expect_values(MSELoss("sum")(tensor<float>({1, 2}), tensor<float>({3, 5})), {13});
  expect_error([] { MSELoss("avg"); }, {"[MSELoss] 'avg' is not a valid value for reduction"});
  expect_error(
      [] {
        KLDivLoss("batchmean");
        CrossEntropyLoss(CrossEntropyLossOptions().reduction("batchmean"));
      },
      {"[CrossEntropyLoss] 'batchmean' is not a valid value"});
  expect_error([] { CrossEntropyLoss(CrossEntropyLossOptions().label_smoothing(2)); },
               {"[CrossEntropyLoss] label_smoothing"});
  expect_error([&] { ce(logits, tensor<int64_t>({0, 1})); }, {"[cross_entropy]"});
}

// ---- autodiff ----

TEST(NnModulesTest, BackwardThroughSmallModelGivesGradsOfEveryParameter) {
  manual_seed(13);
  auto net = mlp();
  CrossEntropyLoss loss_fn;
  Tensor x = randn({6, 4});
  Tensor target = tensor<int64_t>({0, 1, 2, 0, 1, 2});
  Tensor loss = loss_fn((*net)(x), target);
  EXPECT_EQ(loss.dim(), 0);
  loss.backward();
  for (const auto& p : net->named_parameters()) {
    ASSERT_TRUE(p.second.grad().defined()) << p.first;
    EXPECT_EQ(p.second.grad().shape(), p.second.shape()) << p.first;
  }
  // The last bias's gradient is mean(softmax - onehot) over the batch: its entries sum to 0.
  double s = 0;
  for (double g : net->at<Linear>(2)->bias.grad().to_vector<double>()) s += g;
  EXPECT_NEAR(s, 0.0, 1e-6);
  net->zero_grad();
  for (const Tensor& p : net->parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(NnModulesTest, ConvNetBackward) {
  manual_seed(14);
  Sequential net{std::make_shared<Conv2d>(Conv2dOptions(1, 4, 3).padding(1)),
                 std::make_shared<BatchNorm2d>(4),
                 std::make_shared<ReLU>(),
                 std::make_shared<MaxPool2d>(2),
                 std::make_shared<Flatten>(),
                 std::make_shared<Linear>(4 * 3 * 3, 2)};
  Tensor x = randn({2, 1, 6, 6});
  Tensor out = net(x);
  EXPECT_EQ(out.shape(), (Shape{2, 2}));
  F::cross_entropy(out, tensor<int64_t>({1, 0})).backward();
  auto k = keys(net.state_dict());
  std::sort(k.begin(), k.end());
  EXPECT_EQ(k, (std::vector<std::string>{"0.bias", "0.weight", "1.bias", "1.num_batches_tracked",
                                         "1.running_mean", "1.running_var", "1.weight", "5.bias",
                                         "5.weight"}));
  for (const auto& p : net.named_parameters()) {
    ASSERT_TRUE(p.second.grad().defined()) << p.first;
    EXPECT_EQ(p.second.grad().shape(), p.second.shape()) << p.first;
  }
}

// A module used twice (torch's Sequential(a, a)): parameters() and named_parameters() list its
// parameters once, state_dict under both paths, and an optimizer steps them once.
TEST(NnModulesTest, SharedModuleParametersAreListedOnceAsTorch) {
  auto a = std::make_shared<Linear>(1, 1, false);
  {
    NoGradGuard no_grad;
    a->weight.fill_(2);
  }
  auto net =
      std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<UnaryModule>>{a, a});
  ASSERT_EQ(net->parameters().size(), 1u);
  EXPECT_EQ(net->named_parameters()[0].first, "0.weight");
  EXPECT_EQ(net->named_modules().size(), 2u);  // "" and "0"
  const StateDict sd = net->state_dict();
  ASSERT_EQ(sd.items().size(), 2u);
  EXPECT_EQ(sd.items()[0].first, "0.weight");
  EXPECT_EQ(sd.items()[1].first, "1.weight");
  EXPECT_EQ(net->load_state_dict(sd), "");
  optim::SGD opt(net->parameters(), optim::SGDOptions(0.1));
  // y = w * (w * x): dy/dw = 2 w x = 4 at w = 2, x = 1.
  sum(net->forward(ones({1, 1}))).backward();
  EXPECT_FLOAT_EQ(a->weight.grad().item<float>(), 4.f);
  opt.step();
  EXPECT_FLOAT_EQ(a->weight.item<float>(), 1.6f);
}
