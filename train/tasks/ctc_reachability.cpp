#include "train/tasks/ctc_reachability.h"

#include "base/error.h"

namespace sonata {

int64_t ctc_min_frames(const std::vector<int64_t>& targets) {
  int64_t frames = int64_t(targets.size());
  for (size_t i = 1; i < targets.size(); ++i) frames += targets[i] == targets[i - 1];
  return frames;
}

std::vector<std::string> ctc_unreachable_clips(const std::vector<std::string>& paths,
                                               const std::vector<std::vector<int64_t>>& targets,
                                               const std::vector<int64_t>& output_frames) {
  SONATA_CHECK(paths.size() == targets.size() && paths.size() == output_frames.size(),
               "ctc_unreachable_clips: ", paths.size(), " paths, ", targets.size(),
               " transcripts and ", output_frames.size(), " frame counts");
  std::vector<std::string> unreachable;
  for (size_t i = 0; i < paths.size(); ++i) {
    const int64_t need = ctc_min_frames(targets[i]);
    if (output_frames[i] < need)
      unreachable.push_back(str(paths[i], ": ", targets[i].size(), " labels need ", need,
                                " frames, the model gives ", output_frames[i]));
  }
  return unreachable;
}

}  // namespace sonata
