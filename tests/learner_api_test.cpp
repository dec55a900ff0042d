// Issue 14 items 10 and 11: the Learner with any model and batch type (step functions), user
// metrics weighted by batch size, epoch / fit callbacks, one epoch numbering (from 1), resume
// of checkpoints written before that numbering; the DataLoader placing batches on a device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "ember/autograd.h"
#include "ember/data/dataloader.h"
#include "ember/ember.h"
#include "ember/optim/sgd.h"
#include "ember/record/checkpoint.h"
#include "ember/record/safetensors.h"
#include "ember/train/learner.h"
#include "test_util.h"

using namespace ember;
using ember::test::expect_error;
using ember::test::read_bytes;

namespace {

// y = x W^T + b.
struct Lin : nn::UnaryModule {
  Tensor w, b;
  Lin(int64_t d, int64_t c) : nn::UnaryModule("Lin") {
    w = register_parameter("w", randn({c, d}) * 0.3);
    b = register_parameter("b", zeros({c}));
  }
  Tensor forward(const Tensor& x) override { return linear(x, w, b); }
};

// Two inputs, two outputs: logits = a Wa^T + b Wb^T, aux = mean of the logits squared.
struct TwoIn : nn::Module {
  Tensor wa, wb;
  TwoIn() : nn::Module("TwoIn") {
    wa = register_parameter("wa", randn({3, 4}) * 0.3);
    wb = register_parameter("wb", randn({3, 2}) * 0.3);
  }
  std::pair<Tensor, Tensor> forward(const Tensor& a, const Tensor& b) {
    Tensor logits = matmul(a, wa.t()) + matmul(b, wb.t());
    return {logits, (logits * logits).mean()};
  }
};

// A batch type of the user's, with the documented hook to move it.
struct Pair {
  Tensor a, b, label;
  Pair to(const Device& d) const { return {a.to(d), b.to(d), label.to(d)}; }
};
struct PairItem {
  Tensor a, b, label;
};
class PairBatcher : public data::Batcher<PairItem, Pair> {
 public:
  Pair batch(std::vector<PairItem> items) const override {
    std::vector<Tensor> a, b, y;
    for (auto& i : items) {
      a.push_back(i.a);
      b.push_back(i.b);
      y.push_back(i.label);
    }
    return {data::stack_items(a), data::stack_items(b), data::stack_items(y)};
  }
};
// n items: label i % 3, a = one-hot-ish centre + noise, b = noise.
class PairDataset : public data::Dataset<PairItem> {
 public:
  explicit PairDataset(int64_t n, uint64_t seed) {
    manual_seed(Device::cpu(), seed);
    const Tensor centers = tensor<float>({2, 0, 0, 1, -2, 2, 0, -1, 0, -2, 2, 0}, {3, 4});
    std::vector<int64_t> labels;
    for (int64_t i = 0; i < n; ++i) labels.push_back(i % 3);
    y_ = from_vector<int64_t>(labels, {n});
    a_ = index_select(centers, 0, y_) + randn({n, 4}) * 0.3;
    b_ = randn({n, 2});
  }
  PairItem get(int64_t i) const override {
    return {a_.select(0, i), b_.select(0, i), y_.select(0, i)};
  }
  int64_t size() const override { return y_.size(0); }

 private:
  Tensor a_, b_, y_;
};

std::shared_ptr<data::TensorDataset> blobs(int64_t n, uint64_t seed) {
  manual_seed(Device::cpu(), seed);
  const Tensor centers = tensor<float>({2, 0, 0, 1, -2, 2, 0, -1, 0, -2, 2, 0}, {3, 4});
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[size_t(i)] = i % 3;
  const Tensor y = from_vector<int64_t>(labels, {n});
  return std::make_shared<data::TensorDataset>(index_select(centers, 0, y) + randn({n, 4}) * 0.4,
                                               y);
}

data::DataLoaderOptions batches(int64_t size, bool shuffle = false) {
  data::DataLoaderOptions o;
  o.batch_size = size;
  o.shuffle = shuffle;
  o.seed = 7;
  return o;
}

train::LearnerOptions quiet(const std::string& dir = "") {
  train::LearnerOptions o;
  o.device = Device::cpu();
  o.output_dir = dir;
  o.progress = train::Progress::none;
  o.handle_sigint = false;
  return o;
}

bool bit_equal(const Tensor& a, const Tensor& b) {
  const Tensor x = a.to(Device::cpu()).contiguous(), y = b.to(Device::cpu()).contiguous();
  return x.shape() == y.shape() &&
         std::memcmp(x.raw_data(), y.raw_data(), size_t(x.numel() * x.element_size())) == 0;
}

// Counts the samples it was shown since reset() (checks reset per epoch and evaluation).
class SampleCount : public train::Metric {
 public:
  std::string name() const override { return "seen"; }
  void reset() override { n_ = 0; }
  void update(const Tensor& output, const Tensor&) override { n_ += output.size(0); }
  double compute() const override { return double(n_); }

 private:
  int64_t n_ = 0;
};

}  // namespace

TEST(LearnerApiTest, TwoInputModelWithCustomBatchTrainsOnTheLearnersDevice) {
  manual_seed(Device::cpu(), 3);
  auto model = std::make_shared<TwoIn>();
  auto opt = std::make_shared<optim::SGD>(model->parameters(), optim::SGDOptions(0.2));
  data::DataLoader<PairItem, Pair> tr(std::make_shared<PairDataset>(48, 1), batches(8, true),
                                      std::make_shared<PairBatcher>());
  data::DataLoader<PairItem, Pair> va(std::make_shared<PairDataset>(24, 2), batches(12),
                                      std::make_shared<PairBatcher>());
  train::LearnerOptions o = quiet();
  o.device = Device::ref();  // batches are built on cpu: the Learner moves them (Pair::to)
  int64_t steps = 0, off_device = 0;
  train::Learner learner(model, opt, train::StepFn<Pair>([&, model](const Pair& b) {
                           ++steps;
                           for (const Tensor* t : {&b.a, &b.b, &b.label})
                             off_device += t->device() != Device::ref();
                           auto [logits, aux] = model->forward(b.a, b.b);
                           Tensor loss =
                               nn::functional::cross_entropy(logits, b.label) + aux * 0.01;
                           return train::StepOutput{loss, logits, b.label};
                         }),
                         o);
  EXPECT_EQ(model->wa.device(), Device::ref());
  const train::FitResult r = learner.fit(tr, &va, 6);
  EXPECT_EQ(off_device, 0);
  EXPECT_EQ(steps, 6 * (6 + 2));  // 6 train + 2 valid batches per epoch
  ASSERT_EQ(r.history.size(), 6u);
  EXPECT_LT(r.history.back().metrics.at("train_loss"), r.history.front().metrics.at("train_loss"));
  EXPECT_GE(r.history.back().metrics.at("valid_accuracy"), 0.9);
  const auto m = learner.evaluate(va);
  EXPECT_EQ(m.at("loss"), r.history.back().metrics.at("valid_loss"));
  // A loader of another batch type is refused, naming the cause.
  data::DataLoader<> examples(blobs(6, 1), batches(2));
  expect_error([&] { learner.fit(examples, nullptr, 7); },
               {"[Learner::fit] the loader's batch type is not the one of the Learner's step"});
}

// The StepFn form of a one-input model is the (UnaryModule, LossFn) constructor, bit for bit.
TEST(LearnerApiTest, StepFunctionEqualsTheSimpleConstructor) {
  auto train_with = [](bool step_form) {
    manual_seed(Device::cpu(), 4);
    auto model = std::make_shared<Lin>(4, 3);
    auto opt =
        std::make_shared<optim::SGD>(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
    data::DataLoader<> loader(blobs(30, 5), batches(8, true));
    std::unique_ptr<train::Learner> l;
    if (step_form)
      l = std::make_unique<train::Learner>(
          model, opt, train::StepFn<data::Example>([model](const data::Example& b) {
            Tensor out = model->forward(b.data);
            return train::StepOutput{nn::functional::cross_entropy(out, b.target), out, b.target};
          }),
          quiet());
    else
      l = std::make_unique<train::Learner>(model, opt, train::cross_entropy_loss(), quiet());
    const train::FitResult r = l->fit(loader, nullptr, 3);
    return std::make_pair(model, r);
  };
  const auto [a, ra] = train_with(false);
  const auto [b, rb] = train_with(true);
  EXPECT_TRUE(bit_equal(a->w, b->w));
  EXPECT_TRUE(bit_equal(a->b, b->b));
  EXPECT_EQ(ra.history.back().metrics.at("train_loss"), rb.history.back().metrics.at("train_loss"));
  EXPECT_EQ(ra.history.back().metrics.at("train_accuracy"),
            rb.history.back().metrics.at("train_accuracy"));
}

// Batches of 2, 2 and 1 samples: the metric is the mean over the 5 samples, not the mean of the
// three batch means; it reaches the history, console, CSV, JSON and report with both prefixes.
TEST(LearnerApiTest, UserMetricsAreSampleWeightedAndLogged) {
  const ember::test::TempDir dir("metric");
  manual_seed(Device::cpu(), 2);
  const Tensor x = randn({5, 3}), y = randn({5, 1});
  auto ds = std::make_shared<data::TensorDataset>(x, y);
  data::DataLoader<> tr(ds, batches(2)), va(ds, batches(2));
  auto model = std::make_shared<Lin>(3, 1);
  // lr 0: the model is the same in every batch, so the exact answer is known.
  auto opt = std::make_shared<optim::SGD>(model->parameters(), optim::SGDOptions(0.0));
  train::LearnerOptions o = quiet(dir);
  std::ostringstream lines;
  o.out = &lines;
  o.progress = train::Progress::lines;
  o.monitor = "valid_mae";
  train::Learner learner(model, opt, train::mse_loss(), o);
  learner.add_metric(train::mean_metric("mae", [](const Tensor& out, const Tensor& t) {
    EXPECT_FALSE(out.requires_grad());  // detached, no graph
    return (out - t).abs().mean().item<double>();
  }));
  learner.add_metric(std::make_shared<SampleCount>());
  const train::FitResult r = learner.fit(tr, &va, 2);

  NoGradGuard no_grad;
  const std::vector<double> err = (model->forward(x) - y).abs().to_vector<double>();
  const double exact = (err[0] + err[1] + err[2] + err[3] + err[4]) / 5;
  const double batch_means = ((err[0] + err[1]) / 2 + (err[2] + err[3]) / 2 + err[4]) / 3;
  ASSERT_GT(std::abs(exact - batch_means), 1e-4);  // the two averages differ on this data
  for (const auto& e : r.history) {
    EXPECT_NEAR(e.metrics.at("train_mae"), exact, 1e-6);
    EXPECT_NEAR(e.metrics.at("valid_mae"), exact, 1e-6);
    EXPECT_EQ(e.metrics.at("train_seen"), 5);  // reset before each epoch and evaluation
    EXPECT_EQ(e.metrics.at("valid_seen"), 5);
  }
  EXPECT_NEAR(r.best_metric, exact, 1e-6);
  EXPECT_EQ(r.best_epoch, 1);  // the same value in epoch 2 is no improvement
  const std::string csv = read_bytes(dir / "metrics.csv");
  EXPECT_NE(csv.find(",train_mae,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",valid_seen,"), std::string::npos) << csv;
  const nlohmann::json js = nlohmann::json::parse(read_bytes(dir / "metrics.json"));
  EXPECT_NEAR(js[1]["metrics"]["valid_mae"].get<double>(), exact, 1e-6);
  EXPECT_EQ(js[1]["epoch"], 2);
  EXPECT_NE(read_bytes(dir / "report.html").find("valid_mae"), std::string::npos);
  EXPECT_NE(lines.str().find("  train_mae "), std::string::npos) << lines.str();
  EXPECT_NE(lines.str().find("(best valid_mae)"), std::string::npos) << lines.str();
}

TEST(LearnerApiTest, AddMetricRefusesBadNames) {
  auto model = std::make_shared<Lin>(3, 1);
  auto opt = std::make_shared<optim::SGD>(model->parameters(), optim::SGDOptions(0.1));
  train::Learner l(model, opt, train::mse_loss(), quiet());
  auto f = [](const Tensor&, const Tensor&) { return 0.0; };
  expect_error([&] { l.add_metric(nullptr); }, {"[Learner::add_metric] metric is null"});
  expect_error([&] { l.add_metric(train::mean_metric("loss", f)); },
               {"[Learner::add_metric] metric name \"loss\" is a built-in metric's"});
  expect_error([&] { l.add_metric(train::mean_metric("a,b", f)); },
               {"metric name \"a,b\" must be letters, digits and '_'"});
  l.add_metric(train::mean_metric("mae", f));
  expect_error([&] { l.add_metric(train::mean_metric("mae", f)); },
               {"a metric named \"mae\" was already added"});
  expect_error([&] { train::mean_metric("x", nullptr); }, {"[MeanMetric]"});
  EXPECT_TRUE(std::isnan(train::MeanMetric("x", f).compute()));  // no batches yet
}

// Epoch numbering from 1 everywhere, and the epoch / fit callbacks.
TEST(LearnerApiTest, CallbacksAndEpochNumbersCountFromOne) {
  manual_seed(Device::cpu(), 4);
  auto model = std::make_shared<Lin>(4, 3);
  auto opt = std::make_shared<optim::SGD>(model->parameters(), optim::SGDOptions(0.0));
  train::LearnerOptions o = quiet();
  o.early_stopping = train::EarlyStopping{"valid_loss", 1, 0.0, train::Mode::min};
  std::vector<int64_t> batch_epochs, epoch_ends;
  int fit_ends = 0;
  train::FitResult seen;
  o.on_batch_end = [&](const train::BatchEvent& e) {
    if (e.batch == 0) batch_epochs.push_back(e.epoch);
  };
  o.on_epoch_end = [&](const train::EpochSummary& s) {
    epoch_ends.push_back(s.epoch);
    EXPECT_EQ(s.metrics.at("epoch"), double(s.epoch));
    EXPECT_TRUE(s.metrics.count("valid_loss"));
  };
  o.on_fit_end = [&](const train::FitResult& r) {
    ++fit_ends;
    seen = r;
  };
  train::Learner l(model, opt, train::cross_entropy_loss(), o);
  data::DataLoader<> tr(blobs(12, 1), batches(4)), va(blobs(6, 2), batches(3));
  // lr 0: valid_loss is best in epoch 1 and never improves: stops after epoch 2 (patience 1).
  const train::FitResult r = l.fit(tr, &va, 5);
  EXPECT_EQ(r.status, train::FitStatus::early_stopped);
  EXPECT_EQ(batch_epochs, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(epoch_ends, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(r.history[0].epoch, 1);
  EXPECT_EQ(r.best_epoch, 1);
  EXPECT_EQ(fit_ends, 1);
  EXPECT_EQ(seen.best_epoch, 1);
  EXPECT_EQ(seen.epochs_completed, 2);
  EXPECT_EQ(seen.status, train::FitStatus::early_stopped);
  // No monitor value seen: best_epoch 0 (none).
  train::LearnerOptions none = quiet();
  none.monitor = "valid_loss";
  train::Learner l2(model, opt, train::cross_entropy_loss(), none);
  const train::FitResult r2 = l2.fit(tr, nullptr, 1);
  EXPECT_EQ(r2.best_epoch, 0);
  EXPECT_TRUE(std::isnan(r2.best_metric));
}

// Checkpoints written before epochs counted from 1 (no learner.epoch_base; history epochs and
// best_epoch from 0, -1 for none) resume into today's numbering and continue identically.
TEST(LearnerApiTest, CheckpointsNumberedFromZeroStillResume) {
  const ember::test::TempDir full_dir("full"), old_dir("old"), next_dir("next");
  auto make = [](const std::string& dir) {
    manual_seed(Device::cpu(), 1);
    auto model = std::make_shared<Lin>(4, 3);
    auto opt = std::make_shared<optim::SGD>(model->parameters(), optim::SGDOptions(0.1));
    train::LearnerOptions o = quiet(dir);
    o.monitor = "train_loss";
    return std::make_pair(
        model, std::make_shared<train::Learner>(model, opt, train::cross_entropy_loss(), o));
  };
  data::DataLoader<> loader(blobs(24, 3), batches(8));
  auto [full_model, full] = make(full_dir);
  const train::FitResult want = full->fit(loader, nullptr, 3);
  auto [part_model, part] = make(old_dir);
  const train::FitResult half = part->fit(loader, nullptr, 2);
  ASSERT_GE(half.best_epoch, 1);

  // Rewrite epoch-0002 as the previous version wrote it.
  const std::string ck = old_dir / "checkpoints/epoch-0002.safetensors";
  record::SafetensorsFile f = record::load_safetensors(ck);
  nlohmann::json j = nlohmann::json::parse(f.metadata.at("learner"));
  ASSERT_EQ(j.at("epoch_base"), 1);
  j.erase("epoch_base");
  for (auto& e : j["history"]) e["epoch"] = e["epoch"].get<int64_t>() - 1;
  f.metadata["learner"] = j.dump();
  f.metadata["best_epoch"] = std::to_string(half.best_epoch - 1);
  record::save_safetensors(ck, f.tensors, f.metadata);

  auto [model, next] = make(next_dir);
  next->resume(ck);
  ASSERT_EQ(next->history().size(), 2u);
  EXPECT_EQ(next->history()[0].epoch, 1);
  EXPECT_EQ(next->history()[1].epoch, 2);
  const train::FitResult got = next->fit(loader, nullptr, 3);
  EXPECT_EQ(got.best_epoch, want.best_epoch);
  EXPECT_EQ(got.best_metric, want.best_metric);
  ASSERT_EQ(got.history.size(), 3u);
  EXPECT_EQ(got.history[2].epoch, 3);
  EXPECT_TRUE(bit_equal(model->w, full_model->w));
  // Its own checkpoint is written in today's numbering.
  const record::CheckpointFile mine =
      record::read_checkpoint(next_dir / "checkpoints/epoch-0003.safetensors");
  EXPECT_EQ(mine.state.best_epoch, want.best_epoch);
  // An old file's best_epoch must lie in [-1, epochs - 1].
  f.metadata["best_epoch"] = "2";
  record::save_safetensors(ck, f.tensors, f.metadata);
  auto [m3, l3] = make("");
  expect_error([&] { l3->resume(ck); },
               {"field 'best_epoch' = 2 is not in [-1, 1] (2 epochs completed, numbered from 0)"});
}

// ---- DataLoader: batches on a device (item 11) ----

namespace {
void expect_examples_on(data::DataLoader<>& loader, const Device& d, int64_t want_batches) {
  int64_t n = 0;
  for (auto& b : loader) {
    EXPECT_EQ(b.data.device(), d);
    EXPECT_EQ(b.target.device(), d);
    ++n;
  }
  EXPECT_EQ(n, want_batches);
}
}  // namespace

TEST(DataLoaderDeviceTest, ExampleBatchesComeOutOnTheDevice) {
  auto ds = blobs(10, 1);  // on cpu
  for (int64_t workers : {0, 2}) {
    data::DataLoaderOptions o = batches(4, true);
    o.num_workers = workers;
    o.device = Device::ref();
    data::DataLoader<> loader(ds, o);
    expect_examples_on(loader, Device::ref(), 3);
    // The same values as without a device.
    data::DataLoaderOptions plain = batches(4, true);
    data::DataLoader<> ref_loader(ds, plain);
    ref_loader.set_epoch(1);
    loader.set_epoch(1);
    const data::Example a = *loader.next(), b = *ref_loader.next();
    EXPECT_EQ(b.data.device(), Device::cpu());
    EXPECT_EQ(a.data.to_vector<float>(), b.data.to_vector<float>());
    EXPECT_EQ(a.target.to_vector<int64_t>(), b.target.to_vector<int64_t>());
    loader.set_device(Device::cpu());
    expect_examples_on(loader, Device::cpu(), 3);
  }
}

TEST(DataLoaderDeviceTest, VulkanBatchesFeedTheLearner) {
  EMBER_VULKAN_OR_SKIP(vk);
  auto ds = blobs(12, 1);
  data::DataLoaderOptions o = batches(4);
  o.device = vk;
  data::DataLoader<> loader(ds, o);
  expect_examples_on(loader, vk, 3);
  manual_seed(Device::cpu(), 4);
  auto model = std::make_shared<Lin>(4, 3);
  auto opt = std::make_shared<optim::SGD>(model->parameters(), optim::SGDOptions(0.1));
  train::LearnerOptions lo = quiet();
  lo.device = vk;
  train::Learner l(model, opt, train::cross_entropy_loss(), lo);
  const train::FitResult r = l.fit(loader, nullptr, 2);
  EXPECT_EQ(r.epochs_completed, 2);
  EXPECT_TRUE(std::isfinite(r.history.back().metrics.at("train_loss")));
  EXPECT_EQ(model->w.device(), vk);
}

TEST(DataLoaderDeviceTest, OpenCLBatchesFeedTheLearner) {
  EMBER_OPENCL_OR_SKIP(dev);
  auto ds = blobs(12, 1);
  data::DataLoaderOptions o = batches(4);
  o.device = dev;
  data::DataLoader<> loader(ds, o);
  expect_examples_on(loader, dev, 3);
  manual_seed(Device::cpu(), 4);
  auto model = std::make_shared<Lin>(4, 3);
  auto opt = std::make_shared<optim::SGD>(model->parameters(), optim::SGDOptions(0.1));
  train::LearnerOptions lo = quiet();
  lo.device = dev;
  train::Learner l(model, opt, train::cross_entropy_loss(), lo);
  const train::FitResult r = l.fit(loader, nullptr, 2);
  EXPECT_EQ(r.epochs_completed, 2);
  EXPECT_TRUE(std::isfinite(r.history.back().metrics.at("train_loss")));
  EXPECT_EQ(model->w.device(), dev);
}

TEST(DataLoaderDeviceTest, CustomAndStandardBatchTypesMove) {
  const Device d = Device::ref();
  const Tensor t = ones({2}), u;  // u undefined: stays undefined
  const auto v = data::batch_to_device(std::vector<Tensor>{t, t}, d);
  EXPECT_EQ(v[1].device(), d);
  const auto tup = data::batch_to_device(std::make_tuple(t, std::make_pair(t, u)), d);
  EXPECT_EQ(std::get<0>(tup).device(), d);
  EXPECT_EQ(std::get<1>(tup).first.device(), d);
  EXPECT_FALSE(std::get<1>(tup).second.defined());
  const auto m = data::batch_to_device(std::map<std::string, Tensor>{{"x", t}}, d);
  EXPECT_EQ(m.at("x").device(), d);
  const Pair p = data::batch_to_device(Pair{t, t, t}, d);  // the member to() hook
  EXPECT_EQ(p.label.device(), d);
  static_assert(!data::batch_movable_v<PairItem>);

  data::DataLoaderOptions o = batches(5);
  o.device = d;
  data::DataLoader<PairItem, Pair> loader(std::make_shared<PairDataset>(10, 1), o,
                                          std::make_shared<PairBatcher>());
  int64_t n = 0;
  for (auto& b : loader) {
    EXPECT_EQ(b.a.device(), d);
    EXPECT_EQ(b.label.device(), d);
    ++n;
  }
  EXPECT_EQ(n, 2);

  // A batch type without a hook cannot be given a device: an error, not a mismatch later.
  class Items : public data::Batcher<PairItem, std::vector<PairItem>> {
   public:
    std::vector<PairItem> batch(std::vector<PairItem> items) const override { return items; }
  };
  expect_error(
      [&] {
        data::DataLoader<PairItem, std::vector<PairItem>> bad(std::make_shared<PairDataset>(4, 1),
                                                              o, std::make_shared<Items>());
      },
      {"[DataLoader] cannot place batches on ref: the batch type has no "
       "ember::data::BatchToDevice"});
}
