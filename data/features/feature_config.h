#pragma once
// The parameters of the spectrogram / mel front end, with torchaudio's names and defaults
// (torchaudio.transforms.MelSpectrogram 0.13; docs/ARCHITECTURE.md, "Reference behaviour"),
// except:
//   n_mels    80, DeepSpeech2's input width (torchaudio's default is 128);
//   log       log(y + 1e-6) by default (torchaudio's transform stops at the mel power);
//   normalize per-utterance mean/variance normalisation, off by default.
// Unset optionals take torchaudio's derived defaults: win_length = n_fft, hop_length =
// win_length / 2 (DS2 uses 160: 10 ms at 16 kHz), f_max = sample_rate / 2 (integer division).
//
// describe() is the canonical text of a configuration (every field resolved, doubles
// round-tripping), and feature_config_hash() a stable 64-bit hash of it: the feature cache
// keys on it, so two configurations that compute the same features hash the same.
#include <cstdint>
#include <optional>
#include <string>

namespace sonata {

enum class PadMode { reflect, constant };
enum class MelScale { htk, slaney };
enum class MelNorm { none, slaney };
enum class FeatureLog {
  none,
  log,  // log(y + log_offset)
  db,   // 10 log10(max(y, 1e-10)) for power 2 (20 log10 for power 1), floored at max - top_db
};
enum class FeatureNormalize {
  none,
  utterance,    // (y - mean) / (std + 1e-5) over all of one clip's values
  per_feature,  // the same per mel bin over the clip's frames
};

struct FeatureConfig {
  int64_t sample_rate = 16000;
  int64_t n_fft = 400;
  std::optional<int64_t> win_length;  // n_fft
  std::optional<int64_t> hop_length;  // win_length / 2
  double f_min = 0.0;
  std::optional<double> f_max;  // sample_rate / 2
  int64_t n_mels = 80;
  double power = 2.0;  // |X|^power; 2 is the power spectrum, 1 the magnitude
  bool center = true;  // pad n_fft / 2 on both sides, so frame t is centred on sample t * hop
  PadMode pad_mode = PadMode::reflect;
  MelScale mel_scale = MelScale::htk;
  MelNorm norm = MelNorm::none;
  FeatureLog log = FeatureLog::log;
  double log_offset = 1e-6;
  std::optional<double> top_db;  // FeatureLog::db only; none keeps the whole range
  FeatureNormalize normalize = FeatureNormalize::none;

  int64_t resolved_win_length() const { return win_length.value_or(n_fft); }
  int64_t resolved_hop_length() const { return hop_length.value_or(resolved_win_length() / 2); }
  double resolved_f_max() const { return f_max.value_or(double(sample_rate / 2)); }
  int64_t bins() const { return n_fft / 2 + 1; }

  // Throws sonata::Error naming the first bad field.
  void validate() const;
};

std::string describe(const FeatureConfig& config);
uint64_t feature_config_hash(const FeatureConfig& config);

// Names as describe() writes them; parse_* throw naming the accepted values.
const char* name_of(PadMode mode);
const char* name_of(MelScale scale);
const char* name_of(MelNorm norm);
const char* name_of(FeatureLog log);
const char* name_of(FeatureNormalize normalize);
PadMode parse_pad_mode(const std::string& text);
MelScale parse_mel_scale(const std::string& text);
MelNorm parse_mel_norm(const std::string& text);
FeatureLog parse_feature_log(const std::string& text);
FeatureNormalize parse_feature_normalize(const std::string& text);

}  // namespace sonata
