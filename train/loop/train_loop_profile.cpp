// Profiling a run: --profile-steps (the CUDA profiler's capture around a range of steps;
// NVTX marks every step regardless) and --range-times (host time per NVTX range, written at
// the end).
#include <string>

#include "base/error.h"
#include "base/nvtx.h"
#include "base/range_report.h"
#include "engine/device.h"
#include "train/loop/train_loop_run.h"

namespace sonata {

void TrainingRun::start_profiling() {
  profiling_ = profiler_capture_start();
  progress_.print(profiling_ ? str("profiling steps ", profile_first_, " to ", profile_last_,
                                   " (cudaProfilerStart)")
                             : str("--profile-steps: no CUDA profiler capture in this run (",
                                   device_.is_cuda() ? "the call failed" : "not on a GPU",
                                   "); NVTX ranges still mark every step"));
}

void TrainingRun::stop_profiling() {
  if (!profiling_) return;
  device_synchronize(device_);  // the captured steps' kernels finish inside the capture
  profiler_capture_stop();
  profiling_ = false;
}

void TrainingRun::write_range_report() {
  if (o_.range_times.empty()) return;
  range_times_enable(false);
  const std::string path = world_ > 1 ? str(o_.range_times, ".rank", rank_) : o_.range_times;
  write_range_times(path, seconds_since(run_start_));
  progress_.print(str("host time per range in ", path));
}

}  // namespace sonata
