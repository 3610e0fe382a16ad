#pragma once
// The bad-input rule both datasets follow for an input file that cannot be used: missing,
// unreadable, corrupt, empty, holding a NaN, shorter than the dataset needs (one feature
// frame, one slice), longer than the maximum duration, or a transcript with nothing in the
// vocabulary. Under `stop` the first such input (in manifest order) ends the load with its
// error, one sentence naming the file; under `skip` each is left out, and the reasons are kept
// so the run can name them when it starts and count them (the trainer's --bad-input,
// train/bad_input.h).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/manifest/manifest_file.h"

namespace sonata {

struct InputPolicy {
  bool skip_bad = false;
  double max_duration = 0;  // seconds; 0: no limit
};

// Runs load(i) for every i in [0, count) on `workers` threads. A load that throws
// sonata::Error, or runs out of memory (std::bad_alloc: a header declaring a huge size), marks
// its input bad: under stop that error is rethrown (the lowest bad index's, whatever the
// timing), under skip it is kept. Each error names the input's file, path_of(i): one that does
// not (the allocator's "out of CPU memory allocating N bytes") is prefixed with it. Returns
// each input's error, "" for the inputs that loaded.
std::vector<std::string> load_inputs(int64_t count, int64_t workers, const InputPolicy& policy,
                                     const std::function<std::string(int64_t)>& path_of,
                                     const std::function<void(int64_t)>& load);

// How to read a manifest under `policy`: under skip a listed file that does not exist is
// found when its item loads (and skipped there), not while the manifest is read.
ManifestOptions manifest_options(const InputPolicy& policy);

// The speech task's default --max-duration, in seconds. NeMo's ASR manifests drop clips over
// a max_duration the same way; 40 s keeps every clip of LibriSpeech (its longest, in
// train-other-500, lasts 35.2 s), Common Voice (at most 10 s), FSDD (under 3 s) and the
// demos' synthetic clips, and bounds what one clip costs (a 10-minute clip took 2.7 GB for a
// tiny DS2).
constexpr double kSpeechMaxDuration = 40;

// Whether a clip of `seconds` is longer than the policy's max_duration (a limit is set): such
// a clip is left out and counted, not bad input, so that a default limit never stops a run.
bool over_max_duration(double seconds, const InputPolicy& policy);

// A clip left out for its length.
struct TooLong {
  std::string path;
  double seconds = 0;
};

// "3 clips longer than --max-duration 40 s skipped; the longest: a.wav (600 s)".
std::string describe_too_long(const std::vector<TooLong>& clips, const InputPolicy& policy);

// The positions of `problems` that are empty, in order: the inputs to keep.
std::vector<size_t> good_inputs(const std::vector<std::string>& problems);
// The non-empty problems, in order: the reasons of the inputs skipped.
std::vector<std::string> bad_inputs(const std::vector<std::string>& problems);

}  // namespace sonata
