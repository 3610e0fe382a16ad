#pragma once
// torch's DistributedSampler followed by a DataLoader's batching: each epoch a permutation of
// all items from (seed, epoch), the same on every rank (or 0 .. size - 1 without shuffle),
// padded to a multiple of world_size by repeating from its start (cut instead with
// drop_last); rank r takes positions r, r + world_size, ... and cuts them into batches,
// keeping the last partial batch unless drop_last.
#include <cstdint>
#include <vector>

#include "data/sampling/batch_sampler.h"

namespace sonata {

class RandomBatchSampler : public BatchSampler {
 public:
  RandomBatchSampler(int64_t dataset_size, const SamplerOptions& options);

  std::vector<std::vector<int64_t>> epoch_batches(int64_t epoch) const override;
  int64_t dataset_size() const { return dataset_size_; }

 private:
  int64_t dataset_size_;
};

}  // namespace sonata
