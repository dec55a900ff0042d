// Samplers: which dataset indices a DataLoader reads in an epoch, and in what order (as
// torch.utils.data.Sampler). DataLoaderOptions::sampler takes one.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

namespace ember::data {

class Sampler {
 public:
  virtual ~Sampler() = default;
  /// The indices (each in [0, dataset_size)) epoch `epoch` reads, in order. Deterministic: the
  /// same arguments give the same indices.
  virtual std::vector<int64_t> indices(int64_t dataset_size, int64_t epoch) const = 0;
  /// indices(dataset_size, e).size() for every epoch e.
  virtual int64_t num_samples(int64_t dataset_size) const = 0;
};

/// Each of `num_replicas` ranks reads its own shard of the dataset (as
/// torch.utils.data.DistributedSampler): the epoch's order (permutation(n, seed, epoch) with
/// shuffle, else 0..n-1; every rank computes the same one from the same seed) is padded by
/// repeating its head to a multiple of num_replicas (or, with drop_last, cut to one), and rank r
/// takes positions r, r + num_replicas, ... So every rank gets ceil(n / num_replicas) indices
/// (floor with drop_last), the shards are disjoint except for the padding, and a new epoch
/// reshuffles them all alike. With pad = false (for evaluation) nothing is repeated or dropped:
/// the shards are exactly disjoint and their sizes differ by at most one.
struct DistributedSamplerOptions {
  /// -1: the default process group's world size / rank (dist::world_size(), dist::rank()).
  int64_t num_replicas = -1;
  int64_t rank = -1;
  bool shuffle = true;
  uint64_t seed = 0;
  bool drop_last = false;
  bool pad = true;
};

class DistributedSampler final : public Sampler {
 public:
  /// Throws ember::Error("[DistributedSampler] ...") for num_replicas < 1, rank outside
  /// [0, num_replicas), or drop_last together with pad = false.
  explicit DistributedSampler(DistributedSamplerOptions options = {});
  std::vector<int64_t> indices(int64_t dataset_size, int64_t epoch) const override;
  int64_t num_samples(int64_t dataset_size) const override;
  const DistributedSamplerOptions& options() const { return o_; }

 private:
  DistributedSamplerOptions o_;
};

}  // namespace ember::data
