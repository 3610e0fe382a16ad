// Polyphase resampling on CUDA (see resample.h). Output sample i = m * N + j reads phase j's
// taps and the input from m * O - width + first[j]: neighbouring threads read neighbouring
// stretches of x and (mostly) the same phases, so both stay in L1/L2.
#include "kernels/cuda/resample.h"

#include "base/cuda_check.h"
#include "base/error.h"
#include "base/nvtx.h"
#include "kernels/cuda/launch.cuh"

namespace sonata::kernels::cuda {
namespace {

__global__ void resample_kernel(int64_t n, ResampleFilterView filter, const float* __restrict__ x,
                                int64_t length, float* __restrict__ y) {
  for (int64_t i = thread_index(); i < n; i += thread_count()) {
    const int64_t m = i / filter.target, j = i - m * filter.target;
    const int64_t start = m * filter.orig - filter.width + filter.first[j];
    // Taps on the zero padding before 0 or past the end contribute nothing.
    const int64_t lo = start < 0 ? -start : 0;
    const int64_t hi = min(filter.count[j], length - start);
    const float* h = filter.weights + j * filter.stride;
    double sum = 0;
    for (int64_t k = lo; k < hi; ++k) sum += double(h[k]) * double(x[start + k]);
    y[i] = float(sum);
  }
}

}  // namespace

void resample(const ResampleFilterView& filter, const float* x, int64_t length, float* y,
              int64_t outputs, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::resample");
  SONATA_CHECK(filter.orig > 0 && filter.target > 0 && filter.stride >= 0 && length >= 0,
               "sonata::cuda::resample: a filter from ", filter.orig, " to ", filter.target,
               " or a signal of ", length, " samples is not valid");
  linear_kernel(resample_kernel, 0, stream, outputs, filter, x, length, y);
  CUDA_CHECK_LAUNCH();
}

}  // namespace sonata::kernels::cuda
