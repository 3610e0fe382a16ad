#pragma once
// Class-balanced sampling for skewed classification sets: torch's WeightedRandomSampler with
// weight 1 / count(label) per item and replacement, so every class is drawn equally often
// in expectation. As each class's weights sum to 1, a draw is exactly "a class uniformly
// among the present ones, then one of its items uniformly"; it is done that way, in
// integers, so the draws are the same on every platform. Each epoch's num_samples_per_epoch
// draws come from (seed, epoch), the same on every rank, and are split across ranks and
// batched as RandomBatchSampler splits its permutation. options.shuffle is not used: the
// draws are random by definition.
#include <cstdint>
#include <vector>

#include "data/sampling/batch_sampler.h"

namespace sonata {

class ClassBalancedSampler : public BatchSampler {
 public:
  // labels: the class index of each item, non-negative; num_samples_per_epoch 0 = the
  // number of items.
  ClassBalancedSampler(const std::vector<int64_t>& labels, const SamplerOptions& options,
                       int64_t num_samples_per_epoch = 0);

  std::vector<std::vector<int64_t>> epoch_batches(int64_t epoch) const override;
  int64_t num_samples_per_epoch() const { return num_samples_; }

 private:
  std::vector<std::vector<int64_t>> members_;  // the items of each present class, ascending
  int64_t num_samples_;
};

}  // namespace sonata
