#include "data/datasets/speech_dataset.h"

#include <algorithm>
#include <optional>

#include "base/error.h"
#include "data/audio/decode.h"
#include "data/audio/resample.h"
#include "data/augment/augment_key.h"
#include "data/augment/speed_perturb.h"
#include "data/cache/feature_cache.h"
#include "data/manifest/asr_manifest.h"
#include "data/text/normalise.h"
#include "engine/ops.h"

namespace sonata {
namespace {

// Kaldi's and NeMo's usual speed-perturbation set.
constexpr double kSpeedFactors[] = {0.9, 1.0, 1.1};

double frame_seconds(const FeatureConfig& config) {
  return double(config.resolved_hop_length()) / double(config.sample_rate);
}

// The seconds of audio `frames` feature frames cover.
double audio_seconds(int64_t frames, const FeatureConfig& config) {
  return double(frames) * double(config.resolved_hop_length()) / double(config.sample_rate);
}

// Per-item features [frames, n_mels] zero-padded into [N, 1, T, n_mels], each item masked by
// `masks` (SpecAugment keyed by its key) when given, with the items' concatenated targets.
HostBatch assemble(const std::vector<Tensor>& item_features,
                   const std::vector<std::vector<int64_t>>& item_targets,
                   const FeatureConfig& config, const SpecAugmentOptions* masks, uint64_t seed,
                   const std::vector<uint64_t>& keys, int64_t time_multiple) {
  const int64_t n_mels = config.n_mels;
  const int64_t batch = int64_t(item_features.size());
  int64_t frames = 0;
  for (const Tensor& features : item_features) frames = std::max(frames, features.size(0));
  frames = padded_time(frames, time_multiple);
  HostBatch host;
  Tensor input = zeros({batch, 1, frames, n_mels});
  std::vector<int64_t> input_lengths, targets, target_lengths;
  float* out = input.data<float>();
  for (int64_t n = 0; n < batch; ++n) {
    const Tensor& features = item_features[size_t(n)];
    std::copy_n(features.data<float>(), features.numel(), out + n * frames * n_mels);
    if (masks) {
      Tensor view = from_blob(out + n * frames * n_mels, {features.size(0), n_mels}, DType::f32);
      spec_augment(view, *masks, seed, keys[size_t(n)]);
    }
    input_lengths.push_back(features.size(0));
    if (!item_targets.empty()) {
      const auto& labels = item_targets[size_t(n)];
      targets.insert(targets.end(), labels.begin(), labels.end());
      target_lengths.push_back(int64_t(labels.size()));
    } else {
      target_lengths.push_back(0);
    }
    host.audio_seconds += audio_seconds(features.size(0), config);
    host.frames += features.size(0);
  }
  host.items = batch;
  host.padded_frames = batch * frames;
  host.add(std::string(SpeechBatch::input), input, /*staged=*/true);
  host.add(std::string(SpeechBatch::input_lengths), from_vector(input_lengths, {batch}));
  host.add(std::string(SpeechBatch::targets), from_vector(targets, {int64_t(targets.size())}));
  host.add(std::string(SpeechBatch::target_lengths), from_vector(target_lengths, {batch}));
  return host;
}

}  // namespace

int64_t padded_time(int64_t frames, int64_t multiple) {
  SONATA_CHECK(multiple >= 1, "speech batches: the time multiple must be at least 1, got ",
               multiple);
  return (frames + multiple - 1) / multiple * multiple;
}

std::vector<float> decode_clip(const std::string& path, int64_t sample_rate) {
  Audio decoded = decode_audio(path);
  return decoded.sample_rate == sample_rate
             ? std::move(decoded.samples)
             : resample(decoded.samples, decoded.sample_rate, sample_rate);
}

SpeechSplit load_speech_split(const std::string& name, const std::string& manifest,
                              const Vocabulary& vocabulary, const FeatureExtractor& extractor,
                              int64_t workers, const InputPolicy& policy, const FeatureCache* cache,
                              bool keep_audio, bool featurise) {
  SpeechSplit split;
  split.name = name;
  const std::vector<AsrEntry> entries = read_asr_manifest(manifest, manifest_options(policy));
  SONATA_CHECK(!entries.empty(), "--", name, " manifest ", manifest, " lists no clips");
  const int64_t count = int64_t(entries.size());
  const int64_t rate = extractor.config().sample_rate;

  std::vector<std::vector<float>> audio(entries.size());
  std::vector<Tensor> features(cache ? entries.size() : 0);
  std::vector<std::vector<int64_t>> targets(entries.size());
  std::vector<std::string> transcripts(entries.size());
  std::vector<int64_t> dropped(entries.size(), 0);
  std::vector<double> too_long(entries.size(), 0);  // the seconds of a clip over max_duration
  const double seconds_per_frame = frame_seconds(extractor.config());
  const auto path_of = [&](int64_t i) { return entries[size_t(i)].path; };
  const auto problems = load_inputs(count, workers, policy, path_of, [&](int64_t i) {
    const AsrEntry& entry = entries[size_t(i)];
    double seconds = 0;
    if (cache) {
      // f32 stays memory-mapped; f16 is widened once here, since batches are built in f32.
      const Tensor cached = cache->features(entry.path);
      features[size_t(i)] = cached.dtype() == DType::f32 ? cached : cached.to(DType::f32);
      seconds = double(cached.size(0)) * seconds_per_frame;
    } else {
      // Over --max-duration by its header: left out before its samples are allocated.
      const double declared = policy.max_duration > 0 ? declared_seconds(entry.path) : 0;
      if (over_max_duration(declared, policy)) {
        too_long[size_t(i)] = declared;
        return;
      }
      audio[size_t(i)] = decode_clip(entry.path, rate);
      seconds = double(audio[size_t(i)].size()) / double(rate);
      // Too short for one STFT frame: found here, where it can be skipped, not in log_mel.
      const FeatureConfig& config = extractor.config();
      const int64_t need = config.center ? config.n_fft / 2 + 1 : config.n_fft;
      SONATA_CHECK(int64_t(audio[size_t(i)].size()) >= need, entry.path, " holds ",
                   audio[size_t(i)].size(), " samples, fewer than the ", need,
                   " one feature frame needs");
    }
    if (over_max_duration(seconds, policy)) {
      too_long[size_t(i)] = seconds;
      audio[size_t(i)] = {};
      features[size_t(i)] = {};
      return;
    }
    const std::string where = manifest + " line " + std::to_string(i + 1);
    const NormalisedText text = normalise(vocabulary, entry.transcript, where);
    transcripts[size_t(i)] = text.text;
    targets[size_t(i)] = vocabulary.encode(text.text);
    dropped[size_t(i)] = text.dropped;
  });
  // Skipped bad clips leave every list, and their reasons are kept.
  split.skipped = bad_inputs(problems);
  for (size_t i = 0; i < entries.size(); ++i)
    if (too_long[i] > 0) split.too_long.push_back({entries[i].path, too_long[i]});
  for (const size_t i : good_inputs(problems)) {
    if (too_long[i] > 0) continue;
    split.paths.push_back(entries[i].path);
    if (cache) split.features.push_back(std::move(features[i]));
    split.targets.push_back(std::move(targets[i]));
    split.transcripts.push_back(std::move(transcripts[i]));
    split.dropped_characters += dropped[i];
    const size_t kept = split.paths.size() - 1;
    if (kept != i) audio[kept] = std::move(audio[i]);  // a self-move would empty it
  }
  audio.resize(split.paths.size());
  SONATA_CHECK(!split.paths.empty(), "--", name, " manifest ", manifest, ": every clip is bad (",
               !split.skipped.empty()   ? split.skipped.front()
               : split.too_long.empty() ? std::string("none listed")
                                        : describe_too_long(split.too_long, policy),
               ")");

  if (cache) {
    for (const Tensor& clip : split.features)
      split.seconds += double(clip.size(0)) * seconds_per_frame;
    return split;
  }
  std::vector<std::span<const float>> clips;
  for (const auto& samples : audio) {
    clips.emplace_back(samples);
    split.seconds += double(samples.size()) / double(rate);
  }
  if (featurise) split.features = extractor.log_mel(clips);
  if (keep_audio || !featurise) split.audio = std::move(audio);
  return split;
}

std::vector<int64_t> input_frames(const SpeechSplit& split, const FeatureExtractor& extractor) {
  std::vector<int64_t> lengths;
  for (const Tensor& features : split.features) lengths.push_back(features.size(0));
  if (split.features.empty())
    for (const auto& samples : split.audio)
      lengths.push_back(extractor.frames(int64_t(samples.size())));
  return lengths;
}

SpeechBatcher::SpeechBatcher(const FeatureExtractor& extractor, SpeechAugment augment,
                             int64_t time_multiple)
    : extractor_(extractor), augment_(augment), time_multiple_(time_multiple) {
  (void)padded_time(0, time_multiple);  // checks it
}

double SpeechBatcher::speed_factor(const SpeechSplit& split, bool training, int64_t epoch,
                                   int64_t item) const {
  return training && augment_.speed_perturb && !split.audio.empty()
             ? choose_speed_factor(kSpeedFactors, augment_.seed, augment_key(epoch, item))
             : 1.0;
}

HostBatch SpeechBatcher::features(const SpeechSplit& split, const std::vector<int64_t>& items,
                                  int64_t epoch, bool training) const {
  const int64_t rate = extractor_.config().sample_rate;
  // Speed perturbation: each item at its (seed, epoch, item) speed, featurised here on a worker.
  std::vector<Tensor> item_features;
  std::vector<std::vector<int64_t>> item_targets;
  std::vector<uint64_t> keys;
  for (int64_t item : items) {
    const Tensor& stored = split.features[size_t(item)];
    const double factor = speed_factor(split, training, epoch, item);
    item_features.push_back(
        factor == 1.0 ? stored
                      : extractor_.log_mel(speed_perturb(split.audio[size_t(item)], rate, factor)));
    item_targets.push_back(split.targets[size_t(item)]);
    keys.push_back(augment_key(epoch, item));
  }
  const bool masked = training && augment_.spec_augment;
  HostBatch host =
      assemble(item_features, item_targets, extractor_.config(), masked ? &augment_.masks : nullptr,
               augment_.seed, keys, time_multiple_);
  for (const int64_t item : items) host.sources.push_back(split.paths[size_t(item)]);
  return host;
}

HostBatch SpeechBatcher::pad(const std::vector<Tensor>& item_features,
                             const std::vector<std::vector<int64_t>>& item_targets) const {
  return assemble(item_features, item_targets, extractor_.config(), nullptr, 0, {}, time_multiple_);
}

HostBatch SpeechBatcher::waveforms(const SpeechSplit& split, const std::vector<int64_t>& items,
                                   int64_t epoch) const {
  const int64_t batch = int64_t(items.size());
  const int64_t rate = extractor_.config().sample_rate;
  std::vector<std::vector<float>> perturbed(items.size());
  std::vector<std::span<const float>> clips;
  for (size_t n = 0; n < items.size(); ++n) {
    const std::vector<float>& stored = split.audio[size_t(items[n])];
    const double factor = speed_factor(split, true, epoch, items[n]);
    if (factor != 1.0) perturbed[n] = speed_perturb(stored, rate, factor);
    clips.emplace_back(factor == 1.0 ? stored : perturbed[n]);
  }
  int64_t longest = 0;
  for (const auto& clip : clips) longest = std::max(longest, int64_t(clip.size()));
  HostBatch host;
  Tensor samples = zeros({batch, longest});
  std::vector<int64_t> frames, targets, target_lengths, lengths, keys;
  for (int64_t n = 0; n < batch; ++n) {
    const int64_t item = items[size_t(n)];
    const std::span<const float> clip = clips[size_t(n)];
    std::copy(clip.begin(), clip.end(), samples.data<float>() + n * longest);
    lengths.push_back(int64_t(clip.size()));
    frames.push_back(extractor_.frames(int64_t(clip.size())));
    keys.push_back(int64_t(augment_key(epoch, item)));
    const auto& labels = split.targets[size_t(item)];
    targets.insert(targets.end(), labels.begin(), labels.end());
    target_lengths.push_back(int64_t(labels.size()));
    host.audio_seconds += audio_seconds(frames.back(), extractor_.config());
    host.frames += frames.back();
    host.sources.push_back(split.paths[size_t(item)]);
  }
  host.items = batch;
  host.padded_frames =
      batch * padded_time(frames.empty() ? 0 : *std::max_element(frames.begin(), frames.end()),
                          time_multiple_);
  host.add(std::string(SpeechBatch::input), samples, /*staged=*/true);
  host.add(std::string(SpeechBatch::input_lengths), from_vector(frames, {batch}));
  host.add(std::string(SpeechBatch::targets), from_vector(targets, {int64_t(targets.size())}));
  host.add(std::string(SpeechBatch::target_lengths), from_vector(target_lengths, {batch}));
  host.add(std::string(SpeechBatch::sample_lengths), from_vector(lengths, {batch}));
  host.add(std::string(SpeechBatch::augment_keys), from_vector(keys, {batch}));
  return host;
}

Tensor SpeechBatcher::step_features(const Tensor& samples, const HostBatch& batch) const {
  const std::vector<int64_t> lengths = batch[SpeechBatch::sample_lengths].to_vector<int64_t>();
  Tensor features;
  if (samples.device().is_cuda()) {
    features = extractor_.log_mel_batch(samples, lengths);
  } else {
    const Tensor host = samples.contiguous();
    std::vector<std::span<const float>> clips;
    for (size_t n = 0; n < lengths.size(); ++n)
      clips.emplace_back(host.data<float>() + int64_t(n) * host.size(1), size_t(lengths[n]));
    const std::vector<Tensor> per_clip = extractor_.log_mel(clips);
    int64_t longest = 0;
    for (const Tensor& clip : per_clip) longest = std::max(longest, clip.size(0));
    const int64_t mels = extractor_.config().n_mels;
    features = zeros({int64_t(per_clip.size()), longest, mels});
    for (size_t n = 0; n < per_clip.size(); ++n)
      std::copy_n(per_clip[n].data<float>(), per_clip[n].numel(),
                  features.data<float>() + int64_t(n) * longest * mels);
  }
  // The time axis padded as the features path pads it (kSpeechTimeMultiple), with zeros.
  const int64_t padded = padded_time(features.size(1), time_multiple_);
  if (padded > features.size(1))
    features = cat({features, zeros({features.size(0), padded - features.size(1), features.size(2)},
                                    features.options())},
                   1);
  features = features.unsqueeze(1);
  if (!augment_.spec_augment) return features;
  std::vector<uint64_t> keys;
  for (const int64_t key : batch[SpeechBatch::augment_keys].to_vector<int64_t>())
    keys.push_back(uint64_t(key));
  return spec_augment_batch(features, batch[SpeechBatch::input_lengths].to_vector<int64_t>(),
                            augment_.masks, augment_.seed, keys);
}

}  // namespace sonata
