#pragma once
// kernels/cpu/resample.h's polyphase filter applied on CUDA: one thread per output sample,
// each a dot product of its phase's stored taps with the input around it, accumulated in
// double as on the CPU (the H200's fp64 rate makes it free here, and the outputs then agree
// with the CPU's to float rounding). Asynchronous on `stream`; pointers are device memory.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace sonata::kernels::cuda {

// A ResampleFilter (kernels/cpu/resample.h) whose arrays live on the device: `first` and
// `count` [target] int64, `weights` [target, stride] f32. Identity filters are not applied
// here (the caller copies).
struct ResampleFilterView {
  int64_t orig = 1, target = 1, width = 0, stride = 0;
  const int64_t* first = nullptr;
  const int64_t* count = nullptr;
  const float* weights = nullptr;
};

// y[i] for i < outputs (resampled_length of `length`) = x resampled by `filter`; y must not
// alias x.
void resample(const ResampleFilterView& filter, const float* x, int64_t length, float* y,
              int64_t outputs, cudaStream_t stream);

}  // namespace sonata::kernels::cuda
