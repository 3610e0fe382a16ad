#pragma once
// The emulated CUDA profiler API: no profiler attaches to the emulator, so starting and
// stopping a capture range does nothing and succeeds (what the real calls do without one).
#include "driver_types.h"

#ifdef __cplusplus
extern "C" {
#endif

cudaError_t cudaProfilerStart(void);
cudaError_t cudaProfilerStop(void);

#ifdef __cplusplus
}
#endif
