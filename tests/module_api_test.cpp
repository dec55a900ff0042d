// The nn::Module API a C++ user reaches for (issue 14): accessors used on temporaries (run
// under ASan in CI, which catches a dangling reference), modules not owned by a shared_ptr,
// printing, num_parameters, summary, Functional, AnyModule and Sequential of any module,
// forward pre-hooks and hooks. torch answers from tests/golden/make_module_api_golden.py.
#include <gtest/gtest.h>

#include <sstream>
#include <type_traits>

#include "ember/autograd.h"
#include "ember/data/data.h"
#include "ember/ember.h"
#include "test_util.h"

using namespace ember;
using namespace ember::nn;
using ember::test::expect_error;
using ember::test::expect_near;

namespace {
#include "golden/module_api_golden.inc"

std::shared_ptr<Sequential> mlp() {
  manual_seed(0);
  return std::make_shared<Sequential>(std::make_shared<Linear>(4, 8), std::make_shared<ReLU>(),
                                      std::make_shared<Linear>(8, 2));
}

// Fixed weights of the torch hook script's model.
std::shared_ptr<Sequential> hook_model() {
  auto m = make_sequential(std::make_shared<Linear>(3, 2), std::make_shared<ReLU>(),
                           std::make_shared<Linear>(2, 1));
  NoGradGuard g;
  m->at<Linear>(0)->weight.copy_(tensor<float>({0.5, -1.0, 0.25, -0.5, 0.75, 1.0}, {2, 3}));
  m->at<Linear>(0)->bias.copy_(tensor<float>({0.1f, -0.2f}));
  m->at<Linear>(2)->weight.copy_(tensor<float>({1.5f, -2.0f}, {1, 2}));
  m->at<Linear>(2)->bias.copy_(tensor<float>({0.3f}));
  return m;
}
Tensor hook_input() { return tensor<float>({1.0, 2.0, 3.0, -1.0, 0.5, -2.0}, {2, 3}); }

template <typename T, typename = void>
struct HasBegin : std::false_type {};
template <typename T>
struct HasBegin<T, std::void_t<decltype(std::declval<T>().begin())>> : std::true_type {};
}  // namespace

// ---- item 1: accessors on temporaries return values, on lvalues references ----

static_assert(!std::is_reference_v<decltype(std::declval<StateDict>().items())>);
static_assert(std::is_reference_v<decltype(std::declval<const StateDict&>().items())>);
static_assert(!std::is_reference_v<decltype(std::declval<StateDict>().at(""))>);
static_assert(std::is_reference_v<decltype(std::declval<const StateDict&>().at(""))>);
static_assert(!HasBegin<StateDict>::value, "begin() on a temporary StateDict would dangle");
static_assert(HasBegin<const StateDict&>::value);
static_assert(!std::is_reference_v<decltype(Conv2dOptions(3, 8, 3).kernel_size())>);
static_assert(!std::is_reference_v<decltype(Conv2dOptions(3, 8, 3).stride(2).padding())>);
static_assert(!std::is_reference_v<decltype(Conv2dOptions(3, 8, 3).padding(1).padding_str())>);
static_assert(!std::is_reference_v<decltype(ExpandingArray<2>(3).vec())>);
static_assert(!std::is_reference_v<decltype(LinearOptions(2, 3).bias(false))>);
static_assert(std::is_reference_v<decltype(std::declval<LinearOptions&>().bias(false))>);
static_assert(!std::is_reference_v<decltype(Linear(2, 3).type_name())>);

TEST(ModuleTemporaryTest, StateDictItemsOfTemporaryHasRightValues) {
  auto model = mlp();
  std::vector<std::string> names;
  std::vector<int64_t> numels;
  for (auto& [k, v] : model->state_dict().items()) {  // the issue's idiom
    names.push_back(k);
    numels.push_back(v.numel());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  EXPECT_EQ(numels, (std::vector<int64_t>{32, 8, 16, 2}));
}

TEST(ModuleTemporaryTest, StateDictIteratesDirectlyAndAtOfTemporaryIsACopy) {
  auto model = mlp();
  int64_t total = 0;
  size_t n = 0;
  for (auto& [k, v] : model->state_dict()) {
    total += v.numel();
    ++n;
  }
  EXPECT_EQ(n, 4u);
  EXPECT_EQ(total, 58);
  const Tensor& w = model->state_dict().at("2.weight");  // by value: the reference extends it
  EXPECT_EQ(w.shape(), (Shape{2, 8}));
  EXPECT_EQ(ember::test::d(w), ember::test::d(model->at<Linear>(2)->weight));
  const StateDict sd = model->state_dict();
  EXPECT_EQ(&sd.at("0.bias"), &sd.items()[1].second);  // an lvalue hands out references
}

TEST(ModuleTemporaryTest, ModuleListsOfTemporaryModelsStayValid) {
  // The model itself is a temporary here: every list is returned by value and shares data.
  int64_t numel = 0;
  for (auto& [k, v] : mlp()->named_parameters()) numel += v.numel();
  EXPECT_EQ(numel, 58);
  int64_t n = 0;
  for (const Tensor& p : mlp()->parameters()) n += p.numel();
  EXPECT_EQ(n, 58);
  std::vector<std::string> types;
  for (auto& [name, m] : mlp()->named_modules()) types.push_back(name + ":" + m->type_name());
  EXPECT_EQ(types, (std::vector<std::string>{":Sequential", "0:Linear", "1:ReLU", "2:Linear"}));
  size_t kids = 0;
  for (auto& c : mlp()->children()) kids += c != nullptr;
  EXPECT_EQ(kids, 3u);
  auto bn = std::make_shared<BatchNorm2d>(3);
  std::vector<std::string> bufs;
  for (auto& [k, v] : std::make_shared<BatchNorm2d>(3)->named_buffers()) bufs.push_back(k);
  EXPECT_EQ(bufs, (std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"}));
  std::string name;
  for (char c : Linear(2, 3).type_name()) name += c;
  EXPECT_EQ(name, "Linear");
}

TEST(ModuleTemporaryTest, OptionsAccessorsOnTemporaries) {
  int64_t sum = 0;
  for (int64_t k : Conv2dOptions(3, 8, {3, 5}).stride(2).kernel_size().vec()) sum += k;
  EXPECT_EQ(sum, 8);
  const auto& pad = Conv2dOptions(3, 8, 3).padding({1, 2}).padding();
  EXPECT_EQ(pad.values, (std::vector<int64_t>{1, 2}));
  const std::string& same = Conv2dOptions(3, 8, 3).padding("same").padding_str();
  EXPECT_EQ(same, "same");
  const std::string& mode = Conv2dOptions(3, 8, 3).padding_mode("reflect").padding_mode();
  EXPECT_EQ(mode, "reflect");
  for (int64_t v : ExpandingArray<3>(4).vec()) EXPECT_EQ(v, 4);
  // Chained setters on a temporary still configure the module.
  Conv2d conv(Conv2dOptions(3, 8, 3).stride(2).padding(1).bias(false));
  EXPECT_EQ(conv.options.stride().values, (std::vector<int64_t>{2, 2}));
  EXPECT_FALSE(conv.bias.defined());
  LinearOptions lo(2, 3);
  lo.bias(false).in_features(4);  // lvalue chain still mutates lo
  EXPECT_EQ(lo.in_features(), 4);
  EXPECT_FALSE(lo.bias());
}

// ---- item 3: a module not owned by a shared_ptr ----

namespace {
struct Net : UnaryModule {
  Net() : UnaryModule("Net") { fc = register_module("fc", std::make_shared<Linear>(2, 2)); }
  Tensor forward(const Tensor& x) override { return (*fc)(x); }
  std::shared_ptr<Linear> fc;
};
}  // namespace

TEST(ModuleOwnershipTest, StackModuleNamedModulesSaysUseMakeShared) {
  Net m;
  expect_error([&] { m.named_modules(); },
               {"[Module::named_modules] the Net module is not owned by a std::shared_ptr",
                "create it with std::make_shared<Net>(...)"});
  Linear lin(2, 2);
  expect_error([&] { lin.shared_self("summary"); }, {"[summary]", "std::make_shared<Linear>"});
  // Parameters and state_dict need no shared_ptr.
  EXPECT_EQ(m.parameters().size(), 2u);
  auto owned = std::make_shared<Net>();
  EXPECT_EQ(owned->named_modules().size(), 2u);
  EXPECT_EQ(owned->shared_self().get(), owned.get());
}

// ---- item 8: printing, num_parameters, summary, Functional, AnyModule ----

TEST(ModulePrintTest, StreamPrintsTorchTree) {
  auto model = mlp();
  std::ostringstream a, b;
  a << *model;
  b << model;
  EXPECT_EQ(a.str(), kSeqRepr);
  EXPECT_EQ(b.str(), kSeqRepr);
  auto conv = std::make_shared<Sequential>(
      std::make_shared<Conv2d>(Conv2dOptions(3, 8, 3).stride(2).padding(1)),
      std::make_shared<BatchNorm2d>(8), std::make_shared<Flatten>());
  std::ostringstream c;
  c << conv;
  EXPECT_EQ(c.str(), kConvRepr);
  std::ostringstream n;
  n << std::shared_ptr<Linear>();
  EXPECT_EQ(n.str(), "nullptr");
}

TEST(NumParametersTest, TotalAndTrainableCountSharedOnceAsTorch) {
  auto a = std::make_shared<Linear>(4, 4);
  auto b = std::make_shared<Linear>(4, 2);
  b->bias.requires_grad_(false);
  auto shared = std::make_shared<Sequential>(a, a, b);
  EXPECT_EQ(shared->num_parameters(), kSharedTotal);
  EXPECT_EQ(shared->num_parameters(true), kSharedTrainable);
  TransformerEncoder enc(TransformerEncoderLayerOptions(8, 2).dim_feedforward(16), 2);
  EXPECT_EQ(enc.num_parameters(), kEncoderParams);
}

TEST(SummaryTest, TableHasEachLayersOutputShapeAndParameters) {
  auto model = mlp();
  model->at<Linear>(2)->bias.requires_grad_(false);
  Summary s = summary(model, randn({5, 4}));
  ASSERT_EQ(s.rows.size(), 4u);
  EXPECT_EQ(s.rows[0].type, "Sequential");
  EXPECT_EQ(s.rows[0].output_shape, (Shape{5, 2}));
  EXPECT_EQ(s.rows[1].name, "0");
  EXPECT_EQ(s.rows[1].output_shape, (Shape{5, 8}));
  EXPECT_EQ(s.rows[1].params, 40);
  EXPECT_EQ(s.rows[2].type, "ReLU");
  EXPECT_EQ(s.rows[2].params, 0);
  EXPECT_EQ(s.rows[3].output_shape, (Shape{5, 2}));
  EXPECT_EQ(s.rows[3].params, 18);
  EXPECT_EQ(s.total_params, 58);
  EXPECT_EQ(s.trainable_params, 56);
  const std::string t = s.str();
  for (const char* piece : {"Layer (type)", "Output Shape", "Param #", "  (0): Linear", "[5, 8]",
                            "Total params: 58", "Trainable params: 56", "Non-trainable params: 2"})
    EXPECT_NE(t.find(piece), std::string::npos) << piece << "\n" << t;
  std::ostringstream os;
  os << s;
  EXPECT_EQ(os.str(), t);
}

TEST(SummaryTest, SeveralInputsNestedModulesAndStateRestored) {
  auto seq = std::make_shared<Sequential>(
      std::make_shared<TransformerEncoder>(
          TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0), 1),
      std::make_shared<Linear>(8, 3));
  seq->train();
  Tensor src = randn({4, 2, 8});
  Tensor mask = zeros({4, 4});
  Summary s = summary(seq, src, mask);
  auto row = [&](const std::string& name) {
    for (const auto& r : s.rows)
      if (r.name == name) return r;
    ADD_FAILURE() << "no row " << name;
    return SummaryRow{};
  };
  EXPECT_EQ(row("").output_shape, (Shape{4, 2, 3}));
  EXPECT_EQ(row("0").output_shape, (Shape{4, 2, 8}));
  EXPECT_EQ(row("0.layers.0.linear1").output_shape, (Shape{4, 2, 16}));
  EXPECT_EQ(row("0.layers.0.self_attn").params, 3 * 8 * 8 + 3 * 8);
  EXPECT_EQ(row("0.layers.0.linear1").depth, 4);
  EXPECT_TRUE(row("0.layers.0.self_attn.out_proj").called);
  EXPECT_EQ(s.total_params, seq->num_parameters());
  // Training mode back, hooks gone: a second summary sees the same, and a plain call runs.
  EXPECT_TRUE(seq->is_training());
  EXPECT_TRUE(
      seq->at<TransformerEncoder>(0)->layers->at<TransformerEncoderLayer>(0)->is_training());
  EXPECT_EQ(summary(seq, src, mask).str(), s.str());
  EXPECT_EQ(seq->forward(src, mask).shape(), (Shape{4, 2, 3}));
}

TEST(FunctionalTest, WrapsLambdasAndFunctionsWithBoundArguments) {
  Tensor x = tensor<float>({-2.0f, -0.5f, 0.0f, 1.5f});
  auto relu = std::make_shared<Functional>([](const Tensor& t) { return t.relu(); });
  expect_near((*relu)(x), {0, 0, 0, 1.5});
  auto leaky = std::make_shared<Functional>(nn::functional::leaky_relu, 0.2);
  expect_near((*leaky)(x), {-0.4, -0.1, 0, 1.5}, 1e-6);
  EXPECT_EQ(relu->str(), "Functional()");
  auto seq =
      make_sequential(std::make_shared<Functional>([](const Tensor& t) { return t * 2; }), leaky);
  expect_near((*seq)(x), {-0.8, -0.2, 0, 3.0}, 1e-6);
  expect_error([] { Functional f{std::function<Tensor(const Tensor&)>()}; },
               {"[Functional] the function is empty"});
}

TEST(AnyModuleTest, CallsAnyForwardAndChecksArguments) {
  manual_seed(1);
  auto lin = std::make_shared<Linear>(3, 2);
  AnyModule a(lin);
  Tensor x = randn({4, 3});
  EXPECT_EQ(ember::test::d(a.forward(x)), ember::test::d(lin->forward(x)));
  auto loss = std::make_shared<MSELoss>();
  Tensor y = randn({4, 2});
  AnyModule l(loss);
  EXPECT_EQ(ember::test::d(l.forward(x.narrow(1, 0, 2), y)),
            ember::test::d(loss->forward(x.narrow(1, 0, 2), y)));
  auto mha = std::make_shared<MultiheadAttention>(4, 2);
  AnyModule m(mha);
  Tensor q = randn({3, 2, 4});
  auto [out, w] = mha->forward(q, q, q);
  EXPECT_EQ(ember::test::d(m.forward(q, q, q)), ember::test::d(out));  // the first output
  // Trailing arguments left out are value-initialized: average_attn_weights is given here.
  auto full = m.forward<std::tuple<Tensor, Tensor>>(q, q, q, Tensor(), true, Tensor(), true);
  EXPECT_EQ(ember::test::d(std::get<1>(full)), ember::test::d(w));
  EXPECT_EQ(m.get<MultiheadAttention>(), mha);
  EXPECT_EQ(m.name(), "MultiheadAttention");
  expect_error([&] { m.forward(q, q, 3.5); },
               {"[AnyModule] argument 3 of MultiheadAttention's forward takes Tensor",
                "got a floating value"});
  expect_error([&] { a.forward(x, x); }, {"[AnyModule] Linear's forward takes at most 1 argument"});
  auto seq = std::make_shared<Sequential>(std::make_shared<MSELoss>());
  EXPECT_EQ(AnyModule(seq).forward(y, y).item<double>(), 0.0);  // a Sequential passes them on
  expect_error([&] { l.forward(x, y, y); }, {"takes at most 2 arguments, got 3"});
  expect_error([&] { a.get<ReLU>(); }, {"[AnyModule] the module is a Linear"});
  expect_error([&] { m.forward<int>(q, q, q); }, {"returns", "not"});
  expect_error([] { AnyModule().forward(Tensor()); }, {"[AnyModule] forward on an empty"});
}

TEST(SequentialAnyTest, FirstModuleTakesSeveralArguments) {
  manual_seed(2);
  auto opts = TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0);
  auto enc = std::make_shared<TransformerEncoder>(opts, 2);
  auto head = std::make_shared<Linear>(8, 3);
  Sequential seq{enc, head};
  Tensor src = randn({5, 2, 8});
  Tensor mask = triu(ones({5, 5}) * -1e9, 1);  // causal
  Tensor want = head->forward(enc->forward(src, mask));
  expect_near(seq.forward(src, mask), ember::test::d(want), 1e-6);
  expect_near(seq(src, mask), ember::test::d(want), 1e-6);
  EXPECT_NE(ember::test::d(seq.forward(src))[0], ember::test::d(want)[0]);  // the mask mattered
  // A loss taking (input, target) first; MultiheadAttention's output passed on.
  auto mha = std::make_shared<MultiheadAttention>(8, 2);
  Sequential attn(mha, std::make_shared<ReLU>());
  Tensor q = randn({5, 2, 8});
  expect_near(attn.forward(q, q, q), ember::test::d(std::get<0>(mha->forward(q, q, q)).relu()),
              1e-6);
  Sequential with_loss(std::make_shared<MSELoss>());
  expect_near(with_loss.forward(q, q * 0), {q.pow(2).mean().item<double>()}, 1e-5);
  EXPECT_EQ(seq.at<Linear>(1), head);
  EXPECT_EQ(seq[0]->type_name(), "TransformerEncoder");
  EXPECT_EQ(seq.state_dict().size(), enc->state_dict().size() + 2);
  expect_error([&] { Sequential().forward(src, mask); }, {"[Sequential] an empty Sequential"});
  expect_error([&] { seq.push_back(std::shared_ptr<Linear>()); },
               {"[Sequential] cannot add a null"});
}

// ---- item 6 (modules): forward pre-hooks and hooks ----

TEST(ModuleHooksTest, ReplaceInspectAndRemoveMatchTorch) {
  auto m = hook_model();
  Tensor x = hook_input();
  expect_near((*m)(x), kHookPlain, 1e-6);
  Tensor seen;
  auto h1 =
      m->at<Linear>(0)->register_forward_pre_hook([](Module&, const Tensor& in) { return in * 2; });
  auto h2 = m->at<ReLU>(1)->register_forward_hook(
      [](Module&, const Tensor&, const Tensor& out) { return out + 1; });
  auto h3 = m->at<Linear>(2)->register_forward_hook(
      [&](Module&, const Tensor& in, const Tensor&) { seen = in; });
  expect_near((*m)(x), kHookReplaced, 1e-5);
  expect_near(seen, kHookSeenInput, 1e-5);
  // A direct forward() runs no hooks (torch's module.forward(x)); the chain does.
  auto first = m->at<Linear>(0);
  EXPECT_EQ(ember::test::d(first->forward(x)), ember::test::d((*first)(x * 0.5)));
  EXPECT_TRUE(h1.active());
  for (auto* h : {&h1, &h2, &h3}) h->remove();
  EXPECT_FALSE(h1.active());
  h1.remove();  // twice: nothing
  expect_near((*m)(x), kHookRemoved, 1e-6);
}

TEST(ModuleHooksTest, FeatureExtractionAndActivationStatistics) {
  auto model = mlp();
  Tensor x = randn({6, 4});
  // Feature extraction: the ReLU's output.
  Tensor features;
  auto h = (*model)[1]->register_forward_hook(
      [&](Module&, const Tensor&, const Tensor& out) { features = out; });
  (*model)(x);
  expect_near(features, ember::test::d(model->at<Linear>(0)->forward(x).relu()));
  h.remove();
  // Statistics of every Linear: calls, mean and the fraction of positive outputs.
  struct Stat {
    int calls = 0;
    double mean = 0;
  };
  std::map<std::string, Stat> stats;
  std::vector<RemovableHandle> handles;
  for (auto& [name, m] : model->named_modules())
    if (std::dynamic_pointer_cast<Linear>(m))
      handles.push_back(m->register_forward_hook(
          [&stats, name = name](Module&, const Tensor&, const Tensor& out) {
            stats[name].calls++;
            stats[name].mean = out.mean().item<double>();
          }));
  const double want = model->forward(x).mean().item<double>();  // forward runs child hooks too
  stats.clear();
  (*model)(x);
  (*model)(x);
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats["0"].calls, 2);
  EXPECT_EQ(stats["2"].calls, 2);
  EXPECT_NEAR(stats["2"].mean, want, 1e-6);
  for (auto& hd : handles) hd.remove();
  (*model)(x);
  EXPECT_EQ(stats["0"].calls, 2);
}

TEST(ModuleHooksTest, SeveralInputsOrderRemovalAndLifetime) {
  // Every tensor input of a loss, as a vector; the replacement changes the result.
  auto loss = std::make_shared<MSELoss>();
  std::vector<int64_t> sizes;
  std::vector<std::string> order;
  loss->register_forward_pre_hook([&](Module& m, const std::vector<Tensor>& in) {
    order.push_back("pre " + m.type_name());
    for (const auto& t : in) sizes.push_back(t.numel());
  });
  auto h = loss->register_forward_pre_hook([](Module&, const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0], in[0]};
  });
  loss->register_forward_hook([&](Module&, const std::vector<Tensor>& in, const Tensor& out) {
    order.push_back("post " + std::to_string(in.size()) + " " + std::to_string(out.item<double>()));
  });
  Tensor a = tensor<float>({1.0f, 2.0f}), b = tensor<float>({0.0f, 0.0f});
  EXPECT_EQ((*loss)(a, b).item<double>(), 0.0);  // target replaced by the input
  EXPECT_EQ(order, (std::vector<std::string>{"pre MSELoss", "post 2 0.000000"}));
  EXPECT_EQ(sizes, (std::vector<int64_t>{2, 2}));
  h.remove();
  EXPECT_NEAR((*loss)(a, b).item<double>(), 2.5, 1e-6);
  auto bad = loss->register_forward_pre_hook(
      [](Module&, const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0]}; });
  expect_error([&] { (*loss)(a, b); }, {"[register_forward_pre_hook] the hook returned 1 inputs"});
  bad.remove();
  // A hook inside a TransformerEncoderLayer (children are called through operator()) and on
  // MultiheadAttention through AnyModule; an undefined return keeps the output.
  TransformerEncoderLayer layer(TransformerEncoderLayerOptions(8, 2).dim_feedforward(16));
  int calls = 0;
  layer.linear1->register_forward_hook([&](Module&, const Tensor&, const Tensor&) {
    ++calls;
    return Tensor();
  });
  layer(randn({3, 1, 8}));
  EXPECT_EQ(calls, 1);
  auto mha = std::make_shared<MultiheadAttention>(8, 2);
  mha->register_forward_hook([](Module&, const std::vector<Tensor>& in, const Tensor& out) {
    EXPECT_EQ(in.size(), 3u);  // query, key, value (the masks were not given)
    return out * 0;
  });
  Tensor q = randn({3, 1, 8});
  EXPECT_EQ(AnyModule(mha).forward(q, q, q).abs().sum().item<double>(), 0.0);
  // A handle outliving its module does nothing.
  RemovableHandle orphan;
  {
    auto tmp = std::make_shared<ReLU>();
    orphan = tmp->register_forward_hook([](Module&, const Tensor&, const Tensor&) {});
  }
  EXPECT_TRUE(orphan.active());
  orphan.remove();
  EXPECT_FALSE(orphan.active());
}

TEST(ModuleHooksTest, HookMayRemoveItselfWhileRunning) {
  auto relu = std::make_shared<ReLU>();
  int calls = 0;
  RemovableHandle h;
  h = relu->register_forward_hook([&](Module&, const Tensor&, const Tensor&) {
    ++calls;
    h.remove();
  });
  (*relu)(ones({2}));
  (*relu)(ones({2}));
  EXPECT_EQ(calls, 1);
}

// ---- item 14 (part): the non-strict load_state_dict result is what module.h says ----

TEST(LoadStateDictDocTest, NonStrictReportFormat) {
  auto model = mlp();
  StateDict d = model->state_dict();
  StateDict partial;
  for (auto& [k, v] : d)
    if (k != "2.bias") partial.set(k, v);
  partial.set("extra", zeros({1}));
  EXPECT_EQ(model->load_state_dict(partial, false), "missing keys: 2.bias; unexpected keys: extra");
  EXPECT_EQ(model->load_state_dict(d, false), "");
  StateDict only_extra = model->state_dict();
  only_extra.set("x", zeros({1}));
  EXPECT_EQ(model->load_state_dict(only_extra, false), "unexpected keys: x");
}

// The rest of the public API's accessors that hand out references: on a temporary they return
// copies (a reference would point into an object destroyed at the end of the expression).
TEST(ModuleTemporaryTest, OtherPublicAccessorsReturnCopiesOnTemporaries) {
  using optim::ParamGroup;
  static_assert(
      std::is_same_v<decltype(std::declval<optim::SGD>().param_groups()), std::vector<ParamGroup>>);
  static_assert(std::is_same_v<decltype(std::declval<const optim::SGD&>().param_groups()),
                               const std::vector<ParamGroup>&>);
  static_assert(std::is_same_v<decltype(std::declval<optim::SGD>().name()), std::string>);
  static_assert(
      std::is_same_v<decltype(std::declval<optim::StepLR>().get_last_lr()), std::vector<double>>);
  static_assert(
      std::is_same_v<decltype(std::declval<optim::StepLR>().base_lrs()), std::vector<double>>);
  static_assert(std::is_same_v<decltype(std::declval<data::ImageFolder>().classes()),
                               std::vector<std::string>>);
  static_assert(std::is_same_v<decltype(std::declval<data::Subset<data::Example>>().indices()),
                               std::vector<int64_t>>);
  // And the values are right when used so.
  auto make_sgd = [] {
    Tensor w = ones({2}).requires_grad_();
    return optim::SGD({w}, optim::SGDOptions(0.5));
  };
  std::vector<int64_t> numels;
  for (const ParamGroup& g : make_sgd().param_groups()) numels.push_back(g.params.at(0).numel());
  EXPECT_EQ(numels, (std::vector<int64_t>{2}));
}
