#include "comm/pipeline/schedule.h"

#include <algorithm>

#include "base/error.h"

namespace sonata {

std::vector<PipeAction> schedule_actions(PipelineSchedule schedule, int stage, int stages,
                                         int micro_batches) {
  SONATA_CHECK(stages >= 1 && stage >= 0 && stage < stages, "pipeline: stage ", stage,
               " does not exist in a pipeline of ", stages);
  SONATA_CHECK(micro_batches >= 1, "pipeline: --micro-batches ", micro_batches,
               " must be at least 1");
  using Kind = PipeAction::Kind;
  std::vector<PipeAction> actions;
  if (schedule == PipelineSchedule::gpipe) {
    for (int m = 0; m < micro_batches; ++m) actions.push_back({Kind::forward, m});
    for (int m = 0; m < micro_batches; ++m) actions.push_back({Kind::backward, m});
    return actions;
  }
  const int warmup = std::min(stages - stage - 1, micro_batches);
  int forward = 0, backward = 0;
  for (; forward < warmup; ++forward) actions.push_back({Kind::forward, forward});
  for (; forward < micro_batches; ++forward, ++backward) {
    actions.push_back({Kind::forward, forward});
    actions.push_back({Kind::backward, backward});
  }
  for (; backward < micro_batches; ++backward) actions.push_back({Kind::backward, backward});
  return actions;
}

PipelineSchedule parse_schedule(const std::string& name) {
  if (name == "gpipe") return PipelineSchedule::gpipe;
  if (name == "1f1b") return PipelineSchedule::one_f_one_b;
  throw Error(str("pipeline: unknown schedule '", name, "' (gpipe or 1f1b)"));
}

const char* schedule_name(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::gpipe ? "gpipe" : "1f1b";
}

double ideal_bubble(int stages, int micro_batches) {
  return double(stages - 1) / double(micro_batches + stages - 1);
}

}  // namespace sonata
