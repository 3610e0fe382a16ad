#include "data/cache/feature_cache.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "base/parallel_for.h"
#include "data/audio/decode.h"
#include "data/audio/resample.h"
#include "data/features/spectrogram.h"
#include "engine/io/file_bytes.h"
#include "engine/io/npy.h"

namespace sonata {
namespace {

namespace fs = std::filesystem;
// 3: clips known by their canonical audio path and by that path relative to the cache folder
// (2: by the canonical path alone, still read; 1: by their path relative to the manifest).
constexpr int kIndexFormat = 3;
constexpr int kOldestReadableFormat = 2;

std::map<std::string, std::string> fields_of(const std::string& described) {
  std::map<std::string, std::string> fields;
  std::istringstream words(described);
  std::string word;
  while (words >> word) {
    const auto equals = word.find('=');
    if (equals == std::string::npos)
      fields["version"] = word;
    else
      fields[word.substr(0, equals)] = word.substr(equals + 1);
  }
  return fields;
}

std::string hex(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", (unsigned long long)value);
  return text;
}

}  // namespace

std::vector<std::string> feature_config_differences(const std::string& described_a,
                                                    const std::string& described_b) {
  const auto a = fields_of(described_a), b = fields_of(described_b);
  std::vector<std::string> differences;
  for (const auto& [key, value] : a) {
    const auto other = b.find(key);
    const std::string other_value = other == b.end() ? "(absent)" : other->second;
    if (other_value != value) differences.push_back(key + ": " + value + " -> " + other_value);
  }
  for (const auto& [key, value] : b)
    if (!a.count(key)) differences.push_back(key + ": (absent) -> " + value);
  return differences;
}

std::string clip_key(const std::string& clip_path) {
  std::error_code error;
  const fs::path absolute = fs::absolute(clip_path, error);
  SONATA_CHECK(!error, "cannot make the audio path '", clip_path, "' absolute (", error.message(),
               ")");
  const fs::path canonical = fs::weakly_canonical(absolute, error);
  // A path that cannot be followed (no permission on a folder) is still one name for it.
  return (error ? absolute.lexically_normal() : canonical).string();
}

std::string clip_key_in_cache(const std::string& key, const std::string& cache_folder) {
  return fs::path(key).lexically_relative(clip_key(cache_folder)).string();
}

std::string cache_file_name(const std::string& clip_path) {
  return fs::path(clip_key(clip_path)).relative_path().string() + ".npy";
}

FeaturizeSummary featurize_clips(const std::vector<std::string>& clip_paths,
                                 const FeatureConfig& config, const std::string& cache_folder,
                                 const FeaturizeOptions& options) {
  SONATA_CHECK(options.dtype == DType::f32 || options.dtype == DType::f16,
               "featurize: --dtype must be f32 or f16");
  const FeatureExtractor extractor(config);
  fs::create_directories(cache_folder);
  const fs::path index_path = fs::path(cache_folder) / "index.json";
  // An index of other parameters means this folder holds another cache: refuse to mix.
  if (fs::exists(index_path)) {
    const FeatureCache existing(cache_folder, config);
    SONATA_CHECK(existing.dtype() == options.dtype, "featurize: ", cache_folder, " holds ",
                 dtype_name(existing.dtype()), " features; use another folder for ",
                 dtype_name(options.dtype));
  }
  const int64_t count = int64_t(clip_paths.size());
  std::vector<std::string> keys(clip_paths.size()), names(clip_paths.size()),
      relative_keys(clip_paths.size());
  std::vector<int64_t> frames(clip_paths.size(), 0);
  std::vector<char> reused(clip_paths.size(), 0);
  std::vector<double> seconds(clip_paths.size(), 0);
  std::mutex progress_mutex;
  std::atomic<int64_t> done{0};
  parallel_for(count, options.workers, [&](int64_t i) {
    const std::string& clip = clip_paths[size_t(i)];
    keys[size_t(i)] = clip_key(clip);
    relative_keys[size_t(i)] = clip_key_in_cache(keys[size_t(i)], cache_folder);
    names[size_t(i)] = fs::path(keys[size_t(i)]).relative_path().string() + ".npy";
    const fs::path target = fs::path(cache_folder) / names[size_t(i)];
    bool have = false;
    if (fs::exists(target)) {
      // Written atomically, so present means complete; still check it is what we would write.
      const Tensor existing = map_npy(target.string());
      have = existing.dim() == 2 && existing.size(1) == config.n_mels &&
             existing.dtype() == options.dtype;
      if (have) frames[size_t(i)] = existing.size(0), reused[size_t(i)] = 1;
    }
    if (!have) {
      const Audio audio = decode_audio(clip);
      const std::vector<float> samples =
          audio.sample_rate == config.sample_rate
              ? audio.samples
              : resample(audio.samples, audio.sample_rate, config.sample_rate);
      seconds[size_t(i)] = double(samples.size()) / double(config.sample_rate);
      Tensor features = extractor.log_mel(samples);
      if (options.dtype == DType::f16) features = features.to(DType::f16);
      fs::create_directories(target.parent_path());
      save_npy(target.string(), features);
      frames[size_t(i)] = features.size(0);
    }
    const int64_t finished = ++done;
    if (options.progress) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      options.progress(finished, count);
    }
  });

  nlohmann::ordered_json index;
  index["format"] = kIndexFormat;
  index["features"] = describe(config);
  index["hash"] = hex(feature_config_hash(config));
  index["dtype"] = dtype_name(options.dtype);
  index["clips"] = nlohmann::ordered_json::array();
  FeaturizeSummary summary;
  for (size_t i = 0; i < clip_paths.size(); ++i) {
    index["clips"].push_back({{"audio", keys[i]},
                              {"relative", relative_keys[i]},
                              {"file", names[i]},
                              {"frames", frames[i]}});
    (reused[i] ? summary.reused : summary.written) += 1;
    summary.seconds_of_audio += seconds[i];
  }
  // Clips of earlier runs on other manifests stay listed: one cache may serve several.
  if (fs::exists(index_path)) {
    const auto old = nlohmann::ordered_json::parse(std::ifstream(index_path));
    std::map<std::string, bool> listed;
    for (const std::string& key : keys) listed[key] = true;
    for (const auto& clip : old["clips"])
      if (!listed.count(clip["audio"].get<std::string>())) index["clips"].push_back(clip);
  }
  const fs::path temporary = index_path.string() + ".tmp";
  {
    std::ofstream out(temporary);
    out << index.dump(1) << "\n";
    SONATA_CHECK(out.good(), "featurize: cannot write ", temporary.string());
  }
  fs::rename(temporary, index_path);
  return summary;
}

FeatureCache::FeatureCache(const std::string& cache_folder, const FeatureConfig& expected)
    : folder_(cache_folder) {
  const std::string index_path = (fs::path(cache_folder) / "index.json").string();
  SONATA_CHECK(fs::exists(index_path), "feature cache ", cache_folder,
               " has no index.json (not a cache, or its featurize run did not finish)");
  const std::vector<uint8_t> bytes = read_file_bytes(index_path);
  nlohmann::json index;
  try {
    index = nlohmann::json::parse(bytes.begin(), bytes.end());
  } catch (const nlohmann::json::exception& error) {
    throw Error(str("feature cache index ", index_path, " is not valid JSON (", error.what(), ")"));
  }
  SONATA_CHECK(index.is_object() && index.value("format", 0) != 1, "feature cache ", cache_folder,
               " was written by an older featurize, which named clips by their path relative to "
               "the manifest (index format 1); run featurize again into a new folder");
  const int format = index.value("format", 0);
  SONATA_CHECK(format >= kOldestReadableFormat && format <= kIndexFormat &&
                   index.contains("features") && index.contains("clips") && index.contains("dtype"),
               "feature cache index ", index_path, " is not a sonata feature cache index (format ",
               kOldestReadableFormat, " to ", kIndexFormat, ")");
  const std::string cached = index["features"].get<std::string>();
  const std::vector<std::string> differences =
      feature_config_differences(cached, describe(expected));
  if (!differences.empty()) {
    std::string list;
    for (const std::string& difference : differences)
      list += (list.empty() ? "" : "; ") + difference;
    throw Error(str("feature cache ", cache_folder,
                    " was made with other feature parameters (cache -> wanted): ", list));
  }
  dtype_ = index["dtype"] == "f16" ? DType::f16 : DType::f32;
  for (const auto& clip : index["clips"]) {
    const std::string audio = clip["audio"].get<std::string>();
    clips_[audio] = {clip["file"].get<std::string>(), clip["frames"].get<int64_t>()};
    // Format 2 knew clips by their absolute path alone.
    if (clip.contains("relative")) by_relative_key_[clip["relative"].get<std::string>()] = audio;
  }
}

std::map<std::string, FeatureCache::Clip>::const_iterator FeatureCache::find(
    const std::string& key) const {
  const auto found = clips_.find(key);
  if (found != clips_.end()) return found;
  // Not where it was featurised: the same place relative to the cache, in a moved folder.
  const auto relative = by_relative_key_.find(clip_key_in_cache(key, folder_));
  return relative == by_relative_key_.end() ? clips_.end() : clips_.find(relative->second);
}

bool FeatureCache::contains(const std::string& clip_path) const {
  return find(clip_key(clip_path)) != clips_.end();
}

Tensor FeatureCache::features(const std::string& clip_path) const {
  const std::string key = clip_key(clip_path);
  const auto found = find(key);
  SONATA_CHECK(found != clips_.end(), "feature cache ", folder_, " has no features for ", key,
               " (at its path when featurised, or at the same place relative to the cache; run "
               "featurize on its manifest)");
  const Clip& clip = found->second;
  const Tensor features = map_npy((fs::path(folder_) / clip.file).string());
  SONATA_CHECK(features.dim() == 2 && features.size(0) == clip.frames && features.dtype() == dtype_,
               "feature cache ", folder_, ": ", clip.file, " holds ", shape_str(features.shape()),
               " ", dtype_name(features.dtype()), ", the index says ", clip.frames, " frames of ",
               dtype_name(dtype_));
  // A NaN here would reach the loss and be skipped step after step without a name.
  const Tensor values = features.dtype() == DType::f32 ? features : features.to(DType::f32);
  const float* data = values.data<float>();
  for (int64_t i = 0; i < values.numel(); ++i)
    SONATA_CHECK(std::isfinite(data[i]), "feature cache ", folder_, ": the features of ", key, " (",
                 clip.file, ") hold ", data[i], " at frame ", i / values.size(1),
                 "; run featurize again for it");
  return features;
}

}  // namespace sonata
