#pragma once
// The grid runner: one piece of work per launch runs every block of the grid, one block
// after another, on the host thread that drives the emulated device. Each CUDA thread is
// a fiber (emu/exec/fiber.h); fibers switch only at barriers and warp collectives, and
// between those points the threads of a block run in a seeded order (SONATA_EMU_SEED).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "driver_types.h"
#include "emu/include/vector_types.h"

namespace sonata::emu::exec {

struct GridLaunch {
  const void* kernel = nullptr;
  std::string name;
  dim3 grid, block;
  size_t dynamic_shared_bytes = 0;
  std::function<void()> body;
  uint64_t seed = 1;
};

// Runs the grid; a check that fails reports a device fault (report_device_fault) and stops
// the grid.
void run_grid(const GridLaunch& launch);

// What the memory checks need to know about the CUDA thread running now.
struct ThreadClock {
  uint32_t thread = 0;        // linear thread index in the block
  uint32_t lane_epoch = 0;    // advances at each warp collective the thread takes part in
  uint32_t interval = 0;      // the block's barrier interval, unique over the process
  uint32_t block_serial = 0;  // the block, unique over the process
};

// True while a CUDA thread's fiber runs on this host thread: the __tsan_* hooks return at
// once otherwise. Initial-exec TLS: one load, no call.
extern __thread bool t_in_kernel __attribute__((tls_model("initial-exec")));
extern __thread ThreadClock t_clock __attribute__((tls_model("initial-exec")));

// Reports a failed check for the running CUDA thread (message: compute-sanitizer's layout,
// naming the check, the kernel, the block and the thread, then `detail` lines) and marks
// the grid as faulted. The caller then calls stop_thread(), after its own strings are
// gone: a stopped fiber is abandoned, never unwound, so whatever its frames own leaks.
void report_fault(cudaError_t error, const std::string& check, const std::string& detail);
// Leaves the running CUDA thread for good (after report_fault): the host stops the grid.
[[noreturn]] void stop_thread();

// Empties the cache of device memory known to pass the checks (emu/exec/tsan_hooks.cpp);
// called at each grid start, since frees and copies happen between grids.
void reset_access_cache();

// The dynamic shared memory of the running launch and the limit on static shared memory.
size_t current_dynamic_shared_bytes();

}  // namespace sonata::emu::exec
