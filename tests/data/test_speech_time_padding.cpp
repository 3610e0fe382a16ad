// Speech batches pad their time axis to a multiple of kSpeechTimeMultiple frames
// (data/datasets/speech_dataset.h): every new time length is a new convolution shape, which
// costs a host-blocking cudnnFind per convolution and churns the plan cache. Here: the
// batches' shape, and an epoch of the length-bucketing sampler over the speech demo's and
// over LibriSpeech-like lengths, counting the distinct conv input shapes (N, T) and the
// share of padding with and without the multiple. SONATA_PRINT_SHAPES=1 prints the counts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <utility>
#include <vector>

#include "data/datasets/speech_dataset.h"
#include "data/features/spectrogram.h"
#include "data/sampling/length_bucket_sampler.h"
#include "engine/ops.h"

using namespace sonata;

namespace {

// Uniform in [0, 1), from a splitmix64 stream: the same numbers on every standard library.
class Uniform {
 public:
  explicit Uniform(uint64_t seed) : state_(seed) {}
  double operator()() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return double((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
  }

 private:
  uint64_t state_;
};

// Frames at DS2's 10 ms hop (centred STFT: samples / 160 + 1).
int64_t frames_of(double seconds) {
  return int64_t(seconds * 100.0) + 1;
}

// tools/demo/make_speech_demo.py's train split: 2400 clips of 2-6 spoken tokens at 130-190
// words per minute, 0.05-0.35 s of silence before and after, at least one second.
std::vector<int64_t> demo_lengths() {
  Uniform u(1);
  std::vector<int64_t> lengths;
  for (int i = 0; i < 2400; ++i) {
    const int tokens = 2 + int(u() * 5);
    const double wpm = 130 + u() * 60;
    const double lead = 0.05 + u() * 0.3, trail = 0.05 + u() * 0.3;
    lengths.push_back(frames_of(std::max(1.0, lead + tokens * 60.0 / wpm + trail)));
  }
  return lengths;
}

// LibriSpeech train-clean-100's shape: 28539 utterances of 1.3-24.5 s, most of them 11-17 s
// (segmented up to ~17 s), a tail of short ones.
std::vector<int64_t> librispeech_lengths() {
  Uniform u(2);
  std::vector<int64_t> lengths;
  for (int i = 0; i < 28539; ++i) {
    double seconds;
    if (u() < 0.7) {
      // Box-Muller: normal around 14.5 s, sd 1.5, kept within 10-17 s.
      const double r = std::sqrt(-2.0 * std::log(1.0 - u())) * std::cos(2 * M_PI * u());
      seconds = std::min(17.0, std::max(10.0, 14.5 + 1.5 * r));
    } else {
      seconds = 1.3 + u() * (24.5 - 1.3);
    }
    lengths.push_back(frames_of(seconds));
  }
  return lengths;
}

struct EpochShapes {
  size_t shapes = 0;   // distinct (N, T) conv inputs
  double padding = 0;  // share of computed frames that are padding
};

EpochShapes epoch_shapes(const std::vector<int64_t>& lengths, int64_t batch_size,
                         int64_t multiple) {
  SamplerOptions options;
  options.batch_size = batch_size;
  options.seed = 1;
  const LengthBucketSampler sampler(lengths, options);
  std::set<std::pair<int64_t, int64_t>> shapes;
  int64_t frames = 0, computed = 0;
  for (const std::vector<int64_t>& batch : sampler.epoch_batches(1)) {
    int64_t longest = 0;
    for (int64_t item : batch) {
      longest = std::max(longest, lengths[size_t(item)]);
      frames += lengths[size_t(item)];
    }
    const int64_t t = padded_time(longest, multiple);
    computed += t * int64_t(batch.size());
    shapes.insert({int64_t(batch.size()), t});
  }
  return {shapes.size(), 1.0 - double(frames) / double(computed)};
}

void report(const char* corpus, const EpochShapes& before, const EpochShapes& after) {
  if (std::getenv("SONATA_PRINT_SHAPES") == nullptr) return;
  std::printf(
      "%s: %zu distinct conv shapes per epoch, %.2f %% padding; padded to %lld frames: "
      "%zu shapes, %.2f %% padding\n",
      corpus, before.shapes, 100 * before.padding, (long long)kSpeechTimeMultiple, after.shapes,
      100 * after.padding);
}

}  // namespace

TEST_CASE("padded_time rounds up to the multiple", "[data][speech]") {
  CHECK(padded_time(0, 16) == 0);
  CHECK(padded_time(1, 16) == 16);
  CHECK(padded_time(16, 16) == 16);
  CHECK(padded_time(17, 16) == 32);
  CHECK(padded_time(17, 1) == 17);
  CHECK_THROWS(padded_time(17, 0));
}

TEST_CASE("a speech batch's time axis is padded to the multiple", "[data][speech]") {
  const FeatureExtractor extractor;
  const int64_t mels = extractor.config().n_mels;
  const SpeechBatcher batcher(extractor, SpeechAugment{});
  const HostBatch batch = batcher.pad({ones({37, mels}), ones({50, mels})}, {{1}, {2, 3}});
  const Tensor input = batch[SpeechBatch::input];
  CHECK(input.shape() == Shape{2, 1, 56, mels});
  CHECK(batch[SpeechBatch::input_lengths].to_vector<int64_t>() == std::vector<int64_t>{37, 50});
  CHECK(batch.frames == 87);
  CHECK(batch.padded_frames == 112);
  // Past each item's frames: zeros.
  const Tensor second = input.select(0, 1).select(0, 0).contiguous();
  CHECK(sum(second.select(0, 49)).item() == double(mels));
  CHECK(sum(second.select(0, 50)).item() == 0.0);
  const SpeechBatcher unpadded(extractor, SpeechAugment{}, 1);
  CHECK(unpadded.pad({ones({37, mels}), ones({50, mels})}, {}).padded_frames == 100);
}

TEST_CASE("an epoch of speech batches has few conv shapes and little padding", "[data][speech]") {
  // The speech demo (batch 16): the lengths of 2400 clips span ~1-3 s.
  const std::vector<int64_t> demo = demo_lengths();
  const EpochShapes demo_before = epoch_shapes(demo, 16, 1);
  const EpochShapes demo_after = epoch_shapes(demo, 16, kSpeechTimeMultiple);
  report("speech demo", demo_before, demo_after);
  CHECK(demo_before.shapes > 3 * demo_after.shapes);
  CHECK(2 * demo_after.shapes <= 64);  // two conv layers' plans fit the plan cache
  CHECK(demo_after.padding - demo_before.padding < 0.03);
  // LibriSpeech-like (batch 32): 892 batches over 1.3-24.5 s.
  const std::vector<int64_t> libri = librispeech_lengths();
  const EpochShapes libri_before = epoch_shapes(libri, 32, 1);
  const EpochShapes libri_after = epoch_shapes(libri, 32, kSpeechTimeMultiple);
  report("LibriSpeech-like", libri_before, libri_after);
  CHECK(libri_before.shapes > 2 * libri_after.shapes);
  CHECK(libri_after.shapes <= 256);
  CHECK(libri_after.padding - libri_before.padding < 0.01);
}
