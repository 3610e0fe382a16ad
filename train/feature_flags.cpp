#include "train/feature_flags.h"

#include <CLI/CLI.hpp>

#include "base/error.h"

namespace sonata {

FeatureConfig FeatureFlags::config() const {
  FeatureConfig c;
  c.sample_rate = sample_rate;
  c.n_fft = n_fft;
  if (win_length > 0) c.win_length = win_length;
  c.hop_length = hop_length;
  c.f_min = f_min;
  if (f_max > 0) c.f_max = f_max;
  c.n_mels = n_mels;
  c.power = power;
  c.center = !no_center;
  c.mel_scale = parse_mel_scale(mel_scale);
  c.norm = parse_mel_norm(mel_norm);
  c.log = parse_feature_log(log);
  SONATA_CHECK(top_db >= 0, "--top-db must not be negative (0 keeps the whole range)");
  SONATA_CHECK(top_db == 0 || c.log == FeatureLog::db, "--top-db applies to --log db only");
  if (top_db > 0) c.top_db = top_db;
  c.normalize = parse_feature_normalize(normalize);
  c.validate();
  return c;
}

void add_feature_flags(CLI::App& app, FeatureFlags& f, const std::string& group) {
  app.add_option("--sample-rate", f.sample_rate, "audio is resampled to this rate")
      ->capture_default_str()
      ->group(group);
  app.add_option("--n-fft", f.n_fft, "STFT size")->capture_default_str()->group(group);
  app.add_option("--win-length", f.win_length, "window length (0: n-fft)")
      ->capture_default_str()
      ->group(group);
  app.add_option("--hop-length", f.hop_length, "STFT hop")->capture_default_str()->group(group);
  app.add_option("--f-min", f.f_min, "lowest mel frequency (Hz)")
      ->capture_default_str()
      ->group(group);
  app.add_option("--f-max", f.f_max, "highest mel frequency (Hz; 0: sample-rate / 2)")
      ->capture_default_str()
      ->group(group);
  app.add_option("--n-mels", f.n_mels, "mel bands")->capture_default_str()->group(group);
  app.add_option("--power", f.power, "exponent of the magnitude (2: power)")
      ->capture_default_str()
      ->group(group);
  app.add_flag("--no-center", f.no_center, "frames start at sample 0 (no reflect padding)")
      ->group(group);
  app.add_option("--mel-scale", f.mel_scale, "htk | slaney")->capture_default_str()->group(group);
  app.add_option("--mel-norm", f.mel_norm, "none | slaney (filter area normalisation)")
      ->capture_default_str()
      ->group(group);
  app.add_option("--log", f.log, "none | log (log(x + 1e-6)) | db")
      ->capture_default_str()
      ->group(group);
  app.add_option("--top-db", f.top_db, "db: floor at max - top-db (0: off)")
      ->capture_default_str()
      ->group(group);
  app.add_option("--normalize", f.normalize, "none | utterance | per_feature mean/variance")
      ->capture_default_str()
      ->group(group);
}

}  // namespace sonata
