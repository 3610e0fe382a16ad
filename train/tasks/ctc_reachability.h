#pragma once
// CTC aligns a transcript only within enough output frames: one per label, plus a blank
// between two equal neighbours ("aa" needs a, blank, a). A clip with fewer has an infinite
// loss, which zero_infinity turns into 0 and no gradient: it silently teaches nothing. The
// trainer finds such clips at start (SpeechTask::data_report) to make that silence visible.
#include <cstdint>
#include <string>
#include <vector>

namespace sonata {

// The fewest output frames CTC needs to align `targets`.
int64_t ctc_min_frames(const std::vector<int64_t>& targets);

// For clips given as parallel lists (audio path, targets, output frames of the model), one
// line for each clip CTC cannot align: "<path>: 12 labels need 13 frames, the model gives 5".
std::vector<std::string> ctc_unreachable_clips(const std::vector<std::string>& paths,
                                               const std::vector<std::vector<int64_t>>& targets,
                                               const std::vector<int64_t>& output_frames);

}  // namespace sonata
