#pragma once
// The speech dataset for CTC: an ASR manifest's clips decoded, resampled and turned into
// log-mel frames once, at load, and kept in memory (or read from a featurize cache), the
// transcripts normalised to the vocabulary and encoded; and the batches built from them, with
// named fields (SpeechBatch) and the training augmentations (SpecAugment, speed perturbation)
// keyed by (seed, epoch, item) so that a batch is the same on any worker. The trainer
// (train/tasks/speech_task), the loader benchmark and the tests build batches here.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/augment/spec_augment.h"
#include "data/features/spectrogram.h"
#include "data/loader/host_batch.h"
#include "data/manifest/input_policy.h"
#include "data/text/vocabulary.h"

namespace sonata {

class FeatureCache;

// One manifest's clips, featurised.
struct SpeechSplit {
  std::string name;
  std::vector<std::string> paths;  // each clip's audio file, as the manifest resolves it
  std::vector<Tensor> features;    // [frames, n_mels] f32 CPU; none when featurised per step
  // At the feature rate, when kept (speed perturbation, features computed per step).
  std::vector<std::vector<float>> audio;
  std::vector<std::vector<int64_t>> targets;
  std::vector<std::string> transcripts;  // normalised references
  double seconds = 0;
  int64_t dropped_characters = 0;    // outside the vocabulary, over all transcripts
  std::vector<std::string> skipped;  // why each skipped clip was bad (policy.skip_bad)
  // Clips longer than policy.max_duration: left out whatever the bad-input rule, as NeMo's
  // manifests filter by duration (before decoding, when the header declares the length).
  std::vector<TooLong> too_long;

  int64_t clips() const { return int64_t(targets.size()); }
};

// The fields of a speech batch. A features batch holds the first four; a waveform batch (the
// features computed in the step, on the device) holds samples as `input` and all six.
struct SpeechBatch {
  static constexpr std::string_view input = "input";  // [N, 1, T, n_mels] or samples [N, L]
  static constexpr std::string_view input_lengths = "input_lengths";    // frames, [N] i64
  static constexpr std::string_view targets = "targets";                // concatenated, i64
  static constexpr std::string_view target_lengths = "target_lengths";  // [N] i64
  static constexpr std::string_view sample_lengths = "sample_lengths";  // [N] i64
  static constexpr std::string_view augment_keys = "augment_keys";      // [N], the keys' bits
};

// A clip's samples at `sample_rate` (decoded, resampled when the file's rate differs).
std::vector<float> decode_clip(const std::string& path, int64_t sample_rate);

// A clip that cannot be used (see input_policy.h) stops the load naming it, or under
// policy.skip_bad is left out with its reason in `skipped`. `name` names the split in errors
// ("--<name> manifest ...").
// `cache`: features from a featurize cache (memory-mapped) instead of decoding the audio.
// `featurise` false (without a cache): the audio is kept and no features are computed.
SpeechSplit load_speech_split(const std::string& name, const std::string& manifest,
                              const Vocabulary& vocabulary, const FeatureExtractor& extractor,
                              int64_t workers, const InputPolicy& policy = {},
                              const FeatureCache* cache = nullptr, bool keep_audio = false,
                              bool featurise = true);

// Each clip's input frames (its features, or the frames its kept audio gives).
std::vector<int64_t> input_frames(const SpeechSplit& split, const FeatureExtractor& extractor);

// The training augmentations, drawn from `seed` keyed by (epoch, item).
struct SpeechAugment {
  bool spec_augment = false;
  SpecAugmentOptions masks;
  bool speed_perturb = false;  // 0.9 / 1.0 / 1.1, on splits that kept their audio
  uint64_t seed = 0;
};

// Speech batches pad their time axis past the longest item to a multiple of this many
// frames (80 ms at DS2's 10 ms hop). Each new time length is a new convolution shape, for
// which cuDNN runs a host-blocking cudnnFind: padded to the longest item alone, nearly every
// batch had a shape of its own. tests/data/test_speech_time_padding.cpp measures an epoch:
// the speech demo goes from 119 shapes to 29 (58 plans, within the 64-plan cache) and from
// 0.8 % padding to 2.5 % (16 frames: 16 shapes, 4.5 %); LibriSpeech-like lengths from 577
// shapes to 209, 0.8 % padding to 1.1 %.
inline constexpr int64_t kSpeechTimeMultiple = 8;

// `frames` rounded up to a multiple of `multiple` (at least 1).
int64_t padded_time(int64_t frames, int64_t multiple);

// Builds a split's batches. Thread-safe: the loader's workers call it concurrently. Keeps a
// reference to `extractor`, which must outlive it.
class SpeechBatcher {
 public:
  // `time_multiple`: the batch's time axis is padded to a multiple of it (1: the longest item).
  SpeechBatcher(const FeatureExtractor& extractor, SpeechAugment augment,
                int64_t time_multiple = kSpeechTimeMultiple);

  // Features zero-padded past the longest item (time_multiple); `training`: the augmentations
  // asked for.
  // Staged: the input.
  HostBatch features(const SpeechSplit& split, const std::vector<int64_t>& items, int64_t epoch,
                     bool training) const;
  // Samples zero-padded to the longest (speed-perturbed when asked) clip, with each clip's
  // frames, sample count and augmentation key: step_features makes the features. Staged: the
  // input.
  HostBatch waveforms(const SpeechSplit& split, const std::vector<int64_t>& items,
                      int64_t epoch) const;
  // A waveform batch's features on the device of `samples` (its input, moved there),
  // [N, 1, T, n_mels] (T: the most frames, padded to time_multiple), zero past each clip's frames,
  // masked when SpecAugment is on: the GPU log-mel on CUDA, the CPU's otherwise.
  Tensor step_features(const Tensor& samples, const HostBatch& batch) const;

  // Pads per-item features [frames, n_mels] into a features batch with these targets (none:
  // empty targets), adding `audio_seconds` at the feature rate.
  HostBatch pad(const std::vector<Tensor>& item_features,
                const std::vector<std::vector<int64_t>>& item_targets) const;

 private:
  double speed_factor(const SpeechSplit& split, bool training, int64_t epoch, int64_t item) const;

  const FeatureExtractor& extractor_;
  SpeechAugment augment_;
  int64_t time_multiple_;
};

}  // namespace sonata
