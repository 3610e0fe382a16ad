#pragma once
// --bad-input: the trainer's side of the datasets' bad-input rule (data/manifest/input_policy.h):
// the policy from the options, and the skipped inputs named at the start of the run and
// counted in metrics.jsonl (Task::data_report).
#include <string>
#include <vector>

#include "data/manifest/input_policy.h"
#include "tools/trainer/task.h"
#include "tools/trainer/trainer_options.h"

namespace sonata {

// --bad-input and --max-duration.
InputPolicy input_policy(const TrainerOptions& options);

// Adds one split's skipped inputs to `report`: a line naming the first few and the count
// (`noun`: "clips", "tracks"), and the count as "<split>_skipped" (0 included, so that
// metrics.jsonl says the check ran).
void report_skipped(DataReport& report, const std::string& split, const char* noun,
                    const std::vector<std::string>& reasons);

}  // namespace sonata
