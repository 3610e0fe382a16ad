#pragma once
// The read-only data cache rule: __ldg (ld.global.nc) is allowed only for data that is
// read-only for the whole kernel (CUDA C++ Programming Guide, "Read-Only Data Cache Load
// Function"; PTX ISA, ld.global.nc); on a card a load through it of memory the same kernel
// writes may return stale data, silently. Here every __ldg records its bytes for the grid,
// and from the grid's first __ldg on every global write is checked against them and
// recorded in turn: a write to bytes loaded read-only, or a read-only load of bytes this
// grid wrote, is an error naming the kernel, the block and the thread. (A write that comes
// before the grid's first __ldg is not seen; the block order is seeded, so another seed can
// show it.) Kernels that never call __ldg pay one thread-local load per write.
#include <cstddef>
#include <cstdint>

namespace sonata::emu::exec {

// True once the running grid has made a read-only load.
extern __thread bool t_read_only_used __attribute__((tls_model("initial-exec")));

// __ldg of `bytes` at `address`, from a CUDA thread.
void note_read_only_load(const void* address, size_t bytes, const void* pc);
// A global write of kernel code, while t_read_only_used.
void note_write_after_read_only(uintptr_t address, size_t bytes, const void* pc);
// A new grid: nothing loaded read-only or written yet.
void reset_read_only();

}  // namespace sonata::emu::exec
