#pragma once
// Resampling of mono float signals as torchaudio.functional.resample(waveform, from, to) does
// with its defaults (windowed sinc, lowpass_filter_width 6, rolloff 0.99; see
// kernels/cpu/resample.h for the filter). Each rate pair's filter bank is built once and kept
// for the life of the process, shared by every thread.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/tensor.h"

namespace sonata {

// ceil(to_rate * length / from_rate) samples; equal rates give `samples` back unchanged.
// Throws sonata::Error naming the rates unless both are positive. Safe to call from many
// threads at once.
std::vector<float> resample(std::span<const float> samples, int64_t from_rate, int64_t to_rate);

// The same on a 1-D f32 tensor, the result on its device: on CUDA one thread per output
// sample (kernels/cuda/resample.h) with the filter bank uploaded once per rate pair and
// device, asynchronous on the current stream; on the CPU the function above. Equal rates give
// a copy. Throws sonata::Error for a tensor of another shape or dtype, and for a CUDA tensor in
// a build without CUDA.
Tensor resample(const Tensor& samples, int64_t from_rate, int64_t to_rate);

// The number of samples resample(...) returns for `length` input samples.
int64_t resampled_length(int64_t length, int64_t from_rate, int64_t to_rate);

}  // namespace sonata
