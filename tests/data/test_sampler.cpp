// Batch samplers: the generator pinned against an independent Philox (tools-free: values from a
// Python transcription of the paper's algorithm), torch DistributedSampler's split written
// out, every item once per epoch, the union over ranks equal to the padded set, determinism
// per (seed, epoch), length bucketing's padding against random batches, sortagrad, the frame
// cap, class balancing, and errors that name the option.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <vector>

#include "base/error.h"
#include "data/sampling/class_balanced_sampler.h"
#include "data/sampling/counter_rng.h"
#include "data/sampling/length_bucket_sampler.h"
#include "data/sampling/random_batch_sampler.h"

using namespace sonata;
using Catch::Contains;

namespace {

using Batches = std::vector<std::vector<int64_t>>;

SamplerOptions make_options(int64_t batch_size, int64_t rank = 0, int64_t world_size = 1,
                            uint64_t seed = 0, bool drop_last = false) {
  SamplerOptions o;
  o.batch_size = batch_size;
  o.rank = rank;
  o.world_size = world_size;
  o.seed = seed;
  o.drop_last = drop_last;
  return o;
}

// How often each item appears in `batches`.
std::map<int64_t, int64_t> counts_of(const Batches& batches) {
  std::map<int64_t, int64_t> counts;
  for (const auto& batch : batches)
    for (const int64_t item : batch) ++counts[item];
  return counts;
}

int64_t items_in(const Batches& batches) {
  int64_t total = 0;
  for (const auto& batch : batches) total += int64_t(batch.size());
  return total;
}

// Frames of padding when each batch is padded to its longest item.
int64_t padded_frames(const Batches& batches, const std::vector<int64_t>& lengths) {
  int64_t padding = 0;
  for (const auto& batch : batches) {
    int64_t longest = 0;
    for (const int64_t item : batch) longest = std::max(longest, lengths[size_t(item)]);
    for (const int64_t item : batch) padding += longest - lengths[size_t(item)];
  }
  return padding;
}

// Lengths 50 .. 1549 from a fixed LCG (Knuth's MMIX constants): the test's own data, not the
// generator under test.
std::vector<int64_t> spread_lengths(int64_t count) {
  std::vector<int64_t> lengths;
  uint64_t state = 12345;
  for (int64_t i = 0; i < count; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    lengths.push_back(50 + int64_t((state >> 33) % 1500));
  }
  return lengths;
}

}  // namespace

TEST_CASE("Sampler generator reproduces independently computed Philox words", "[sampler]") {
  // Expected values from a Python transcription of Philox4x32-10 (Salmon et al. 2011), words
  // as lane0 | lane1 << 32 then lane2 | lane3 << 32, counter (block, stream), key = seed. The
  // first word of (0, 0) is also the Random123 known answer for the zero counter and key.
  CounterRng zero(0, 0);
  CHECK(zero.next_u64() == 0xe169c58d6627e8d5ull);
  CHECK(zero.next_u64() == 0x9b00dbd8bc57ac4cull);
  CHECK(zero.next_u64() == 0x5cb200dbf8e4cca4ull);
  CHECK(zero.next_u64() == 0x097eff67b1a574ebull);
  CounterRng keyed(0x0123456789abcdefull, 5);
  CHECK(keyed.next_u64() == 0x7899c9ccb341ed12ull);
  CHECK(keyed.next_u64() == 0x68eba6fb8d35f144ull);
  CHECK(keyed.next_u64() == 0x520893a9d0460919ull);
  // A fresh stream starting at block 1 begins with the third word of block 0's stream.
  CHECK(CounterRng(0, 0, 1).next_u64() == 0x5cb200dbf8e4cca4ull);
  // uniform() is the top 53 bits of a word, scaled.
  CHECK(CounterRng(0, 0).uniform() == double(0xe169c58d6627e8d5ull >> 11) / 9007199254740992.0);
  // Fisher-Yates from the top with rejection-sampled bounds, in the same Python.
  CHECK(permutation(10, 0, 0) == std::vector<int64_t>{5, 2, 0, 8, 7, 3, 1, 4, 6, 9});
  CHECK(permutation(10, 0, 1) == std::vector<int64_t>{4, 0, 7, 9, 5, 8, 2, 6, 1, 3});
  CHECK(permutation(10, 7, 0) == std::vector<int64_t>{1, 8, 6, 2, 9, 4, 0, 3, 5, 7});
}

TEST_CASE("Sampler bounded draws stay in range and are unbiased", "[sampler]") {
  CounterRng rng(3, 9);
  std::vector<int64_t> counts(6, 0);
  for (int i = 0; i < 60000; ++i) {
    const uint64_t x = rng.below(6);
    REQUIRE(x < 6);
    ++counts[size_t(x)];
  }
  // 10000 expected per face, standard deviation ~91: 5 sigma either way.
  for (const int64_t count : counts) CHECK(std::abs(count - 10000) < 460);
  CHECK(rng.below(1) == 0);
  // A bound just above 2^63 rejects almost half the words; results still stay below it.
  const uint64_t huge = (uint64_t(1) << 63) + 1;
  for (int i = 0; i < 100; ++i) CHECK(rng.below(huge) < huge);
}

TEST_CASE("RandomBatchSampler matches DistributedSampler on a hand-run case", "[sampler]") {
  // 7 items over 2 ranks, batch 2, seed 3, epoch 0. The permutation (from the Python
  // reference) is 5 4 3 6 0 2 1; padded to 8 with its first item, 5; rank 0 takes positions
  // 0 2 4 6, rank 1 positions 1 3 5 7.
  const RandomBatchSampler rank0(7, make_options(2, 0, 2, 3));
  const RandomBatchSampler rank1(7, make_options(2, 1, 2, 3));
  CHECK(rank0.epoch_batches(0) == Batches{{5, 3}, {0, 1}});
  CHECK(rank1.epoch_batches(0) == Batches{{4, 6}, {2, 5}});
  CHECK(rank0.batches_per_epoch() == 2);
  // drop_last cuts the permutation to 6 and the ranks' last partial batches: 3 items each,
  // one full batch.
  const RandomBatchSampler cut0(7, make_options(2, 0, 2, 3, true));
  const RandomBatchSampler cut1(7, make_options(2, 1, 2, 3, true));
  CHECK(cut0.epoch_batches(0) == Batches{{5, 3}});
  CHECK(cut1.epoch_batches(0) == Batches{{4, 6}});
  CHECK(cut0.batches_per_epoch() == 1);
  // Without shuffle the order is 0 .. n - 1 (torch's arange), padded cyclically: 3 items over
  // 5 ranks is 0 1 2 0 1.
  SamplerOptions plain = make_options(1, 4, 5);
  plain.shuffle = false;
  CHECK(RandomBatchSampler(3, plain).epoch_batches(0) == Batches{{1}});
  plain.rank = 2;
  CHECK(RandomBatchSampler(3, plain).epoch_batches(0) == Batches{{2}});
  plain = make_options(4);
  plain.shuffle = false;
  CHECK(RandomBatchSampler(10, plain).epoch_batches(6) ==
        Batches{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}});
}

TEST_CASE("RandomBatchSampler gives every item once per epoch on one rank", "[sampler]") {
  const RandomBatchSampler sampler(103, make_options(8, 0, 1, 11));
  CHECK(sampler.batches_per_epoch() == 13);
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    const Batches batches = sampler.epoch_batches(epoch);
    REQUIRE(int64_t(batches.size()) == 13);
    for (size_t b = 0; b + 1 < batches.size(); ++b) CHECK(batches[b].size() == 8);
    CHECK(batches.back().size() == 7);  // the last partial batch is kept
    const auto counts = counts_of(batches);
    CHECK(counts.size() == 103);
    CHECK(counts.begin()->first == 0);
    CHECK(counts.rbegin()->first == 102);
    for (const auto& [item, count] : counts) CHECK(count == 1);
  }
}

TEST_CASE("RandomBatchSampler ranks share the padded set without overlap", "[sampler]") {
  // 100 items over 3 ranks: 34 each, the first 2 items of the permutation repeated.
  for (const bool drop_last : {false, true}) {
    INFO("drop_last " << drop_last);
    std::map<int64_t, int64_t> counts;
    for (int64_t rank = 0; rank < 3; ++rank) {
      const RandomBatchSampler sampler(100, make_options(5, rank, 3, 1, drop_last));
      const Batches batches = sampler.epoch_batches(2);
      CHECK(int64_t(batches.size()) == sampler.batches_per_epoch());
      CHECK(sampler.batches_per_epoch() == (drop_last ? 6 : 7));  // 34 -> 7 batches, 33 -> 6 full
      CHECK(items_in(batches) == (drop_last ? 30 : 34));
      for (const auto& [item, count] : counts_of(batches)) counts[item] += count;
    }
    const std::vector<int64_t> order = permutation(100, 1, 2);
    if (drop_last) {
      // The first 99 of the permutation went to the ranks; each rank's last 3 items are cut
      // with its partial batch.
      CHECK(counts.size() == 90);
      for (const auto& [item, count] : counts) CHECK(count == 1);
    } else {
      CHECK(counts.size() == 100);
      for (const auto& [item, count] : counts) {
        const bool repeated = item == order[0] || item == order[1];
        CHECK(count == (repeated ? 2 : 1));
      }
    }
  }
}

TEST_CASE("Samplers are pure functions of seed and epoch", "[sampler]") {
  const std::vector<int64_t> lengths = spread_lengths(300);
  std::vector<int64_t> labels(300);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = int64_t(i % 7);
  const RandomBatchSampler random_a(300, make_options(16, 1, 2, 42));
  const RandomBatchSampler random_b(300, make_options(16, 1, 2, 42));
  const RandomBatchSampler random_seed(300, make_options(16, 1, 2, 43));
  const LengthBucketSampler bucket_a(lengths, make_options(16, 1, 2, 42), 2);
  const LengthBucketSampler bucket_b(lengths, make_options(16, 1, 2, 42), 2);
  const LengthBucketSampler bucket_seed(lengths, make_options(16, 1, 2, 43), 2);
  const ClassBalancedSampler balanced_a(labels, make_options(16, 1, 2, 42));
  const ClassBalancedSampler balanced_b(labels, make_options(16, 1, 2, 42));
  const ClassBalancedSampler balanced_seed(labels, make_options(16, 1, 2, 43));
  const BatchSampler* a[] = {&random_a, &bucket_a, &balanced_a};
  const BatchSampler* b[] = {&random_b, &bucket_b, &balanced_b};
  const BatchSampler* other_seed[] = {&random_seed, &bucket_seed, &balanced_seed};
  for (int s = 0; s < 3; ++s) {
    INFO("sampler " << s);
    // A resumed run builds a new sampler: the same epoch gives the same batches, in any order
    // of asking.
    const Batches late = b[s]->epoch_batches(5);
    CHECK(a[s]->epoch_batches(3) == b[s]->epoch_batches(3));
    CHECK(a[s]->epoch_batches(5) == late);
    CHECK(a[s]->epoch_batches(3) != a[s]->epoch_batches(4));
    CHECK(a[s]->epoch_batches(3) != other_seed[s]->epoch_batches(3));
    CHECK(int64_t(a[s]->epoch_batches(4).size()) == a[s]->batches_per_epoch());
  }
}

TEST_CASE("LengthBucketSampler pads far less than random batches", "[sampler]") {
  const std::vector<int64_t> lengths = spread_lengths(2000);
  const RandomBatchSampler random(2000, make_options(16, 0, 1, 5));
  const LengthBucketSampler bucketed(lengths, make_options(16, 0, 1, 5));
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    const int64_t random_padding = padded_frames(random.epoch_batches(epoch), lengths);
    const int64_t bucket_padding = padded_frames(bucketed.epoch_batches(epoch), lengths);
    INFO("random " << random_padding << " bucketed " << bucket_padding);
    // Random batches of 16 from 1500 spread lengths waste ~1300 frames per item; sorted
    // chunks of 1600 leave ~1 frame between neighbours, so well under a tenth.
    CHECK(bucket_padding * 10 < random_padding);
  }
}

TEST_CASE("LengthBucketSampler cuts sorted chunks and keeps ranks in step", "[sampler]") {
  const std::vector<int64_t> lengths = spread_lengths(101);
  // 101 items, batch 4 over 3 ranks: global batches of 12, 8 full and one of 5 padded with
  // 7 items from the start of the epoch's order.
  for (const bool drop_last : {false, true}) {
    INFO("drop_last " << drop_last);
    std::vector<Batches> ranks;
    for (int64_t rank = 0; rank < 3; ++rank) {
      const LengthBucketSampler sampler(lengths, make_options(4, rank, 3, 8, drop_last), 1);
      CHECK(sampler.batches_per_epoch() == (drop_last ? 8 : 9));
      ranks.push_back(sampler.epoch_batches(1));
      for (const auto& batch : ranks.back()) CHECK(batch.size() == 4);
    }
    std::map<int64_t, int64_t> counts;
    int full_groups = 0;
    for (size_t step = 0; step < ranks[0].size(); ++step) {
      // The ranks' batches at one step are consecutive slices of one global batch: with a
      // multiplier of 1 each chunk is one global batch, sorted by (length, index).
      std::vector<int64_t> group;
      for (const Batches& rank : ranks) {
        group.insert(group.end(), rank[step].begin(), rank[step].end());
        for (const int64_t item : rank[step]) ++counts[item];
      }
      const bool sorted = std::is_sorted(group.begin(), group.end(), [&](int64_t x, int64_t y) {
        return std::pair(lengths[size_t(x)], x) < std::pair(lengths[size_t(y)], y);
      });
      full_groups += sorted ? 1 : 0;
    }
    // Every full global batch is sorted; the padded one (ending in items from the start)
    // almost surely is not, so count rather than require.
    CHECK(full_groups >= 8);
    if (drop_last) {
      CHECK(counts.size() == 96);
      for (const auto& [item, count] : counts) CHECK(count == 1);
    } else {
      CHECK(counts.size() == 101);
      int64_t repeated = 0;
      for (const auto& [item, count] : counts) repeated += count - 1;
      CHECK(repeated == 7);
    }
  }
}

TEST_CASE("LengthBucketSampler batches hold neighbouring lengths", "[sampler]") {
  // One chunk holds the whole set: the batches are the sorted order cut in eights, so no two
  // batches' length ranges overlap (beyond a shared boundary value), and their order changes
  // between epochs.
  const std::vector<int64_t> lengths = spread_lengths(64);
  const LengthBucketSampler sampler(lengths, make_options(8, 0, 1, 2));
  Batches batches = sampler.epoch_batches(0);
  const Batches next = sampler.epoch_batches(1);
  CHECK(batches != next);
  CHECK(counts_of(batches) == counts_of(next));
  auto range = [&](const std::vector<int64_t>& batch) {
    int64_t low = lengths[size_t(batch[0])], high = low;
    for (const int64_t item : batch) {
      low = std::min(low, lengths[size_t(item)]);
      high = std::max(high, lengths[size_t(item)]);
    }
    return std::pair(low, high);
  };
  std::sort(batches.begin(), batches.end(),
            [&](const auto& x, const auto& y) { return range(x) < range(y); });
  for (size_t b = 0; b + 1 < batches.size(); ++b)
    CHECK(range(batches[b]).second <= range(batches[b + 1]).first);
}

TEST_CASE("LengthBucketSampler with sortagrad starts in ascending length order", "[sampler]") {
  // Lengths with ties: the order is by length, then by index.
  const std::vector<int64_t> lengths = {30, 10, 20, 10, 50, 40, 20, 10, 60, 5};
  const LengthBucketSampler sampler(lengths, make_options(3, 0, 1, 4), 100, true);
  // Sorted by hand: 5(9) 10(1) 10(3) 10(7) 20(2) 20(6) 30(0) 40(5) 50(4) 60(8), and the last
  // batch padded with the first item of that order.
  CHECK(sampler.epoch_batches(0) == Batches{{9, 1, 3}, {7, 2, 6}, {0, 5, 4}, {8, 9, 1}});
  // Later epochs shuffle the batches' order.
  bool later_differs = false;
  for (int64_t epoch = 1; epoch < 6; ++epoch)
    later_differs |= sampler.epoch_batches(epoch) != sampler.epoch_batches(0);
  CHECK(later_differs);
  // On two ranks, epoch 0 interleaves global batches of 6 in sorted order.
  const LengthBucketSampler rank1(lengths, make_options(3, 1, 2, 4), 100, true);
  CHECK(rank1.epoch_batches(0) == Batches{{7, 2, 6}, {8, 9, 1}});
}

TEST_CASE("LengthBucketSampler caps the frames of each batch", "[sampler]") {
  const std::vector<int64_t> lengths = spread_lengths(500);
  const int64_t cap = 6000;
  const LengthBucketSampler one_rank(lengths, make_options(32, 0, 1, 9), 100, false, cap);
  const int64_t count = one_rank.batches_per_epoch();
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    const Batches batches = one_rank.epoch_batches(epoch);
    CHECK(int64_t(batches.size()) == count);
    const auto counts = counts_of(batches);
    CHECK(counts.size() == 500);
    for (const auto& [item, times] : counts) CHECK(times == 1);
    for (const auto& batch : batches) {
      int64_t longest = 0;
      for (const int64_t item : batch) longest = std::max(longest, lengths[size_t(item)]);
      CHECK(batch.size() <= 32);
      CHECK(int64_t(batch.size()) * longest <= cap);
    }
  }
  // Short items fill whole batches: the cap lets 32 items of up to 187 frames through.
  CHECK(count < 500 / 4);
  // An item longer than the cap still gets a batch, of its own.
  const LengthBucketSampler tiny(std::vector<int64_t>{10, 9000, 10, 10}, make_options(4), 100,
                                 false, 100);
  const Batches alone = tiny.epoch_batches(0);
  CHECK(counts_of(alone).size() == 4);
  CHECK(std::count(alone.begin(), alone.end(), std::vector<int64_t>{1}) == 1);
  // Two ranks step together: equal batch sizes at every step, the cap on both.
  const LengthBucketSampler r0(lengths, make_options(32, 0, 2, 9), 100, false, cap);
  const LengthBucketSampler r1(lengths, make_options(32, 1, 2, 9), 100, false, cap);
  const Batches b0 = r0.epoch_batches(1), b1 = r1.epoch_batches(1);
  REQUIRE(b0.size() == b1.size());
  for (size_t i = 0; i < b0.size(); ++i) CHECK(b0[i].size() == b1[i].size());
}

TEST_CASE("ClassBalancedSampler draws each class equally often", "[sampler]") {
  // 900 items of class 0, 100 of class 1 (every tenth): weights 1/900 and 1/100 make the
  // classes equally likely, so class 1 is ~half of the draws instead of a tenth.
  std::vector<int64_t> labels(1000, 0);
  for (size_t i = 0; i < labels.size(); i += 10) labels[i] = 1;
  const ClassBalancedSampler sampler(labels, make_options(64, 0, 1, 17), 20000);
  CHECK(sampler.batches_per_epoch() == 313);  // ceil(20000 / 64)
  const Batches batches = sampler.epoch_batches(0);
  CHECK(items_in(batches) == 20000);
  int64_t minority = 0;
  for (const auto& [item, count] : counts_of(batches)) {
    REQUIRE((item >= 0 && item < 1000));
    if (labels[size_t(item)] == 1) minority += count;
  }
  const double share = double(minority) / 20000.0;
  CHECK(share > 0.45);
  CHECK(share < 0.55);
  // Default epoch size: the dataset's; ranks split the draws as DistributedSampler does.
  std::map<int64_t, int64_t> counts;
  for (int64_t rank = 0; rank < 3; ++rank) {
    const ClassBalancedSampler part(labels, make_options(10, rank, 3, 17));
    CHECK(part.batches_per_epoch() == 34);  // ceil(1000 / 3) = 334 -> 34 batches
    CHECK(items_in(part.epoch_batches(0)) == 334);
  }
}

TEST_CASE("Sampler errors name the option", "[sampler]") {
  REQUIRE_THROWS_WITH(RandomBatchSampler(10, make_options(0)), Contains("batch_size"));
  REQUIRE_THROWS_WITH(RandomBatchSampler(10, make_options(4, 3, 3)), Contains("rank 3"));
  REQUIRE_THROWS_WITH(RandomBatchSampler(10, make_options(4, -1, 3)), Contains("rank -1"));
  REQUIRE_THROWS_WITH(RandomBatchSampler(10, make_options(4, 0, 0)), Contains("world_size"));
  REQUIRE_THROWS_WITH(RandomBatchSampler(0, make_options(4)), Contains("dataset is empty"));
  REQUIRE_THROWS_WITH(RandomBatchSampler(5, make_options(4, 0, 2, 0, true)), Contains("drop_last"));
  REQUIRE_THROWS_WITH(RandomBatchSampler(5, make_options(4)).epoch_batches(-1),
                      Contains("epoch -1"));
  SamplerOptions unshuffled = make_options(4);
  unshuffled.shuffle = false;
  REQUIRE_THROWS_WITH(LengthBucketSampler({3, 4}, unshuffled, 100, true).epoch_batches(-1),
                      Contains("epoch -1"));
  REQUIRE_THROWS_WITH(LengthBucketSampler({}, make_options(4)), Contains("dataset is empty"));
  REQUIRE_THROWS_WITH(LengthBucketSampler({3, 4, -2}, make_options(4)), Contains("lengths[2]"));
  REQUIRE_THROWS_WITH(LengthBucketSampler({3, 4}, make_options(4), 0),
                      Contains("bucket_size_multiplier"));
  REQUIRE_THROWS_WITH(LengthBucketSampler({3, 4}, make_options(4), 10, false, -5),
                      Contains("max_frames_per_batch"));
  REQUIRE_THROWS_WITH(ClassBalancedSampler({0, 1, -1}, make_options(4)), Contains("labels[2]"));
  REQUIRE_THROWS_WITH(ClassBalancedSampler({0, 1}, make_options(4), -3),
                      Contains("num_samples_per_epoch"));
  REQUIRE_THROWS_AS(ClassBalancedSampler({}, make_options(4)), Error);
}
