#pragma once
// Counters of the emulated libraries' calls, for tests that check how often sonata makes an
// expensive call (issue #37 item 2: how many host-blocking cudnnFind searches an epoch runs).
#include <cstdint>
#include <string>

namespace sonata::emu {

// cudnnFind*AlgorithmEx calls since the process started (or the last reset), all handles.
int64_t cudnn_find_calls();
// cufftDestroy calls that synchronised the device (the plan had an auto-allocated work area).
int64_t cufft_device_syncs();
// cuFFT plans whose work area the library allocated itself with cudaMalloc.
int64_t cufft_auto_allocations();
void reset_library_counters();

// The last message an emulated library logged on the calling thread (also on stderr), e.g.
// why a call failed: "cuFFT: cufftExecR2C: plan 3 has no work area ...".
std::string last_library_message();

}  // namespace sonata::emu
