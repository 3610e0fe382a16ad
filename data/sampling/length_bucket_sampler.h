#pragma once
// Batches of similar-length items, so that little of each padded batch is padding (the
// bucketing of ESPnet, NeMo and DeepSpeech2 recipes). Each epoch:
//   1. the items in a permutation from (seed, epoch) (0 .. size - 1 without shuffle);
//   2. cut into chunks of batch_size * world_size * bucket_size_multiplier items, each chunk
//      sorted by length (ties by item index);
//   3. cut into global batches of batch_size * world_size items; the last incomplete one is
//      dropped with drop_last, else filled by repeating the epoch's order from its start;
//   4. the global batches in an order shuffled from (seed, epoch) (kept without shuffle);
//   5. rank r takes items r * batch_size .. (r + 1) * batch_size of every global batch.
// Every rank thus meets batches of the same lengths at the same step. With sortagrad
// (DeepSpeech2), epoch 0 is every item in ascending length order (ties by index), unshuffled.
//
// max_frames_per_batch (0 = off) caps batch_size * (longest length in the batch) for dynamic
// batching: the epoch is then one bucket (step 2 sorts all items, ties in their shuffled
// order, as fairseq's batch_by_size), and each global batch takes the most items per rank,
// up to batch_size, whose count times the batch's longest length stays within the cap; an
// item longer than the cap gets a batch of its own. As the sorted lengths are the same every
// epoch, so are the batch sizes and their number. The last global batch is then incomplete
// only when fewer items than world_size remain: dropped with drop_last, else filled to one
// item per rank.
#include <cstdint>
#include <vector>

#include "data/sampling/batch_sampler.h"

namespace sonata {

class LengthBucketSampler : public BatchSampler {
 public:
  // lengths: frames (or samples) per item, non-negative.
  LengthBucketSampler(std::vector<int64_t> lengths, const SamplerOptions& options,
                      int64_t bucket_size_multiplier = 100, bool sortagrad = false,
                      int64_t max_frames_per_batch = 0);

  std::vector<std::vector<int64_t>> epoch_batches(int64_t epoch) const override;

 private:
  // The epoch's item order after steps 1-2, which step 3 cuts.
  std::vector<int64_t> epoch_order(int64_t epoch) const;

  std::vector<int64_t> lengths_;
  int64_t bucket_size_multiplier_;
  bool sortagrad_;
  int64_t max_frames_per_batch_;
  // Items per rank in each global batch, in cutting order (all batch_size without the cap).
  std::vector<int64_t> per_rank_sizes_;
};

}  // namespace sonata
