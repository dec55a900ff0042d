// ember::train: metrics, the Learner's loop (loss falls, resume is bit-identical, gradient
// accumulation, early stopping, SIGINT) and its files (checkpoints, CSV/JSON logs, report).
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ember/autograd.h"
#include "ember/data/dataloader.h"
#include "ember/ember.h"
#include "ember/optim/adam.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/sgd.h"
#include "ember/record/checkpoint.h"
#include "ember/train/learner.h"
#include "ember/train/metrics.h"
#include "ember/train/report.h"
#include "test_util.h"

using namespace ember;
using ember::test::list_dir;
using ember::test::read_bytes;

namespace {

// x -> linear(D, H) -> relu -> dropout(p) -> linear(H, C). Parameters drawn from the cpu
// generator, so manual_seed fixes them.
struct Mlp : nn::UnaryModule {
  Tensor w1, b1, w2, b2;
  double p;
  Mlp(int64_t d, int64_t h, int64_t c, double p_drop = 0.0) : nn::UnaryModule("Mlp"), p(p_drop) {
    w1 = register_parameter("w1", randn({h, d}) * 0.5);
    b1 = register_parameter("b1", zeros({h}));
    w2 = register_parameter("w2", randn({c, h}) * 0.5);
    b2 = register_parameter("b2", zeros({c}));
  }
  Tensor forward(const Tensor& x) override {
    Tensor hid = nn::functional::relu(linear(x, w1, b1));
    if (p > 0) hid = nn::functional::dropout(hid, p, is_training());
    return linear(hid, w2, b2);
  }
};

// y = x W^T + b.
struct Lin : nn::UnaryModule {
  Tensor w, b;
  Lin(int64_t d, int64_t c) : nn::UnaryModule("Lin") {
    w = register_parameter("w", randn({c, d}) * 0.3);
    b = register_parameter("b", zeros({c}));
  }
  Tensor forward(const Tensor& x) override { return linear(x, w, b); }
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

data::DataLoaderOptions loader_opts(int64_t batch, bool shuffle, uint64_t seed = 5) {
  data::DataLoaderOptions o;
  o.batch_size = batch;
  o.shuffle = shuffle;
  o.seed = seed;
  return o;
}

void expect_bit_equal(nn::Module& a, nn::Module& b) {
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    const Tensor x = pa[i].second.contiguous(), y = pb[i].second.contiguous();
    ASSERT_EQ(x.shape(), y.shape());
    EXPECT_EQ(std::memcmp(x.raw_data(), y.raw_data(), size_t(x.numel() * x.element_size())), 0)
        << pa[i].first;
  }
}

train::LearnerOptions quiet(const std::string& dir = "") {
  train::LearnerOptions o;
  o.device = Device::cpu();
  o.output_dir = dir;
  o.progress = train::Progress::none;
  o.handle_sigint = false;
  return o;
}

// One configured run: a dropout MLP with Adam and StepLR on shuffled blobs.
struct TrainRun {
  std::shared_ptr<Mlp> model;
  std::shared_ptr<optim::Adam> opt;
  std::shared_ptr<optim::StepLR> sched;
  std::unique_ptr<train::Learner> learner;
  train::Loader train, valid;
  TrainRun(uint64_t init_seed, train::LearnerOptions o, double gamma = 0.7)
      : train(blobs(60, 11), loader_opts(8, true)), valid(blobs(30, 12), loader_opts(16, false)) {
    manual_seed(Device::cpu(), init_seed);
    model = std::make_shared<Mlp>(4, 8, 3, 0.2);
    opt = std::make_shared<optim::Adam>(model->parameters(), optim::AdamOptions(0.02));
    sched = std::make_shared<optim::StepLR>(opt, 1, gamma);
    learner = std::make_unique<train::Learner>(model, opt, train::cross_entropy_loss(), o);
    learner->set_scheduler(sched, train::SchedulerInterval::epoch);
  }
};

}  // namespace

TEST(LearnerTest, MetricsMatchHandComputedValues) {
  train::MetricAccumulator acc(2);
  // Predictions (argmax): 0, 1, 1, 2, 0; targets: 0, 1, 2, 2, 1.
  const Tensor out = tensor<float>({5, 1, 0, 0, 3, 1, 0, 2, 1, 0, 1, 4, 2, 1.5f, 0}, {5, 3});
  const Tensor tgt = tensor<int64_t>({0, 1, 2, 2, 1});
  acc.add(0.5, 2, out.slice(0, 0, 2), tgt.slice(0, 0, 2));
  acc.add(2.0, 3, out.slice(0, 2, 5), tgt.slice(0, 2, 5));
  const auto m = acc.compute();
  EXPECT_DOUBLE_EQ(m.at("loss"), (0.5 * 2 + 2.0 * 3) / 5);
  EXPECT_DOUBLE_EQ(m.at("accuracy"), 3.0 / 5);
  // top-2: sample 2 (target 2 score 1, scores 0,2,1 -> rank 2) yes; sample 4 (target 1 score 1.5,
  // above it only 2) yes: all 5.
  EXPECT_DOUBLE_EQ(m.at("top_k_accuracy"), 1.0);
  // class 0: tp 1, predicted 2, actual 1 -> p 0.5 r 1; class 1: tp 1, pred 2, actual 2 -> 0.5,
  // 0.5; class 2: tp 1, pred 1, actual 2 -> 1, 0.5.
  EXPECT_DOUBLE_EQ(m.at("precision"), (0.5 + 0.5 + 1.0) / 3);
  EXPECT_DOUBLE_EQ(m.at("recall"), (1.0 + 0.5 + 0.5) / 3);
  EXPECT_DOUBLE_EQ(m.at("f1"), (2 * 0.5 / 1.5 + 0.5 + 2 * 0.5 / 1.5) / 3);
  train::MetricAccumulator bad;
  EXPECT_THROW(bad.add(1, 1, tensor<float>({1, 2}, {1, 2}), tensor<int64_t>({2})), Error);
}

TEST(LearnerTest, LossFallsOnSyntheticData) {
  const ember::test::TempDir dir_tmp("fit");
  const std::string& dir = dir_tmp.path();
  TrainRun s(3, quiet(dir), 0.95);
  const train::FitResult r = s.learner->fit(s.train, &s.valid, 8);
  EXPECT_EQ(r.status, train::FitStatus::completed);
  ASSERT_EQ(r.history.size(), 8u);
  EXPECT_EQ(r.steps, 8 * 8);  // 60 samples / 8 -> 8 batches per epoch
  const double first = r.history.front().metrics.at("train_loss");
  const double last = r.history.back().metrics.at("train_loss");
  EXPECT_LT(last, first);
  EXPECT_LT(r.history.back().metrics.at("valid_loss"), 0.25);
  EXPECT_GE(r.history.back().metrics.at("valid_accuracy"), 0.9);
  EXPECT_NEAR(r.history[1].metrics.at("lr"), 0.02 * 0.95, 1e-12);  // StepLR per epoch
  EXPECT_GT(r.history[0].metrics.at("samples_per_sec"), 0);
}

TEST(LearnerTest, WritesCheckpointsLogsAndReport) {
  const ember::test::TempDir dir_tmp("files");
  const std::string& dir = dir_tmp.path();
  train::LearnerOptions o = quiet(dir);
  o.keep_last = 2;
  o.report_settings = {{"model", "blob mlp"}, {"seed", "3"}};
  std::ostringstream lines;
  o.out = &lines;
  o.progress = train::Progress::lines;
  TrainRun s(3, o);
  const train::FitResult r = s.learner->fit(s.train, &s.valid, 3);
  EXPECT_EQ(list_dir(dir), (std::vector<std::string>{"checkpoints", "metrics.csv", "metrics.json",
                                                     "report.html"}));
  const auto ck = list_dir(dir + "/checkpoints");
  EXPECT_EQ(ck.size(), 3u);  // epoch-0002, epoch-0003, best
  EXPECT_TRUE(std::count(ck.begin(), ck.end(), "epoch-0002.safetensors"));
  EXPECT_TRUE(std::count(ck.begin(), ck.end(), "epoch-0003.safetensors"));
  EXPECT_TRUE(std::count(ck.begin(), ck.end(), "best.safetensors"));
  EXPECT_EQ(r.last_checkpoint, dir + "/checkpoints/epoch-0003.safetensors");
  const record::CheckpointFile best =
      record::read_checkpoint(dir + "/checkpoints/best.safetensors");
  EXPECT_EQ(best.state.best_metric_name, "valid_loss");
  // One epoch numbering: best_epoch counts from 1 in FitResult, the checkpoint and the report.
  EXPECT_GE(r.best_epoch, 1);
  EXPECT_EQ(best.state.best_epoch, r.best_epoch);
  EXPECT_EQ(best.state.epoch, r.best_epoch);
  EXPECT_EQ(r.history[size_t(r.best_epoch - 1)].metrics.at("valid_loss"), r.best_metric);
  for (size_t i = 0; i < r.history.size(); ++i) {
    EXPECT_EQ(r.history[i].epoch, int64_t(i) + 1);
    EXPECT_EQ(r.history[i].metrics.at("epoch"), double(i + 1));
  }

  // CSV: a header and one row per epoch, the same numbers as the history.
  const std::string csv = read_bytes(dir + "/metrics.csv");
  std::istringstream cs(csv);
  std::string header, row;
  std::getline(cs, header);
  EXPECT_EQ(header.rfind("epoch,", 0), 0u);
  EXPECT_NE(header.find(",train_loss,"), std::string::npos);
  EXPECT_NE(header.find(",valid_accuracy,"), std::string::npos);
  int rows = 0;
  while (std::getline(cs, row)) ++rows;
  EXPECT_EQ(rows, 3);
  // JSON parses and matches.
  const nlohmann::json js = nlohmann::json::parse(read_bytes(dir + "/metrics.json"));
  ASSERT_EQ(js.size(), 3u);
  EXPECT_EQ(js[2]["epoch"].get<int>(), 3);
  EXPECT_DOUBLE_EQ(js[2]["metrics"]["valid_loss"].get<double>(),
                   r.history[2].metrics.at("valid_loss"));
  const std::string html = read_bytes(dir + "/report.html");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(std::count(html.begin(), html.end(), '\n') > 10, true);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("valid_loss"), std::string::npos);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  // The settings given, then those the Learner knows, then the version.
  const size_t model_at = html.find("<tr><th>model</th><td>blob mlp</td></tr>");
  const size_t seed_at = html.find("<tr><th>seed</th><td>3</td></tr>");
  const size_t device_at = html.find("<tr><th>device</th><td>cpu</td></tr>");
  const size_t precision_at = html.find("<tr><th>precision</th><td>float32</td></tr>");
  const size_t version_at = html.find("<tr><th>Ember</th><td>");
  EXPECT_LT(model_at, seed_at);
  EXPECT_LT(seed_at, device_at);
  EXPECT_LT(device_at, precision_at);
  EXPECT_LT(precision_at, version_at);
  EXPECT_NE(version_at, std::string::npos);
  char best_line[96];
  std::snprintf(best_line, sizeof best_line, "best checkpoint: epoch %lld, valid_loss %.4f",
                (long long)r.best_epoch, r.best_metric);
  EXPECT_NE(html.find(best_line), std::string::npos) << best_line;
  EXPECT_NE(lines.str().find("epoch 1/3"), std::string::npos);
  EXPECT_NE(lines.str().find("epoch 3/3"), std::string::npos);
  EXPECT_EQ(lines.str().find('\r'), std::string::npos);  // no progress bar when not a terminal
}

TEST(LearnerTest, ResumeEqualsUninterrupted) {
  const ember::test::TempDir a_dir_tmp("a"), b_dir_tmp("b");
  const std::string &a_dir = a_dir_tmp.path(), &b_dir = b_dir_tmp.path();
  TrainRun a(3, quiet(a_dir));
  a.learner->fit(a.train, &a.valid, 2);

  train::LearnerOptions ob = quiet(b_dir);
  ob.user_json = R"({"dataset":"blobs"})";
  TrainRun b(3, ob);
  b.learner->fit(b.train, &b.valid, 1);
  // A fresh process: other initial weights, the generator elsewhere.
  TrainRun c(77, quiet(b_dir));
  (void)rand({13});
  EXPECT_EQ(c.learner->resumed_user_json(), "");
  c.learner->resume(b_dir);
  EXPECT_EQ(c.learner->resumed_user_json(), R"({"dataset":"blobs"})");  // for the caller's checks
  EXPECT_EQ(c.learner->epochs_completed(), 1);
  const train::FitResult rc = c.learner->fit(c.train, &c.valid, 2);
  EXPECT_EQ(rc.epochs_completed, 2);
  ASSERT_EQ(rc.history.size(), 2u);
  expect_bit_equal(*a.model, *c.model);
  EXPECT_EQ(a.sched->get_last_lr(), c.sched->get_last_lr());
  EXPECT_EQ(rc.history[1].metrics.at("valid_loss"),
            a.learner->history()[1].metrics.at("valid_loss"));
  EXPECT_EQ(rc.history[1].metrics.at("train_loss"),
            a.learner->history()[1].metrics.at("train_loss"));
}

TEST(LearnerTest, SigintStopsWithALoadableCheckpointAndResumes) {
  const ember::test::TempDir a_dir_tmp("ua"), dir_tmp("sig");
  const std::string &a_dir = a_dir_tmp.path(), &dir = dir_tmp.path();
  TrainRun a(3, quiet(a_dir));
  a.learner->fit(a.train, &a.valid, 2);

  train::LearnerOptions o = quiet(dir);
  o.handle_sigint = true;
  int64_t seen = 0;
  o.on_batch_end = [&](const train::BatchEvent& e) {
    ++seen;
    if (e.epoch == 2 && e.batch == 2) std::raise(SIGINT);  // epochs count from 1
  };
  TrainRun b(3, o);
  const train::FitResult r = b.learner->fit(b.train, &b.valid, 2);
  EXPECT_EQ(r.status, train::FitStatus::interrupted);
  EXPECT_EQ(seen, 8 + 3);  // the batch that saw the signal finished, no more
  EXPECT_EQ(r.epochs_completed, 1);
  EXPECT_EQ(r.last_checkpoint, dir + "/checkpoints/interrupted.safetensors");
  const record::CheckpointFile f = record::read_checkpoint(r.last_checkpoint);
  EXPECT_EQ(f.state.epoch, 1);
  EXPECT_EQ(f.state.batch, 3);
  EXPECT_EQ(f.state.step, 11);
  // The handler is gone again: SIGINT's disposition is what it was (default here).
  struct sigaction now {};
  sigaction(SIGINT, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);

  TrainRun c(99, quiet(dir));
  c.learner->resume(dir);
  const train::FitResult rc = c.learner->fit(c.train, &c.valid, 2);
  EXPECT_EQ(rc.status, train::FitStatus::completed);
  EXPECT_EQ(rc.steps, 16);
  expect_bit_equal(*a.model, *c.model);
}

TEST(LearnerTest, GradientAccumulationEqualsLargeBatch) {
  auto ds = blobs(32, 21);
  auto run = [&](int64_t batch, int64_t accumulate) {
    manual_seed(Device::cpu(), 4);
    auto model = std::make_shared<Lin>(4, 3);
    auto opt =
        std::make_shared<optim::SGD>(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
    train::LearnerOptions o = quiet();
    o.accumulation_steps = accumulate;
    train::Learner l(model, opt, train::cross_entropy_loss(), o);
    train::Loader loader(ds, loader_opts(batch, false));
    const train::FitResult r = l.fit(loader, nullptr, 3);
    EXPECT_EQ(r.steps, 3 * 32 / 8);
    return model;
  };
  auto big = run(8, 1), small = run(4, 2), tiny = run(2, 4);
  for (const auto& m : {small, tiny}) {
    const auto w = m->w.to_vector<float>(), wb = big->w.to_vector<float>();
    for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(w[i], wb[i], 1e-6) << i;
    const auto b = m->b.to_vector<float>(), bb = big->b.to_vector<float>();
    for (size_t i = 0; i < b.size(); ++i) EXPECT_NEAR(b[i], bb[i], 1e-6) << i;
  }
  // The parameters moved (the comparison is not between two untouched models).
  manual_seed(Device::cpu(), 4);
  Lin init(4, 3);
  EXPECT_GT(std::abs(init.w.to_vector<float>()[0] - big->w.to_vector<float>()[0]), 1e-3);
}

TEST(LearnerTest, EarlyStoppingStops) {
  manual_seed(Device::cpu(), 4);
  auto model = std::make_shared<Lin>(4, 3);
  auto opt = std::make_shared<optim::SGD>(model->parameters(), optim::SGDOptions(0.0));
  train::LearnerOptions o = quiet();
  o.early_stopping = train::EarlyStopping{"valid_loss", 2, 0.0, train::Mode::min};
  train::Learner l(model, opt, train::cross_entropy_loss(), o);
  train::Loader tr(blobs(24, 1), loader_opts(8, false)), va(blobs(12, 2), loader_opts(6, false));
  // lr 0: valid_loss never improves after the first epoch -> 1 + patience epochs.
  const train::FitResult r = l.fit(tr, &va, 10);
  EXPECT_EQ(r.status, train::FitStatus::early_stopped);
  EXPECT_EQ(r.epochs_completed, 3);
  // An unknown metric is an error naming it.
  o.early_stopping->metric = "valid_nope";
  train::Learner l2(model, opt, train::cross_entropy_loss(), o);
  try {
    l2.fit(tr, &va, 2);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("valid_nope"), std::string::npos);
  }
}

TEST(LearnerTest, RejectsBadOptions) {
  manual_seed(Device::cpu(), 4);
  auto model = std::make_shared<Lin>(4, 3);
  auto opt = std::make_shared<optim::SGD>(model->parameters(), optim::SGDOptions(0.1));
  train::LearnerOptions o = quiet();
  o.accumulation_steps = 0;
  try {
    train::Learner l(model, opt, train::cross_entropy_loss(), o);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[Learner] accumulation_steps"), std::string::npos);
  }
  EXPECT_THROW(train::Learner(nullptr, opt, train::cross_entropy_loss(), quiet()), Error);
  train::Learner l(model, opt, train::cross_entropy_loss(), quiet());
  EXPECT_THROW(l.resume(ember::test::TempDir("empty").path()), Error);
  train::Loader tr(blobs(6, 1), loader_opts(2, false));
  EXPECT_THROW(l.fit(tr, nullptr, -1), Error);

  // An output folder under a regular file fails before any batch runs, and says why.
  ember::test::TempDir tmp("learner-out");
  const std::string file = tmp.path() + "/a-file";
  ember::test::write_bytes(file, "abc");
  train::Learner bad(model, opt, train::cross_entropy_loss(), quiet(file + "/run"));
  const std::vector<float> before = model->parameters()[0].to_vector<float>();
  ember::test::expect_error(
      [&] { bad.fit(tr, nullptr, 1); },
      {"[Learner] cannot create directory", "a-file/run/checkpoints", "Not a directory"});
  EXPECT_EQ(before, model->parameters()[0].to_vector<float>());  // no step was taken
}

TEST(LearnerTest, HistoryFormatsHandleMissingValues) {
  std::vector<train::EpochSummary> h(2);
  h[0].epoch = 1;
  h[0].metrics = {{"train_loss", 1.5}};
  h[1].epoch = 2;
  h[1].metrics = {{"train_loss", NAN}, {"valid_loss", 0.25}};
  EXPECT_EQ(train::history_csv(h).substr(0, 38), "epoch,train_loss,valid_loss,seconds\n1,");
  // The Learner also records "epoch" as a metric: the reports still write it once.
  h[0].metrics["epoch"] = 1;
  h[1].metrics["epoch"] = 2;
  EXPECT_EQ(train::history_csv(h).substr(0, 38), "epoch,train_loss,valid_loss,seconds\n1,");
  const nlohmann::json js = nlohmann::json::parse(train::history_json(h));
  EXPECT_TRUE(js[1]["metrics"]["train_loss"].is_null());
  EXPECT_EQ(js[1]["metrics"]["valid_loss"].get<double>(), 0.25);
  EXPECT_NE(train::history_html(h, "a < b").find("a &lt; b"), std::string::npos);
}

TEST(LearnerTest, ProgressBarShowsEtaAndLiveMetrics) {
  train::LearnerOptions o = quiet();
  std::ostringstream out;
  o.out = &out;
  o.progress = train::Progress::bar;
  TrainRun s(3, o);
  s.learner->fit(s.train, &s.valid, 1);
  const std::string text = out.str();
  EXPECT_NE(text.find("\repoch 1/1 ["), std::string::npos) << text;
  EXPECT_NE(text.find("8/8 loss "), std::string::npos) << text;
  EXPECT_NE(text.find(" acc "), std::string::npos) << text;
  EXPECT_NE(text.find("ETA 0:00"), std::string::npos) << text;
  EXPECT_NE(text.find("\nepoch 1/1  fused_kernels_per_step "), std::string::npos) << text;
  EXPECT_NE(text.find("  kernels_per_step "), std::string::npos) << text;  // the epoch summary
  EXPECT_NE(text.find("  lr 0.02"), std::string::npos) << text;
}
