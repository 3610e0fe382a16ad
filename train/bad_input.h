#pragma once
// --bad-input: the trainer's side of the datasets' bad-input rule (data/manifest/input_policy.h):
// the policy from the options, and the skipped inputs named at the start of the run and
// counted in metrics.jsonl (Task::data_report).
#include <string>
#include <vector>

#include "data/manifest/input_policy.h"
#include "train/task.h"

namespace sonata {

struct TrainerOptions;

// --bad-input and --max-duration (its default: kSpeechMaxDuration for ds2, none for
// vgg19_bn, whose tracks are cut into slices).
InputPolicy input_policy(const TrainerOptions& options);

// Adds one split's skipped inputs to `report`: a line naming the first ten and the count
// (`noun`: "clips", "tracks"), and the count as "<split>_skipped" (0 included, so that
// metrics.jsonl says the check ran), the ten as "<split>_skipped_first".
void report_skipped(DataReport& report, const std::string& split, const char* noun,
                    const std::vector<std::string>& reasons);

// Adds one split's inputs over --max-duration to `report`: their count as "<split>_too_long"
// (0 included), and when there are any one warning naming the longest.
void report_too_long(DataReport& report, const std::string& split,
                     const std::vector<TooLong>& inputs, const InputPolicy& policy);

// For the task's one-line description: " (N bad <noun> skipped, the first: <reason>; M longer
// than --max-duration S s)", or "" when none was skipped.
std::string skipped_text(const std::vector<std::string>& reasons,
                         const std::vector<TooLong>& too_long, const char* noun,
                         const InputPolicy& policy);

}  // namespace sonata
