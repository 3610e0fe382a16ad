#pragma once
#if defined(NVTX_VERSION) && !defined(SONATA_EMU_NVTX3_NVTOOLSEXT_H)
#error \
    "the CUDA toolkit's nvtx3/nvToolsExt.h was included before the emulator's (emu/include): put emu/include first"
#endif
// The toolkit's include guard, so that a toolkit header included later finds this one.
#define NVTX_VERSION 3
#define SONATA_EMU_NVTX3_NVTOOLSEXT_H
// The emulator's NVTX: ranges and marks are recorded per host thread (nesting depth, as
// NVTX returns it) and otherwise ignored; there is no profiler to show them.
#include <cstdint>

int nvtxRangePushA(const char* message);
int nvtxRangePop(void);
void nvtxMarkA(const char* message);
typedef uint64_t nvtxRangeId_t;
nvtxRangeId_t nvtxRangeStartA(const char* message);
void nvtxRangeEnd(nvtxRangeId_t id);
void nvtxNameOsThreadA(uint32_t threadId, const char* name);
