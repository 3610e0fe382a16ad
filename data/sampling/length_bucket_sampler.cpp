#include "data/sampling/length_bucket_sampler.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "base/error.h"
#include "data/sampling/counter_rng.h"

namespace sonata {
namespace {

// Greedy packing of the ascending lengths into global batches under the frame cap (see the
// header); returns the items per rank of each.
std::vector<int64_t> pack_under_cap(std::vector<int64_t> sorted, const SamplerOptions& options,
                                    int64_t max_frames) {
  std::sort(sorted.begin(), sorted.end());
  const int64_t size = int64_t(sorted.size()), world = options.world_size;
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < size;) {
    const int64_t left = size - start;
    if (left < world) {
      if (!options.drop_last) sizes.push_back(1);
      break;
    }
    // The lengths ascend, so the batch's longest item is its last and the padded size
    // k * longest only grows with k: the first k that breaks the cap ends the search.
    int64_t k = 1;
    while (k < options.batch_size && world * (k + 1) <= left &&
           (k + 1) * sorted[size_t(start + world * (k + 1) - 1)] <= max_frames)
      ++k;
    sizes.push_back(k);
    start += world * k;
  }
  return sizes;
}

}  // namespace

LengthBucketSampler::LengthBucketSampler(std::vector<int64_t> lengths,
                                         const SamplerOptions& options,
                                         int64_t bucket_size_multiplier, bool sortagrad,
                                         int64_t max_frames_per_batch)
    : BatchSampler("LengthBucketSampler", options, int64_t(lengths.size())),
      lengths_(std::move(lengths)),
      bucket_size_multiplier_(bucket_size_multiplier),
      sortagrad_(sortagrad),
      max_frames_per_batch_(max_frames_per_batch) {
  SONATA_CHECK(bucket_size_multiplier > 0,
               "LengthBucketSampler: bucket_size_multiplier must be positive, got ",
               bucket_size_multiplier);
  SONATA_CHECK(max_frames_per_batch >= 0,
               "LengthBucketSampler: max_frames_per_batch must be 0 (off) or positive, got ",
               max_frames_per_batch);
  for (size_t i = 0; i < lengths_.size(); ++i)
    SONATA_CHECK(lengths_[i] >= 0, "LengthBucketSampler: lengths[", i, "] is ", lengths_[i],
                 "; lengths must not be negative");
  const int64_t size = int64_t(lengths_.size());
  if (max_frames_per_batch_ > 0) {
    per_rank_sizes_ = pack_under_cap(lengths_, options_, max_frames_per_batch_);
  } else {
    const int64_t global = options_.batch_size * options_.world_size;
    const int64_t count = options_.drop_last ? size / global : (size + global - 1) / global;
    per_rank_sizes_.assign(size_t(count), options_.batch_size);
  }
  set_batches_per_epoch(int64_t(per_rank_sizes_.size()), size);
}

std::vector<int64_t> LengthBucketSampler::epoch_order(int64_t epoch) const {
  const int64_t size = int64_t(lengths_.size());
  auto shorter = [&](int64_t a, int64_t b) { return lengths_[size_t(a)] < lengths_[size_t(b)]; };
  std::vector<int64_t> order(static_cast<size_t>(size));
  std::iota(order.begin(), order.end(), int64_t(0));
  if (sortagrad_ && epoch == 0) {
    std::stable_sort(order.begin(), order.end(), shorter);
    return order;
  }
  if (options_.shuffle)
    order =
        permutation(size, options_.seed, sampling::stream(epoch, sampling::Purpose::item_order));
  if (max_frames_per_batch_ > 0) {
    std::stable_sort(order.begin(), order.end(), shorter);
    return order;
  }
  auto shorter_then_first = [&](int64_t a, int64_t b) {
    return std::pair(lengths_[size_t(a)], a) < std::pair(lengths_[size_t(b)], b);
  };
  const int64_t chunk = options_.batch_size * options_.world_size * bucket_size_multiplier_;
  for (int64_t start = 0; start < size; start += chunk)
    std::sort(order.begin() + start, order.begin() + std::min(size, start + chunk),
              shorter_then_first);
  return order;
}

std::vector<std::vector<int64_t>> LengthBucketSampler::epoch_batches(int64_t epoch) const {
  // Also checks the epoch, whatever the options.
  const uint64_t batch_stream = sampling::stream(epoch, sampling::Purpose::batch_order);
  const std::vector<int64_t> order = epoch_order(epoch);
  const int64_t size = int64_t(order.size()), world = options_.world_size;
  const int64_t count = int64_t(per_rank_sizes_.size());
  // Cut the global batches in order; positions past the end repeat the order from its start.
  std::vector<std::vector<int64_t>> mine(static_cast<size_t>(count));
  int64_t start = 0;
  for (int64_t g = 0; g < count; ++g) {
    const int64_t k = per_rank_sizes_[size_t(g)];
    for (int64_t j = options_.rank * k; j < (options_.rank + 1) * k; ++j)
      mine[size_t(g)].push_back(order[size_t((start + j) % size)]);
    start += world * k;
  }
  if (!options_.shuffle || (sortagrad_ && epoch == 0)) return mine;
  std::vector<int64_t> batch_order(static_cast<size_t>(count));
  std::iota(batch_order.begin(), batch_order.end(), int64_t(0));
  CounterRng rng(options_.seed, batch_stream);
  shuffle(batch_order, rng);
  std::vector<std::vector<int64_t>> shuffled;
  shuffled.reserve(size_t(count));
  for (const int64_t g : batch_order) shuffled.push_back(std::move(mine[size_t(g)]));
  return shuffled;
}

}  // namespace sonata
