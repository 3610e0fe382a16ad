#include <chrono>

#include "base/error.h"
#include "base/nvtx.h"
#include "base/range_report.h"
#include "bench/bench_work.h"
#include "bench/layer_passes.h"
#include "engine/allocator.h"
#include "engine/device.h"

namespace sonata {

double time_steps(const BenchOptions& options, const std::function<void()>& step) {
  // Each step an NVTX range named as the trainer's, so that Nsight and the emulated profile
  // (tools/profile/emu_profile.py) find the steps of a benchmark as of a training run.
  auto marked_step = [&] {
    SONATA_NVTX_RANGE("sonata::step");
    step();
  };
  for (int i = 0; i < options.warmup; ++i) marked_step();
  device_synchronize(options.device);  // timing only, outside any step
  if (options.device.is_cuda())
    cuda_reset_peak_memory_stats(options.device.index);
  else
    cpu_reset_peak_memory_stats();
  // Only the timed steps are profiled: warm-up's first-call costs (pages, plans) are not
  // what a training run spends its time on.
  if (!options.range_times.empty()) range_times_enable(true);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < options.steps; ++i) marked_step();
  device_synchronize(options.device);
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  if (!options.range_times.empty()) {
    range_times_enable(false);
    write_range_times(options.range_times, elapsed.count());
  }
  return elapsed.count() / options.steps;
}

}  // namespace sonata

namespace sonata {

void add_step_peak_share(BenchFields& fields, const BenchOptions& options,
                         const LayerSequence& layers, const LayerValue& input, double seconds) {
  if (!options.device.is_cpu()) return;
  const bench::LayerPassOptions passes{options.work, options.layers, options.quick,
                                       options.fma_peak_gfma};
  const double multiply_adds = bench::step_multiply_adds(layers, input, passes);
  const double gfma = multiply_adds / seconds / 1e9;
  fields.emplace_back("step_multiply_adds", str(multiply_adds));
  fields.emplace_back("step_gfma_per_s", str(gfma));
  if (options.fma_peak_gfma > 0) {
    fields.emplace_back("fma_peak_gfma", str(options.fma_peak_gfma));
    fields.emplace_back("peak_share", str(gfma / options.fma_peak_gfma));
  }
}

}  // namespace sonata
