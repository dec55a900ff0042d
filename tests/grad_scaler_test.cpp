// optim::GradScaler against torch 1.13's GradScaler: tests/golden/make_grad_scaler_golden.py
// writes tests/data/golden/grad_scaler.json (scale, growth tracker, skipped steps, parameters
// after every iteration), replayed here; options, misuse and state dicts.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "golden_json.h"
#include "test_util.h"

using namespace ember;
using namespace ember::optim;
using json = nlohmann::json;

namespace {

template <typename Fn>
void expect_err(Fn fn, const std::string& piece) {
  test::expect_error(fn, {piece});
}

const json& golden() {
  return test::golden_json("grad_scaler.json", "tests/golden/make_grad_scaler_golden.py");
}

// Numbers, or "nan" / "inf" / "-inf" (JSON has no non-finite numbers).
std::vector<float> floats(const json& a) {
  std::vector<float> out;
  for (const json& v : a)
    out.push_back(v.is_string() ? std::stof(v.get<std::string>()) : v.get<float>());
  return out;
}

// The golden problem on `device`: w [3], b [2], u [2] (no grad), SGD over two groups.
struct Problem {
  Tensor w, b, u;
  std::unique_ptr<SGD> opt;
  explicit Problem(const Device& device = Device::cpu()) {
    const json& p = golden()["problem"];
    w = from_vector<float>(floats(p["w"]), {3}, device).requires_grad_();
    b = from_vector<float>(floats(p["b"]), {2}, device).requires_grad_();
    u = from_vector<float>(floats(p["u"]), {2}, device).requires_grad_();
    opt = std::make_unique<SGD>(std::vector<ParamGroup>{ParamGroup({w, u}), ParamGroup({b})},
                                SGDOptions(p["lr"].get<double>()));
  }
  // loss = sum(w * cw) + sum(b * cb), backward through scaler.scale(loss).
  void backward(const GradScaler& s, const json& it) const {
    const Device d = w.device();
    Tensor loss = (w * from_vector<float>(floats(it["cw"]), {3}, d)).sum() +
                  (b * from_vector<float>(floats(it["cb"]), {2}, d)).sum();
    s.scale(loss).backward();
  }
};

GradScalerOptions options_of(const json& o) {
  return GradScalerOptions()
      .init_scale(o["init_scale"].get<double>())
      .growth_factor(o["growth_factor"].get<double>())
      .backoff_factor(o["backoff_factor"].get<double>())
      .growth_interval(o["growth_interval"].get<int64_t>());
}

// Exact: the same f32 products as torch (NaN equal to NaN).
void expect_floats(const Tensor& t, const json& want, const std::string& what) {
  const std::vector<float> got = t.to_vector<float>(), w = floats(want);
  ASSERT_EQ(got.size(), w.size()) << what;
  for (size_t i = 0; i < w.size(); ++i) {
    if (std::isnan(w[i]))
      EXPECT_TRUE(std::isnan(got[i])) << what << "[" << i << "]";
    else
      EXPECT_EQ(got[i], w[i]) << what << "[" << i << "]";
  }
}

void replay(const json& cs, const Device& device) {
  SCOPED_TRACE(cs["name"].get<std::string>() + " on " + device.str());
  Problem pb(device);
  GradScaler scaler(options_of(cs["options"]));
  const json& its = cs["iterations"];
  const json& want = cs["steps"];
  for (size_t i = 0; i < its.size(); ++i) {
    SCOPED_TRACE("iteration " + std::to_string(i));
    const json& it = its[i];
    pb.opt->zero_grad();
    pb.backward(scaler, it);
    if (it.value("unscale_first", false)) {
      scaler.unscale_(*pb.opt);
      expect_floats(pb.w.grad(), want[i]["gw"], "w.grad");
      expect_floats(pb.b.grad(), want[i]["gb"], "b.grad");
    }
    EXPECT_EQ(scaler.step(*pb.opt), want[i]["stepped"].get<bool>());
    if (it.contains("new_scale"))
      scaler.update(it["new_scale"].get<double>());
    else
      scaler.update();
    EXPECT_EQ(scaler.get_scale(), want[i]["scale"].get<double>());
    EXPECT_EQ(scaler.get_growth_tracker(), want[i]["tracker"].get<int64_t>());
    expect_floats(pb.w, want[i]["w"], "w");
    expect_floats(pb.b, want[i]["b"], "b");
    EXPECT_FALSE(pb.u.grad().defined());
  }
  const nn::StateDict sd = scaler.state_dict();
  ASSERT_EQ(sd.size(), 5u);
  for (const auto& [k, v] : cs["state_dict"].items())
    EXPECT_EQ(sd.at(k).item<double>(), v.get<double>()) << k;
}

}  // namespace

TEST(GradScalerTest, SequencesMatchTorch) {
  ASSERT_GE(golden()["cases"].size(), 4u);
  for (const json& cs : golden()["cases"]) replay(cs, Device::cpu());
}

TEST(GradScalerTest, SequencesMatchTorchOnTheReferenceBackend) {
  for (const json& cs : golden()["cases"]) replay(cs, Device::ref());
}

TEST(GradScalerTest, SequencesMatchTorchOnGpus) {
  const std::vector<Device> gpus = test::gpu_devices();
  if (gpus.empty()) GTEST_SKIP() << "no GPU device";
  for (const Device& d : gpus)
    for (const json& cs : golden()["cases"]) replay(cs, d);
}

TEST(GradScalerTest, ScaleMultipliesInF32) {
  GradScaler s(GradScalerOptions().init_scale(1024));
  Tensor l = tensor<float>({0.5f});
  Tensor scaled = s.scale(l);
  EXPECT_EQ(scaled.dtype(), DType::f32);
  EXPECT_EQ(scaled.item<double>(), 512.0);
  // An f16 loss is promoted first: 65536 * 2 overflows f16 but not f32.
  Tensor h = tensor<float>({2.0f}).to(DType::f16);
  Tensor hs = GradScaler().scale(h);
  EXPECT_EQ(hs.dtype(), DType::f32);
  EXPECT_EQ(hs.item<double>(), 131072.0);
  EXPECT_EQ(GradScaler().scale(tensor<double>({3.0})).dtype(), DType::f64);
}

TEST(GradScalerTest, Bf16AndF32AndDisabledAreNoOps) {
  for (GradScaler s : {GradScaler(DType::bf16), GradScaler(DType::f32),
                       GradScaler(GradScalerOptions().enabled(false)),
                       GradScaler(DType::f16, GradScalerOptions().enabled(false))}) {
    EXPECT_FALSE(s.is_enabled());
    Problem pb;
    Tensor loss = (pb.w * 2.0).sum();
    EXPECT_EQ(s.scale(loss).impl(), loss.impl());  // the loss itself
    loss.backward();
    s.unscale_(*pb.opt);
    s.unscale_(*pb.opt);  // no stage checks either
    expect_floats(pb.w.grad(), json::array({2, 2, 2}), "w.grad");
    EXPECT_TRUE(s.step(*pb.opt));
    s.update();
    EXPECT_EQ(s.get_scale(), 1.0);
    EXPECT_TRUE(s.state_dict().empty());
    expect_floats(pb.w, json::array({0.0, -0.75, 0.5}), "w");  // w - 0.25 * 2
  }
  EXPECT_TRUE(GradScaler(DType::f16).is_enabled());
}

TEST(GradScalerTest, StepSkipsOnInfAndNanGradients) {
  for (float bad : {std::numeric_limits<float>::infinity(), std::nanf("")}) {
    Problem pb;
    GradScaler s;
    pb.w.set_grad(tensor<float>({1.0f, bad, 0.0f}));
    pb.b.set_grad(tensor<float>({65536.0f, 0.0f}));
    EXPECT_FALSE(s.step(*pb.opt));
    expect_floats(pb.w, json::array({0.5, -0.25, 1.0}), "w");
    expect_floats(pb.b.grad(), json::array({1.0, 0.0}), "b.grad unscaled");
    s.update();
    EXPECT_EQ(s.get_scale(), 32768.0);
  }
}

TEST(GradScalerTest, MisuseThrowsAsTorch) {
  Problem pb;
  GradScaler s;
  pb.w.set_grad(zeros({3}));
  EXPECT_THROW(s.update(), Error);  // nothing unscaled yet
  s.unscale_(*pb.opt);
  expect_err([&] { s.unscale_(*pb.opt); }, "already been called");
  EXPECT_TRUE(s.step(*pb.opt));
  expect_err([&] { s.step(*pb.opt); }, "step() has already been called");
  expect_err([&] { s.unscale_(*pb.opt); }, "after step()");
  s.update();
  s.unscale_(*pb.opt);  // a new iteration
  s.update();

  // f16 gradients: refused before any gradient changes.
  Problem h;
  h.w.set_grad(tensor<float>({4.0f, 4.0f, 4.0f}));
  Tensor p16 = zeros({2}, DType::f16).requires_grad_();
  p16.set_grad(zeros({2}, DType::f16));
  SGD opt({h.w, p16}, SGDOptions(0.1));
  expect_err([&] { s.unscale_(opt); }, "f16 gradients");
  expect_floats(h.w.grad(), json::array({4, 4, 4}), "w.grad untouched");
  expect_err([&] { s.update(0.0); }, "new_scale");
}

TEST(GradScalerTest, OptionsAreValidated) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::pair<GradScalerOptions, const char*> bad[] = {
      {GradScalerOptions().init_scale(0), "init_scale"},
      {GradScalerOptions().init_scale(-1), "init_scale"},
      {GradScalerOptions().init_scale(inf), "init_scale"},
      {GradScalerOptions().init_scale(std::nan("")), "init_scale"},
      {GradScalerOptions().init_scale(1e39), "init_scale"},
      {GradScalerOptions().growth_factor(1.0), "growth_factor"},
      {GradScalerOptions().growth_factor(inf), "growth_factor"},
      {GradScalerOptions().backoff_factor(1.0), "backoff_factor"},
      {GradScalerOptions().backoff_factor(0.0), "backoff_factor"},
      {GradScalerOptions().backoff_factor(std::nan("")), "backoff_factor"},
      {GradScalerOptions().growth_interval(0), "growth_interval"},
      {GradScalerOptions().growth_interval(int64_t(1) << 31), "growth_interval"},
      {GradScalerOptions().growth_factor(0.5).enabled(false), "growth_factor"},
  };
  for (const auto& [o, name] : bad)
    expect_err([&] { GradScaler s(o); }, std::string("[GradScaler] ") + name);
  GradScaler ok(GradScalerOptions().init_scale(1).growth_factor(1.5).backoff_factor(0.9));
  EXPECT_EQ(ok.get_growth_interval(), 2000);
  EXPECT_EQ(ok.get_growth_factor(), 1.5);
  EXPECT_EQ(ok.get_backoff_factor(), 0.9);
}

TEST(GradScalerTest, StateDictRoundTrips) {
  GradScaler a(GradScalerOptions().init_scale(1000).growth_factor(1.7).growth_interval(3));
  Problem pb;
  for (int i = 0; i < 5; ++i) {  // grows at the 3rd step: scale 1700, tracker 2
    pb.opt->zero_grad();
    pb.backward(a, golden()["cases"][0]["iterations"][0]);
    a.step(*pb.opt);
    a.update();
  }
  const nn::StateDict sd = a.state_dict();
  EXPECT_EQ(sd.at("scale").item<double>(), double(float(1700.0)));
  EXPECT_EQ(sd.at("_growth_tracker").item<double>(), 2.0);
  EXPECT_EQ(sd.at("growth_interval").item<double>(), 3.0);
  EXPECT_EQ(sd.at("scale").dtype(), DType::f64);
  GradScaler b;
  b.load_state_dict(sd);
  EXPECT_EQ(b.get_scale(), a.get_scale());
  EXPECT_EQ(b.get_growth_tracker(), 2);
  EXPECT_EQ(b.get_growth_factor(), 1.7);
  EXPECT_EQ(b.get_backoff_factor(), 0.5);
  EXPECT_EQ(b.get_growth_interval(), 3);
  // Two more clean steps grow both the same way (at the first of them).
  for (GradScaler* s : {&a, &b}) {
    Problem p;
    for (int i = 0; i < 2; ++i) {
      p.opt->zero_grad();
      p.backward(*s, golden()["cases"][0]["iterations"][0]);
      s->step(*p.opt);
      s->update();
    }
  }
  EXPECT_EQ(b.get_scale(), double(float(double(float(1700.0)) * 1.7)));
  EXPECT_EQ(a.get_scale(), b.get_scale());
  // A disabled scaler ignores a dict; an enabled one refuses an empty one.
  GradScaler off(DType::bf16);
  off.load_state_dict(sd);
  EXPECT_EQ(off.get_scale(), 1.0);
  expect_err([&] { b.load_state_dict(nn::StateDict()); }, "empty");
}

TEST(GradScalerTest, OutOfRangeStateIsRejectedChangingNothing) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const std::pair<const char*, double> bad[] = {
      {"scale", 0},
      {"scale", -2},
      {"scale", inf},
      {"scale", nan},
      {"scale", 1e39},
      {"scale", 1e-50},
      {"growth_factor", 1},
      {"growth_factor", nan},
      {"backoff_factor", 1},
      {"backoff_factor", 0},
      {"backoff_factor", -1},
      {"growth_interval", 0},
      {"growth_interval", 2.5},
      {"growth_interval", 1e10},
      {"_growth_tracker", -1},
      {"_growth_tracker", 7},
      {"_growth_tracker", 0.5},
      {"_growth_tracker", nan},
  };
  for (const auto& [key, value] : bad) {
    SCOPED_TRACE(std::string(key) + " = " + std::to_string(value));
    GradScaler good(GradScalerOptions().init_scale(256).growth_interval(7));
    nn::StateDict sd = good.state_dict();
    sd.set(key, scalar_tensor(value, DType::f64));
    GradScaler s;
    expect_err([&] { s.load_state_dict(sd); },
               std::string("[GradScaler.load_state_dict] field '") + key + "'");
    EXPECT_EQ(s.get_scale(), 65536.0);
    EXPECT_EQ(s.get_growth_interval(), 2000);
  }
  GradScaler s;
  nn::StateDict extra = s.state_dict();
  extra.set("bogus", scalar_tensor(1.0, DType::f64));
  expect_err([&] { s.load_state_dict(extra); }, "unknown key 'bogus'");
  nn::StateDict missing;
  missing.set("scale", scalar_tensor(2.0, DType::f64));
  expect_err([&] { s.load_state_dict(missing); }, "missing key");
  nn::StateDict two = s.state_dict();
  two.set("scale", from_vector<double>({1.0, 2.0}, {2}));
  expect_err([&] { s.load_state_dict(two); }, "scale");
}

// Found by a tester: a scale that underflowed to 0 turned zero gradients into NaN weights (and
// a checkpoint that could not be loaded); a step with no gradient at all counted as clean.
TEST(GradScalerTest, ScaleStaysNormalAndAStepNeedsGradients) {
  expect_err([] { GradScaler s(GradScalerOptions().init_scale(1e-50)); }, "init_scale");
  expect_err([] { GradScaler s(GradScalerOptions().init_scale(1e-40)); }, "init_scale");
  const double tiny = double(std::numeric_limits<float>::min());
  GradScaler s(GradScalerOptions().init_scale(tiny * 4));
  Tensor w = ones({2}).requires_grad_(true);
  optim::SGD opt({w}, optim::SGDOptions(0.1));
  for (int i = 0; i < 4; ++i) {  // inf gradients: back off, but not below f32's smallest normal
    w.set_grad(Tensor());
    (w * std::numeric_limits<double>::infinity()).sum().backward();
    EXPECT_FALSE(s.step(opt));
    s.update();
  }
  EXPECT_EQ(s.get_scale(), tiny);
  w.set_grad(Tensor());
  (w * 0.0).sum().backward();  // zero gradients at the smallest scale stay zero
  EXPECT_TRUE(s.step(opt));
  s.update();
  for (float v : w.detach().to_vector<float>()) EXPECT_EQ(v, 1.0f);
  GradScaler back;
  back.load_state_dict(s.state_dict());  // a checkpoint of this state loads
  EXPECT_EQ(back.get_scale(), tiny);
  // No backward: torch's "No inf checks were recorded for this optimizer".
  Tensor v = ones({2}).requires_grad_(true);
  optim::SGD opt2({v}, optim::SGDOptions(0.1));
  GradScaler fresh;
  expect_err([&] { fresh.step(opt2); }, "no inf checks were recorded");
}
