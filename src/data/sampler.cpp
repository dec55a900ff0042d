// DistributedSampler: torch.utils.data.DistributedSampler's padding and striding over Ember's
// per-epoch permutation.
#include "ember/data/sampler.h"

#include <numeric>

#include "ember/data/dataset.h"
#include "ember/dist/dist.h"
#include "ember/error.h"

namespace ember::data {

DistributedSampler::DistributedSampler(DistributedSamplerOptions options) : o_(options) {
  if (o_.num_replicas == -1) o_.num_replicas = dist::world_size();
  if (o_.rank == -1) o_.rank = dist::rank();
  if (o_.num_replicas < 1)
    EMBER_FAIL("DistributedSampler", "num_replicas must be >= 1 (or -1 for the world size), got ",
               o_.num_replicas);
  if (o_.rank < 0 || o_.rank >= o_.num_replicas)
    EMBER_FAIL("DistributedSampler", "rank ", o_.rank, " is outside [0, ", o_.num_replicas,
               ") (num_replicas ", o_.num_replicas, "; -1 takes dist::rank())");
  if (o_.drop_last && !o_.pad)
    EMBER_FAIL("DistributedSampler",
               "drop_last and pad = false exclude each other: drop_last evens the shards by "
               "dropping the tail, pad = false keeps every index once in uneven shards");
}

int64_t DistributedSampler::num_samples(int64_t dataset_size) const {
  if (dataset_size < 0)
    EMBER_FAIL("DistributedSampler", "dataset size must be >= 0, got ", dataset_size);
  const int64_t r = o_.num_replicas;
  if (o_.drop_last) return dataset_size / r;
  if (o_.pad) return (dataset_size + r - 1) / r;
  // Positions rank, rank + r, ... below dataset_size.
  return o_.rank < dataset_size ? (dataset_size - o_.rank + r - 1) / r : 0;
}

std::vector<int64_t> DistributedSampler::indices(int64_t dataset_size, int64_t epoch) const {
  const int64_t count = num_samples(dataset_size);
  if (epoch < 0) EMBER_FAIL("DistributedSampler", "epoch must be >= 0, got ", epoch);
  std::vector<int64_t> order;
  if (o_.shuffle) {
    order = permutation(dataset_size, o_.seed, uint64_t(epoch));
  } else {
    order.resize(size_t(dataset_size));
    std::iota(order.begin(), order.end(), int64_t(0));
  }
  // Position p of the padded order is order[p % n] (torch repeats the head, as often as needed
  // when n < num_replicas); without padding every position is below n.
  std::vector<int64_t> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const int64_t p = o_.rank + i * o_.num_replicas;
    out[size_t(i)] = order[size_t(p % dataset_size)];
  }
  return out;
}

}  // namespace ember::data
