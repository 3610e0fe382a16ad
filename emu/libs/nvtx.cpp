// NVTX without a profiler: push and pop keep the per-thread nesting depth NVTX returns, and
// the emulated profile (SONATA_EMU_PROFILE) records them, as Nsight Systems shows ranges.
#include <nvtx3/nvToolsExt.h>

#include "emu/runtime/profile.h"

#include <atomic>

namespace {
thread_local int depth = 0;
std::atomic<uint64_t> next_range{1};
}  // namespace

int nvtxRangePushA(const char* name) {
  sonata::emu::profile::range_push(name);
  return depth++;
}
int nvtxRangePop(void) {
  if (depth == 0) return -1;  // NVTX's answer to a pop without a push
  sonata::emu::profile::range_pop();
  return --depth;
}
void nvtxMarkA(const char*) {}
nvtxRangeId_t nvtxRangeStartA(const char*) {
  return next_range++;
}
void nvtxRangeEnd(nvtxRangeId_t) {}
void nvtxNameOsThreadA(uint32_t, const char*) {}
