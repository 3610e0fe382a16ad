#include <chrono>

#include "engine/allocator.h"
#include "tools/bench/bench_work.h"

#if SONATA_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace sonata {
namespace {

void synchronize(Device device) {
#if SONATA_WITH_CUDA
  if (device.is_cuda()) cudaDeviceSynchronize();  // timing only, outside any step
#else
  (void)device;
#endif
}

}  // namespace

double time_steps(const BenchOptions& options, const std::function<void()>& step) {
  for (int i = 0; i < options.warmup; ++i) step();
  synchronize(options.device);
  if (options.device.is_cuda())
    cuda_reset_peak_memory_stats(options.device.index);
  else
    cpu_reset_peak_memory_stats();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < options.steps; ++i) step();
  synchronize(options.device);
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return elapsed.count() / options.steps;
}

}  // namespace sonata
