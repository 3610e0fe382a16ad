#pragma once
// Memory figures of a kernel for the emulated profile (emu/runtime/profile.h), as Nsight
// Compute's memory workload analysis counts them: per warp-level instruction ("request"),
// the 32-byte sectors its lanes touched against the fewest that could hold the bytes they
// asked for, and the shared-memory wavefronts (bank conflicts).
//
// The lanes of a warp run one after another between barriers here, not in lockstep, so a
// request is put together afterwards: the n-th access a lane makes at an instruction (its
// return address in the kernel code) joins the n-th access of the warp's other lanes at
// that instruction. Divergent lanes that skip an instruction simply do not take part, as
// on a card; lanes that take a loop a different number of times pair up by iteration.
#include <cstddef>
#include <cstdint>

#include "emu/runtime/profile.h"

namespace sonata::emu::exec {

// Set once, before any kernel runs, when SONATA_EMU_PROFILE is set.
extern bool g_access_profile;

void access_profile_begin_grid();
void access_profile_begin_block(size_t threads_per_block);
// One lane's access; `thread` is the linear index in the block.
void access_profile_record(uint32_t thread, uintptr_t address, size_t bytes, bool write,
                           bool atomic, const void* pc);
void access_profile_end_block();
// The grid's totals (grid, block and shared bytes filled in by the caller).
profile::KernelFigures access_profile_end_grid();

}  // namespace sonata::emu::exec
