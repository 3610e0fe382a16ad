#pragma once
// kernels/common/online_softmax.h on the device: the warp shuffle the line allreduces need
// for a MaxSum state. Included by .cu files only.
#include "kernels/common/online_softmax.h"
#include "kernels/cuda/launch.cuh"

namespace sonata::kernels {

// Found by argument-dependent lookup from warp_allreduce.
template <typename C>
__device__ __forceinline__ MaxSum<C> shfl_xor(MaxSum<C> s, int lane_mask) {
  return {__shfl_xor_sync(cuda::kFullWarp, s.max, lane_mask),
          __shfl_xor_sync(cuda::kFullWarp, s.sum, lane_mask)};
}

}  // namespace sonata::kernels
