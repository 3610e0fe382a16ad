#pragma once
// Shared memory as the executor sees it. A __shared__ variable is a static (one block runs
// at a time), and GCC 12 cannot place template statics in a section of our own, so shared
// memory is recognised by address: the writable, non-RELRO static data of the executable
// and of non-system libraries, as touched by kernel code. (Kernel code has no business in
// any other static data: on a card, host statics are not addressable from a kernel.)
//
// Each byte has a shadow for racecheck (two threads, at least one writing, between two
// barriers; accesses of one warp separated by a warp collective are ordered) and initcheck
// (a read of a byte this block never wrote: shared memory starts undefined in every block).
#include <cstddef>
#include <cstdint>

namespace sonata::emu::exec {

enum class SharedAccess : uint8_t { read, write, atomic };

// The hull of the static data treated as shared memory (set by init_shared_memory).
struct SharedHull {
  uintptr_t begin = 0, end = 0;
};
extern SharedHull g_shared_hull;

// Finds the static data ranges (once; called at each grid start, cheap after the first).
void init_shared_memory();

// Whether `address` may be shared memory: one compare against the hull; shared_access
// then looks at the ranges and returns false for an address in none of them.
inline bool maybe_shared(uintptr_t address) {
  return address - g_shared_hull.begin < g_shared_hull.end - g_shared_hull.begin;
}

// Checks and records an access of `bytes` bytes by the running CUDA thread; faults on a
// race, an uninitialised read or a block footprint above the static limit. Returns false
// (and does nothing) when `address` is not shared memory after all.
bool shared_access(uintptr_t address, size_t bytes, SharedAccess kind, const void* pc);

// Whether `address` is shared memory (no check, no record): for the emulated profile.
bool is_shared_address(uintptr_t address);

// Starts a block: limits the static footprint to 48 KiB.
void begin_block_shared(size_t dynamic_shared_bytes);

// The static shared memory a block may use (the card's per-block static limit).
inline constexpr size_t kStaticSharedLimit = 48 * 1024;

}  // namespace sonata::emu::exec
