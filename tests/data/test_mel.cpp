// The spectrogram / mel front end: torchaudio 0.13 fixtures (tests/fixtures/make_mel.py,
// float64 references) within 1e-4 by relative_error (max |ours - theirs| / max |theirs|)
// on the values as stored and, for log and dB cases, again after undoing the log (so the
// loud bins are checked to 1e-4 of the power, not only of the log); the filterbank against
// melscale_fbanks; the FFT against a float64 DFT written out here; frame counts from
// torch.stft's formula; and the config's text, hash and one-sentence errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <numbers>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/features/feature_config.h"
#include "data/features/spectrogram.h"
#include "kernels/cpu/stft.h"
#include "tests/support/mel_fixture.h"
#include "tests/support/tensor_compare.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

namespace {

void check_case(const std::string& name) {
  INFO("fixture " << name);
  const TextFixture f = read_mel_fixture(name);
  const FeatureConfig config = mel_fixture_config(f);
  const std::span<const float> clip(mel_fixture_waveform().data(),
                                    size_t(fixture_integer(f, "length")));
  const FeatureExtractor extractor(config);
  const std::string kind = fixture_word(f, "kind");
  const Tensor ours = kind == "spectrogram"       ? extractor.spectrogram(clip)
                      : kind == "mel_spectrogram" ? extractor.mel_spectrogram(clip)
                                                  : extractor.log_mel(clip);
  const Tensor theirs = mel_fixture_values(f);
  REQUIRE(ours.dtype() == DType::f32);
  REQUIRE(ours.shape() == theirs.shape());
  const double error = relative_error(ours, theirs);
  INFO("relative error " << error);
  CHECK(error < 1e-4);
  if (kind == "log_mel" && config.log != FeatureLog::none) {
    const double power_error = relative_error(unlog_mel(ours, config), unlog_mel(theirs, config));
    INFO("relative error of the power " << power_error);
    CHECK(power_error < 1e-4);
  }
}

// |DFT|^2 of torch.stft's frames in double, straight from the definitions.
std::vector<double> brute_force_power(const std::vector<float>& x, int64_t n_fft,
                                      int64_t win_length, int64_t hop, bool center, bool reflect,
                                      int64_t* frames_out) {
  const int64_t length = int64_t(x.size()), pad = center ? n_fft / 2 : 0;
  const int64_t padded = length + 2 * pad;
  const int64_t frames = 1 + (padded - n_fft) / hop, bins = n_fft / 2 + 1;
  std::vector<double> window(size_t(n_fft), 0.0);
  const int64_t left = (n_fft - win_length) / 2;
  for (int64_t n = 0; n < win_length; ++n) {
    const double s = std::sin(std::numbers::pi * double(n) / double(win_length));
    window[size_t(left + n)] = s * s;  // periodic Hann: sin^2(pi n / N)
  }
  std::vector<double> out(size_t(bins * frames));
  for (int64_t t = 0; t < frames; ++t) {
    for (int64_t k = 0; k < bins; ++k) {
      double re = 0, im = 0;
      for (int64_t n = 0; n < n_fft; ++n) {
        int64_t at = t * hop + n - pad;
        double value;
        if (at >= 0 && at < length)
          value = x[size_t(at)];
        else if (!reflect)
          value = 0;
        else
          value = x[size_t(at < 0 ? -at : 2 * (length - 1) - at)];
        const double angle = -2 * std::numbers::pi * double(k * n) / double(n_fft);
        re += window[size_t(n)] * value * std::cos(angle);
        im += window[size_t(n)] * value * std::sin(angle);
      }
      out[size_t(k * frames + t)] = re * re + im * im;
    }
  }
  *frames_out = frames;
  return out;
}

std::vector<float> noise(int64_t length, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  std::vector<float> x(static_cast<size_t>(length));
  for (float& v : x) v = normal(rng);
  return x;
}

}  // namespace

TEST_CASE("Log-mel features match torchaudio (DESIGN.md's front end and variants)", "[mel]") {
  check_case("htk_log");
  check_case("slaney_log");
  check_case("no_center_log");
  check_case("odd_nfft_375");
}

TEST_CASE("dB features with top_db match torchaudio's AmplitudeToDB", "[mel]") {
  check_case("db_top80");
  // The fixture's silence sits at the floor: peak - 80 dB.
  const TextFixture f = read_mel_fixture("db_top80");
  const std::vector<double> values = fixture_doubles(f, "values");
  const double peak = *std::max_element(values.begin(), values.end());
  const double lowest = *std::min_element(values.begin(), values.end());
  CHECK(lowest == Approx(peak - 80.0).margin(1e-6));
}

TEST_CASE("Magnitude spectrogram and mel power match torchaudio", "[mel]") {
  check_case("power1_spectrogram");
  check_case("mel_power_no_log");
}

TEST_CASE("Clips near the shortest allowed length match torchaudio", "[mel]") {
  check_case("short_201_reflect");
  check_case("short_151_constant");
}

TEST_CASE("Mel filterbank matches torchaudio melscale_fbanks", "[mel]") {
  for (const char* name : {"fbank_htk", "fbank_slaney", "fbank_htk_sr11025"}) {
    INFO("fixture " << name);
    const TextFixture f = read_mel_fixture(name);
    FeatureConfig config = mel_fixture_config(f);
    // f_max = sample_rate // 2 is the default: leave it unset to check the default too.
    if (config.f_max == double(config.sample_rate / 2)) config.f_max.reset();
    const Tensor ours = mel_filterbank(config), theirs = mel_fixture_values(f);
    REQUIRE(ours.shape() == theirs.shape());
    CHECK(relative_error(ours, theirs) < 1e-12);
  }
  FeatureConfig odd_rate;
  odd_rate.sample_rate = 11025;
  CHECK(odd_rate.resolved_f_max() == 5512.0);  // torchaudio's sample_rate // 2
}

TEST_CASE("STFT power equals a float64 DFT for any n_fft", "[mel]") {
  struct Case {
    int64_t n_fft, win_length, hop;
    bool center, reflect;
  };
  // Radix 4/2/5 (400, 512), 3 (48), odd n_fft (unpacked: 375, 7), primes (direct DFT: 2 * 67,
  // 7), a window shorter than n_fft, no centering, zero padding.
  const Case cases[] = {{400, 400, 160, true, true}, {512, 400, 128, true, true},
                        {48, 48, 12, false, true},   {375, 375, 100, true, true},
                        {134, 120, 50, true, false}, {7, 7, 3, true, true},
                        {2, 2, 1, true, false},      {400, 256, 200, false, true}};
  double worst = 0;
  for (const Case& c : cases) {
    INFO("n_fft " << c.n_fft << " win_length " << c.win_length << " hop " << c.hop);
    const std::vector<float> x = noise(3 * c.n_fft + 7, uint32_t(c.n_fft));
    std::vector<float> window(size_t(c.n_fft));
    kernels::cpu::hann_window(c.win_length, c.n_fft, true, window.data());
    const kernels::cpu::StftPlan plan(
        {c.n_fft, c.hop, c.center,
         c.reflect ? kernels::cpu::StftPadding::reflect : kernels::cpu::StftPadding::constant},
        window.data());
    int64_t frames = 0;
    const std::vector<double> expected =
        brute_force_power(x, c.n_fft, c.win_length, c.hop, c.center, c.reflect, &frames);
    REQUIRE(plan.frames(int64_t(x.size())) == frames);
    std::vector<float> ours(size_t(plan.bins() * frames));
    kernels::cpu::power_spectrogram(plan, x.data(), int64_t(x.size()), 2.0f, ours.data());
    double diff = 0, scale = 0;
    for (size_t i = 0; i < ours.size(); ++i) {
      diff = std::max(diff, std::abs(double(ours[i]) - expected[i]));
      scale = std::max(scale, expected[i]);
    }
    worst = std::max(worst, diff / scale);
    CHECK(diff / scale < 2e-6);
  }
  INFO("worst relative error " << worst);
  SUCCEED();
}

TEST_CASE("Frame counts follow torch.stft", "[mel]") {
  FeatureConfig c;
  c.hop_length = 160;
  const FeatureExtractor centred(c);
  CHECK(centred.frames(16000) == 101);  // 1 + 16000 / 160
  CHECK(centred.frames(16159) == 101);
  CHECK(centred.frames(16160) == 102);
  CHECK(centred.frames(201) == 2);
  c.center = false;
  const FeatureExtractor uncentred(c);
  CHECK(uncentred.frames(400) == 1);  // 1 + (length - n_fft) / hop
  CHECK(uncentred.frames(16000) == 98);
  c = FeatureConfig{};
  CHECK(FeatureExtractor(c).frames(16000) == 81);  // hop = win_length / 2 = 200
  c.n_fft = 375;
  c.hop_length = 100;
  CHECK(FeatureExtractor(c).frames(3001) == 31);  // odd n_fft: pad 187 each side
}

TEST_CASE("The fused log and dB equal std::log of the mel power", "[mel]") {
  const std::vector<float> x = noise(16000, 7);
  FeatureConfig c;
  c.hop_length = 160;
  const Tensor power = mel_spectrogram(x, c);  // [n_mels, frames]
  const std::vector<float> p = power.to_vector<float>();
  const int64_t frames = power.size(1);
  for (const FeatureLog mode : {FeatureLog::log, FeatureLog::db}) {
    INFO("log " << name_of(mode));
    c.log = mode;
    const std::vector<float> ours = log_mel(x, c).to_vector<float>();  // [frames, n_mels]
    double worst = 0;
    for (int64_t t = 0; t < frames; ++t) {
      for (int64_t m = 0; m < c.n_mels; ++m) {
        const float y = p[size_t(m * frames + t)];
        const double expected = mode == FeatureLog::log
                                    ? std::log(double(y + 1e-6f))
                                    : 10.0 * std::log10(std::max(double(y), 1e-10));
        const double v = ours[size_t(t * c.n_mels + m)];
        worst = std::max(worst, std::abs(v - expected) / std::max(1.0, std::abs(expected)));
      }
    }
    INFO("worst error " << worst);
    CHECK(worst < 1e-6);
  }
}

TEST_CASE("Batched log_mel equals one clip at a time", "[mel]") {
  FeatureConfig c;
  c.hop_length = 160;
  const FeatureExtractor extractor(c);
  const std::vector<float> a = noise(16000, 1), b = noise(2500, 2), d = noise(401, 3);
  const std::vector<Tensor> batch = extractor.log_mel({a, b, d});
  REQUIRE(batch.size() == 3);
  const std::vector<float>* clips[] = {&a, &b, &d};
  for (size_t i = 0; i < 3; ++i) {
    const Tensor one = extractor.log_mel(*clips[i]);
    REQUIRE(batch[i].shape() == Shape{extractor.frames(int64_t(clips[i]->size())), 80});
    CHECK(batch[i].is_contiguous());
    CHECK(batch[i].to_vector<float>() == one.to_vector<float>());
  }
}

TEST_CASE("Per-utterance normalisation gives zero mean and unit variance", "[mel]") {
  const std::vector<float> x = noise(8000, 11);
  FeatureConfig c;
  c.hop_length = 160;
  const std::vector<float> raw = log_mel(x, c).to_vector<float>();
  const int64_t frames = int64_t(raw.size()) / c.n_mels;
  // Expected: (x - mean) / (std + 1e-5), unbiased std, over the set `pick` selects.
  const auto expected = [&](const std::vector<int64_t>& pick) {
    double mean = 0, squares = 0;
    for (const int64_t i : pick) mean += raw[size_t(i)];
    mean /= double(pick.size());
    for (const int64_t i : pick) squares += (raw[size_t(i)] - mean) * (raw[size_t(i)] - mean);
    const double std = std::sqrt(squares / double(pick.size() - 1));
    std::vector<double> out;
    for (const int64_t i : pick) out.push_back((raw[size_t(i)] - mean) / (std + 1e-5));
    return out;
  };
  c.normalize = FeatureNormalize::utterance;
  const std::vector<float> whole = log_mel(x, c).to_vector<float>();
  std::vector<int64_t> all(raw.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = int64_t(i);
  const std::vector<double> want = expected(all);
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(whole[i] - want[i]));
  CHECK(worst < 1e-5);

  c.normalize = FeatureNormalize::per_feature;
  const std::vector<float> per = log_mel(x, c).to_vector<float>();
  worst = 0;
  for (int64_t m = 0; m < c.n_mels; ++m) {
    std::vector<int64_t> column;
    for (int64_t t = 0; t < frames; ++t) column.push_back(t * c.n_mels + m);
    const std::vector<double> w = expected(column);
    for (size_t i = 0; i < column.size(); ++i)
      worst = std::max(worst, std::abs(per[size_t(column[i])] - w[i]));
  }
  CHECK(worst < 1e-5);
}

TEST_CASE("Feature config: canonical text, stable hash, defaults", "[mel]") {
  FeatureConfig c;
  CHECK(c.resolved_win_length() == 400);
  CHECK(c.resolved_hop_length() == 200);  // torchaudio: win_length // 2
  CHECK(c.resolved_f_max() == 8000.0);
  CHECK(c.n_mels == 80);
  c.hop_length = 160;
  const std::string text = describe(c);
  CHECK(text ==
        "sonata-features/1 sample_rate=16000 n_fft=400 win_length=400 hop_length=160 "
        "window=hann_periodic f_min=0 f_max=8000 n_mels=80 power=2 center=1 pad_mode=reflect "
        "mel_scale=htk norm=none log=log log_offset=1e-06 top_db=- normalize=none");
  // FNV-1a 64 by its definition (offset basis 0xcbf29ce484222325, prime 0x100000001b3).
  const auto fnv1a = [](const std::string& s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char ch : s) h = (h ^ uint8_t(ch)) * 0x100000001b3ull;
    return h;
  };
  REQUIRE(fnv1a("a") == 0xaf63dc4c8601ec8cull);  // the published test vector
  CHECK(feature_config_hash(c) == fnv1a(text));

  // Same features, same hash: explicit defaults, and fields that cannot matter.
  FeatureConfig same = c;
  same.win_length = 400;
  same.f_max = 8000.0;
  CHECK(feature_config_hash(same) == feature_config_hash(c));
  FeatureConfig uncentred = c, uncentred_constant = c;
  uncentred.center = uncentred_constant.center = false;
  uncentred_constant.pad_mode = PadMode::constant;
  CHECK(feature_config_hash(uncentred) == feature_config_hash(uncentred_constant));
  FeatureConfig no_log = c, no_log_offset = c;
  no_log.log = no_log_offset.log = FeatureLog::none;
  no_log_offset.log_offset = 1e-3;
  CHECK(feature_config_hash(no_log) == feature_config_hash(no_log_offset));

  // Different features, different hash.
  FeatureConfig other = c;
  other.n_mels = 64;
  CHECK(feature_config_hash(other) != feature_config_hash(c));
  other = c;
  other.hop_length = 200;
  CHECK(feature_config_hash(other) != feature_config_hash(c));
  other = c;
  other.mel_scale = MelScale::slaney;
  CHECK(feature_config_hash(other) != feature_config_hash(c));
  other = c;
  other.log_offset = 1e-5;
  CHECK(feature_config_hash(other) != feature_config_hash(c));

  CHECK(parse_mel_scale("slaney") == MelScale::slaney);
  CHECK(parse_feature_log("db") == FeatureLog::db);
  CHECK(parse_feature_normalize("per_feature") == FeatureNormalize::per_feature);
  REQUIRE_THROWS_WITH(parse_mel_norm("area"), Contains("'area'") && Contains("none, slaney"));
}

TEST_CASE("Short clips and bad configs throw one clear sentence", "[mel]") {
  FeatureConfig c;
  const FeatureExtractor extractor(c);
  const std::vector<float> x(200, 0.1f);
  REQUIRE_THROWS_WITH(extractor.log_mel(x), Contains("200 samples") &&
                                                Contains("reflect padding") &&
                                                Contains("more than 200 samples"));
  REQUIRE_THROWS_WITH(extractor.spectrogram(std::span<const float>()), Contains("empty clip"));
  c.center = false;
  REQUIRE_THROWS_WITH(FeatureExtractor(c).mel_spectrogram(x),
                      Contains("shorter than one frame") && Contains("400"));
  c = FeatureConfig{};
  c.pad_mode = PadMode::constant;
  CHECK(FeatureExtractor(c).log_mel(std::vector<float>(1, 0.5f)).shape() == Shape{1, 80});

  const auto invalid = [](auto change, const char* message) {
    FeatureConfig bad;
    change(bad);
    INFO(message);
    REQUIRE_THROWS_WITH(FeatureExtractor(bad), Contains("feature config") && Contains(message));
  };
  invalid([](FeatureConfig& b) { b.win_length = 512; }, "win_length 512");
  invalid([](FeatureConfig& b) { b.hop_length = 0; }, "hop_length");
  invalid([](FeatureConfig& b) { b.f_min = 9000; }, "f_min < f_max");
  invalid([](FeatureConfig& b) { b.n_mels = 0; }, "n_mels");
  invalid([](FeatureConfig& b) { b.power = 0; }, "power");
  invalid([](FeatureConfig& b) { b.top_db = 80; }, "top_db applies only");
  invalid(
      [](FeatureConfig& b) {
        b.log = FeatureLog::db;
        b.power = 3;
      },
      "power 1");
}

TEST_CASE("log_mel_on the CPU is log_mel and on CUDA without a device it throws the reason",
          "[mel]") {
  FeatureConfig c;
  c.hop_length = 160;
  const FeatureExtractor extractor(c);
  const std::vector<float> a = noise(16000, 4), b = noise(900, 5);
  const std::vector<Tensor> on_cpu = extractor.log_mel_on(Device::cpu(), {a, b});
  const std::vector<Tensor> reference = extractor.log_mel({a, b});
  REQUIRE(on_cpu.size() == 2);
  for (size_t i = 0; i < 2; ++i)
    CHECK(on_cpu[i].to_vector<float>() == reference[i].to_vector<float>());
  if (!cuda_available()) {
    REQUIRE_THROWS_WITH(extractor.log_mel_on(Device::cuda(), {a, b}),
                        Contains("log_mel_on cuda:0") && Contains(cuda_unavailable_reason()));
  }
  // A host tensor is not a device batch (CUDA builds), or there is no CUDA (others).
  REQUIRE_THROWS_WITH(extractor.log_mel_batch(zeros({1, 1000}), {1000}), Contains("log_mel_batch"));
}
