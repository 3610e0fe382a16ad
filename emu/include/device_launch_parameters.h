#pragma once
// CUDA's built-in variables (threadIdx, blockIdx, blockDim, gridDim, warpSize) for the
// emulator. Each reads the running CUDA thread's value through a call into the executor
// (emu/exec/executor.cpp), which is not instrumented: a plain thread-local variable would
// cost a checked access (a __tsan hook) per read in kernel code. The functions are `const`
// (the compiler may reuse a result within a function): a CUDA thread's indices never
// change while it runs, and each fiber sees its own.
#include "vector_types.h"

namespace sonata::emu::exec {
uint3 thread_idx() __attribute__((const));
uint3 block_idx() __attribute__((const));
dim3 block_dim() __attribute__((const));
dim3 grid_dim() __attribute__((const));
}  // namespace sonata::emu::exec

#define threadIdx (::sonata::emu::exec::thread_idx())
#define blockIdx (::sonata::emu::exec::block_idx())
#define blockDim (::sonata::emu::exec::block_dim())
#define gridDim (::sonata::emu::exec::grid_dim())
constexpr int warpSize = 32;
