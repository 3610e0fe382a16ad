#pragma once
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
