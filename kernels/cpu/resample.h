#pragma once
// Band-limited resampling of one mono signal, equal to torchaudio 0.13's
// torchaudio.functional.resample with its defaults (sinc_interpolation with a Hann window,
// lowpass_filter_width 6, rolloff 0.99).
//
// With the rates divided by their gcd (orig O, new N), output sample i = m*N + j is a dot
// product of phase j's filter with the input around m*O, the input zero outside [0, length):
//   y[m*N + j] = sum_k h_j[k] x[m*O + k - width],  k in [0, 2*width + O),
//   h_j[k] = sinc(t) * cos(pi*t / (2*L))^2 * base / O,  t = base * ((k - width)/O - j/N),
//   base = min(O, N) * rolloff,  width = ceil(L * O / base),  L = lowpass_filter_width,
// where sinc(t) = sin(pi*t)/(pi*t) and t is clamped to [-L, L] (so taps past it are ~0).
// The output has ceil(N * length / O) samples. Equal rates give the input back unchanged, as
// torchaudio does (no low-pass).
#include <cstdint>
#include <vector>

namespace sonata::kernels::cpu {

// The polyphase filter bank of one rate pair; build it once and reuse it for every signal.
// Only the taps with |t| < L are stored: torchaudio's [N, 2*width + O] bank is mostly
// clamped taps of ~1e-40, and for rates with a small gcd (44100 -> 16000: O = 441) keeping
// them would multiply the work by ten or more.
struct ResampleFilter {
  int64_t orig = 1, target = 1;  // the rates divided by their gcd (O and N above)
  int64_t width = 0;             // torchaudio's padding: taps reach `width` samples back
  bool identity = true;          // equal rates: a copy
  int64_t stride = 0;            // floats per phase in `weights`
  std::vector<int64_t> first;    // [N] offset of phase j's first stored tap from m*O - width
  std::vector<int64_t> count;    // [N] its number of stored taps (<= stride)
  std::vector<float> weights;    // [N, stride], zero past count[j]
};

// Throws sonata::Error unless both rates and lowpass_filter_width are positive and
// 0 < rolloff <= 1.
ResampleFilter make_resample_filter(int64_t orig_rate, int64_t new_rate,
                                    int64_t lowpass_filter_width = 6, double rolloff = 0.99);

// ceil(new_rate * length / orig_rate), torchaudio's output length (the input length for
// equal rates).
int64_t resampled_length(int64_t length, int64_t orig_rate, int64_t new_rate);

// y (resampled_length(length, ...) floats, not aliasing x) = x resampled by `filter`.
// Accumulates in double; OpenMP over output samples for signals long enough to pay for it.
void resample(const ResampleFilter& filter, const float* x, int64_t length, float* y);

}  // namespace sonata::kernels::cpu
