// Numbers read from files are range-checked (issue 13 item 5): ember/checked.h itself, then
// checkpoints written by Ember with one field edited (counters, optimizer and scheduler state),
// each rejected with an ember::Error naming the file and the field.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "ember/autograd.h"
#include "ember/checked.h"
#include "ember/ember.h"
#include "ember/optim/adam.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/sgd.h"
#include "ember/record/checkpoint.h"
#include "ember/record/safetensors.h"
#include "test_util.h"

using namespace ember;
using ember::test::expect_error;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

struct W : nn::Module {
  Tensor w;
  W() : nn::Module("W") { w = register_parameter("w", zeros({2, 3})); }
};

Tensor f64(double v) { return scalar_tensor(v, DType::f64); }
Tensor i64(int64_t v) { return scalar_tensor(v, DType::i64); }

// A model, Adam and StepLR after two steps, saved by Ember to dir/good.safetensors; crafted()
// writes dir/bad.safetensors with one edit and load() loads it into fresh targets.
struct Crafted {
  ember::test::TempDir dir{"values"};
  std::string good = dir / "good.safetensors", bad = dir / "bad.safetensors";
  Crafted() {
    W m;
    auto opt = std::make_shared<optim::Adam>(m.parameters(), optim::AdamOptions(0.1));
    optim::StepLR sched(opt, 1, 0.5);
    for (int i = 0; i < 2; ++i) {
      (m.w * m.w + m.w).sum().backward();
      opt->step();
      opt->zero_grad();
      sched.step();
    }
    record::TrainingState st;
    st.epoch = 2;
    st.step = 2;
    st.best_epoch = 1;
    st.best_metric = 0.5;
    st.rng = record::capture_random_states({Device::cpu()});
    record::save_checkpoint(good, {&m, opt.get(), &sched}, st);
  }
  void crafted(const std::function<void(nn::StateDict&, record::Metadata&)>& edit) const {
    record::SafetensorsFile f = record::load_safetensors(good);
    edit(f.tensors, f.metadata);
    record::save_safetensors(bad, f.tensors, f.metadata);
  }
  // Loads bad.safetensors; expects an error naming the file and holding `pieces`, and the
  // model, optimizer and scheduler left as they were.
  void expect_rejected(const std::vector<std::string>& pieces) const {
    W m;
    auto opt = std::make_shared<optim::Adam>(m.parameters(), optim::AdamOptions(0.1));
    optim::StepLR sched(opt, 1, 0.5);
    std::vector<std::string> all = {"[load_checkpoint] " + bad + ": "};
    all.insert(all.end(), pieces.begin(), pieces.end());
    expect_error([&] { record::load_checkpoint(bad, {&m, opt.get(), &sched}); }, all);
    EXPECT_EQ(opt->state(m.w), nullptr) << pieces.front();
    EXPECT_EQ(opt->param_groups()[0].lr(), 0.1) << pieces.front();
    EXPECT_EQ(sched.last_epoch(), 0) << pieces.front();
    EXPECT_EQ(m.w.abs().sum().item<double>(), 0) << pieces.front();  // the model too
  }
  void meta(const std::string& key, const std::string& value,
            const std::vector<std::string>& pieces) const {
    crafted([&](nn::StateDict&, record::Metadata& m) { m[key] = value; });
    expect_rejected(pieces);
  }
  void tensor(const std::string& key, const Tensor& value,
              const std::vector<std::string>& pieces) const {
    crafted([&](nn::StateDict& t, record::Metadata&) { t.set(key, value); });
    expect_rejected(pieces);
  }
};

}  // namespace

TEST(CheckedTest, ValuesAreCheckedBeforeTheyAreConverted) {
  const FileField f{"op", "a/file", "x"};
  EXPECT_EQ(checked_int64(f, 7.0), 7);
  EXPECT_EQ(checked_int64(f, -9223372036854775808.0), std::numeric_limits<int64_t>::min());
  for (double v : {kNaN, kInf, -kInf, 2.5, 9223372036854775808.0, 1e300})
    expect_error([&] { checked_int64(f, v); }, {"[op] a/file: field 'x' = ", "is not an integer"});
  expect_error([&] { checked_int64(f, kNaN, 0, kMaxFileCount); },
               {"[op] a/file: field 'x' = nan is not a non-negative integer <= 9007199254740992"});
  expect_error([&] { checked_int64(f, -1.0, 1, 5); },
               {"field 'x' = -1 is not a positive integer <= 5"});
  expect_error([&] { checked_int64(f, 3.0, -1, 2); },
               {"field 'x' = 3 is not an integer in [-1, 2]"});
  EXPECT_EQ(checked_int64(f, std::string("-12")), -12);
  for (const char* t : {"", "-", "+1", " 1", "1 ", "1e3", "0x10", "9223372036854775808", "nan"})
    expect_error([&] { checked_int64(f, std::string(t)); },
                 {"field 'x' = \"", "is not an integer"});
  EXPECT_EQ(checked_uint64(f, "18446744073709551615"), 18446744073709551615ull);
  for (const char* t : {"-1", "18446744073709551616", "1.0"})
    expect_error([&] { checked_uint64(f, t); },
                 {"field 'x' = \"", "is not a non-negative integer"});
  EXPECT_EQ(checked_double(f, -2.5), -2.5);
  expect_error([&] { checked_double(f, kInf); }, {"field 'x' = inf is not a finite number"});
  expect_error([&] { checked_double(f, -0.5, 0.0); }, {"= -0.5 is not a finite number >= 0"});
  expect_error([&] { checked_double(f, 2.0, 0.0, 1.0); }, {"= 2 is not a finite number in [0, 1]"});
  // Tensors: integer dtypes exactly, floating ones as doubles; one element.
  EXPECT_EQ(checked_int64(f, full({}, int64_t(9007199254740993), DType::i64)), 9007199254740993);
  EXPECT_EQ(checked_int64(f, f64(3.0)), 3);
  expect_error([&] { checked_int64(f, tensor<uint64_t>({uint64_t(1) << 63})); },
               {"field 'x' = 9223372036854775808 is not an integer"});
  expect_error([&] { checked_int64(f, f64(kNaN)); }, {"field 'x' = nan"});
  expect_error([&] { checked_double(f, zeros({2})); }, {"field 'x' must hold one value, got 2"});
  expect_error(
      [&] {
        checked_double(FileField{"op", "", "y"}, kNaN);
      },
      {"[op] field 'y' = nan is not a finite number"});
}

TEST(CheckpointValuesTest, CountersOutOfRangeNameTheField) {
  const Crafted c;
  c.meta("epoch", "-3",
         {"field 'epoch' = \"-3\" is not a non-negative integer <= 9007199254740992"});
  c.meta("epoch", "9223372036854775807", {"field 'epoch' = \"9223372036854775807\""});
  c.meta("epoch", " 2", {"field 'epoch' = \" 2\""});
  c.meta("step", "nan", {"field 'step' = \"nan\" is not a non-negative integer"});
  c.meta("batch", "-1", {"field 'batch' = \"-1\""});
  c.meta("best_epoch", "-2", {"field 'best_epoch' = \"-2\" is not an integer in [-1, "});
  c.meta("loader_epoch", "1.5", {"field 'loader_epoch' = \"1.5\""});
  c.meta("loader_seed", "-1", {"field 'loader_seed' = \"-1\" is not a non-negative integer"});
  c.meta("best_metric", "inf", {"field 'best_metric' = \"inf\" is not a finite number"});
  c.meta("best_metric", "0.5x", {"field 'best_metric' = \"0.5x\""});
  c.meta("rng.cpu", "1,nan", {"field 'rng.cpu offset' = \"nan\""});
  // NaN is "no best value yet".
  c.crafted([](nn::StateDict&, record::Metadata& m) { m["best_metric"] = "nan"; });
  EXPECT_TRUE(std::isnan(record::read_checkpoint(c.bad).state.best_metric));
  EXPECT_EQ(record::read_checkpoint(c.good).state.best_metric, 0.5);
}

TEST(CheckpointValuesTest, OptimizerStateOutOfRangeNamesTheKey) {
  const Crafted c;
  const std::string o = "optimizer: [Adam.load_state_dict] field '";
  // A NaN step count made the weights NaN after one step.
  c.tensor("optimizer.state.0.step", f64(kNaN),
           {o + "state.0.step' = nan is not a non-negative integer <= 9007199254740992"});
  c.tensor("optimizer.state.0.step", f64(-1), {o + "state.0.step' = -1"});
  c.tensor("optimizer.state.0.step", f64(2.5), {o + "state.0.step' = 2.5"});
  c.tensor("optimizer.state.0.step", f64(1e300), {o + "state.0.step' = 1e+300"});
  c.tensor("optimizer.param_groups.0.lr", f64(kInf),
           {o + "param_groups.0.lr' = inf is not a finite number"});
  c.tensor("optimizer.param_groups.0.beta1", f64(kNaN), {o + "param_groups.0.beta1' = nan"});
  c.tensor("optimizer.param_groups.0.eps", f64(-kInf), {o + "param_groups.0.eps' = -inf"});
  c.tensor("optimizer.param_groups.0.weight_decay", f64(kNaN),
           {o + "param_groups.0.weight_decay' = nan"});
  c.tensor("optimizer.param_groups.0.amsgrad", f64(0.5),
           {o + "param_groups.0.amsgrad' = 0.5 is not a non-negative integer <= 1"});
  c.tensor("optimizer.param_groups.0.initial_lr", f64(-1),
           {o + "param_groups.0.initial_lr' = -1 is not a finite number >= 0"});
  c.tensor("optimizer.param_groups.0.params", tensor<double>({kNaN}),
           {o + "param_groups.0.params[0]' = nan"});
  c.tensor("optimizer.param_groups.0.lr", f64(-1), {"[Adam] Invalid learning rate: -1"});
  c.tensor("optimizer.state.0.step", zeros({2}, DType::f64),
           {o + "state.0.step' must hold one value, got 2"});
}

TEST(CheckpointValuesTest, SchedulerStateOutOfRangeNamesTheKey) {
  const Crafted c;
  const std::string s = "scheduler: [StepLR] field '";
  // NaN or 2^63 - 1 converted to int64 was undefined behaviour (INT64_MIN in practice).
  c.tensor("scheduler.last_epoch", f64(kNaN), {s + "last_epoch' = nan is not an integer in [-1, "});
  c.tensor("scheduler.last_epoch", i64(std::numeric_limits<int64_t>::max()),
           {s + "last_epoch' = 9223372036854775807"});
  c.tensor("scheduler.last_epoch", i64(-5), {s + "last_epoch' = -5"});
  c.tensor("scheduler.step_count", i64(-1), {s + "step_count' = -1 is not a non-negative"});
  c.tensor("scheduler.base_lrs", tensor<double>({kInf}), {s + "base_lrs[0]' = inf"});
  c.tensor("scheduler.last_lr", tensor<double>({kNaN}), {s + "last_lr[0]' = nan"});

  // The other schedulers' own fields, through load_state_dict.
  W m;
  auto opt = std::make_shared<optim::SGD>(m.parameters(), optim::SGDOptions(0.1));
  optim::CosineAnnealingWarmRestarts cos(opt, 3);
  nn::StateDict d = cos.state_dict();
  d.set("T_i", i64(0));  // the cosine divides by it
  expect_error([&] { cos.load_state_dict(d); },
               {"[CosineAnnealingWarmRestarts] field 'T_i' = 0 is not a positive integer"});
  d = cos.state_dict();
  d.set("T_cur", f64(kNaN));
  expect_error([&] { cos.load_state_dict(d); }, {"field 'T_cur' = nan"});
  EXPECT_EQ(cos.T_i(), 3);
  EXPECT_EQ(cos.T_cur(), 0);

  optim::ReduceLROnPlateau plateau(opt);
  d = plateau.state_dict();
  EXPECT_EQ(d.at("best").item<double>(), kInf);  // its start value loads
  plateau.load_state_dict(d);
  d.set("best", f64(kNaN));
  expect_error([&] { plateau.load_state_dict(d); },
               {"[ReduceLROnPlateau] field 'best' = nan is not a finite number"});
  d = plateau.state_dict();
  d.set("num_bad_epochs", f64(-1));
  expect_error([&] { plateau.load_state_dict(d); }, {"field 'num_bad_epochs' = -1"});
  d = plateau.state_dict();
  d.set("cooldown_counter", f64(1e19));
  expect_error([&] { plateau.load_state_dict(d); }, {"field 'cooldown_counter' = 1e+19"});
  EXPECT_EQ(plateau.num_bad_epochs(), 0);

  // SequentialLR: a bad entry of its second scheduler leaves the first and its own counters.
  auto a = std::make_shared<optim::StepLR>(opt, 1, 0.5);
  auto b = std::make_shared<optim::StepLR>(opt, 1, 0.9);
  optim::SequentialLR seq(opt, {a, b}, {2});
  seq.step();
  nn::StateDict sd = seq.state_dict();
  sd.set("last_epoch", i64(7));
  sd.set("schedulers.0.last_epoch", i64(7));
  sd.set("schedulers.1.last_epoch", f64(kNaN));
  const int64_t own = seq.last_epoch(), first = a->last_epoch();
  expect_error([&] { seq.load_state_dict(sd); }, {"[StepLR] field 'last_epoch' = nan"});
  EXPECT_EQ(seq.last_epoch(), own);
  EXPECT_EQ(a->last_epoch(), first);
}

TEST(CheckpointValuesTest, SaveRefusesWhatLoadWouldRefuse) {
  const ember::test::TempDir dir("save");
  W m;
  record::TrainingState st;
  st.epoch = -3;
  expect_error([&] { record::save_checkpoint(dir / "x.safetensors", {&m}, st); },
               {"[save_checkpoint]", "epoch -3 is out of range [0, 9007199254740992]"});
  st.epoch = 0;
  st.best_metric = kInf;
  expect_error([&] { record::save_checkpoint(dir / "x.safetensors", {&m}, st); },
               {"best_metric is inf"});
  EXPECT_TRUE(ember::test::list_dir(dir).empty());
}
