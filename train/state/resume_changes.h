#pragma once
// What a resume may change from the run that wrote its checkpoint, and what each change does.
// Every option the trainer keeps in a checkpoint's config is either applied from the resumed
// step on (the notes say so, and the trainer does it: hyper-parameters are taken from this
// command line, not from the checkpoint) or refused with one sentence saying how to resume.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sonata {

// `before` and `now` are TrainerOptions::to_json of the checkpoint's run and of this one;
// `step`, `epoch` and `batch` where the checkpoint continues. Throws Error for a change this
// resume cannot honour; otherwise returns a line per changed option.
std::vector<std::string> resume_changes(const nlohmann::json& before, const nlohmann::json& now,
                                        int64_t step, int64_t epoch, int64_t batch);

}  // namespace sonata
