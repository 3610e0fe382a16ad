#include "data/sampling/batch_sampler.h"

#include <algorithm>

#include "base/error.h"

namespace sonata {

BatchSampler::~BatchSampler() = default;

BatchSampler::BatchSampler(const char* sampler, const SamplerOptions& options, int64_t dataset_size)
    : sampler_(sampler), options_(options), requested_batch_size_(options.batch_size) {
  SONATA_CHECK(options.batch_size > 0, sampler, ": batch_size must be positive, got ",
               options.batch_size);
  SONATA_CHECK(options.world_size > 0, sampler, ": world_size must be positive, got ",
               options.world_size);
  SONATA_CHECK(options.rank >= 0 && options.rank < options.world_size, sampler, ": rank ",
               options.rank, " is outside [0, world_size ", options.world_size, ")");
  SONATA_CHECK(dataset_size > 0, sampler, ": the dataset is empty");
  if (!options.drop_last)
    options_.batch_size =
        std::min(options.batch_size, std::max<int64_t>(1, dataset_size / options.world_size));
}

void BatchSampler::set_batches_per_epoch(int64_t count, int64_t dataset_size) {
  SONATA_CHECK(count > 0, sampler_, ": ", dataset_size, " items give no batch with batch_size ",
               options_.batch_size, ", world_size ", options_.world_size, " and drop_last");
  batches_per_epoch_ = count;
}

namespace sampling {

uint64_t stream(int64_t epoch, Purpose purpose) {
  SONATA_CHECK(epoch >= 0 && epoch < (int64_t(1) << 56), "sampler epoch ", epoch,
               " is outside [0, 2^56)");
  return uint64_t(epoch) | uint64_t(purpose) << 56;
}

int64_t rank_share_size(int64_t size, const SamplerOptions& options) {
  const int64_t world = options.world_size;
  return options.drop_last ? size / world : (size + world - 1) / world;
}

std::vector<int64_t> rank_share(const std::vector<int64_t>& order, const SamplerOptions& options) {
  const int64_t size = int64_t(order.size());
  const int64_t share = rank_share_size(size, options);
  std::vector<int64_t> mine;
  mine.reserve(size_t(share));
  for (int64_t i = 0; i < share; ++i) {
    // Position in the padded (or cut) global order; padding repeats it from the start.
    const int64_t position = options.rank + i * options.world_size;
    mine.push_back(order[size_t(position % size)]);
  }
  return mine;
}

int64_t batch_count(int64_t items, const SamplerOptions& options) {
  const int64_t b = options.batch_size;
  return options.drop_last ? items / b : (items + b - 1) / b;
}

std::vector<std::vector<int64_t>> cut_batches(const std::vector<int64_t>& items,
                                              const SamplerOptions& options) {
  const int64_t count = batch_count(int64_t(items.size()), options);
  std::vector<std::vector<int64_t>> batches;
  batches.reserve(size_t(count));
  for (int64_t b = 0; b < count; ++b) {
    const auto first = items.begin() + b * options.batch_size;
    const auto last = items.begin() + std::min(int64_t(items.size()), (b + 1) * options.batch_size);
    batches.emplace_back(first, last);
  }
  return batches;
}

}  // namespace sampling
}  // namespace sonata
