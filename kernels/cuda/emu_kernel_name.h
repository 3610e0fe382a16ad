#pragma once
// Emulated build only (SONATA_CUDA_EMU): the name of a kernel, from its address, for the
// emulator's messages ("out of bounds in kernel ctc_alpha_kernel<float, float>, block ...").
// The kernels live in anonymous namespaces, so the dynamic symbol table does not know them:
// the executable's own symbol table is read once.
namespace sonata::kernels::cuda {

// The demangled name without parameters, or "kernel at 0x..." when the symbol table does not
// have it (a stripped binary). The string lives as long as the process.
const char* emu_kernel_name(const void* kernel);

}  // namespace sonata::kernels::cuda
