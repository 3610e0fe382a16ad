#pragma once
// The emulated profile (SONATA_EMU_PROFILE=FILE): what Nsight Systems and Nsight Compute
// read on a card, written by the emulator as JSON lines for tools/emu_profile.py.
//
// Host side, in call order (the call site as return addresses, resolved by the tool): each
// piece of work enqueued (kernel launch, library call, copy, memset, free, event marker),
// each driver allocation and free (cudaMalloc, a cudaMallocAsync the pool could not serve,
// cudaFree, a pool trim), each call that blocked the host on device work, and NVTX ranges.
// Device side, in execution order: each piece of work with what it moved and computed
// (kernels: grid, block, shared bytes, global requests, sectors and their ideal count,
// shared-memory wavefronts; library calls: FLOPs and bytes from their documented shapes).
//
// In FILE, "%p" becomes the process id (one file per rank under mpiexec). Off unless set;
// when off every hook returns after one load.
#include <cstddef>
#include <cstdint>
#include <string>

#include "emu/runtime/device_work.h"

namespace sonata::emu::profile {

// Whether a profile is being written.
bool enabled();

// Starts writing a profile to `path` ("%p": the process id) instead of SONATA_EMU_PROFILE's,
// or stops (the file is closed): for the emulator's own tests and for tools that profile a
// part of a run.
void open_profile(const std::string& path);
void close_profile();

// The kernel figures emu/exec gathers while a grid runs (emu/exec/access_profile.h).
struct KernelFigures {
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  size_t dynamic_shared_bytes = 0;
  // Warp-level global memory instructions ("requests"): the bytes their active lanes asked
  // for (each distinct byte once per request), the 32-byte sectors they touched, and the
  // fewest sectors that could hold those bytes.
  uint64_t load_requests = 0, load_bytes = 0, load_sectors = 0, load_ideal_sectors = 0;
  uint64_t store_requests = 0, store_bytes = 0, store_sectors = 0, store_ideal_sectors = 0;
  uint64_t atomic_requests = 0;
  // Lanes' accesses narrower than 4 bytes (a 2-byte element per lane moves a quarter of
  // what a 16-byte vector access moves per instruction).
  uint64_t narrow_lane_accesses = 0, lane_accesses = 0;
  // Shared memory: warp-level requests, the wavefronts the banks need (bank conflicts
  // serialise) and the fewest wavefronts that could serve the same words.
  uint64_t shared_requests = 0, shared_wavefronts = 0, shared_ideal_wavefronts = 0;
};

// The runtime entry point the calling thread is in (api_call sets it), which names a wait.
extern thread_local const char* t_api_call;

// Host side.
void enqueued(uint64_t seq, int device, const void* stream, const Work& work);
void driver_alloc(const char* call, size_t bytes, int device);
void driver_free(const char* call, size_t bytes, int device);
// A call that waited for device work; `pending`: whether any work it waited for had not run.
void host_wait(const char* call, bool pending);
void range_push(const char* name);
void range_pop();

// Device side: around each piece of work the scheduler runs; a kernel's figures arrive in
// between from the thread running it.
void work_started(uint64_t seq, const Work& work);
void kernel_figures(const KernelFigures& figures);
void work_finished();

}  // namespace sonata::emu::profile
