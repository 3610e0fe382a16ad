#pragma once
#if defined(__CUDA_PROFILER_API_H__) && !defined(SONATA_EMU_CUDA_PROFILER_API_H)
#error \
    "the CUDA toolkit's cuda_profiler_api.h was included before the emulator's (emu/include): a CUDA header that emu/include lacks pulled it in; add that header to emu/include"
#endif
// The toolkit's include guard, so that a toolkit header included later finds this one.
#define __CUDA_PROFILER_API_H__
#define SONATA_EMU_CUDA_PROFILER_API_H
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
