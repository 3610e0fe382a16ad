#pragma once
// Resampling of mono float signals as torchaudio.functional.resample(waveform, from, to) does
// with its defaults (windowed sinc, lowpass_filter_width 6, rolloff 0.99; see
// kernels/cpu/resample.h for the filter). Each rate pair's filter bank is built once and kept
// for the life of the process, shared by every thread.
#include <cstdint>
#include <span>
#include <vector>

namespace sonata {

// ceil(to_rate * length / from_rate) samples; equal rates give `samples` back unchanged.
// Throws sonata::Error naming the rates unless both are positive. Safe to call from many
// threads at once.
std::vector<float> resample(std::span<const float> samples, int64_t from_rate, int64_t to_rate);

// The number of samples resample(...) returns for `length` input samples.
int64_t resampled_length(int64_t length, int64_t from_rate, int64_t to_rate);

}  // namespace sonata
