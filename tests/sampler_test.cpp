// ember::data::DistributedSampler in one process (every rank's shard computed here) against
// torch 1.13's index lists (tests/golden/make_sampler_golden.py), and DataLoaderOptions::sampler.
// tests/dist/ runs the sampler under mpirun.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <vector>

#include "ember/data/data.h"
#include "ember/dist/dist.h"
#include "ember/ember.h"
#include "golden_json.h"
#include "test_util.h"

using namespace ember;
using namespace ember::data;
using ember::test::expect_error;

namespace {

std::vector<std::vector<int64_t>> shards(int64_t n, int64_t replicas, DistributedSamplerOptions o,
                                         int64_t epoch) {
  std::vector<std::vector<int64_t>> out;
  o.num_replicas = replicas;
  for (int64_t r = 0; r < replicas; ++r) {
    o.rank = r;
    DistributedSampler s(o);
    out.push_back(s.indices(n, epoch));
    EXPECT_EQ(int64_t(out.back().size()), s.num_samples(n)) << "n " << n << " rank " << r;
  }
  return out;
}

std::shared_ptr<TensorDataset> counting_dataset(int64_t n) {
  std::vector<int64_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), int64_t(0));
  return std::make_shared<TensorDataset>(from_vector<int64_t>(t, {n}, Device::cpu()),
                                         from_vector<int64_t>(t, {n}, Device::cpu()));
}

std::vector<int64_t> read_epoch(DataLoader<>& loader) {
  std::vector<int64_t> out;
  for (Example& b : loader)
    for (int64_t t : b.target.to_vector<int64_t>()) out.push_back(t);
  return out;
}

}  // namespace

TEST(DistributedSamplerTest, UnshuffledMatchesTorch) {
  const auto& cases =
      ember::test::golden_json("sampler.json", "tests/golden/make_sampler_golden.py")["cases"];
  ASSERT_GE(cases.size(), 40u);
  for (const auto& c : cases) {
    const int64_t n = c["n"], replicas = c["num_replicas"];
    const bool drop_last = c["drop_last"];
    const auto got = shards(n, replicas, {.shuffle = false, .drop_last = drop_last}, 0);
    for (int64_t r = 0; r < replicas; ++r)
      EXPECT_EQ(got[size_t(r)], c["indices"][size_t(r)].get<std::vector<int64_t>>())
          << "n " << n << " num_replicas " << replicas << " drop_last " << drop_last << " rank "
          << r;
  }
}

TEST(DistributedSamplerTest, ShuffledShardsPartitionTheEpoch) {
  for (int64_t n : {1, 7, 12, 101})
    for (int64_t replicas : {1, 2, 3, 5}) {
      const auto e0 = shards(n, replicas, {.seed = 9}, 0);
      const auto e1 = shards(n, replicas, {.seed = 9}, 1);
      // Rank r reads positions r, r + replicas, ... of the epoch's permutation (padded).
      const std::vector<int64_t> perm = permutation(n, 9, 0);
      const int64_t per_rank = (n + replicas - 1) / replicas;
      std::vector<int64_t> joined, covered;
      for (int64_t i = 0; i < per_rank; ++i)
        for (int64_t r = 0; r < replicas; ++r) joined.push_back(e0[size_t(r)][size_t(i)]);
      for (int64_t p = 0; p < per_rank * replicas; ++p)
        EXPECT_EQ(joined[size_t(p)], perm[size_t(p % n)]) << "n " << n << " position " << p;
      // The union covers the dataset; only the padding (total - n indices) repeats.
      covered = joined;
      std::sort(covered.begin(), covered.end());
      EXPECT_EQ(int64_t(std::unique(covered.begin(), covered.end()) - covered.begin()), n);
      if (n >= 7 && replicas > 1) EXPECT_NE(e0, e1) << "a new epoch reshuffles";
      EXPECT_EQ(shards(n, replicas, {.seed = 9}, 1), e1) << "deterministic";
    }
  // Another seed gives another order.
  EXPECT_NE(shards(50, 2, {.seed = 1}, 0), shards(50, 2, {.seed = 2}, 0));
}

TEST(DistributedSamplerTest, NoPaddingAndDropLast) {
  // pad = false: every index exactly once, shard sizes differ by at most one.
  for (int64_t n : {0, 1, 2, 10, 11})
    for (int64_t replicas : {1, 3, 4}) {
      const auto s = shards(n, replicas, {.seed = 4, .pad = false}, 2);
      std::vector<int64_t> all;
      size_t lo = SIZE_MAX, hi = 0;
      for (const auto& v : s) {
        all.insert(all.end(), v.begin(), v.end());
        lo = std::min(lo, v.size());
        hi = std::max(hi, v.size());
      }
      std::sort(all.begin(), all.end());
      std::vector<int64_t> want(static_cast<size_t>(n));
      std::iota(want.begin(), want.end(), int64_t(0));
      EXPECT_EQ(all, want) << "n " << n << " replicas " << replicas;
      EXPECT_LE(hi - lo, 1u);
    }
  // drop_last: floor(n / replicas) each, disjoint.
  const auto s = shards(11, 3, {.drop_last = true}, 0);
  std::set<int64_t> seen;
  for (const auto& v : s) {
    EXPECT_EQ(v.size(), 3u);
    seen.insert(v.begin(), v.end());
  }
  EXPECT_EQ(seen.size(), 9u);
}

TEST(DistributedSamplerTest, DefaultsAndErrors) {
  // Without a process group: world size 1, rank 0, so the shard is the whole epoch.
  if (!dist::is_initialized()) {
    DistributedSampler s;
    EXPECT_EQ(s.options().num_replicas, 1);
    EXPECT_EQ(s.options().rank, 0);
    EXPECT_EQ(s.indices(10, 3), permutation(10, 0, 3));
  }
  expect_error([] { DistributedSampler({.num_replicas = 0, .rank = 0}); },
               {"[DistributedSampler]", "num_replicas", "0"});
  expect_error([] { DistributedSampler({.num_replicas = 2, .rank = 2}); },
               {"[DistributedSampler]", "rank 2", "[0, 2)"});
  expect_error(
      [] { DistributedSampler({.num_replicas = 2, .rank = 0, .drop_last = true, .pad = false}); },
      {"[DistributedSampler]", "drop_last", "pad"});
  DistributedSampler s({.num_replicas = 2, .rank = 0});
  expect_error([&] { s.indices(-1, 0); }, {"[DistributedSampler]", "-1"});
}

TEST(DataLoaderSamplerTest, ReadsTheSamplersIndices) {
  auto sampler = std::make_shared<DistributedSampler>(
      DistributedSamplerOptions{.num_replicas = 3, .rank = 1, .seed = 5});
  DataLoader<> loader(counting_dataset(10), {.batch_size = 3, .sampler = sampler});
  EXPECT_EQ(loader.size(), 2);  // ceil(10 / 3) = 4 indices
  for (int64_t e = 0; e < 3; ++e) {
    EXPECT_EQ(loader.epoch_order(e), sampler->indices(10, e));
    EXPECT_EQ(read_epoch(loader), sampler->indices(10, e)) << "epoch " << e;
  }
  // With workers and drop_last, and resumed at an epoch.
  DataLoader<> workers(counting_dataset(10),
                       {.batch_size = 3, .drop_last = true, .num_workers = 2, .sampler = sampler});
  EXPECT_EQ(workers.size(), 1);
  workers.set_epoch(2);
  const auto want = sampler->indices(10, 2);
  EXPECT_EQ(read_epoch(workers), std::vector<int64_t>(want.begin(), want.begin() + 3));
}

TEST(DataLoaderSamplerTest, Errors) {
  auto sampler =
      std::make_shared<DistributedSampler>(DistributedSamplerOptions{.num_replicas = 2, .rank = 0});
  expect_error([&] { DataLoader<>(counting_dataset(4), {.shuffle = true, .sampler = sampler}); },
               {"[DataLoader]", "sampler option is mutually exclusive with shuffle"});
  // A custom sampler that breaks its contract is named at the epoch's start.
  struct OutOfRange : Sampler {
    std::vector<int64_t> indices(int64_t n, int64_t) const override { return {0, n}; }
    int64_t num_samples(int64_t) const override { return 2; }
  };
  struct WrongCount : Sampler {
    std::vector<int64_t> indices(int64_t, int64_t) const override { return {0}; }
    int64_t num_samples(int64_t) const override { return 2; }
  };
  DataLoader<> bad(counting_dataset(4), {.sampler = std::make_shared<OutOfRange>()});
  expect_error([&] { bad.next(); }, {"[DataLoader]", "index 4", "[0, 4)"});
  DataLoader<> wrong(counting_dataset(4), {.sampler = std::make_shared<WrongCount>()});
  expect_error([&] { wrong.next(); }, {"[DataLoader]", "1 indices", "num_samples(4) is 2"});
}
