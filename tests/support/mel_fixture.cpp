#include "tests/support/mel_fixture.h"

#include <cmath>

namespace sonata::testing {

TextFixture read_mel_fixture(const std::string& name) {
  return read_text_fixture(std::string(SONATA_FIXTURES_DIR) + "/mel/" + name + ".txt");
}

std::string fixture_word(const TextFixture& fixture, const std::string& key) {
  return fixture.at(key).at(0);
}

int64_t fixture_integer(const TextFixture& fixture, const std::string& key) {
  return std::stoll(fixture_word(fixture, key));
}

double fixture_number(const TextFixture& fixture, const std::string& key) {
  return fixture_doubles(fixture, key).at(0);
}

const std::vector<float>& mel_fixture_waveform() {
  static const std::vector<float> waveform = [] {
    std::vector<float> out;
    for (const double q : fixture_doubles(read_mel_fixture("waveform"), "q15"))
      out.push_back(float(q / 32768.0));
    return out;
  }();
  return waveform;
}

FeatureConfig mel_fixture_config(const TextFixture& f) {
  FeatureConfig c;
  c.sample_rate = fixture_integer(f, "sample_rate");
  c.n_fft = fixture_integer(f, "n_fft");
  c.win_length = fixture_integer(f, "win_length");
  c.hop_length = fixture_integer(f, "hop_length");
  c.f_min = fixture_number(f, "f_min");
  c.f_max = fixture_number(f, "f_max");
  c.n_mels = fixture_integer(f, "n_mels");
  c.power = fixture_number(f, "power");
  c.center = fixture_integer(f, "center") != 0;
  c.pad_mode = parse_pad_mode(fixture_word(f, "pad_mode"));
  c.mel_scale = parse_mel_scale(fixture_word(f, "mel_scale"));
  c.norm = parse_mel_norm(fixture_word(f, "norm"));
  c.log = parse_feature_log(fixture_word(f, "log"));
  if (fixture_word(f, "top_db") != "none") c.top_db = fixture_number(f, "top_db");
  return c;
}

Tensor mel_fixture_values(const TextFixture& fixture) {
  Shape shape;
  for (const std::string& d : fixture.at("shape")) shape.push_back(std::stoll(d));
  return from_vector(fixture_doubles(fixture, "values"), shape, TensorOptions{}.with(DType::f64));
}

Tensor unlog_mel(const Tensor& values, const FeatureConfig& config) {
  std::vector<double> v = values.to_vector<double>();
  for (double& x : v) x = config.log == FeatureLog::db ? std::pow(10.0, x / 10.0) : std::exp(x);
  return from_vector(v, values.shape(), TensorOptions{}.with(DType::f64));
}

}  // namespace sonata::testing
