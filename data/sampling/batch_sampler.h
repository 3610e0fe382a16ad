#pragma once
// Batch samplers: which dataset items each process (rank) reads in each epoch. Every sampler
// is a pure function of its options and the epoch, with no hidden state, so a resumed run
// needs only (epoch, batch index within the epoch), and all ranks compute the same global
// order without talking to each other. Every rank gets the same number of batches, as data
// parallel training needs (a rank that runs out first would hang its peers' all-reduce).
//
// No batch holds an item twice: without drop_last, a batch_size whose global batch
// (batch_size * world_size) would exceed the dataset is clamped to dataset_size / world_size
// (at least 1), since filling such a batch repeats items (a batch of 100000 on 15 clips grew
// past 11 GB of copies); options() holds the clamped size, requested_batch_size() the asked
// one. With drop_last such a batch size gives no batch and is refused.
//
// Randomness comes from CounterRng (counter_rng.h: Philox4x32-10 keyed by the seed) on a
// stream made of the epoch and a purpose, so the results are identical on every platform.
#include <cstdint>
#include <vector>

namespace sonata {

struct SamplerOptions {
  int64_t batch_size = 32;  // per process (rank)
  bool shuffle = true;
  uint64_t seed = 0;
  int64_t rank = 0, world_size = 1;
  // torch DistributedSampler / DataLoader semantics: cut the tail that does not fill the
  // world or a batch instead of padding it with repeated items.
  bool drop_last = false;
};

class BatchSampler {
 public:
  virtual ~BatchSampler();

  // The batches of dataset indices for options().rank in `epoch` (>= 0).
  virtual std::vector<std::vector<int64_t>> epoch_batches(int64_t epoch) const = 0;
  // The number of batches epoch_batches returns, the same in every epoch and on every rank.
  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  const SamplerOptions& options() const { return options_; }
  // options.batch_size as given, before the clamp above.
  int64_t requested_batch_size() const { return requested_batch_size_; }

 protected:
  // Checks the options (errors name the option and `sampler`) and the dataset's size.
  BatchSampler(const char* sampler, const SamplerOptions& options, int64_t dataset_size);
  // Throws naming the options when an epoch would hold no batch at all.
  void set_batches_per_epoch(int64_t count, int64_t dataset_size);

  const char* sampler_;
  SamplerOptions options_;

 private:
  int64_t requested_batch_size_ = 0;
  int64_t batches_per_epoch_ = 0;
};

namespace sampling {

// What a sampler draws with in one epoch; part of the CounterRng stream, so that the
// draws for one purpose never reuse another's. Epochs must be below 2^56.
enum class Purpose : uint64_t { item_order = 0, batch_order = 1, class_draws = 2 };
uint64_t stream(int64_t epoch, Purpose purpose);

// torch DistributedSampler's split of one global order (the same on every rank): without
// drop_last pad to a multiple of world_size by repeating from the start (cyclically when
// the padding is longer than the order), with drop_last cut the tail; then `rank` takes
// positions rank, rank + world_size, ...
std::vector<int64_t> rank_share(const std::vector<int64_t>& order, const SamplerOptions& options);
// The items of rank_share for an order of `size` items.
int64_t rank_share_size(int64_t size, const SamplerOptions& options);

// Consecutive batches of batch_size; the last partial one kept unless drop_last.
std::vector<std::vector<int64_t>> cut_batches(const std::vector<int64_t>& items,
                                              const SamplerOptions& options);
int64_t batch_count(int64_t items, const SamplerOptions& options);

}  // namespace sampling
}  // namespace sonata
