#include "data/features/spectrogram.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace sonata {
namespace {

namespace cpu = kernels::cpu;

// The guard NeMo's normalize_batch adds to the standard deviation (silent clips stay finite).
constexpr double kNormalizeEpsilon = 1e-5;

const FeatureConfig& validated(const FeatureConfig& config) {
  config.validate();
  return config;
}

cpu::StftPlan make_plan(const FeatureConfig& config) {
  std::vector<float> window(size_t(config.n_fft));
  cpu::hann_window(config.resolved_win_length(), config.n_fft, /*periodic=*/true, window.data());
  const cpu::StftConfig stft{
      config.n_fft, config.resolved_hop_length(), config.center,
      config.pad_mode == PadMode::reflect ? cpu::StftPadding::reflect : cpu::StftPadding::constant};
  return cpu::StftPlan(stft, window.data());
}

std::vector<double> make_filterbank(const FeatureConfig& config) {
  std::vector<double> filterbank(size_t(config.bins() * config.n_mels));
  cpu::mel_filterbank(
      config.bins(), config.f_min, config.resolved_f_max(), config.n_mels, config.sample_rate,
      config.mel_scale == MelScale::htk ? cpu::MelScale::htk : cpu::MelScale::slaney,
      config.norm == MelNorm::none ? cpu::MelNorm::none : cpu::MelNorm::slaney, filterbank.data());
  return filterbank;
}

// (values - mean) / (std + eps) over `count` values `stride` apart; std unbiased (torch.std).
void normalize(float* values, int64_t count, int64_t stride) {
  double sum = 0, squares = 0;
  for (int64_t i = 0; i < count; ++i) sum += values[i * stride];
  const double mean = sum / double(count);
  for (int64_t i = 0; i < count; ++i) {
    const double d = values[i * stride] - mean;
    squares += d * d;
  }
  const double std = count > 1 ? std::sqrt(squares / double(count - 1)) : 0.0;
  const double scale = 1.0 / (std + kNormalizeEpsilon);
  for (int64_t i = 0; i < count; ++i)
    values[i * stride] = float((values[i * stride] - mean) * scale);
}

}  // namespace

FeatureExtractor::FeatureExtractor(const FeatureConfig& config)
    : config_(validated(config)),
      plan_(make_plan(config_)),
      filterbank_(make_filterbank(config_)),
      bands_(cpu::MelBands::from_dense(filterbank_.data(), config_.bins(), config_.n_mels)),
      device_tables_(make_feature_device_tables()) {}

void FeatureExtractor::check_clip(int64_t samples, const char* what) const {
  SONATA_CHECK(samples > 0, what, ": an empty clip has no frames");
  const int64_t n_fft = config_.n_fft;
  if (!config_.center) {
    SONATA_CHECK(samples >= n_fft, what, ": a clip of ", samples,
                 " samples is shorter than one frame (center = false needs n_fft = ", n_fft,
                 " samples)");
  } else if (config_.pad_mode == PadMode::reflect) {
    SONATA_CHECK(samples > n_fft / 2, what, ": a clip of ", samples,
                 " samples is too short for reflect padding by n_fft / 2 = ", n_fft / 2,
                 " (it needs more than ", n_fft / 2, " samples, as torch.stft does)");
  }
}

void FeatureExtractor::finish(float* values, int64_t frames) const {
  const int64_t n_mels = config_.n_mels, count = frames * n_mels;
  if (config_.log == FeatureLog::db && config_.top_db) {
    // torchaudio's amplitude_to_DB: the floor is the clip's peak minus top_db.
    const float floor = *std::max_element(values, values + count) - float(*config_.top_db);
    for (int64_t i = 0; i < count; ++i) values[i] = std::max(values[i], floor);
  }
  if (config_.normalize == FeatureNormalize::utterance) {
    normalize(values, count, 1);
  } else if (config_.normalize == FeatureNormalize::per_feature) {
    for (int64_t m = 0; m < n_mels; ++m) normalize(values + m, frames, n_mels);
  }
}

Tensor FeatureExtractor::spectrogram(std::span<const float> samples) const {
  const int64_t length = int64_t(samples.size());
  check_clip(length, "spectrogram");
  Tensor out = empty({config_.bins(), frames(length)});
  cpu::power_spectrogram(plan_, samples.data(), length, float(config_.power), out.data<float>());
  return out;
}

Tensor FeatureExtractor::mel_spectrogram(std::span<const float> samples) const {
  const int64_t length = int64_t(samples.size());
  check_clip(length, "mel_spectrogram");
  Tensor out = empty({config_.n_mels, frames(length)});
  cpu::MelOutput output;
  output.log = cpu::MelLog::none;
  output.frames_major = false;
  cpu::mel_spectrogram(plan_, bands_, samples.data(), length, float(config_.power), output,
                       out.data<float>());
  return out;
}

Tensor FeatureExtractor::log_mel(std::span<const float> samples) const {
  return std::move(log_mel(std::vector<std::span<const float>>{samples})[0]);
}

std::vector<Tensor> FeatureExtractor::log_mel(
    const std::vector<std::span<const float>>& clips) const {
  std::vector<const float*> inputs;
  std::vector<int64_t> lengths, starts;
  int64_t total = 0;
  for (const std::span<const float>& clip : clips) {
    const int64_t length = int64_t(clip.size());
    check_clip(length, "log_mel");
    inputs.push_back(clip.data());
    lengths.push_back(length);
    starts.push_back(total);
    total += frames(length);
  }
  // One block for the batch, each clip a view of its rows: a block this size comes from the
  // engine's caching allocator, where one per clip (320 KB for 10 s) would come fresh from
  // malloc and page-fault its way in on every batch (most of a batch's time in bench_mel).
  const Tensor all = empty({total, config_.n_mels});
  std::vector<Tensor> outs;
  std::vector<float*> pointers;
  for (size_t c = 0; c < clips.size(); ++c) {
    outs.push_back(all.slice(0, starts[c], starts[c] + frames(lengths[c])));
    pointers.push_back(all.data<float>() + starts[c] * config_.n_mels);
  }
  cpu::MelOutput output;
  output.log = config_.log == FeatureLog::none  ? cpu::MelLog::none
               : config_.log == FeatureLog::log ? cpu::MelLog::log
                                                : cpu::MelLog::db;
  output.log_offset = float(config_.log_offset);
  output.db_multiplier = config_.power == 1.0 ? 20.0f : 10.0f;
  output.frames_major = true;
  cpu::mel_spectrogram_batch(plan_, bands_, inputs.data(), lengths.data(), int64_t(clips.size()),
                             float(config_.power), output, pointers.data());
  for (size_t c = 0; c < outs.size(); ++c) finish(pointers[c], outs[c].size(0));
  return outs;
}

Tensor spectrogram(std::span<const float> samples, const FeatureConfig& config) {
  return FeatureExtractor(config).spectrogram(samples);
}

Tensor mel_spectrogram(std::span<const float> samples, const FeatureConfig& config) {
  return FeatureExtractor(config).mel_spectrogram(samples);
}

Tensor log_mel(std::span<const float> samples, const FeatureConfig& config) {
  return FeatureExtractor(config).log_mel(samples);
}

Tensor mel_filterbank(const FeatureConfig& config) {
  config.validate();
  const std::vector<double> values = make_filterbank(config);
  return from_vector(values, {config.bins(), config.n_mels}, TensorOptions{}.with(DType::f64));
}

}  // namespace sonata
