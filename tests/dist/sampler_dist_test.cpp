// DistributedSampler under the default group: each rank's shard, gathered, partitions the
// epoch's permutation (disjoint but for the padding, covering the dataset), every rank reshuffles
// alike per epoch, and a DataLoader with the sampler reads exactly its rank's shard.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "dist_test_util.h"
#include "ember/data/data.h"

using namespace ember;
using namespace ember::data;

TEST(DistributedSamplerDist, ShardsPartitionEachEpoch) {
  const int world = dist::world_size(), rank = dist::rank();
  for (int64_t n : {1, 10, 11, 23}) {
    std::vector<std::vector<int64_t>> epochs;
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
      DistributedSampler sampler({.seed = 7});  // world size and rank from the group
      EXPECT_EQ(sampler.options().num_replicas, world);
      EXPECT_EQ(sampler.options().rank, rank);
      const std::vector<int64_t> mine = sampler.indices(n, epoch);
      const int64_t per_rank = (n + world - 1) / world;
      EXPECT_EQ(int64_t(mine.size()), per_rank);
      const auto all = test::gather_all(mine);
      // Interleaved, the shards are one permutation (padded by its head): the same on every rank.
      const std::vector<int64_t> perm = permutation(n, 7, uint64_t(epoch));
      std::vector<int64_t> joined;
      for (int64_t i = 0; i < per_rank; ++i)
        for (int r = 0; r < world; ++r) {
          joined.push_back(all[size_t(r)][size_t(i)]);
          EXPECT_EQ(joined.back(), perm[size_t((i * world + r) % n)]) << "n " << n;
        }
      std::vector<int64_t> distinct = joined;
      std::sort(distinct.begin(), distinct.end());
      distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
      std::vector<int64_t> every(static_cast<size_t>(n));
      std::iota(every.begin(), every.end(), int64_t(0));
      EXPECT_EQ(distinct, every) << "the union covers the dataset";
      EXPECT_EQ(int64_t(joined.size()) - n, per_rank * world - n) << "only the padding repeats";
      epochs.push_back(joined);
    }
    if (n >= 10) {
      EXPECT_NE(epochs[0], epochs[1]);
    }
  }
}

TEST(DistributedSamplerDist, LoaderReadsThisRanksShard) {
  const int64_t n = 29;
  std::vector<int64_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), int64_t(0));
  auto ds = std::make_shared<TensorDataset>(from_vector<int64_t>(t, {n}, Device::cpu()),
                                            from_vector<int64_t>(t, {n}, Device::cpu()));
  auto sampler = std::make_shared<DistributedSampler>(DistributedSamplerOptions{.seed = 3});
  DataLoaderOptions o;
  o.batch_size = 4;
  o.num_workers = 1;
  o.sampler = sampler;
  DataLoader<> loader(ds, o);
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    std::vector<int64_t> read;
    for (Example& b : loader)
      for (int64_t v : b.target.to_vector<int64_t>()) read.push_back(v);
    EXPECT_EQ(read, sampler->indices(n, epoch));
    // Across ranks, one epoch reads every sample (the padding repeats a few).
    std::vector<int64_t> all;
    for (const auto& v : test::gather_all(read)) all.insert(all.end(), v.begin(), v.end());
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    EXPECT_EQ(int64_t(all.size()), n);
  }
}
