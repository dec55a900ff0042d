// ember::optim and nn::utils clipping against PyTorch 1.13, step by step:
// tests/golden/make_optim_golden.py writes tests/data/golden/optim.json (optimizer parameter
// trajectories, scheduler lrs, clip_grad_norm_ results); these tests replay every case.
// Plus state_dict round trips, option fall-back, and error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "ember/autograd.h"
#include "ember/ember.h"
#include "ember/nn/utils.h"
#include "ember/optim/optim.h"

using json = nlohmann::json;
using namespace ember;
using namespace ember::optim;

namespace {

const json& golden() {
  static const json j = [] {
    const std::string path = std::string(EMBER_TEST_DATA_DIR) + "/golden/optim.json";
    std::ifstream f(path);
    if (!f)
      throw std::runtime_error("cannot open " + path + " (run tests/golden/make_optim_golden.py)");
    return json::parse(f);
  }();
  return j;
}

std::vector<double> v(const Tensor& t) { return t.to_vector<double>(); }

bool close(double a, double b, double rtol = 1e-5, double atol = 1e-12) {
  return std::fabs(a - b) <= atol + rtol * std::fabs(b);
}

bool all_close(const std::vector<double>& a, const std::vector<double>& b, double rtol = 1e-5) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!close(a[i], b[i], rtol)) return false;
  return true;
}

std::string str(const std::vector<double>& x) {
  std::ostringstream os;
  os.precision(17);
  for (double d : x) os << d << ' ';
  return os.str();
}

// The golden problem's parameters, fresh.
struct Problem {
  Tensor W, b, c, x, y;
  Problem() {
    const json& p = golden()["problem"];
    W = from_vector<double>(p["W"].get<std::vector<double>>(), {2, 3});
    b = from_vector<double>(p["b"].get<std::vector<double>>(), {3});
    c = from_vector<double>(p["c"].get<std::vector<double>>(), {2});
    x = from_vector<double>(p["x"].get<std::vector<double>>(), {3});
    y = from_vector<double>(p["y"].get<std::vector<double>>(), {2, 3});
    for (Tensor* t : {&W, &b, &c}) t->requires_grad_();
  }
  Tensor by_name(const std::string& n) const { return n == "W" ? W : n == "b" ? b : c; }
  // loss = sum((W * x - y)^2) + sum(sin(b)); c is unused, so its grad stays undefined.
  void backward() const {
    Tensor d = W * x - y;
    Tensor sq = d * d;
    sq.backward(ones_like(sq));
    Tensor s = sin(b);
    s.backward(ones_like(s));
  }
};

std::unique_ptr<OptimizerOptions> make_options(const std::string& type) {
  if (type == "SGD") return std::make_unique<SGDOptions>();
  if (type == "Adam") return std::make_unique<AdamOptions>();
  if (type == "AdamW") return std::make_unique<AdamWOptions>();
  if (type == "RMSprop") return std::make_unique<RMSpropOptions>();
  if (type == "Adagrad") return std::make_unique<AdagradOptions>();
  throw std::runtime_error("unknown optimizer " + type);
}

std::unique_ptr<OptimizerOptions> options_from(const std::string& type, const json& j) {
  auto o = make_options(type);
  for (const auto& [k, val] : j.items()) o->set(k, val.get<double>());
  return o;
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& type, std::vector<ParamGroup> groups,
                                          const OptimizerOptions& d) {
  if (type == "SGD")
    return std::make_unique<SGD>(std::move(groups), static_cast<const SGDOptions&>(d));
  if (type == "Adam")
    return std::make_unique<Adam>(std::move(groups), static_cast<const AdamOptions&>(d));
  if (type == "AdamW")
    return std::make_unique<AdamW>(std::move(groups), static_cast<const AdamWOptions&>(d));
  if (type == "RMSprop")
    return std::make_unique<RMSprop>(std::move(groups), static_cast<const RMSpropOptions&>(d));
  return std::make_unique<Adagrad>(std::move(groups), static_cast<const AdagradOptions&>(d));
}

std::unique_ptr<Optimizer> optimizer_for_case(const json& cs, const Problem& pb) {
  const std::string type = cs["optimizer"];
  std::vector<ParamGroup> groups;
  for (const auto& g : cs["groups"]) {
    std::vector<Tensor> ps;
    for (const auto& n : g["params"]) ps.push_back(pb.by_name(n.get<std::string>()));
    if (g["options"].empty()) {
      groups.emplace_back(ps);
    } else {
      groups.emplace_back(ps, *options_from(type, g["options"]));
    }
  }
  // The golden c parameter is in the group list only when the case names it.
  return make_optimizer(type, std::move(groups), *options_from(type, cs["defaults"]));
}

}  // namespace

// ---------------- optimizers ----------------

TEST(OptimTest, GoldenTrajectoriesMatchTorchStepByStep) {
  const auto& cases = golden()["optimizers"];
  ASSERT_GE(cases.size(), 20u);
  int matched = 0;
  for (const auto& cs : cases) {
    const std::string name = cs["name"];
    Problem pb;
    auto opt = optimizer_for_case(cs, pb);
    bool ok = true;
    for (int s = 0; s < cs["steps"].get<int>() && ok; ++s) {
      opt->zero_grad();
      pb.backward();
      opt->step();
      for (const char* p : {"W", "b", "c"}) {
        const auto want = cs["expected"][p][size_t(s)].get<std::vector<double>>();
        const auto got = v(pb.by_name(p));
        if (!all_close(got, want)) {
          ADD_FAILURE() << name << " step " << s + 1 << " param " << p << ": got " << str(got)
                        << " want " << str(want);
          ok = false;
        }
      }
    }
    matched += ok;
  }
  std::cout << "[optim parity] " << matched << "/" << cases.size()
            << " optimizer configs match torch 1.13 step by step\n";
  EXPECT_EQ(matched, int(cases.size()));
}

TEST(OptimTest, Float32ParametersFollowTheFloat64Trajectory) {
  for (const auto& cs : golden()["optimizers"]) {
    if (cs["groups"].size() != 1) continue;
    const std::string type = cs["optimizer"];
    const json& p = golden()["problem"];
    Tensor W = from_vector<double>(p["W"].get<std::vector<double>>(), {2, 3}).to(DType::f32);
    Tensor x = from_vector<double>(p["x"].get<std::vector<double>>(), {3}).to(DType::f32);
    Tensor y = from_vector<double>(p["y"].get<std::vector<double>>(), {2, 3}).to(DType::f32);
    W.requires_grad_();
    auto opt = make_optimizer(type, {ParamGroup({W})}, *options_from(type, cs["defaults"]));
    for (int s = 0; s < cs["steps"].get<int>(); ++s) {
      opt->zero_grad();
      Tensor d = W * x - y;
      Tensor sq = d * d;
      sq.backward(ones_like(sq));
      opt->step();
      ASSERT_EQ(W.dtype(), DType::f32);
      const auto want = cs["expected"]["W"][size_t(s)].get<std::vector<double>>();
      const auto got = v(W);
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-4) << cs["name"] << " step " << s + 1;
    }
  }
}

TEST(OptimTest, ParamsWithoutGradAreSkipped) {
  Problem pb;
  Adam opt(std::vector<Tensor>{pb.W, pb.b, pb.c}, AdamOptions(0.1));
  pb.backward();
  opt.step();
  EXPECT_EQ(v(pb.c), (std::vector<double>{0.25, -0.5}));
  EXPECT_EQ(opt.state(pb.c), nullptr);
  ASSERT_NE(opt.state(pb.W), nullptr);
  EXPECT_EQ(opt.state(pb.W)->step, 1.0);
  // Adam's first step moves every coordinate by lr (m / sqrt(v) = sign(g)).
  const auto w = v(pb.W);
  EXPECT_NEAR(w[0], 0.5 - 0.1 * (0.5 * 1 - 0.3 > 0 ? 1 : -1), 1e-6);
}

TEST(OptimTest, GroupOptionsFallBackToDefaults) {
  Problem pb;
  SGD opt({ParamGroup({pb.W}), ParamGroup({pb.b}, SGDOptions(0.5))}, SGDOptions(0.1).momentum(0.9));
  ASSERT_EQ(opt.param_groups().size(), 2u);
  EXPECT_EQ(opt.param_groups()[0].lr(), 0.1);
  EXPECT_EQ(opt.param_groups()[1].lr(), 0.5);
  EXPECT_EQ(opt.param_groups()[1].options->get("momentum"), 0.9);  // from the defaults
  opt.add_param_group(ParamGroup({pb.c}, SGDOptions().dampening(0.25)));
  EXPECT_EQ(opt.param_groups()[2].lr(), 0.1);
  EXPECT_EQ(opt.param_groups()[2].options->get("dampening"), 0.25);
  const auto& o = static_cast<const SGDOptions&>(*opt.param_groups()[2].options);
  EXPECT_EQ(o.momentum(), 0.9);
  EXPECT_FALSE(o.nesterov());
  AdamOptions a = AdamOptions(1e-3).betas(0.8, 0.99).weight_decay(0.01);
  EXPECT_EQ(a.betas(), std::make_pair(0.8, 0.99));
  EXPECT_EQ(AdamWOptions().weight_decay(), 1e-2);
  EXPECT_EQ(RMSpropOptions().alpha(), 0.99);
  EXPECT_EQ(AdagradOptions().eps(), 1e-10);
}

TEST(OptimTest, ZeroGradClearsOrZeroes) {
  Problem pb;
  SGD opt(std::vector<Tensor>{pb.W, pb.b}, SGDOptions(0.1));
  pb.backward();
  opt.zero_grad(false);
  ASSERT_TRUE(pb.W.grad().defined());
  EXPECT_EQ(v(pb.W.grad()), std::vector<double>(6, 0.0));
  opt.zero_grad();
  EXPECT_FALSE(pb.W.grad().defined());
  EXPECT_FALSE(pb.b.grad().defined());
  const auto before = v(pb.W);
  opt.step();  // nothing has a grad: a no-op
  EXPECT_EQ(v(pb.W), before);
}

TEST(OptimTest, StepRecordsNoHistoryAndClosureReturnsLoss) {
  Problem pb;
  SGD opt(std::vector<Tensor>{pb.W, pb.b}, SGDOptions(0.1));
  Tensor loss = opt.step([&] {
    opt.zero_grad();
    Tensor d = pb.W * pb.x - pb.y;
    Tensor l = d * d;
    l.backward(ones_like(l));
    return l;
  });
  EXPECT_TRUE(loss.defined());
  EXPECT_TRUE(pb.W.is_leaf());
  EXPECT_TRUE(pb.W.requires_grad());
  EXPECT_EQ(pb.W.grad_fn_name(), "");
}

namespace {

// Runs `total` steps of a fresh optimizer on a fresh problem, optionally interrupting after
// `cut` steps: state_dict, new optimizer on parameter copies, load_state_dict, continue.
std::vector<double> run_with_restart(const std::string& type, const json& defaults, int total,
                                     int cut) {
  Problem pb;
  auto make = [&](Problem& p) {
    std::vector<ParamGroup> groups;
    groups.emplace_back(std::vector<Tensor>{p.W});
    groups.emplace_back(std::vector<Tensor>{p.b, p.c}, *options_from(type, json{{"lr", 0.02}}));
    return make_optimizer(type, std::move(groups), *options_from(type, defaults));
  };
  auto opt = make(pb);
  for (int s = 0; s < total; ++s) {
    if (s == cut) {
      const nn::StateDict sd = opt->state_dict();
      Problem fresh;
      {
        NoGradGuard ng;
        fresh.W.copy_(pb.W);
        fresh.b.copy_(pb.b);
      }
      auto opt2 = make(fresh);
      // Change a hyper-parameter so that the load visibly restores it.
      opt2->param_groups()[1].set_lr(123.0);
      opt2->load_state_dict(sd);
      EXPECT_EQ(opt2->param_groups()[1].lr(), 0.02);
      pb = fresh;
      opt = std::move(opt2);
    }
    opt->zero_grad();
    pb.backward();
    opt->step();
  }
  auto out = v(pb.W);
  for (double d : v(pb.b)) out.push_back(d);
  return out;
}

}  // namespace

TEST(OptimTest, StateDictRoundTripContinuesLikeAnUninterruptedRun) {
  const std::vector<std::pair<std::string, json>> configs = {
      {"SGD", {{"lr", 0.05}, {"momentum", 0.9}, {"nesterov", 1}}},
      {"Adam", {{"lr", 0.1}, {"amsgrad", 1}}},
      {"AdamW", {{"lr", 0.1}, {"weight_decay", 0.1}}},
      {"RMSprop", {{"lr", 0.01}, {"centered", 1}, {"momentum", 0.5}}},
      {"Adagrad", {{"lr", 0.1}, {"lr_decay", 0.1}}},
  };
  for (const auto& [type, defaults] : configs) {
    const auto straight = run_with_restart(type, defaults, 7, -1);
    const auto resumed = run_with_restart(type, defaults, 7, 3);
    EXPECT_EQ(straight, resumed) << type;
  }
}

TEST(OptimTest, StateDictHasTorchLayout) {
  Problem pb;
  Adam opt({ParamGroup({pb.W, pb.c}), ParamGroup({pb.b}, AdamOptions(0.5).amsgrad(true))},
           AdamOptions(0.1));
  pb.backward();
  opt.step();
  const auto sd = opt.state_dict();
  EXPECT_TRUE(sd.contains("state.0.exp_avg"));
  EXPECT_TRUE(sd.contains("state.2.max_exp_avg_sq"));
  EXPECT_FALSE(sd.contains("state.1.step"));  // c had no grad: no state
  EXPECT_EQ(sd.at("state.2.step").item<double>(), 1.0);
  EXPECT_EQ(sd.at("state.2.step").dim(), 0);
  EXPECT_EQ(sd.at("param_groups.1.lr").item<double>(), 0.5);
  EXPECT_EQ(sd.at("param_groups.1.amsgrad").item<double>(), 1.0);
  EXPECT_EQ(sd.at("param_groups.0.lr").dtype(), DType::f64);
  EXPECT_EQ(sd.at("param_groups.0.params").to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(sd.at("param_groups.1.params").to_vector<int64_t>(), (std::vector<int64_t>{2}));
}

namespace {
void expect_error(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected an ember::Error containing \"" << needle << "\"";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}
}  // namespace

TEST(OptimTest, LoadStateDictRejectsMismatches) {
  Problem pb;
  Adam src({ParamGroup({pb.W}), ParamGroup({pb.b})}, AdamOptions(0.1));
  pb.backward();
  src.step();
  const auto sd = src.state_dict();
  Problem other;
  Adam one_group(std::vector<Tensor>{other.W, other.b}, AdamOptions(0.1));
  expect_error([&] { one_group.load_state_dict(sd); },
               "[Adam.load_state_dict] loaded state dict has 2 parameter groups");
  Adam sizes({ParamGroup({other.W}), ParamGroup({other.b, other.c})}, AdamOptions(0.1));
  expect_error([&] { sizes.load_state_dict(sd); }, "loaded parameter group 1 has 1 parameters");
  Adam swapped({ParamGroup({other.b}), ParamGroup({other.W})}, AdamOptions(0.1));
  expect_error([&] { swapped.load_state_dict(sd); },
               "has shape [2, 3] but its parameter has shape [3]");
  EXPECT_EQ(swapped.state(other.b), nullptr);  // nothing changed
  nn::StateDict extra = sd;
  extra.set("state.0.bogus", zeros({2, 3}, DType::f64));
  Adam fine({ParamGroup({other.W}), ParamGroup({other.b})}, AdamOptions(0.1));
  expect_error([&] { fine.load_state_dict(extra); }, "Adam keeps no state \"bogus\"");
  nn::StateDict bad_opt = sd;
  bad_opt.set("param_groups.0.momentum", scalar_tensor(0.9, DType::f64));
  expect_error([&] { fine.load_state_dict(bad_opt); }, "Adam has no option \"momentum\"");
  SGD sgd({ParamGroup({other.W}), ParamGroup({other.b})}, SGDOptions(0.1));
  expect_error([&] { sgd.load_state_dict(sd); }, "SGD");
  fine.load_state_dict(sd);
  EXPECT_EQ(v(fine.state(other.W)->buffers.at("exp_avg")),
            v(src.state(pb.W)->buffers.at("exp_avg")));
}

TEST(OptimTest, InvalidOptionsAndParametersThrow) {
  Problem pb;
  std::vector<Tensor> ps{pb.W};
  expect_error([&] { SGD(ps, SGDOptions(-0.1)); }, "[SGD] Invalid learning rate: -0.1");
  expect_error([&] { SGD(ps, SGDOptions()); }, "[SGD] lr is required");
  expect_error([&] { SGD(ps, SGDOptions(0.1).nesterov(true)); },
               "Nesterov momentum requires a momentum");
  expect_error([&] { SGD(ps, SGDOptions(0.1).momentum(-1)); }, "Invalid momentum value");
  expect_error([&] { Adam(ps, AdamOptions().betas(1.0, 0.999)); },
               "[Adam] Invalid beta parameter at index 0: 1");
  expect_error([&] { Adam(ps, AdamOptions().betas(0.9, -0.1)); },
               "Invalid beta parameter at index 1");
  expect_error([&] { AdamW(ps, AdamWOptions().eps(-1)); }, "[AdamW] Invalid epsilon value");
  expect_error([&] { Adam(ps, AdamOptions().weight_decay(-1)); }, "Invalid weight_decay value");
  expect_error([&] { RMSprop(ps, RMSpropOptions().alpha(-0.5)); }, "[RMSprop] Invalid alpha value");
  expect_error([&] { Adagrad(ps, AdagradOptions().lr_decay(-1)); },
               "[Adagrad] Invalid lr_decay value");
  expect_error([&] { Adagrad(ps, AdagradOptions().initial_accumulator_value(-1)); },
               "Invalid initial_accumulator_value");
  expect_error([&] { Adam(std::vector<Tensor>{}); },
               "[Adam] optimizer got an empty parameter list");
  expect_error([&] { Adam(std::vector<Tensor>{pb.W, pb.W}); }, "more than one parameter group");
  expect_error([&] { Adam(std::vector<Tensor>{pb.W * 2}); }, "can't optimize a non-leaf Tensor");
  expect_error([&] { Adam(std::vector<Tensor>{zeros({2}, DType::i64)}); }, "floating-point");
  expect_error([&] { Adam(std::vector<Tensor>{Tensor()}); }, "undefined");
  Adam opt(ps);
  expect_error([&] { opt.add_param_group(ParamGroup({pb.W})); }, "more than one parameter group");
  expect_error([&] { opt.add_param_group(ParamGroup({pb.b}, AdamOptions(-1.0))); },
               "Invalid learning rate");
  expect_error([&] { opt.add_param_group(ParamGroup({pb.b}, SGDOptions(0.1))); }, "do not match");
  expect_error([&] { AdamOptions().set("momentum", 0.9); }, "[Adam] has no option \"momentum\"");
}

// ---------------- schedulers ----------------

namespace {

std::shared_ptr<LRScheduler> make_scheduler(const std::shared_ptr<Optimizer>& opt, const json& s) {
  const std::string t = s["type"];
  if (t == "StepLR")
    return std::make_shared<StepLR>(opt, s["step_size"].get<int64_t>(), s.value("gamma", 0.1));
  if (t == "MultiStepLR")
    return std::make_shared<MultiStepLR>(opt, s["milestones"].get<std::vector<int64_t>>(),
                                         s.value("gamma", 0.1));
  if (t == "ExponentialLR") return std::make_shared<ExponentialLR>(opt, s["gamma"].get<double>());
  if (t == "ConstantLR")
    return std::make_shared<ConstantLR>(opt, s["factor"].get<double>(),
                                        s["total_iters"].get<int64_t>());
  if (t == "LinearLR")
    return std::make_shared<LinearLR>(opt, s["start_factor"].get<double>(),
                                      s["end_factor"].get<double>(),
                                      s["total_iters"].get<int64_t>());
  if (t == "CosineAnnealingLR")
    return std::make_shared<CosineAnnealingLR>(opt, s["T_max"].get<int64_t>(),
                                               s.value("eta_min", 0.0));
  if (t == "CosineAnnealingWarmRestarts")
    return std::make_shared<CosineAnnealingWarmRestarts>(
        opt, s["T_0"].get<int64_t>(), s.value("T_mult", int64_t(1)), s.value("eta_min", 0.0));
  if (t == "OneCycleLR") {
    std::vector<double> max_lr = s["max_lr"].is_array()
                                     ? s["max_lr"].get<std::vector<double>>()
                                     : std::vector<double>{s["max_lr"].get<double>()};
    OneCycleLROptions o(max_lr, s["total_steps"].get<int64_t>());
    if (s.contains("pct_start")) o.pct_start(s["pct_start"]);
    if (s.contains("anneal_strategy")) o.anneal_strategy(s["anneal_strategy"]);
    if (s.contains("three_phase")) o.three_phase(s["three_phase"]);
    if (s.contains("cycle_momentum")) o.cycle_momentum(s["cycle_momentum"]);
    if (s.contains("div_factor")) o.div_factor(s["div_factor"]);
    if (s.contains("final_div_factor")) o.final_div_factor(s["final_div_factor"]);
    if (s.contains("base_momentum")) o.base_momentum(s["base_momentum"]);
    if (s.contains("max_momentum")) o.max_momentum(s["max_momentum"]);
    return std::make_shared<OneCycleLR>(opt, o);
  }
  if (t == "SequentialLR") {
    std::vector<std::shared_ptr<LRScheduler>> subs;
    for (const auto& sub : s["schedulers"]) subs.push_back(make_scheduler(opt, sub));
    return std::make_shared<SequentialLR>(opt, subs, s["milestones"].get<std::vector<int64_t>>());
  }
  throw std::runtime_error("unknown scheduler " + t);
}

ReduceLROnPlateauOptions plateau_options(const json& s) {
  ReduceLROnPlateauOptions o;
  if (s.contains("mode")) o.mode(s["mode"]);
  if (s.contains("factor")) o.factor(s["factor"]);
  if (s.contains("patience")) o.patience(s["patience"]);
  if (s.contains("threshold")) o.threshold(s["threshold"]);
  if (s.contains("threshold_mode")) o.threshold_mode(s["threshold_mode"]);
  if (s.contains("cooldown")) o.cooldown(s["cooldown"]);
  if (s.contains("eps")) o.eps(s["eps"]);
  if (s.contains("min_lr"))
    o.min_lr(s["min_lr"].is_array() ? s["min_lr"].get<std::vector<double>>()
                                    : std::vector<double>{s["min_lr"].get<double>()});
  return o;
}

std::shared_ptr<Optimizer> two_group_optimizer(const json& cs, Tensor& a, Tensor& b) {
  const std::string type = cs["optimizer"];
  a = zeros({2}, DType::f64);
  b = zeros({2}, DType::f64);
  a.requires_grad_();
  b.requires_grad_();
  std::vector<ParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a});
  groups.emplace_back(std::vector<Tensor>{b}, *options_from(type, json{{"lr", 0.05}}));
  return make_optimizer(type, std::move(groups), *options_from(type, cs["defaults"]));
}

std::vector<double> group_lrs(const Optimizer& opt) {
  std::vector<double> out;
  for (const auto& g : opt.param_groups()) out.push_back(g.lr());
  return out;
}

std::vector<double> group_momenta(const Optimizer& opt) {
  std::vector<double> out;
  for (const auto& g : opt.param_groups())
    out.push_back(g.options->get(g.options->momentum_field()));
  return out;
}

}  // namespace

TEST(LRSchedulerTest, GoldenSchedulesMatchTorchStepByStep) {
  const auto& cases = golden()["schedulers"];
  ASSERT_GE(cases.size(), 15u);
  int matched = 0;
  for (const auto& cs : cases) {
    const std::string name = cs["name"];
    Tensor a, b;
    auto opt = two_group_optimizer(cs, a, b);
    const json& spec = cs["scheduler"];
    const bool plateau = spec["type"] == "ReduceLROnPlateau";
    std::shared_ptr<LRScheduler> sched;
    std::unique_ptr<ReduceLROnPlateau> rp;
    if (plateau) {
      rp = std::make_unique<ReduceLROnPlateau>(opt, plateau_options(spec));
    } else {
      sched = make_scheduler(opt, spec);
    }
    bool ok = true;
    for (int s = 0; s <= cs["steps"].get<int>() && ok; ++s) {
      if (s > 0) {
        opt->step();
        if (plateau) {
          rp->step(cs["metrics"][size_t(s - 1)].get<double>());
        } else {
          sched->step();
        }
      }
      const auto want = cs["lrs"][size_t(s)].get<std::vector<double>>();
      const auto got = group_lrs(*opt);
      if (!all_close(got, want, 1e-9)) {
        ADD_FAILURE() << name << " after " << s << " steps: lrs " << str(got) << " want "
                      << str(want);
        ok = false;
      }
      const auto last = plateau ? rp->get_last_lr() : sched->get_last_lr();
      if (s > 0 && last != got) {
        ADD_FAILURE() << name << " get_last_lr " << str(last) << " != group lrs " << str(got);
        ok = false;
      }
      if (cs.contains("momentum")) {
        const auto want_m = cs["momentum"][size_t(s)].get<std::vector<double>>();
        if (!all_close(group_momenta(*opt), want_m, 1e-9)) {
          ADD_FAILURE() << name << " after " << s << " steps: momentum " << str(group_momenta(*opt))
                        << " want " << str(want_m);
          ok = false;
        }
      }
    }
    matched += ok;
  }
  std::cout << "[optim parity] " << matched << "/" << cases.size()
            << " scheduler configs match torch 1.13 step by step\n";
  EXPECT_EQ(matched, int(cases.size()));
}

TEST(LRSchedulerTest, StateDictRoundTripResumesTheSchedule) {
  for (const auto& cs : golden()["schedulers"]) {
    const std::string name = cs["name"];
    if (cs["scheduler"]["type"] == "ReduceLROnPlateau") continue;
    Tensor a, b;
    auto opt = two_group_optimizer(cs, a, b);
    auto sched = make_scheduler(opt, cs["scheduler"]);
    for (int s = 0; s < 12; ++s) {
      opt->step();
      sched->step();
    }
    const auto opt_sd = opt->state_dict();
    const auto sched_sd = sched->state_dict();
    Tensor a2, b2;
    auto opt2 = two_group_optimizer(cs, a2, b2);
    auto sched2 = make_scheduler(opt2, cs["scheduler"]);
    opt2->load_state_dict(opt_sd);
    sched2->load_state_dict(sched_sd);
    for (int s = 12; s < 20; ++s) {
      opt2->step();
      sched2->step();
      const auto want = cs["lrs"][size_t(s + 1)].get<std::vector<double>>();
      EXPECT_TRUE(all_close(group_lrs(*opt2), want, 1e-9))
          << name << " step " << s + 1 << ": " << str(group_lrs(*opt2)) << " want " << str(want);
    }
  }
}

TEST(LRSchedulerTest, PlateauStateDictRoundTrip) {
  Tensor a = zeros({1}, DType::f64);
  a.requires_grad_();
  auto opt = std::make_shared<SGD>(std::vector<Tensor>{a}, SGDOptions(1.0));
  ReduceLROnPlateau rp(opt, ReduceLROnPlateauOptions().patience(1).factor(0.5));
  for (double m : {1.0, 2.0}) rp.step(m);
  ReduceLROnPlateau rp2(opt, ReduceLROnPlateauOptions().patience(1).factor(0.5));
  rp2.load_state_dict(rp.state_dict());
  EXPECT_EQ(rp2.best(), 1.0);
  EXPECT_EQ(rp2.num_bad_epochs(), 1);
  rp2.step(3.0);  // third bad epoch > patience: halve
  EXPECT_EQ(opt->param_groups()[0].lr(), 0.5);
}

TEST(LRSchedulerTest, WarmRestartsFractionalEpochs) {
  Tensor a = zeros({1}, DType::f64);
  a.requires_grad_();
  auto opt = std::make_shared<SGD>(std::vector<Tensor>{a}, SGDOptions(0.1));
  CosineAnnealingWarmRestarts s(opt, 10, 2, 0.0);
  s.step(12.5);  // second cycle (T_i = 20), T_cur = 2.5
  EXPECT_EQ(s.T_i(), 20);
  EXPECT_DOUBLE_EQ(s.T_cur(), 2.5);
  EXPECT_NEAR(opt->param_groups()[0].lr(), 0.1 * (1 + std::cos(M_PI * 2.5 / 20)) / 2, 1e-15);
  EXPECT_EQ(s.last_epoch(), 12);
  expect_error([&] { s.step(-1.0); }, "[CosineAnnealingWarmRestarts] Expected non-negative epoch");
}

TEST(LRSchedulerTest, InvalidArgumentsThrow) {
  Tensor a = zeros({1}, DType::f64);
  a.requires_grad_();
  auto opt = std::make_shared<SGD>(std::vector<Tensor>{a}, SGDOptions(0.1));
  auto ada = std::make_shared<Adagrad>(std::vector<Tensor>{a}, AdagradOptions());
  expect_error([&] { OneCycleLR(ada, OneCycleLROptions(1.0, 10)); }, "must support momentum");
  expect_error([&] { OneCycleLR(opt, OneCycleLROptions(1.0, 0)); },
               "[OneCycleLR] Expected positive integer total_steps");
  expect_error([&] { OneCycleLR(opt, OneCycleLROptions(1.0, 10).pct_start(1.5)); }, "pct_start");
  expect_error([&] { OneCycleLR(opt, OneCycleLROptions(1.0, 10).anneal_strategy("exp")); },
               "anneal_strategy");
  expect_error(
      [&] {
        OneCycleLR(opt, OneCycleLROptions({1.0, 2.0}, 10));
      },
      "expected 1 values for max_lr, got 2");
  {
    OneCycleLR oc(opt, OneCycleLROptions(1.0, 3));
    for (int i = 0; i < 3; ++i) oc.step();
    expect_error([&] { oc.step(); }, "[OneCycleLR] Tried to step 5 times");
  }
  expect_error([&] { StepLR(opt, 0); }, "[StepLR] step_size must be positive");
  expect_error([&] { LinearLR(opt, 1.5); }, "[LinearLR] Starting multiplicative factor");
  expect_error([&] { ConstantLR(opt, -0.5); }, "[ConstantLR]");
  expect_error([&] { CosineAnnealingLR(opt, 0); }, "[CosineAnnealingLR] T_max must be positive");
  expect_error([&] { CosineAnnealingWarmRestarts(opt, 0); }, "Expected positive integer T_0");
  expect_error([&] { CosineAnnealingWarmRestarts(opt, 5, 0); }, "Expected integer T_mult >= 1");
  expect_error([&] { ReduceLROnPlateau(opt, ReduceLROnPlateauOptions().factor(1.0)); },
               "Factor should be < 1.0");
  expect_error([&] { ReduceLROnPlateau(opt, ReduceLROnPlateauOptions().mode("up")); },
               "mode up is unknown");
  expect_error([&] { ReduceLROnPlateau(opt, ReduceLROnPlateauOptions().threshold_mode("x")); },
               "threshold mode");
  expect_error(
      [&] {
        ReduceLROnPlateau(opt, ReduceLROnPlateauOptions().min_lr(std::vector<double>{0, 0}));
      },
      "expected 1 values for min_lr");
  auto s1 = std::make_shared<StepLR>(opt, 2);
  auto s2 = std::make_shared<ExponentialLR>(opt, 0.5);
  expect_error(
      [&] {
        SequentialLR(opt, {s1, s2}, {});
      },
      "[SequentialLR] Sequential Schedulers expects number");
  auto foreign = std::make_shared<ExponentialLR>(ada, 0.5);
  expect_error([&] { SequentialLR(opt, {s1, foreign}, {3}); }, "belong to the same optimizer");
  StepLR st(opt, 2);
  nn::StateDict empty;
  expect_error([&] { st.load_state_dict(empty); }, "[StepLR] state dict has no");
}

// Issue 14 item 2: a scheduler owns its optimizer (shared_ptr), so dropping the last user-held
// pointer cannot leave it stepping a destroyed optimizer; null is an ember::Error.
TEST(LRSchedulerTest, SchedulerKeepsItsOptimizerAlive) {
  Tensor a = zeros({1}, DType::f64);
  a.requires_grad_();
  auto opt = std::make_shared<SGD>(std::vector<Tensor>{a}, SGDOptions(1.0));
  std::weak_ptr<Optimizer> watch = opt;
  auto sched = std::make_unique<StepLR>(opt, 1, 0.5);
  ReduceLROnPlateau plateau(opt, ReduceLROnPlateauOptions().patience(0).factor(0.5));
  opt.reset();  // the user's last pointer
  ASSERT_FALSE(watch.expired());
  sched->step();
  sched->step();
  EXPECT_EQ(sched->get_last_lr(), std::vector<double>{0.25});
  EXPECT_EQ(sched->optimizer().param_groups()[0].lr(), 0.25);
  plateau.step(1.0);
  plateau.step(2.0);  // a bad epoch > patience 0: halve
  EXPECT_EQ(plateau.get_last_lr(), std::vector<double>{0.125});
  sched.reset();
  EXPECT_FALSE(watch.expired());  // the plateau scheduler still holds it
}

TEST(LRSchedulerTest, NullOptimizerThrows) {
  std::shared_ptr<Optimizer> none;
  expect_error([&] { StepLR(none, 1); }, "[StepLR] the optimizer is null");
  expect_error([&] { CosineAnnealingLR(none, 10); }, "[CosineAnnealingLR] the optimizer is null");
  expect_error([&] { OneCycleLR(none, OneCycleLROptions(1.0, 10)); },
               "[OneCycleLR] the optimizer is null");
  expect_error([&] { SequentialLR(none, {}, {}); }, "[SequentialLR] the optimizer is null");
  expect_error([&] { ReduceLROnPlateau p(none); }, "[ReduceLROnPlateau] the optimizer is null");
}

// ---------------- gradient clipping ----------------

TEST(ClipGradTest, GoldenNormsMatchTorch) {
  const json& g = golden()["clip_grad_norm"];
  const auto ga = g["grads"]["a"].get<std::vector<double>>();
  const auto gb = g["grads"]["b"].get<std::vector<double>>();
  for (const auto& cs : g["cases"]) {
    Tensor a = zeros({2, 3}, DType::f64), b = zeros({2}, DType::f64), c = zeros({4}, DType::f64);
    for (Tensor* t : {&a, &b, &c}) t->requires_grad_();
    a.set_grad(from_vector<double>(ga, {2, 3}));
    b.set_grad(from_vector<double>(gb, {2}));
    const double p = cs["norm_type"].is_string() ? std::numeric_limits<double>::infinity()
                                                 : cs["norm_type"].get<double>();
    Tensor total = nn::clip_grad_norm_({a, b, c}, cs["max_norm"].get<double>(), p);
    EXPECT_EQ(total.dim(), 0);
    EXPECT_EQ(total.dtype(), DType::f64);
    EXPECT_TRUE(close(total.item<double>(), cs["total_norm"].get<double>(), 1e-12)) << "p=" << p;
    EXPECT_TRUE(all_close(v(a.grad()), cs["a"].get<std::vector<double>>(), 1e-12)) << "p=" << p;
    EXPECT_TRUE(all_close(v(b.grad()), cs["b"].get<std::vector<double>>(), 1e-12)) << "p=" << p;
    EXPECT_FALSE(c.grad().defined());
  }
}

TEST(ClipGradTest, HandValuesAndEdgeCases) {
  Tensor a = zeros({2}, DType::f32);
  a.requires_grad_();
  a.set_grad(tensor<float>({3.f, 4.f}));
  Tensor total = nn::clip_grad_norm_({a}, 1.0);
  EXPECT_NEAR(total.item<double>(), 5.0, 1e-6);
  EXPECT_EQ(total.dtype(), DType::f32);
  EXPECT_NEAR(v(a.grad())[0], 3.0 / (5.0 + 1e-6), 1e-6);
  EXPECT_NEAR(v(a.grad())[1], 4.0 / (5.0 + 1e-6), 1e-6);
  // No grads: a 0-d zero, nothing touched.
  Tensor n = zeros({2});
  n.requires_grad_();
  EXPECT_EQ(nn::clip_grad_norm_({n}, 1.0).item<double>(), 0.0);
  // Non-finite norms.
  a.set_grad(tensor<float>({INFINITY, 1.f}));
  expect_error([&] { nn::clip_grad_norm_({a}, 1.0, 2.0, true); },
               "[clip_grad_norm_] The total norm of order 2");
  EXPECT_TRUE(std::isinf(nn::clip_grad_norm_({a}, 1.0).item<double>()));
  expect_error([&] { nn::clip_grad_norm_({a}, 1.0, NAN); }, "norm_type must not be NaN");
  expect_error([&] { nn::clip_grad_norm_({Tensor()}, 1.0); }, "[clip_grad_norm_] got an undefined");
  // clip_grad_value_.
  a.set_grad(tensor<float>({-3.f, 0.5f}));
  nn::clip_grad_value_({a, n}, 1.0);
  EXPECT_EQ(v(a.grad()), (std::vector<double>{-1.0, 0.5}));
  EXPECT_FALSE(n.grad().defined());
  expect_error([&] { nn::clip_grad_value_({Tensor()}, 1.0); }, "[clip_grad_value_]");
}
