#pragma once
// The emulator's cuda_runtime.h: the runtime API (emu-runtime's cuda_runtime_api.h), the
// built-in vector types and variables, and the device-side language (qualifiers,
// barriers, warp intrinsics, atomics, math intrinsics) that kernels compiled by g++ use.
// The path names the emulator's own header, never a CUDA toolkit's that may be installed.
#if __has_include("../../emu/include/cuda_runtime_api.h")
#include "../../emu/include/cuda_runtime_api.h"
#define SONATA_EMU_HAS_RUNTIME_API 1
#endif
#include "device_launch_parameters.h"
#include "vector_types.h"

#include "../exec/device_api.h"
#include "../exec/launch.h"

#if defined(SONATA_EMU_HAS_RUNTIME_API) && defined(__cplusplus)
// The C++ overloads the toolkit's cuda_runtime.h adds on top of the C API.
template <class T>
inline cudaError_t cudaMalloc(T** pointer, size_t bytes) {
  return ::cudaMalloc(reinterpret_cast<void**>(pointer), bytes);
}
template <class T>
inline cudaError_t cudaMallocAsync(T** pointer, size_t bytes, cudaStream_t stream) {
  return ::cudaMallocAsync(reinterpret_cast<void**>(pointer), bytes, stream);
}
template <class T>
inline cudaError_t cudaHostAlloc(T** pointer, size_t bytes, unsigned int flags) {
  return ::cudaHostAlloc(reinterpret_cast<void**>(pointer), bytes, flags);
}
template <class T>
inline cudaError_t cudaFuncSetAttribute(T* entry, enum cudaFuncAttribute attribute, int value) {
  return ::cudaFuncSetAttribute(reinterpret_cast<const void*>(entry), attribute, value);
}
template <class T>
inline cudaError_t cudaMallocHost(T** pointer, size_t bytes) {
  return ::cudaMallocHost(reinterpret_cast<void**>(pointer), bytes);
}
#endif
