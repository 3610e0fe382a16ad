#include "tools/inference/feature_description.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <string>

#include "base/error.h"

namespace sonata {
namespace {

constexpr std::string_view kVersion = "sonata-features/1";

class Fields {
 public:
  explicit Fields(std::string_view text) : text_(text) {
    size_t start = 0;
    bool first = true;
    while (start < text.size()) {
      const size_t end = std::min(text.find(' ', start), text.size());
      const std::string_view word = text.substr(start, end - start);
      start = end + 1;
      if (word.empty()) continue;
      if (first) {
        SONATA_CHECK(word == kVersion, "feature description '", text_, "' is not ", kVersion,
                     " (written by another version of sonata?)");
        first = false;
        continue;
      }
      const size_t equals = word.find('=');
      SONATA_CHECK(equals != std::string_view::npos && equals > 0, "feature description '", text_,
                   "' has '", word, "' where a name=value field belongs");
      values_[std::string(word.substr(0, equals))] = std::string(word.substr(equals + 1));
    }
    SONATA_CHECK(!first, "feature description is empty");
  }

  const std::string& text(const char* name) const {
    const auto found = values_.find(name);
    SONATA_CHECK(found != values_.end(), "feature description '", text_, "' has no ", name);
    return found->second;
  }
  bool unset(const char* name) const { return text(name) == "-"; }

  int64_t integer(const char* name) const {
    const std::string& value = text(name);
    int64_t result = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), result);
    SONATA_CHECK(error == std::errc() && end == value.data() + value.size(),
                 "feature description: ", name, "='", value, "' is not an integer");
    return result;
  }
  double real(const char* name) const {
    const std::string& value = text(name);
    double result = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), result);
    SONATA_CHECK(error == std::errc() && end == value.data() + value.size(),
                 "feature description: ", name, "='", value, "' is not a number");
    return result;
  }

 private:
  std::string_view text_;
  std::map<std::string, std::string> values_;
};

}  // namespace

FeatureConfig parse_feature_description(std::string_view text) {
  const Fields fields(text);
  SONATA_CHECK(fields.text("window") == "hann_periodic", "feature description: window '",
               fields.text("window"), "' is not the periodic Hann window sonata computes");
  FeatureConfig config;
  config.sample_rate = fields.integer("sample_rate");
  config.n_fft = fields.integer("n_fft");
  config.win_length = fields.integer("win_length");
  config.hop_length = fields.integer("hop_length");
  config.f_min = fields.real("f_min");
  config.f_max = fields.real("f_max");
  config.n_mels = fields.integer("n_mels");
  config.power = fields.real("power");
  const int64_t center = fields.integer("center");
  SONATA_CHECK(center == 0 || center == 1, "feature description: center=", center,
               " is not 0 or 1");
  config.center = center == 1;
  if (config.center) config.pad_mode = parse_pad_mode(fields.text("pad_mode"));
  config.mel_scale = parse_mel_scale(fields.text("mel_scale"));
  config.norm = parse_mel_norm(fields.text("norm"));
  config.log = parse_feature_log(fields.text("log"));
  if (!fields.unset("log_offset")) config.log_offset = fields.real("log_offset");
  if (!fields.unset("top_db")) config.top_db = fields.real("top_db");
  config.normalize = parse_feature_normalize(fields.text("normalize"));
  config.validate();
  return config;
}

}  // namespace sonata
