#pragma once
// Pipeline schedules: the order in which one stage runs the forwards and backwards of M
// micro-batches.
//   gpipe - every forward, then every backward (GPipe).
//   1f1b  - stage s of S runs min(S - s - 1, M) forwards ahead, then alternates one forward
//           and one backward, then drains the backwards (PipeDream-Flush / Megatron's
//           non-interleaved schedule): at most S - s micro-batches' activations live at once.
// Both run backwards in micro-batch order 0..M-1, so gradients accumulate in the order of one
// process running the micro-batches one after another.
#include <string>
#include <vector>

namespace sonata {

enum class PipelineSchedule { gpipe, one_f_one_b };

struct PipeAction {
  enum class Kind { forward, backward };
  Kind kind;
  int micro_batch;
  bool operator==(const PipeAction&) const = default;
};

std::vector<PipeAction> schedule_actions(PipelineSchedule schedule, int stage, int stages,
                                         int micro_batches);

// "gpipe" or "1f1b"; parse throws naming the text otherwise.
PipelineSchedule parse_schedule(const std::string& name);
const char* schedule_name(PipelineSchedule schedule);

// The share of a step each stage idles in an ideal pipeline: (S - 1) / (M + S - 1).
double ideal_bubble(int stages, int micro_batches);

}  // namespace sonata
