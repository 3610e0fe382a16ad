// A batch size larger than the dataset: no sampler repeats an item within a batch (a batch of
// 100000 on 15 clips once filled memory with copies of them); the batch size is clamped so
// that a global batch holds at most the dataset, and the requested size stays readable.
#include <catch2/catch.hpp>

#include <set>
#include <vector>

#include "data/sampling/class_balanced_sampler.h"
#include "data/sampling/length_bucket_sampler.h"
#include "data/sampling/random_batch_sampler.h"

using namespace sonata;

namespace {

SamplerOptions huge_batch(int64_t rank, int64_t world_size) {
  SamplerOptions options;
  options.batch_size = 100000;
  options.rank = rank;
  options.world_size = world_size;
  options.seed = 7;
  return options;
}

// Every batch of every epoch checked: its items are distinct, and all of them fit the dataset.
void check_no_repeats(const BatchSampler& sampler, int64_t dataset_size) {
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    for (const std::vector<int64_t>& batch : sampler.epoch_batches(epoch)) {
      INFO("epoch " << epoch << ", a batch of " << batch.size());
      CHECK(std::set<int64_t>(batch.begin(), batch.end()).size() == batch.size());
      CHECK(int64_t(batch.size()) <= dataset_size);
    }
  }
}

}  // namespace

TEST_CASE("samplers: a batch larger than the dataset never repeats an item", "[sampler]") {
  std::vector<int64_t> lengths;
  for (int64_t i = 0; i < 15; ++i) lengths.push_back(100 + 7 * i);
  for (const int64_t world : {int64_t(1), int64_t(2)}) {
    for (int64_t rank = 0; rank < world; ++rank) {
      INFO("rank " << rank << " of " << world);
      const LengthBucketSampler bucketed(lengths, huge_batch(rank, world));
      check_no_repeats(bucketed, 15);
      // 15 items over `world` ranks: 15 / world each, at most.
      CHECK(bucketed.options().batch_size == 15 / world);
      CHECK(bucketed.requested_batch_size() == 100000);
      // Every item is still trained on each epoch.
      std::set<int64_t> seen;
      for (const auto& batch : bucketed.epoch_batches(1)) seen.insert(batch.begin(), batch.end());
      if (world == 1) CHECK(seen.size() == 15);

      const RandomBatchSampler random(15, huge_batch(rank, world));
      check_no_repeats(random, 15);
      CHECK(random.options().batch_size == 15 / world);
    }
  }
  // A dataset smaller than the world: one item per rank.
  const LengthBucketSampler tiny(std::vector<int64_t>{5}, huge_batch(1, 2));
  CHECK(tiny.options().batch_size == 1);
  check_no_repeats(tiny, 1);
}
