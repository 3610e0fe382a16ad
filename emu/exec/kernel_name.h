#pragma once
// The name of a kernel, from its address, for the emulator's messages ("out of bounds in
// kernel ctc_alpha_kernel<float, float>, block ..."): launch.cuh passes it to launch_kernel.
// The kernels live in anonymous namespaces, so the dynamic symbol table does not know them:
// the executable's own symbol table is read once.
namespace sonata::emu {

// The demangled name without parameters, or "kernel at 0x..." when the symbol table does not
// have it (a stripped binary). The string lives as long as the process.
const char* kernel_name(const void* kernel);

}  // namespace sonata::emu
