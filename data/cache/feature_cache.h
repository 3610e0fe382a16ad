#pragma once
// A feature cache on disk: one .npy per clip ([frames, n_mels], f32 or f16), and
// DIR/index.json holding describe() of the FeatureConfig, its hash, the dtype and every clip
// with its audio file, its .npy and its frame count. Clips are written atomically (temporary
// file + rename) and the index last, so an interrupted run resumes where it stopped and a
// cache without an index is never taken for a finished one.
//
// A clip is known by its audio file's canonical path (absolute, symbolic links resolved,
// clip_key), so the same audio finds its features however a manifest reached it: through a
// relative or an absolute manifest path, relative or absolute lines, a link. Its .npy mirrors
// that path under the cache (/data/a/b.wav -> DIR/data/a/b.wav.npy; a.wav and a.flac never
// collide, nor do two manifests' "a.wav" in different folders). The index also holds that
// path relative to the cache folder, looked up when the canonical path is not there: a corpus
// folder featurised here (audio, manifests and cache inside it) is found after it moves, to
// another checkout or machine (tools/prepare_card.sh; a lent GPU machine decodes no audio).
// Caches of the second format (canonical paths alone) are read as before; those of the first,
// named by paths relative to the manifest, are refused with the advice to re-run featurize.
//
// Readers memory-map the clips (engine/io/npy.h map_npy), refuse a cache made with other
// feature parameters, naming each differing field, and refuse a clip whose features hold a
// NaN or an infinity, naming it.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "data/features/feature_config.h"
#include "engine/tensor.h"

namespace sonata {

struct FeaturizeOptions {
  DType dtype = DType::f32;  // f32 or f16
  int64_t workers = 1;
  // Called from worker threads (serialised) after each clip: clips done, of total.
  std::function<void(int64_t done, int64_t total)> progress;
};

struct FeaturizeSummary {
  int64_t written = 0, reused = 0;  // reused: already in the cache from an earlier run
  double seconds_of_audio = 0;      // of the clips written
};

// What the cache knows a clip by: its audio file's absolute path with "." and ".." steps and
// symbolic links resolved (as far as the path exists).
std::string clip_key(const std::string& clip_path);
// A clip key (clip_key) relative to the cache folder (itself made canonical): "../wav/a.wav".
std::string clip_key_in_cache(const std::string& key, const std::string& cache_folder);
// The cache file of a clip, relative to the cache folder.
std::string cache_file_name(const std::string& clip_path);

// Featurises `clip_paths` (as a manifest resolves them) into `cache_folder`.
FeaturizeSummary featurize_clips(const std::vector<std::string>& clip_paths,
                                 const FeatureConfig& config, const std::string& cache_folder,
                                 const FeaturizeOptions& options);

class FeatureCache {
 public:
  // Opens DIR/index.json; a cache of another FeatureConfig is refused naming the fields that
  // differ (e.g. "n_mels: cache 64, wanted 80").
  FeatureCache(const std::string& cache_folder, const FeatureConfig& expected);

  bool contains(const std::string& clip_path) const;
  // The clip's features, memory-mapped: [frames, n_mels] in the cache's dtype. Throws naming
  // the clip and the cache when the clip is not in it, or its features are not finite.
  Tensor features(const std::string& clip_path) const;
  DType dtype() const { return dtype_; }
  int64_t size() const { return int64_t(clips_.size()); }

 private:
  struct Clip {
    std::string file;  // relative to the cache folder
    int64_t frames = 0;
  };
  // The clip of a clip_key: at its canonical path, else at its place relative to the cache.
  std::map<std::string, Clip>::const_iterator find(const std::string& key) const;

  std::string folder_;
  DType dtype_ = DType::f32;
  std::map<std::string, Clip> clips_;                   // by clip_key
  std::map<std::string, std::string> by_relative_key_;  // clip_key_in_cache -> clip_key
};

// "field: a -> b" for each field where two describe() texts differ.
std::vector<std::string> feature_config_differences(const std::string& described_a,
                                                    const std::string& described_b);

}  // namespace sonata
