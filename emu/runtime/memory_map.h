#pragma once
// Every live device and pinned-host allocation of the emulated devices, with a shadow of
// which bytes were ever written (compute-sanitizer's initcheck). The kernel executor checks
// each load and store of kernel code here; copies and library calls check their ranges.
#include <cstddef>
#include <cstdint>
#include <string>

namespace sonata::emu {

enum class AccessKind { read, write };

enum class AccessVerdict {
  ok,
  outside_device_memory,  // not in the device arena: host memory, a stack, shared memory
  out_of_bounds,          // in the device arena but in no live allocation
  freed,                  // in an allocation freed (in stream order) before this access
  uninitialised,          // a read of bytes no copy, memset or kernel ever wrote
};

struct AccessCheck {
  AccessVerdict verdict = AccessVerdict::ok;
  std::string detail;  // for errors: the allocation's base, size and device, and the offset
};

// Checks `bytes` bytes at `address` for `kind`; a write marks them initialised. Thread-safe.
// `address` outside every emulated allocation and outside the device arena is
// outside_device_memory: the caller decides whether that is legal (a kernel's own stack is).
AccessCheck check_access(const void* address, size_t bytes, AccessKind kind);

// Whether a read of `bytes` at `address` would pass (live, in bounds, initialised), with no
// side effect and no message: the executor's probe of a whole granule for its cache, which
// fails often (a granule past a buffer's end, an output not yet written), so building
// check_access's message for it dominated the emulated tests' time.
bool readable(const void* address, size_t bytes);

// Whether `address` lies in the device arena (where cudaMalloc'd memory lives); cheap, for
// the executor's fast path.
bool in_device_arena(const void* address);

}  // namespace sonata::emu
