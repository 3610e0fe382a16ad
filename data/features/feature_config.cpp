#include "data/features/feature_config.h"

#include <charconv>
#include <cmath>

#include "base/error.h"

namespace sonata {
namespace {

// Shortest text that reads back as the same double.
std::string exact(double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

template <typename Enum, size_t N>
Enum parse_enum(const std::string& text, const char* what, const Enum (&values)[N]) {
  std::string accepted;
  for (const Enum value : values) {
    if (text == name_of(value)) return value;
    accepted += str(accepted.empty() ? "" : ", ", name_of(value));
  }
  throw Error(str("unknown ", what, " '", text, "' (expected one of: ", accepted, ")"));
}

}  // namespace

void FeatureConfig::validate() const {
  const std::string where = "feature config: ";
  SONATA_CHECK(sample_rate > 0, where, "sample_rate must be positive (got ", sample_rate, ")");
  SONATA_CHECK(n_fft >= 2, where, "n_fft must be at least 2 (got ", n_fft, ")");
  const int64_t window = resolved_win_length();
  SONATA_CHECK(window >= 1 && window <= n_fft, where, "win_length ", window,
               " must be between 1 and n_fft ", n_fft);
  SONATA_CHECK(resolved_hop_length() >= 1, where, "hop_length must be positive (got ",
               resolved_hop_length(), ")");
  const double high = resolved_f_max();
  SONATA_CHECK(std::isfinite(f_min) && f_min >= 0 && std::isfinite(high) && f_min < high, where,
               "needs 0 <= f_min < f_max (got f_min ", f_min, ", f_max ", high, ")");
  SONATA_CHECK(n_mels >= 1, where, "n_mels must be positive (got ", n_mels, ")");
  SONATA_CHECK(std::isfinite(power) && power > 0, where, "power must be positive (got ", power,
               ")");
  SONATA_CHECK(log != FeatureLog::log || (std::isfinite(log_offset) && log_offset > 0), where,
               "log_offset must be positive (got ", log_offset, ")");
  SONATA_CHECK(log == FeatureLog::db || !top_db, where, "top_db applies only to log = db (log is ",
               name_of(log), ")");
  SONATA_CHECK(!top_db || (std::isfinite(*top_db) && *top_db >= 0), where,
               "top_db must be non-negative (got ", top_db.value_or(0), ")");
  SONATA_CHECK(log != FeatureLog::db || power == 1.0 || power == 2.0, where,
               "log = db needs power 1 (magnitude) or 2 (power), not ", power);
}

std::string describe(const FeatureConfig& c) {
  // Fields that cannot change the result are written as '-', so they do not split the cache.
  return str("sonata-features/1 sample_rate=", c.sample_rate, " n_fft=", c.n_fft,
             " win_length=", c.resolved_win_length(), " hop_length=", c.resolved_hop_length(),
             " window=hann_periodic f_min=", exact(c.f_min), " f_max=", exact(c.resolved_f_max()),
             " n_mels=", c.n_mels, " power=", exact(c.power), " center=", c.center ? 1 : 0,
             " pad_mode=", c.center ? name_of(c.pad_mode) : "-",
             " mel_scale=", name_of(c.mel_scale), " norm=", name_of(c.norm),
             " log=", name_of(c.log),
             " log_offset=", c.log == FeatureLog::log ? exact(c.log_offset) : "-",
             " top_db=", c.top_db ? exact(*c.top_db) : "-", " normalize=", name_of(c.normalize));
}

uint64_t feature_config_hash(const FeatureConfig& config) {
  // FNV-1a: fixed by its definition, so the value never changes between builds or machines.
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const char c : describe(config)) {
    hash ^= uint8_t(c);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

const char* name_of(PadMode mode) {
  return mode == PadMode::reflect ? "reflect" : "constant";
}
const char* name_of(MelScale scale) {
  return scale == MelScale::htk ? "htk" : "slaney";
}
const char* name_of(MelNorm norm) {
  return norm == MelNorm::none ? "none" : "slaney";
}
const char* name_of(FeatureLog log) {
  switch (log) {
    case FeatureLog::none:
      return "none";
    case FeatureLog::log:
      return "log";
    case FeatureLog::db:
      return "db";
  }
  return "?";
}
const char* name_of(FeatureNormalize normalize) {
  switch (normalize) {
    case FeatureNormalize::none:
      return "none";
    case FeatureNormalize::utterance:
      return "utterance";
    case FeatureNormalize::per_feature:
      return "per_feature";
  }
  return "?";
}

PadMode parse_pad_mode(const std::string& text) {
  return parse_enum(text, "pad mode", {PadMode::reflect, PadMode::constant});
}
MelScale parse_mel_scale(const std::string& text) {
  return parse_enum(text, "mel scale", {MelScale::htk, MelScale::slaney});
}
MelNorm parse_mel_norm(const std::string& text) {
  return parse_enum(text, "mel norm", {MelNorm::none, MelNorm::slaney});
}
FeatureLog parse_feature_log(const std::string& text) {
  return parse_enum(text, "feature log", {FeatureLog::none, FeatureLog::log, FeatureLog::db});
}
FeatureNormalize parse_feature_normalize(const std::string& text) {
  return parse_enum(
      text, "feature normalisation",
      {FeatureNormalize::none, FeatureNormalize::utterance, FeatureNormalize::per_feature});
}

}  // namespace sonata
