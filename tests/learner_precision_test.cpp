// The Learner's mixed precision (LearnerOptions::precision): autocast around the step function
// in training and evaluation (and not around backward), loss scaling with f16, skipped steps
// and backoff, loss curves that track f32's, checkpoints and resume.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "ember/ember.h"
#include "ember/record/safetensors.h"
#include "ember/train/learner.h"
#include "test_util.h"

using namespace ember;
using train::Precision;

namespace {

// What the model saw: autocast state in forward (training / eval) and in backward.
struct Seen {
  int forward_train = 0, forward_eval = 0, backward = 0;
  int forward_autocast = 0, eval_autocast = 0, backward_autocast = 0;
  DType forward_dtype = DType::f32;
  std::vector<double> grad_abs_sum;  // |dL/dw| summed, as backward delivers it (scaled or not)
};

// y = x W^T + b on 4 features, 3 classes; records autocast state for the cpu device.
struct Probe : nn::UnaryModule {
  Tensor w, b;
  std::shared_ptr<Seen> seen = std::make_shared<Seen>();
  Probe() : nn::UnaryModule("Probe") {
    w = register_parameter("w", randn({3, 4}) * 0.3);
    b = register_parameter("b", zeros({3}));
    w.register_hook([s = seen](const Tensor& g) {
      ++s->backward;
      s->backward_autocast += is_autocast_enabled(DeviceType::cpu);
      s->grad_abs_sum.push_back(abs(g).sum().item<double>());
    });
  }
  Tensor forward(const Tensor& x) override {
    const bool on = is_autocast_enabled(DeviceType::cpu);
    if (is_training()) {
      ++seen->forward_train;
      seen->forward_autocast += on;
    } else {
      ++seen->forward_eval;
      seen->eval_autocast += on;
    }
    if (on) seen->forward_dtype = get_autocast_dtype(DeviceType::cpu);
    return linear(x, w, b);
  }
};

// Three Gaussian blobs in 4-d: n samples, labels i % 3.
std::shared_ptr<data::TensorDataset> blobs(int64_t n, uint64_t seed) {
  manual_seed(Device::cpu(), seed);
  const Tensor centers = tensor<float>({2, 0, 0, 1, -2, 2, 0, -1, 0, -2, 2, 0}, {3, 4});
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[size_t(i)] = i % 3;
  const Tensor y = from_vector<int64_t>(labels, {n});
  const Tensor x = index_select(centers, 0, y) + randn({n, 4}) * 0.4;
  return std::make_shared<data::TensorDataset>(x, y);
}

data::DataLoaderOptions loader_opts(int64_t batch, bool shuffle) {
  data::DataLoaderOptions o;
  o.batch_size = batch;
  o.shuffle = shuffle;
  o.seed = 5;
  return o;
}

train::LearnerOptions opts(Precision p, const std::string& dir = "") {
  train::LearnerOptions o;
  o.device = Device::cpu();
  o.output_dir = dir;
  o.progress = train::Progress::none;
  o.handle_sigint = false;
  o.precision = p;
  return o;
}

// A Probe trained with SGD on blobs (8 batches of 8 per epoch), from a fixed init.
struct ProbeRun {
  std::shared_ptr<Probe> model;
  std::shared_ptr<optim::SGD> opt;
  std::unique_ptr<train::Learner> learner;
  train::Loader train, valid;
  explicit ProbeRun(train::LearnerOptions o, train::LossFn loss = train::cross_entropy_loss())
      : train(blobs(64, 11), loader_opts(8, true)), valid(blobs(24, 12), loader_opts(12, false)) {
    manual_seed(Device::cpu(), 3);
    model = std::make_shared<Probe>();
    opt = std::make_shared<optim::SGD>(model->parameters(), optim::SGDOptions(0.2));
    learner = std::make_unique<train::Learner>(model, opt, std::move(loss), o);
  }
  train::FitResult fit(int64_t epochs) { return learner->fit(train, &valid, epochs); }
};

std::vector<double> curve(const train::FitResult& r, const char* metric) {
  std::vector<double> out;
  for (const auto& e : r.history) out.push_back(e.metrics.at(metric));
  return out;
}

std::vector<float> values(const Tensor& t) { return t.contiguous().to_vector<float>(); }

}  // namespace

TEST(LearnerPrecisionTest, NamesParseAndRoundTrip) {
  for (Precision p : {Precision::f32, Precision::bf16, Precision::f16})
    EXPECT_EQ(train::parse_precision(train::precision_name(p)), p);
  EXPECT_STREQ(train::precision_name(Precision::bf16), "bf16");
  test::expect_error([] { train::parse_precision("fp16"); },
                     {"[Learner] unknown precision 'fp16'", "f32, bf16 or f16"});
}

TEST(LearnerPrecisionTest, StepFunctionRunsUnderAutocastBackwardOutside) {
  for (Precision p : {Precision::f32, Precision::bf16, Precision::f16}) {
    SCOPED_TRACE(train::precision_name(p));
    ProbeRun r(opts(p));
    r.fit(1);
    const Seen& s = *r.model->seen;
    ASSERT_EQ(s.forward_train, 8);
    ASSERT_EQ(s.forward_eval, 2);  // validation: 24 samples in batches of 12
    ASSERT_EQ(s.backward, 8);
    const int want = p == Precision::f32 ? 0 : 1;
    EXPECT_EQ(s.forward_autocast, 8 * want);
    EXPECT_EQ(s.eval_autocast, 2 * want);
    EXPECT_EQ(s.backward_autocast, 0);
    if (p != Precision::f32) {
      EXPECT_EQ(s.forward_dtype, p == Precision::bf16 ? DType::bf16 : DType::f16);
    }
    EXPECT_FALSE(is_autocast_enabled(DeviceType::cpu));  // the scope ended
    // evaluate() alone too.
    r.learner->evaluate(r.valid);
    EXPECT_EQ(r.model->seen->eval_autocast, 4 * want);
    // Parameters and optimizer state stay f32.
    for (const Tensor& t : r.model->parameters()) EXPECT_EQ(t.dtype(), DType::f32);
  }
}

TEST(LearnerPrecisionTest, F16ScalesTheLossBf16DoesNot) {
  ProbeRun f32(opts(Precision::f32)), bf16(opts(Precision::bf16)), f16(opts(Precision::f16));
  for (ProbeRun* r : {&f32, &bf16, &f16}) r->fit(1);
  EXPECT_FALSE(bf16.learner->grad_scaler().is_enabled());
  EXPECT_FALSE(f32.learner->grad_scaler().is_enabled());
  ASSERT_TRUE(f16.learner->grad_scaler().is_enabled());
  // The first backward delivers 2^16 times f32's gradient, up to the rounding of the forward
  // pass's f16 (bf16) ops: 2^-11 (2^-8) per value, a few of them per gradient.
  const double g32 = f32.model->seen->grad_abs_sum.at(0);
  EXPECT_GT(g32, 0.0);
  EXPECT_NEAR(f16.model->seen->grad_abs_sum.at(0) / 65536.0, g32, 4e-3 * g32);
  EXPECT_NE(f16.model->seen->grad_abs_sum.at(0), g32 * 65536.0);  // the ops ran in f16
  EXPECT_NEAR(bf16.model->seen->grad_abs_sum.at(0), g32, 3e-2 * g32);
  // No inf at this scale: 8 clean steps, no growth before 2000.
  EXPECT_EQ(f16.learner->grad_scaler().get_scale(), 65536.0);
  EXPECT_EQ(f16.learner->grad_scaler().get_growth_tracker(), 8);
  EXPECT_EQ(f16.learner->history().back().metrics.at("grad_scale"), 65536.0);
  EXPECT_EQ(f16.learner->history().back().metrics.at("skipped_steps"), 0.0);
  EXPECT_EQ(bf16.learner->history().back().metrics.count("grad_scale"), 0u);
}

// The loss curves of bf16 / f16 follow f32's. Tolerance: bf16 keeps 8 significant bits (a
// relative rounding of 2^-9 per value), so once matmul / linear run in bf16 each logit is off by
// about 1% on this 4-feature problem; over 4 epochs of 8 SGD steps that moves each epoch's mean
// loss by a few percent at most. 10% relative (plus 0.01 for losses near 0) passes such runs
// and fails one that does not learn, diverges or steps with unscaled (2^16 times) gradients.
TEST(LearnerPrecisionTest, LossCurvesTrackF32) {
  ProbeRun ref(opts(Precision::f32));
  const train::FitResult ref_result = ref.fit(4);
  const std::vector<double> want = curve(ref_result, "train_loss");
  const std::vector<double> want_valid = curve(ref_result, "valid_loss");
  ASSERT_EQ(want.size(), 4u);
  EXPECT_LT(want.back(), 0.5 * want.front());  // the problem is learnt
  for (Precision p : {Precision::bf16, Precision::f16}) {
    SCOPED_TRACE(train::precision_name(p));
    ProbeRun r(opts(p));
    const train::FitResult res = r.fit(4);
    const std::vector<double> got = curve(res, "train_loss"), got_valid = curve(res, "valid_loss");
    ASSERT_EQ(got.size(), want.size());
    for (size_t e = 0; e < want.size(); ++e) {
      EXPECT_NEAR(got[e], want[e], 0.1 * want[e] + 0.01) << "epoch " << e + 1;
      EXPECT_NEAR(got_valid[e], want_valid[e], 0.1 * want_valid[e] + 0.01) << "epoch " << e + 1;
    }
  }
}

// A scale so large that the gradients overflow: steps are skipped and the scale halves each
// time, until the gradients are finite; then training goes on.
TEST(LearnerPrecisionTest, F16SkipsInfStepsAndBacksOff) {
  train::LearnerOptions o = opts(Precision::f16);
  // The loss is 16 cross-entropies: at 2^20 the f16 gradients of the forward pass's f16 ops
  // (16 * scale * dloss/dlogit) pass f16's 65504, so steps are skipped until the scale is small
  // enough.
  const double init = 1048576.0;
  o.grad_scaler.init_scale(init);
  o.clip_grad_norm = 1.0;  // unscale_ before clipping: clipping sees the true gradients
  std::vector<double> scales;
  std::vector<std::vector<float>> ws;
  ProbeRun* self = nullptr;
  o.on_batch_end = [&](const train::BatchEvent&) {
    scales.push_back(self->learner->grad_scaler().get_scale());
    ws.push_back(values(self->model->w));
  };
  ProbeRun r(o, [](const Tensor& out, const Tensor& target) {
    return nn::functional::cross_entropy(out, target) * 16.0;
  });
  self = &r;
  const std::vector<float> w0 = values(r.model->w);
  const train::FitResult res = r.fit(2);
  ASSERT_EQ(scales.size(), 16u);
  EXPECT_EQ(ws[0], w0);  // the first step was skipped
  EXPECT_EQ(scales[0], double(float(init * 0.5)));
  int skipped = 0;
  for (size_t i = 0; i < scales.size(); ++i) {
    const bool skip = (i == 0 ? w0 : ws[i - 1]) == ws[i];
    skipped += skip;
    // Skips come first, each halving the scale; then it stays (growth_interval 2000).
    EXPECT_EQ(scales[i], double(float(init * std::pow(0.5, double(skipped))))) << i;
  }
  EXPECT_GE(skipped, 1);
  EXPECT_LT(skipped, 16);
  EXPECT_EQ(res.steps, 16);  // skipped steps count as steps
  EXPECT_EQ(res.history[0].metrics.at("skipped_steps") + res.history[1].metrics.at("skipped_steps"),
            double(skipped));
  EXPECT_EQ(res.history[1].metrics.at("grad_scale"), scales.back());
  for (float v : values(r.model->w)) EXPECT_TRUE(std::isfinite(v));
  EXPECT_LT(res.history[1].metrics.at("train_loss"), res.history[0].metrics.at("train_loss"));
  EXPECT_NE(values(r.model->w), w0);  // it trained after the skips
}

TEST(LearnerPrecisionTest, ResumeRestoresScalerAndRefusesAnotherPrecision) {
  const test::TempDir dir("precision");
  train::LearnerOptions o = opts(Precision::f16, dir.path() + "/run");
  o.grad_scaler.init_scale(1024).growth_interval(3);
  // Uninterrupted: 2 epochs (16 steps: the scale grows every 3).
  train::LearnerOptions no_files = o;
  no_files.output_dir.clear();
  ProbeRun full(no_files);
  full.fit(2);
  EXPECT_EQ(full.learner->grad_scaler().get_scale(), 1024.0 * 32);  // 16 / 3 = 5 growths
  EXPECT_EQ(full.learner->grad_scaler().get_growth_tracker(), 1);

  {
    ProbeRun first(o);
    first.fit(1);
    EXPECT_EQ(first.learner->grad_scaler().get_scale(), 1024.0 * 4);  // 8 / 3 = 2 growths
  }
  ProbeRun second(o);
  second.learner->resume(dir.path() + "/run");
  EXPECT_EQ(second.learner->grad_scaler().get_scale(), 1024.0 * 4);
  EXPECT_EQ(second.learner->grad_scaler().get_growth_tracker(), 2);
  EXPECT_EQ(train::checkpoint_precision(dir.path() + "/run"), Precision::f16);
  second.fit(2);
  EXPECT_EQ(second.learner->grad_scaler().get_scale(), full.learner->grad_scaler().get_scale());
  EXPECT_EQ(second.learner->grad_scaler().get_growth_tracker(), 1);
  EXPECT_EQ(values(second.model->w), values(full.model->w));

  // Another precision: an error naming both.
  for (Precision p : {Precision::f32, Precision::bf16}) {
    ProbeRun other(opts(p));
    test::expect_error([&] { other.learner->resume(dir.path() + "/run"); },
                       {"[Learner::resume]", "trained with precision f16",
                        std::string("this Learner's is ") + train::precision_name(p)});
    EXPECT_EQ(other.learner->epochs_completed(), 0);
  }
}

TEST(LearnerPrecisionTest, ResumeChecksTheSavedScalerState) {
  const test::TempDir dir("precision");
  const std::string run = dir.path() + "/run";
  {
    ProbeRun first(opts(Precision::f16, run));
    first.fit(1);
  }
  const std::string ckpt = run + "/checkpoints/epoch-0001.safetensors";
  record::SafetensorsFile original = record::load_safetensors(ckpt);
  const nlohmann::json learner = nlohmann::json::parse(original.metadata.at("learner"));
  EXPECT_EQ(learner.at("precision"), "f16");
  EXPECT_EQ(learner.at("grad_scaler").at("scale"), 65536.0);
  const std::pair<std::function<void(nlohmann::json&)>, std::vector<std::string>> cases[] = {
      {[](nlohmann::json& j) { j["grad_scaler"]["scale"] = -1.0; }, {"field 'scale' = -1"}},
      {[](nlohmann::json& j) { j["grad_scaler"]["scale"] = 1e300; }, {"field 'scale'"}},
      {[](nlohmann::json& j) { j["grad_scaler"]["_growth_tracker"] = 5000; },
       {"field '_growth_tracker'"}},
      {[](nlohmann::json& j) { j["grad_scaler"]["growth_factor"] = 0.5; },
       {"field 'growth_factor'"}},
      {[](nlohmann::json& j) { j["grad_scaler"]["backoff_factor"] = "x"; },
       {"learner.grad_scaler.backoff_factor", "not a number"}},
      {[](nlohmann::json& j) { j.erase("grad_scaler"); }, {"'learner.grad_scaler' is missing"}},
      {[](nlohmann::json& j) { j["precision"] = "f8"; }, {"'learner.precision' = \"f8\""}},
  };
  for (const auto& [edit, pieces] : cases) {
    record::SafetensorsFile f = original;
    nlohmann::json j = learner;
    edit(j);
    f.metadata["learner"] = j.dump();
    record::save_safetensors(ckpt, f.tensors, f.metadata);
    ProbeRun r(opts(Precision::f16, run));
    std::vector<std::string> want = {"[Learner::resume]", ckpt};
    want.insert(want.end(), pieces.begin(), pieces.end());
    test::expect_error([&] { r.learner->resume(run); }, want);
    EXPECT_EQ(r.learner->grad_scaler().get_scale(), 65536.0);
    EXPECT_EQ(r.learner->epochs_completed(), 0);
  }
  // A checkpoint from before precision was recorded is f32's.
  record::SafetensorsFile f = original;
  nlohmann::json j = learner;
  j.erase("precision");
  j.erase("grad_scaler");
  f.metadata["learner"] = j.dump();
  record::save_safetensors(ckpt, f.tensors, f.metadata);
  EXPECT_EQ(train::checkpoint_precision(run), Precision::f32);
  ProbeRun r(opts(Precision::f32, run));
  r.learner->resume(run);
  EXPECT_EQ(r.learner->epochs_completed(), 1);
}

TEST(LearnerPrecisionTest, ReportRecordsThePrecision) {
  const test::TempDir dir("precision");
  ProbeRun r(opts(Precision::bf16, dir.path() + "/run"));
  r.fit(1);
  const std::string html = test::read_bytes(dir.path() + "/run/report.html");
  EXPECT_NE(html.find("<tr><th>precision</th><td>mixed bfloat16 (float32 weights)</td></tr>"),
            std::string::npos);
}

TEST(LearnerPrecisionTest, BadScalerOptionsAreRefused) {
  train::LearnerOptions o = opts(Precision::f16);
  o.grad_scaler.growth_factor(0.9);
  test::expect_error([&] { ProbeRun r(o); }, {"[GradScaler] growth_factor"});
}
