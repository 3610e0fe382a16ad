#pragma once
// --bad-input, the one rule both tasks follow for an input file that cannot be used: missing,
// unreadable, corrupt, empty, holding a NaN, shorter than the task needs (one feature frame,
// one slice), longer than --max-duration, or a transcript with nothing in the vocabulary.
// Under `stop` the first such input (in manifest order) ends the run with its error, one
// sentence naming the file; under `skip` each is left out, and the reasons are kept so the
// run can name them when it starts and count them in metrics.jsonl (Task::data_report).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/manifest/manifest_file.h"
#include "tools/trainer/task.h"
#include "tools/trainer/trainer_options.h"

namespace sonata {

struct InputPolicy {
  bool skip_bad = false;
  double max_duration = 0;  // seconds; 0: no limit
};

// --bad-input and --max-duration.
InputPolicy input_policy(const TrainerOptions& options);

// Runs load(i) for every i in [0, count) on `workers` threads. A load that throws
// sonata::Error marks its input bad: under stop that error is rethrown (the lowest bad
// index's, whatever the timing), under skip it is kept. Returns each input's error, "" for
// the inputs that loaded.
std::vector<std::string> load_inputs(int64_t count, int64_t workers, const InputPolicy& policy,
                                     const std::function<void(int64_t)>& load);

// How to read a manifest under `policy`: under skip a listed file that does not exist is
// found when its item loads (and skipped there), not while the manifest is read.
ManifestOptions manifest_options(const InputPolicy& policy);

// Throws naming `path` when `seconds` exceeds the policy's --max-duration.
void check_duration(const std::string& path, double seconds, const InputPolicy& policy);

// The positions of `problems` that are empty, in order: the inputs to keep.
std::vector<size_t> good_inputs(const std::vector<std::string>& problems);
// The non-empty problems, in order: the reasons of the inputs skipped.
std::vector<std::string> bad_inputs(const std::vector<std::string>& problems);

// Adds one split's skipped inputs to `report`: a line naming the first few and the count
// (`noun`: "clips", "tracks"), and the count as "<split>_skipped" (0 included, so that
// metrics.jsonl says the check ran).
void report_skipped(DataReport& report, const std::string& split, const char* noun,
                    const std::vector<std::string>& reasons);

}  // namespace sonata
