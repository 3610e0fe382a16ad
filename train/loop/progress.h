#pragma once
// What a run shows while it trains. On a terminal (--progress bar, or auto on a tty): one
// line redrawn in place,
//   epoch 3/12 [########------------] 61/150  loss 0.412  lr 1.2e-03  310 utt/s  wait 2%  ETA 4:31
// with other output (evaluations, warnings) printed above it. Off a terminal (--progress
// lines, or auto when stderr is a file): the same figures as a plain line now and then.
#include <cstdint>
#include <string>

#include "train/option_modes.h"

namespace sonata {

struct ProgressState {
  int64_t epoch = 0, epochs = 0;  // 0-based epoch, and how many
  int64_t step_in_epoch = 0, steps_in_epoch = 0;
  int64_t step = 0, total_steps = 0;  // optimizer steps over the run
  double loss = 0, lr = 0;
  double items_per_second = 0;
  const char* item_name = "items";
  double data_wait_share = 0;  // of the wall time, waiting for batches
  double eta_seconds = -1;
};

class Progress {
 public:
  // mode: auto | bar | lines | none (no bar, no lines, only notices) | off (nothing: a rank
  // that does not speak for the run). Lines are printed every `line_every` steps.
  Progress(ProgressMode mode, int64_t line_every);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void update(const ProgressState& state);  // bar: redraw; lines: called at log points
  void print(const std::string& line);      // to stdout, above the bar
  // What the user must see whatever --progress says (a stop, a changed option on resume):
  // as print(), and under none to stderr.
  void notice(const std::string& line);
  void finish();  // ends the bar's line

 private:
  void clear();

  bool quiet_ = false;   // none: not even print()
  bool silent_ = false;  // off: not even notice()
  bool bar_ = false, lines_ = false;
  bool drawn_ = false;
  int64_t line_every_ = 1;
  std::string last_;
};

std::string format_duration(double seconds);  // 75 -> "1:15", 3700 -> "1:01:40"

}  // namespace sonata
