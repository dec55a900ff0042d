// train::Learner with the ddp strategy across the ranks of the default group (mpirun -np 2, 3):
// it trains as one process on the whole batch would, its metrics are those of every rank's
// samples, only rank 0 writes, Ctrl-C on one rank stops them all after the same step, and every
// rank resumes from rank 0's checkpoints with the results of an uninterrupted run.
#include <gtest/gtest.h>

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "dist_test_util.h"
#include "ember/data/dataloader.h"
#include "ember/dist/dist.h"
#include "ember/ember.h"
#include "ember/train/learner.h"

using namespace ember;
using namespace ember::test;

namespace {

constexpr int64_t kBatch = 4;  // per rank
constexpr int64_t kBatches = 5;

std::shared_ptr<nn::Sequential> mlp() {
  return nn::make_sequential(std::make_shared<nn::Linear>(6, 12), std::make_shared<nn::Tanh>(),
                             std::make_shared<nn::Linear>(12, 3));
}

// The same data on every rank (the Learner shards it): world x kBatch x kBatches samples.
data::DatasetPtr<data::Example> dataset(int64_t n, uint32_t seed) {
  return std::make_shared<data::TensorDataset>(host_randn({n, 6}, seed),
                                               host_labels(n, 3, seed + 1));
}

train::Loader loader(const data::DatasetPtr<data::Example>& ds, int64_t batch, bool shuffle) {
  data::DataLoaderOptions o;
  o.batch_size = batch;
  o.shuffle = shuffle;
  o.seed = 7;
  return train::Loader(ds, o);
}

train::LearnerOptions quiet(train::Strategy s) {
  train::LearnerOptions o;
  o.device = Device::cpu();
  o.strategy = s;
  o.progress = train::Progress::none;
  o.handle_sigint = true;
  return o;
}

// A folder every rank names alike: rank 0 creates it and broadcasts its name.
std::string shared_dir() {
  std::string name(256, '\0');
  if (dist::rank() == 0) {
    char tmpl[] = "/tmp/ember-learner-ddp-XXXXXX";
    EXPECT_NE(::mkdtemp(tmpl), nullptr);
    name.replace(0, std::strlen(tmpl), tmpl);
  }
  const Tensor t =
      from_vector<uint8_t>(std::vector<uint8_t>(name.begin(), name.end()), {256}, Device::cpu());
  dist::broadcast(t, 0);
  const std::vector<uint8_t> v = t.to_vector<uint8_t>();
  return std::string(reinterpret_cast<const char*>(v.data()));
}

std::vector<float> params_of(nn::Module& m) { return values(m.parameters()); }

TEST(LearnerDdpTest, TrainsAsOneProcessOnTheWholeBatch) {
  const int64_t w = dist::world_size();
  const auto ds = dataset(w * kBatch * kBatches, 11);
  const auto valid = dataset(w * 7 + 1, 21);  // shards of unequal sizes
  manual_seed(uint64_t(3 + dist::rank()));    // different initial weights: rank 0's win
  auto model = mlp();
  auto reference = mlp();
  // Rank 0's initial weights, as DistributedDataParallel will copy them.
  for (const Tensor& p : model->parameters()) dist::broadcast(p, 0);
  copy_into(*reference, *model);

  auto opt = std::make_shared<optim::SGD>(model->parameters(), optim::SGDOptions(0.2));
  train::Learner learner(model, opt, train::cross_entropy_loss(),
                         quiet(train::Strategy::automatic));
  ASSERT_EQ(learner.ddp() != nullptr, w > 1);
  auto tl = loader(ds, kBatch, false);
  auto vl = loader(valid, 5, false);
  const train::FitResult r = learner.fit(tl, &vl, 2);

  // One process, batch w x kBatch: rank r's k-th batch holds samples k*w*kBatch + r + j*w.
  auto ropt = std::make_shared<optim::SGD>(reference->parameters(), optim::SGDOptions(0.2));
  train::Learner single(reference, ropt, train::cross_entropy_loss(),
                        quiet(train::Strategy::single));
  auto rtl = loader(ds, w * kBatch, false);
  auto rvl = loader(valid, 5, false);
  const train::FitResult rr = single.fit(rtl, &rvl, 2);

  EXPECT_LE(worst(params_of(*model), params_of(*reference), 1e-5, 1e-4), 1.0);
  ASSERT_EQ(r.history.size(), rr.history.size());
  for (const char* k : {"train_loss", "train_accuracy", "valid_loss", "valid_accuracy", "valid_f1"})
    EXPECT_NEAR(r.history.back().metrics.at(k), rr.history.back().metrics.at(k), 1e-5) << k;
  EXPECT_EQ(r.steps, rr.steps);
  // Every rank holds the same parameters.
  const auto all = gather_all(params_of(*model));
  for (size_t i = 1; i < all.size(); ++i) EXPECT_EQ(all[i], all[0]) << "rank " << i;
}

TEST(LearnerDdpTest, OnlyRankZeroWritesAndEveryRankResumesAsIfUninterrupted) {
  const int64_t w = dist::world_size();
  const auto ds = dataset(w * kBatch * kBatches * 2, 31);
  const std::string dir = shared_dir();
  const auto make = [&](const std::string& out, train::LearnerOptions o) {
    manual_seed(5);
    auto m = mlp();
    auto opt = std::make_shared<optim::Adam>(m->parameters(), optim::AdamOptions(1e-2));
    o.output_dir = out;
    return std::make_pair(
        m, std::make_shared<train::Learner>(m, opt, train::cross_entropy_loss(), std::move(o)));
  };
  // Uninterrupted: 3 epochs.
  auto [m0, l0] = make("", quiet(train::Strategy::ddp));
  auto tl0 = loader(ds, kBatch, true);
  l0->fit(tl0, nullptr, 3);

  // Interrupted by a Ctrl-C on the last rank only, mid-epoch 2: every rank stops after the
  // same step.
  train::LearnerOptions o = quiet(train::Strategy::ddp);
  const int last = dist::world_size() - 1;
  o.on_batch_end = [last](const train::BatchEvent& e) {
    if (e.epoch == 2 && e.batch == 3 && dist::rank() == last) std::raise(SIGINT);
  };
  auto [m1, l1] = make(dir, o);
  auto tl1 = loader(ds, kBatch, true);
  const train::FitResult r1 = l1->fit(tl1, nullptr, 3);
  EXPECT_EQ(r1.status, train::FitStatus::interrupted);
  EXPECT_EQ(r1.steps, kBatches * 2 + 4) << "rank " << dist::rank();
  const bool written = std::filesystem::exists(dir + "/checkpoints/interrupted.safetensors");
  EXPECT_TRUE(written);
  EXPECT_TRUE(std::filesystem::exists(dir + "/metrics.csv"));
  // Resume on every rank from rank 0's folder.
  auto [m2, l2] = make(dir, quiet(train::Strategy::ddp));
  l2->resume(dir);
  auto tl2 = loader(ds, kBatch, true);
  const train::FitResult r2 = l2->fit(tl2, nullptr, 3);
  EXPECT_EQ(r2.status, train::FitStatus::completed);
  EXPECT_EQ(r2.epochs_completed, 3);
  EXPECT_LE(worst(params_of(*m2), params_of(*m0), 1e-6, 1e-5), 1.0);
  dist::barrier();
  if (dist::rank() == 0) std::filesystem::remove_all(dir);
}

TEST(LearnerDdpTest, LoaderWithAnotherSamplerIsRefused) {
  struct Reversed : data::Sampler {
    std::vector<int64_t> indices(int64_t n, int64_t) const override {
      std::vector<int64_t> v;
      for (int64_t i = n - 1; i >= 0; --i) v.push_back(i);
      return v;
    }
    int64_t num_samples(int64_t n) const override { return n; }
  };
  const auto ds = dataset(16, 41);
  data::DataLoaderOptions lo;
  lo.batch_size = 4;
  lo.sampler = std::make_shared<Reversed>();
  train::Loader tl(ds, lo);
  auto m = mlp();
  auto opt = std::make_shared<optim::SGD>(m->parameters(), optim::SGDOptions(0.1));
  train::Learner learner(m, opt, train::cross_entropy_loss(), quiet(train::Strategy::ddp));
  try {
    learner.fit(tl, nullptr, 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("DistributedSampler"), std::string::npos) << e.what();
  }
}

}  // namespace
