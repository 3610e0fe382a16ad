// --feature-cache finds a clip's features however the manifest was reached (featurize with a
// relative manifest path, train with an absolute one, and the reverse; absolute or relative
// lines; a linked folder), finds it after the corpus folder moves (its path relative to the
// cache), still reads caches of the second index format, refuses those of the first with the advice
// to re-run featurize, and treats a clip whose cached features hold a NaN as bad input, named.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/cache/feature_cache.h"
#include "data/manifest/asr_manifest.h"
#include "engine/io/npy.h"
#include "engine/ops.h"
#include "tests/support/audio_files.h"
#include "tests/support/letters_corpus.h"
#include "train/tasks/speech_task.h"
#include "train/trainer_options.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

TrainerOptions cached_ds2_options(const std::string& train, const std::string& cache) {
  TrainerOptions options;
  options.model = "ds2";
  options.model_config = {{"conv-channels", "4"}, {"hidden", "8"}, {"layers", "1"}};
  options.features.n_mels = 40;
  options.train_manifest = train;
  options.feature_cache = cache;
  options.workers = 2;
  return options;
}

// What build/featurize does with --manifest: the manifest's clips as it resolves them.
void featurize_manifest(const std::string& manifest, const TrainerOptions& options,
                        const std::string& cache) {
  std::vector<std::string> clips;
  for (const AsrEntry& entry : read_asr_manifest(manifest)) clips.push_back(entry.path);
  featurize_clips(clips, options.features.config(), cache, FeaturizeOptions{});
}

// The manifest as the same path typed relative to the working folder.
std::string relative_to_here(const std::string& path) {
  return fs::relative(path, fs::current_path()).string();
}

}  // namespace

#if SONATA_WITH_SNDFILE
TEST_CASE("feature cache: a clip finds its features whichever path reached its manifest",
          "[cache][trainer]") {
  TemporaryFolder folder("cache_paths");
  const std::string relative_lines = write_letters_corpus(folder.path().string(), "train", 4, 3);
  // The same clips listed by absolute paths, as most corpus scripts write them.
  std::string lines;
  for (const AsrEntry& entry : read_asr_manifest(relative_lines))
    lines += entry.path + "\t" + entry.transcript + "\n";
  const std::string absolute_lines = folder.file("absolute.tsv");
  write_text(absolute_lines, lines);
  REQUIRE(fs::path(relative_to_here(absolute_lines)).is_relative());

  for (const std::string& manifest : {absolute_lines, relative_lines}) {
    INFO(manifest);
    const std::string cache = folder.file("cache_" + fs::path(manifest).stem().string());
    TrainerOptions options = cached_ds2_options(manifest, cache);
    featurize_manifest(relative_to_here(manifest), options, cache);
    CHECK(SpeechTask(options, Vocabulary()).train_items() == 4);
    // The reverse: featurized through the absolute path, trained through a relative one.
    const std::string other_cache = cache + "_reverse";
    featurize_manifest(manifest, options, other_cache);
    options.train_manifest = relative_to_here(manifest);
    options.feature_cache = other_cache;
    CHECK(SpeechTask(options, Vocabulary()).train_items() == 4);
  }

  // Through a linked folder: the link's paths lead to the same audio, so to the same features.
  fs::create_directory_symlink(folder.path(), folder.file("link"));
  std::string linked_lines;
  for (const AsrEntry& entry : read_asr_manifest(relative_lines))
    linked_lines += folder.file("link/" + fs::path(entry.path).filename().string()) + "\t" +
                    entry.transcript + "\n";
  write_text(folder.file("linked.tsv"), linked_lines);
  TrainerOptions linked =
      cached_ds2_options(folder.file("link/linked.tsv"), folder.file("cache_absolute"));
  CHECK(SpeechTask(linked, Vocabulary()).train_items() == 4);
}

TEST_CASE("feature cache: a corpus folder featurised in one place is found after it moves",
          "[cache][trainer]") {
  // As tools/prepare_card.sh does: audio, manifest and cache in one folder, featurised there,
  // then carried to another path (another checkout, a lent GPU machine).
  TemporaryFolder folder("cache_moved");
  const fs::path before = folder.path() / "corpus", after = folder.path() / "carried";
  fs::create_directories(before);
  const std::string train = write_letters_corpus(before.string(), "train", 4, 3);
  TrainerOptions options = cached_ds2_options(train, (before / "cache").string());
  featurize_manifest(train, options, options.feature_cache);
  fs::rename(before, after);

  options.train_manifest = (after / fs::path(train).filename()).string();
  options.feature_cache = (after / "cache").string();
  CHECK(SpeechTask(options, Vocabulary()).train_items() == 4);

  // A cache of the second format (canonical paths alone) still serves clips where they were.
  const std::string index_path = (after / "cache" / "index.json").string();
  nlohmann::json index = nlohmann::json::parse(std::ifstream(index_path));
  index["format"] = 2;
  for (auto& clip : index["clips"]) {
    clip["audio"] =
        (fs::weakly_canonical(after) / fs::path(clip["audio"].get<std::string>()).filename())
            .string();
    clip.erase("relative");
  }
  write_text(index_path, index.dump());
  CHECK(SpeechTask(options, Vocabulary()).train_items() == 4);
}

TEST_CASE("feature cache: NaN features are bad input naming the clip, and old caches are refused",
          "[cache][trainer]") {
  TemporaryFolder folder("cache_nan");
  const std::string train = write_letters_corpus(folder.path().string(), "train", 5, 8);
  const std::string cache = folder.file("cache");
  TrainerOptions options = cached_ds2_options(train, cache);
  featurize_manifest(train, options, cache);

  // Poison one clip's cached features in place, keeping its shape.
  const std::string poisoned_clip = folder.file("train_2.wav");
  const std::string npy = (fs::path(cache) / cache_file_name(poisoned_clip)).string();
  Tensor features = map_npy(npy).clone();
  features.data<float>()[features.size(1) + 3] = std::numeric_limits<float>::quiet_NaN();
  save_npy(npy, features);
  const FeatureCache opened(cache, options.features.config());
  CHECK_THROWS_WITH(opened.features(poisoned_clip),
                    Contains("train_2.wav") && Contains("nan") && Contains("frame 1"));

  CHECK_THROWS_WITH(SpeechTask(options, Vocabulary()), Contains("train_2.wav"));
  options.bad_input = "skip";
  const SpeechTask task(options, Vocabulary());
  CHECK(task.train_items() == 4);
  CHECK(task.data_report().counts.at("train_skipped") == 1);

  // An index of the first format named clips relative to their manifest: refused, with advice.
  fs::create_directories(folder.file("old"));
  write_text(folder.file("old/index.json"),
             R"({"format": 1, "features": "", "hash": "0", "dtype": "f32", "clips": []})");
  CHECK_THROWS_WITH(FeatureCache(folder.file("old"), options.features.config()),
                    Contains("run featurize again"));
}
#endif
