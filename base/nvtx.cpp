#include "base/nvtx.h"

#if SONATA_WITH_CUDA
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#endif

namespace sonata {

#if SONATA_WITH_CUDA
NvtxRange::NvtxRange(const char* name) {
  nvtxRangePushA(name);
}
NvtxRange::~NvtxRange() {
  nvtxRangePop();
}
// Errors are ignored on purpose: without a device the calls fail harmlessly, and profiling
// must never stop a training run. A failure is cleared so that the next launch check does not
// report it as its own.
bool profiler_capture_start() {
  const bool started = cudaProfilerStart() == cudaSuccess;
  if (!started) cudaGetLastError();
  return started;
}
bool profiler_capture_stop() {
  const bool stopped = cudaProfilerStop() == cudaSuccess;
  if (!stopped) cudaGetLastError();
  return stopped;
}
#else
NvtxRange::NvtxRange(const char*) {}
NvtxRange::~NvtxRange() {}
bool profiler_capture_start() {
  return false;
}
bool profiler_capture_stop() {
  return false;
}
#endif

}  // namespace sonata
