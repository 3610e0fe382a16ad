#pragma once
// Kernel launch for the emulator: what `kernel<<<grid, block, shared, stream>>>(args...)`
// becomes (kernels/cuda/launch.cuh wraps every launch site in a helper that calls this
// under SONATA_CUDA_EMU).
#include <cstddef>
#include <cstdint>
#include <functional>

#include "../include/driver_types.h"
#include "../include/vector_types.h"

namespace sonata::emu {

// Validates the configuration as an H100 does (threads per block, block and grid extents,
// dynamic shared memory against the function's opt-in) and returns the launch error at
// once, recording it as the calling thread's last error (not sticky). Otherwise enqueues
// one piece of work on `stream` that runs `thread_body` once per CUDA thread of the grid;
// the closure holds the kernel's arguments by value, as CUDA copies them at launch.
// `kernel` identifies the function (for cudaFuncSetAttribute); `kernel_name` is what
// messages name.
cudaError_t launch_kernel(const void* kernel, const char* kernel_name, dim3 grid, dim3 block,
                          size_t dynamic_shared_bytes, cudaStream_t stream,
                          std::function<void()> thread_body);

// Restarts the seeded lane order as at process start with SONATA_EMU_SEED=seed (tests and
// tools that compare orders within one process).
void reset_lane_order(uint64_t seed);

// The card's limits that launch_kernel enforces.
inline constexpr unsigned kMaxThreadsPerBlock = 1024;
inline constexpr unsigned kMaxBlockX = 1024, kMaxBlockY = 1024, kMaxBlockZ = 64;
inline constexpr unsigned kMaxGridX = 2147483647u, kMaxGridYZ = 65535;
inline constexpr size_t kDefaultSharedBytes = 48 * 1024;
inline constexpr size_t kOptInSharedBytes = 227 * 1024;

}  // namespace sonata::emu
