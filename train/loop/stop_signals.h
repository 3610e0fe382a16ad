#pragma once
// A scheduler's warning before it kills (Slurm sends SIGTERM, or the signal of
// `sbatch --signal=USR1@120`, before SIGKILL) and Ctrl-C ask a training run to stop cleanly:
// while a StopSignals lives, SIGTERM, SIGUSR1 and a first SIGINT are recorded instead of
// ending the process, and the loop stops after its current step with a checkpoint
// (train_loop.cpp). A second SIGINT ends the process at once, as SIGINT always did.
#include <csignal>

namespace sonata {

class StopSignals {
 public:
  StopSignals();   // installs the handlers, keeping the previous ones
  ~StopSignals();  // puts the previous ones back
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The first stop signal received while one lived (and not yet taken), 0 when none.
  static int received();
  // Forgets it: the run that acted on it is over.
  static void reset();

 private:
  struct sigaction previous_[3] = {};
};

// "SIGTERM", "SIGUSR1", "SIGINT", or "signal N".
const char* stop_signal_name(int signal);

}  // namespace sonata
