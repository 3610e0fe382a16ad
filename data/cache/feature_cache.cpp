#include "data/cache/feature_cache.h"

#include <nlohmann/json.hpp>

#include <atomic>
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
constexpr int kIndexFormat = 1;

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

std::string cache_file_name(const std::string& clip_path, const std::string& manifest_folder) {
  const fs::path relative = fs::path(clip_path).lexically_normal().lexically_relative(
      fs::path(manifest_folder).lexically_normal());
  fs::path name;
  for (const fs::path& part : relative.empty() ? fs::path(clip_path).relative_path() : relative)
    name /= part == ".." ? fs::path("_up_") : part;
  return name.string() + ".npy";
}

FeaturizeSummary featurize_clips(const std::vector<std::string>& clip_paths,
                                 const std::string& manifest_folder, const FeatureConfig& config,
                                 const std::string& cache_folder, const FeaturizeOptions& options) {
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
  std::vector<std::string> names(clip_paths.size());
  std::vector<int64_t> frames(clip_paths.size(), 0);
  std::vector<char> reused(clip_paths.size(), 0);
  std::vector<double> seconds(clip_paths.size(), 0);
  std::mutex progress_mutex;
  std::atomic<int64_t> done{0};
  parallel_for(count, options.workers, [&](int64_t i) {
    const std::string& clip = clip_paths[size_t(i)];
    names[size_t(i)] = cache_file_name(clip, manifest_folder);
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
    index["clips"].push_back({{"file", names[i]}, {"frames", frames[i]}});
    (reused[i] ? summary.reused : summary.written) += 1;
    summary.seconds_of_audio += seconds[i];
  }
  // Clips of earlier runs on other manifests stay listed: one cache may serve several.
  if (fs::exists(index_path)) {
    const auto old = nlohmann::ordered_json::parse(std::ifstream(index_path));
    std::map<std::string, bool> listed;
    for (const std::string& name : names) listed[name] = true;
    for (const auto& clip : old["clips"])
      if (!listed.count(clip["file"].get<std::string>())) index["clips"].push_back(clip);
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
  SONATA_CHECK(index.is_object() && index.value("format", 0) == kIndexFormat &&
                   index.contains("features") && index.contains("clips") && index.contains("dtype"),
               "feature cache index ", index_path, " is not a sonata feature cache index (format ",
               kIndexFormat, ")");
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
  for (const auto& clip : index["clips"])
    frames_[clip["file"].get<std::string>()] = clip["frames"].get<int64_t>();
}

bool FeatureCache::contains(const std::string& clip_path,
                            const std::string& manifest_folder) const {
  return frames_.count(cache_file_name(clip_path, manifest_folder)) > 0;
}

Tensor FeatureCache::features(const std::string& clip_path,
                              const std::string& manifest_folder) const {
  const std::string name = cache_file_name(clip_path, manifest_folder);
  const auto found = frames_.find(name);
  SONATA_CHECK(found != frames_.end(), "feature cache ", folder_, " has no features for ",
               clip_path, " (run featurize on its manifest)");
  const Tensor features = map_npy((fs::path(folder_) / name).string());
  SONATA_CHECK(
      features.dim() == 2 && features.size(0) == found->second && features.dtype() == dtype_,
      "feature cache ", folder_, ": ", name, " holds ", shape_str(features.shape()), " ",
      dtype_name(features.dtype()), ", the index says ", found->second, " frames of ",
      dtype_name(dtype_));
  return features;
}

}  // namespace sonata
