// The emulated profile's self-test kernels (profile_kernels.h).
#include "kernels/profile_kernels.h"

#include <cuda_runtime.h>

namespace sonata::emu::test {

#define LAUNCH(kernel, grid, block, shared, ...)                                             \
  ::sonata::emu::launch_kernel(reinterpret_cast<const void*>(&kernel), #kernel, grid, block, \
                               shared, nullptr, [=] { kernel(__VA_ARGS__); })

namespace {

__global__ void strided_gather_kernel(const float* in, float* out, int n, int stride) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = in[i * stride];
}

__global__ void broadcast_kernel(const float* in, float* out, int n) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = in[0];
}

__global__ void vector_ldg_kernel(const uint4* in, uint4* out, int n) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = __ldg(&in[i]);
}

__global__ void narrow_copy_kernel(const unsigned short* in, unsigned short* out, int n) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = in[i];
}

__global__ void shared_stride_kernel(float* out, int stride) {
  __shared__ float tile[32 * 32];
  const int lane = int(threadIdx.x);
  tile[lane * stride] = float(lane);
  __syncthreads();
  out[lane] = tile[lane * stride];
}

unsigned blocks_for(int n) {
  return unsigned((n + 127) / 128);
}

}  // namespace

cudaError_t strided_gather(const float* in, float* out, int n, int stride) {
  return LAUNCH(strided_gather_kernel, dim3(blocks_for(n)), dim3(128), 0, in, out, n, stride);
}
cudaError_t broadcast(const float* in, float* out, int n) {
  return LAUNCH(broadcast_kernel, dim3(blocks_for(n)), dim3(128), 0, in, out, n);
}
cudaError_t vector_ldg(const uint4* in, uint4* out, int n) {
  return LAUNCH(vector_ldg_kernel, dim3(blocks_for(n)), dim3(128), 0, in, out, n);
}
cudaError_t narrow_copy(const unsigned short* in, unsigned short* out, int n) {
  return LAUNCH(narrow_copy_kernel, dim3(blocks_for(n)), dim3(128), 0, in, out, n);
}
cudaError_t shared_stride(float* out, int stride) {
  return LAUNCH(shared_stride_kernel, dim3(1), dim3(32), 0, out, stride);
}

}  // namespace sonata::emu::test
