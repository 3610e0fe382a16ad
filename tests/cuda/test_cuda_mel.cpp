// The CUDA log-mel front end (FeatureExtractor::log_mel_on / log_mel_batch, kernels/cuda/mel.h)
// against the CPU reference on random clips of different lengths (one shorter than n_fft
// with constant padding), over the configurations that take different paths: power 1 and 2,
// htk and slaney, log, dB with top_db, mel power without log, no center, odd n_fft, and both
// normalisations; each value within 1e-4 relative (plus 1e-4 absolute near zero). Then the
// torchaudio fixtures of tests/data/test_mel.cpp on the GPU (1e-4 by relative_error, and
// again on the power after undoing the log), rows past a clip's frames, samples past a
// clip's length that must not be read, and a batch of more rows than one cuFFT execution.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "data/features/feature_config.h"
#include "data/features/spectrogram.h"
#include "tests/cuda/parity_util.h"
#include "tests/support/mel_fixture.h"
#include "tests/support/tensor_compare.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

constexpr Tolerance kMelTolerance{1e-4, 1e-4};

std::vector<float> noise(int64_t length, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  std::vector<float> x(static_cast<size_t>(length));
  for (float& v : x) v = normal(rng);
  return x;
}

std::vector<std::span<const float>> spans(const std::vector<std::vector<float>>& clips) {
  return {clips.begin(), clips.end()};
}

// Every clip's CUDA features against the CPU's, elementwise.
void require_cpu_parity(const FeatureConfig& config, const std::vector<int64_t>& lengths,
                        uint32_t seed) {
  std::vector<std::vector<float>> clips;
  for (size_t c = 0; c < lengths.size(); ++c) clips.push_back(noise(lengths[c], seed + c));
  const FeatureExtractor extractor(config);
  const std::vector<Tensor> cpu = extractor.log_mel(spans(clips));
  const std::vector<Tensor> gpu = extractor.log_mel_on(Device::cuda(), spans(clips));
  REQUIRE(gpu.size() == cpu.size());
  for (size_t c = 0; c < cpu.size(); ++c) {
    INFO("clip " << c << " of " << lengths[c] << " samples");
    REQUIRE(gpu[c].device().is_cuda());
    REQUIRE(gpu[c].shape() == cpu[c].shape());
    const Tensor ours = gpu[c].to(Device::cpu());
    const ParityResult result = compare_tensors(ours, cpu[c], kMelTolerance, "log_mel");
    INFO(result.report);
    REQUIRE(result.ok);
    CHECK(relative_error(ours, cpu[c]) < 1e-4);
  }
}

// ---------------------------------------------------------------------------------------
// The torchaudio fixtures (tests/fixtures/make_mel.py), read as tests/data/test_mel.cpp does
// (tests/support/mel_fixture.h).

// A log_mel fixture ([frames, n_mels]) or the mel power one ([n_mels, frames], no log).
void check_fixture(const std::string& name) {
  INFO("fixture " << name);
  const TextFixture f = read_mel_fixture(name);
  FeatureConfig config = mel_fixture_config(f);
  const bool mel_power = fixture_word(f, "kind") == "mel_spectrogram";
  if (mel_power) config.log = FeatureLog::none;
  const std::span<const float> clip(mel_fixture_waveform().data(),
                                    size_t(fixture_integer(f, "length")));
  const FeatureExtractor extractor(config);
  Tensor ours = extractor.log_mel_on(Device::cuda(), {clip})[0].to(Device::cpu());
  if (mel_power) ours = ours.t().contiguous();
  const Tensor theirs = mel_fixture_values(f);
  REQUIRE(ours.shape() == theirs.shape());
  const double error = relative_error(ours, theirs);
  INFO("relative error " << error);
  CHECK(error < 1e-4);
  if (config.log != FeatureLog::none) {
    const double power_error = relative_error(unlog_mel(ours, config), unlog_mel(theirs, config));
    INFO("relative error of the power " << power_error);
    CHECK(power_error < 1e-4);
  }
}

}  // namespace

TEST_CASE("CUDA log-mel equals the CPU's: log, power 2 and 1, htk and slaney", "[cuda][mel]") {
  FeatureConfig config;
  config.hop_length = 160;
  SECTION("htk, power 2, log") {
    require_cpu_parity(config, {16000, 8123, 401, 3000}, 11);
  }
  SECTION("slaney scale and norm, power 1") {
    config.mel_scale = MelScale::slaney;
    config.norm = MelNorm::slaney;
    config.power = 1.0;
    require_cpu_parity(config, {12000, 2500, 999}, 21);
  }
  SECTION("htk, 64 mels, f_min and f_max, 22050 Hz") {
    config.sample_rate = 22050;
    config.n_fft = 512;
    config.hop_length = 256;
    config.n_mels = 64;
    config.f_min = 30.0;
    config.f_max = 8000.0;
    require_cpu_parity(config, {22050, 5000, 300}, 31);
  }
  SECTION("mel power without log") {
    config.log = FeatureLog::none;
    require_cpu_parity(config, {8000, 4321}, 41);
  }
}

TEST_CASE("CUDA log-mel equals the CPU's: dB with top_db", "[cuda][mel]") {
  FeatureConfig config;
  config.log = FeatureLog::db;
  SECTION("power 2, top_db 80") {
    config.top_db = 80.0;
    require_cpu_parity(config, {16000, 7001, 450}, 51);
  }
  SECTION("power 1 (20 log10), top_db 40, slaney") {
    config.power = 1.0;
    config.mel_scale = MelScale::slaney;
    config.top_db = 40.0;
    require_cpu_parity(config, {9000, 3333}, 61);
  }
  SECTION("no top_db") {
    require_cpu_parity(config, {6000, 1200}, 71);
  }
}

TEST_CASE("CUDA log-mel equals the CPU's: padding, center, odd n_fft", "[cuda][mel]") {
  FeatureConfig config;
  SECTION("constant padding with a clip shorter than n_fft") {
    config.pad_mode = PadMode::constant;
    require_cpu_parity(config, {150, 5000, 399, 1}, 81);
  }
  SECTION("no center") {
    config.center = false;
    require_cpu_parity(config, {8000, 400, 777}, 91);
  }
  SECTION("odd n_fft 375, win_length 300") {
    config.n_fft = 375;
    config.win_length = 300;
    config.hop_length = 150;
    require_cpu_parity(config, {6001, 188, 2000}, 101);
  }
}

TEST_CASE("CUDA log-mel equals the CPU's: normalisation", "[cuda][mel]") {
  FeatureConfig config;
  config.hop_length = 160;
  SECTION("per utterance") {
    config.normalize = FeatureNormalize::utterance;
    require_cpu_parity(config, {16000, 3000, 201 + 160}, 111);
  }
  SECTION("per feature") {
    config.normalize = FeatureNormalize::per_feature;
    require_cpu_parity(config, {16000, 3000, 1000}, 121);
  }
  SECTION("dB, top_db 80, then per feature") {
    config.log = FeatureLog::db;
    config.top_db = 80.0;
    config.normalize = FeatureNormalize::per_feature;
    require_cpu_parity(config, {12000, 2000}, 131);
  }
}

TEST_CASE("CUDA log-mel matches the torchaudio fixtures", "[cuda][mel]") {
  for (const char* name : {"htk_log", "slaney_log", "no_center_log", "odd_nfft_375", "db_top80",
                           "short_201_reflect", "short_151_constant", "mel_power_no_log"})
    check_fixture(name);
}

TEST_CASE("CUDA log_mel_batch zeroes rows past a clip and never reads past its length",
          "[cuda][mel]") {
  FeatureConfig config;
  config.pad_mode = PadMode::constant;  // zeros past the end: garbage there would show
  config.hop_length = 160;
  const FeatureExtractor extractor(config);
  const std::vector<int64_t> lengths = {4000, 1000, 150};
  const int64_t stride = 4100;
  std::vector<float> block(lengths.size() * stride, 1000.0f);  // the garbage
  std::vector<std::vector<float>> clips;
  for (size_t c = 0; c < lengths.size(); ++c) {
    clips.push_back(noise(lengths[c], uint32_t(200 + c)));
    std::copy(clips[c].begin(), clips[c].end(), block.begin() + int64_t(c) * stride);
  }
  const Tensor samples =
      from_vector(block, {int64_t(lengths.size()), stride}, TensorOptions{}.with(Device::cuda()));
  const Tensor out = extractor.log_mel_batch(samples, lengths).to(Device::cpu());
  const int64_t max_frames = extractor.frames(4000);
  REQUIRE(out.shape() == Shape{3, max_frames, config.n_mels});
  const std::vector<Tensor> cpu = extractor.log_mel(spans(clips));
  for (size_t c = 0; c < lengths.size(); ++c) {
    INFO("clip " << c);
    const int64_t frames = extractor.frames(lengths[c]);
    const Tensor clip = out.select(0, int64_t(c));
    const ParityResult result =
        compare_tensors(clip.slice(0, 0, frames).contiguous(), cpu[c], kMelTolerance, "log_mel");
    INFO(result.report);
    REQUIRE(result.ok);
    if (frames < max_frames) CHECK(max_abs(clip.slice(0, frames, max_frames).contiguous()) == 0.0);
  }
}

TEST_CASE("CUDA log-mel of more rows than one cuFFT execution, twice with other shapes",
          "[cuda][mel]") {
  FeatureConfig config;
  config.hop_length = 160;
  // 5 clips of 10 s: 5005 rows, two executions of the 4096-row plan; then a small batch (a
  // 64-row plan) and the big one again from the cache.
  require_cpu_parity(config, {160000, 160000, 150000, 100000, 160000}, 301);
  require_cpu_parity(config, {3000}, 311);
  require_cpu_parity(config, {160000, 80000, 160000, 120000, 160000}, 321);
}

TEST_CASE("CUDA log-mel rejects bad batches naming them", "[cuda][mel]") {
  const FeatureExtractor extractor;
  const Tensor samples = zeros({2, 1000}, TensorOptions{}.with(Device::cuda()));
  REQUIRE_THROWS_WITH(extractor.log_mel_batch(samples, {1000}),
                      Catch::Contains("1 lengths for 2 clips"));
  REQUIRE_THROWS_WITH(extractor.log_mel_batch(samples, {1000, 1001}),
                      Catch::Contains("longer than the batch"));
  REQUIRE_THROWS_WITH(extractor.log_mel_batch(samples, {1000, 100}),
                      Catch::Contains("too short for reflect padding"));
  REQUIRE_THROWS_WITH(extractor.log_mel_batch(zeros({2, 1000}), {1000, 1000}),
                      Catch::Contains("on a CUDA device"));
}
