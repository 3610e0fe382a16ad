#pragma once
// What cudaFuncSetAttribute recorded for a kernel (keyed by the kernel's address, as the
// runtime keys it), for the launch checks of emu/exec.

namespace sonata::emu {

// The dynamic shared memory a launch of `kernel` may ask for: what
// cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, n) set, or the
// default 48 KiB (49152) when it was never set. The static shared memory of the kernel
// counts against the same limits; the caller checks the sum.
int max_dynamic_shared_bytes(const void* kernel);

}  // namespace sonata::emu
