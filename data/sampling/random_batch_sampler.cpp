#include "data/sampling/random_batch_sampler.h"

#include <numeric>

#include "data/sampling/counter_rng.h"

namespace sonata {

RandomBatchSampler::RandomBatchSampler(int64_t dataset_size, const SamplerOptions& options)
    : BatchSampler("RandomBatchSampler", options, dataset_size), dataset_size_(dataset_size) {
  set_batches_per_epoch(
      sampling::batch_count(sampling::rank_share_size(dataset_size, options_), options_),
      dataset_size);
}

std::vector<std::vector<int64_t>> RandomBatchSampler::epoch_batches(int64_t epoch) const {
  const uint64_t stream = sampling::stream(epoch, sampling::Purpose::item_order);
  std::vector<int64_t> order;
  if (options_.shuffle) {
    order = permutation(dataset_size_, options_.seed, stream);
  } else {
    order.resize(size_t(dataset_size_));
    std::iota(order.begin(), order.end(), int64_t(0));
  }
  return sampling::cut_batches(sampling::rank_share(order, options_), options_);
}

}  // namespace sonata
