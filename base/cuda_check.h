#pragma once
// Check macros for the CUDA runtime, cuBLAS and cuFFT, and the post-launch check. Include
// only from CUDA-enabled code.
#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <cufft.h>

#include "base/error.h"

namespace sonata {
inline const char* describe_cuda(cudaError_t status) {
  return cudaGetErrorString(status);
}
inline const char* describe_cublas(cublasStatus_t status) {
  return cublasGetStatusString(status);
}
const char* describe_cufft(cufftResult status);
}  // namespace sonata

#define CUDA_CHECK(call) SONATA_LIB_CHECK("CUDA", call, cudaSuccess, ::sonata::describe_cuda)
#define CUBLAS_CHECK(call) \
  SONATA_LIB_CHECK("cuBLAS", call, CUBLAS_STATUS_SUCCESS, ::sonata::describe_cublas)
#define CUFFT_CHECK(call) SONATA_LIB_CHECK("cuFFT", call, CUFFT_SUCCESS, ::sonata::describe_cufft)
// After every kernel launch: catches bad launch configurations at their launcher.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
