// featurize: precomputes log-mel features of a manifest's clips into a cache folder that the
// trainer (--feature-cache) memory-maps; the feature flags are the trainer's.
//   featurize --manifest train.tsv --out cache/ [--n-mels 80 ...] [--dtype f16] [--workers 2]
// Interrupted, it resumes: clips already in the folder are kept. Clips are known by their
// audio's canonical path, so the trainer finds them whatever path reaches the manifest.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "base/error.h"
#include "data/cache/feature_cache.h"
#include "data/manifest/asr_manifest.h"
#include "data/manifest/class_manifest.h"
#include "train/feature_flags.h"

int main(int argc, char** argv) {
  std::string manifest, out, dtype = "f32", kind = "asr";
  int64_t workers = std::max<int64_t>(1, int64_t(std::thread::hardware_concurrency()));
  sonata::FeatureFlags flags;
  CLI::App app{"sonata featurize: log-mel features of a manifest's clips, one .npy per clip"};
  app.add_option("--manifest", manifest, "ASR (.tsv path<TAB>text, .jsonl) or class manifest")
      ->required();
  app.add_option("--out", out, "cache folder")->required();
  app.add_option("--kind", kind, "asr | class: how to read the manifest")->capture_default_str();
  app.add_option("--dtype", dtype, "f32 | f16")->capture_default_str();
  app.add_option("--workers", workers, "threads")->capture_default_str();
  sonata::add_feature_flags(app, flags, "Features");
  CLI11_PARSE(app, argc, argv);
  try {
    SONATA_CHECK(dtype == "f32" || dtype == "f16", "--dtype must be f32 or f16, got '", dtype, "'");
    SONATA_CHECK(kind == "asr" || kind == "class", "--kind must be asr or class, got '", kind, "'");
    SONATA_CHECK(workers >= 1, "--workers must be at least 1");
    const sonata::FeatureConfig config = flags.config();
    std::vector<std::string> clips;
    if (kind == "asr") {
      for (const auto& entry : sonata::read_asr_manifest(manifest)) clips.push_back(entry.path);
    } else {
      for (const auto& entry : sonata::read_class_manifest(manifest)) clips.push_back(entry.path);
    }
    const bool tty = isatty(fileno(stderr));
    const auto start = std::chrono::steady_clock::now();
    sonata::FeaturizeOptions options;
    options.dtype = dtype == "f16" ? sonata::DType::f16 : sonata::DType::f32;
    options.workers = workers;
    options.progress = [&](int64_t done, int64_t total) {
      if (tty ? done % 16 == 0 || done == total : done % 1000 == 0 || done == total)
        std::fprintf(stderr, tty ? "\rfeaturize: %lld/%lld clips" : "featurize: %lld/%lld clips\n",
                     (long long)done, (long long)total);
    };
    const sonata::FeaturizeSummary summary = sonata::featurize_clips(clips, config, out, options);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr,
                 "%sfeaturize: %lld clips written (%.0f s of audio, %.0fx real time), "
                 "%lld already there, in %s\n",
                 tty ? "\n" : "", (long long)summary.written, summary.seconds_of_audio,
                 summary.seconds_of_audio / std::max(seconds, 1e-9), (long long)summary.reused,
                 out.c_str());
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "\nfeaturize: %s\n", error.what());
    return 1;
  }
}
