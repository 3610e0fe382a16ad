// The feature cache: featurize writes what FeatureExtractor computes (bit for bit in f32,
// f16-rounded in f16), a second run reuses the clips, readers memory-map them, and a cache of
// other parameters is refused naming the field.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <numbers>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/cache/feature_cache.h"
#include "data/features/spectrogram.h"
#include "engine/io/npy.h"
#include "tests/support/audio_files.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

namespace {

std::vector<float> chirp(int64_t samples, double start_hz, int rate) {
  std::vector<float> x(static_cast<size_t>(samples));
  for (int64_t i = 0; i < samples; ++i) {
    const double t = double(i) / rate;
    x[size_t(i)] = 0.3f * float(std::sin(2 * std::numbers::pi * (start_hz + 300 * t) * t));
  }
  return x;
}

}  // namespace

TEST_CASE("feature cache: file names keep clips apart and stay inside the cache", "[cache]") {
  // Paths that do not exist, so no link resolves: only the absolute, normal form matters.
  CHECK(cache_file_name("/no_such_root/set/a/b.wav") == "no_such_root/set/a/b.wav.npy");
  CHECK(cache_file_name("/no_such_root/set/a/b.flac") == "no_such_root/set/a/b.flac.npy");
  CHECK(cache_file_name("/no_such_root/set/../other/c.wav") == "no_such_root/other/c.wav.npy");
  CHECK(cache_file_name("/no_such_root/set/./a//b.wav") == "no_such_root/set/a/b.wav.npy");
  const std::string relative = "no_such_folder/a.wav";
  CHECK(clip_key(relative) == (std::filesystem::current_path() / relative).string());
}

#if SONATA_WITH_SNDFILE
TEST_CASE("feature cache: featurize then resume then map, and refuse other parameters", "[cache]") {
  TemporaryFolder folder("feature_cache");
  std::vector<std::string> clips;
  std::vector<std::vector<float>> audio;
  for (int i = 0; i < 5; ++i) {
    std::filesystem::create_directories(folder.file("wav/sub"));
    const std::string path = folder.file(i % 2 ? "wav/sub/c" + std::to_string(i) + ".wav"
                                               : "wav/c" + std::to_string(i) + ".wav");
    // 16-bit values, so the decoded samples are exactly these floats.
    std::vector<float> x = chirp(8000 + 1000 * i, 200.0 + 100 * i, 16000);
    for (float& v : x) v = std::round(v * 32768.0f) / 32768.0f;
    write_pcm16_wav(path, x, 16000);
    clips.push_back(path);
    audio.push_back(x);
  }
  FeatureConfig config;
  config.n_mels = 40;
  config.normalize = FeatureNormalize::utterance;
  const FeatureExtractor extractor(config);
  const std::string cache = folder.file("cache");

  int64_t last_done = 0;
  FeaturizeOptions options;
  options.workers = 2;
  options.progress = [&](int64_t done, int64_t total) {
    CHECK(total == 5);
    last_done = std::max(last_done, done);
  };
  FeaturizeSummary summary = featurize_clips(clips, config, cache, options);
  CHECK(summary.written == 5);
  CHECK(last_done == 5);
  const FeatureCache opened(cache, config);
  CHECK(opened.size() == 5);
  for (size_t i = 0; i < clips.size(); ++i) {
    INFO(clips[i]);
    const Tensor mapped = opened.features(clips[i]);
    const Tensor direct = extractor.log_mel(audio[i]);
    REQUIRE(mapped.shape() == direct.shape());
    CHECK(mapped.to_vector<float>() == direct.to_vector<float>());
  }

  // A second run on the same clips writes nothing; the index still lists them all.
  summary = featurize_clips(clips, config, cache, options);
  CHECK(summary.written == 0);
  CHECK(summary.reused == 5);
  CHECK(FeatureCache(cache, config).size() == 5);

  FeatureConfig other = config;
  other.n_mels = 64;
  other.hop_length = 100;
  CHECK_THROWS_WITH(FeatureCache(cache, other),
                    Contains("n_mels: 40 -> 64") && Contains("hop_length: 200 -> 100"));
  CHECK_THROWS_WITH(featurize_clips(clips, other, cache, options),
                    Contains("other feature parameters"));
  CHECK_THROWS_WITH(opened.features(folder.file("missing.wav")), Contains("no features for"));

  // f16: the same values rounded to half.
  options.dtype = DType::f16;
  featurize_clips(clips, config, folder.file("cache16"), options);
  const FeatureCache half(folder.file("cache16"), config);
  CHECK(half.dtype() == DType::f16);
  const Tensor mapped = half.features(clips[0]);
  CHECK(mapped.to(DType::f32).to_vector<float>() ==
        extractor.log_mel(audio[0]).to(DType::f16).to(DType::f32).to_vector<float>());
}
#endif

TEST_CASE("feature cache: a folder without an index is not a cache", "[cache]") {
  TemporaryFolder folder("feature_cache_empty");
  CHECK_THROWS_WITH(FeatureCache(folder.path().string(), FeatureConfig{}),
                    Contains("has no index.json"));
  write_text(folder.file("index.json"), "{\"format\": 7}");
  CHECK_THROWS_WITH(FeatureCache(folder.path().string(), FeatureConfig{}),
                    Contains("not a sonata feature cache index"));
}
