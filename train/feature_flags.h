#pragma once
// The feature flags `featurize` and `trainer` share (torchaudio's names), so a cache made by
// one is what the other asks for: --sample-rate, --n-fft, --win-length, --hop-length, --f-min,
// --f-max, --n-mels, --power, --no-center, --mel-scale, --mel-norm, --log, --top-db,
// --normalize.
#include <cstdint>
#include <string>

#include "data/features/feature_config.h"

namespace CLI {
class App;
}

namespace sonata {

struct FeatureFlags {
  int64_t sample_rate = 16000;
  int64_t n_fft = 400;
  int64_t win_length = 0;  // 0: n_fft
  int64_t hop_length = 160;
  double f_min = 0;
  double f_max = 0;  // 0: sample_rate / 2
  int64_t n_mels = 80;
  double power = 2.0;
  bool no_center = false;
  std::string mel_scale = "htk";        // htk | slaney
  std::string mel_norm = "none";        // none | slaney
  std::string log = "log";              // none | log | db
  double top_db = 0;                    // db only; 0: keep the whole range
  std::string normalize = "utterance";  // none | utterance | per_feature (DS2 recipes: utterance)

  // Checked (one sentence naming the flag).
  FeatureConfig config() const;
};

void add_feature_flags(CLI::App& app, FeatureFlags& flags, const std::string& group);

}  // namespace sonata
