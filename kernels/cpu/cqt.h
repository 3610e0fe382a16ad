#pragma once
// The constant-Q filter bank and its magnitude response (data/features/cqt.h says which
// definition and why). Bin k is a Hann-windowed complex exponential at f_k = fmin 2^(k / bpo):
// n_k taps, scaled so that the response is librosa.cqt's with scale=True,
//   |C[k, t]| = sqrt(L_k) / sum(w_k) |sum_j w_k[j] e^(i 2 pi f_k j / sr) x[t hop - n_k / 2 + j]|
// (n_k / 2 rounded down, x zero outside the clip), computed directly in the time domain at the
// clip's own rate for every bin: no octave-by-octave downsampling.
#include <cstdint>
#include <vector>

namespace sonata::kernels::cpu {

struct CqtBank {
  int64_t bins = 0;
  int64_t longest = 0;              // the most taps of any bin (the lowest)
  std::vector<int64_t> taps;        // n_k
  std::vector<int64_t> first;       // where bin k's taps start in re / im
  std::vector<float> re, im;        // w_k[j] cos, w_k[j] sin, times sqrt(L_k) / sum(w_k)
  std::vector<double> lengths;      // L_k = Q sr / f_k, librosa's wavelet_lengths
  std::vector<double> frequencies;  // f_k
};

// librosa 0.10's filters.wavelet (window "hann", filter_scale 1, gamma 0, norm 1) for
// `bins` geometric frequencies from fmin, with its relative bandwidth
// alpha = (2^(2 / bpo) - 1) / (2^(2 / bpo) + 1), Q = 1 / alpha, and taps
// n_k = floor(L_k / 2) - floor(-L_k / 2) of the periodic Hann window.
CqtBank make_cqt_bank(double sample_rate, double fmin, int64_t bins, int64_t bins_per_octave);

// Frames of a clip as librosa counts them (centred frames): 1 + length / hop.
int64_t cqt_frame_count(int64_t length, int64_t hop);

// |C| of one clip into out[bins * frames] ([bin][frame]), OpenMP over frames.
void cqt_magnitude(const CqtBank& bank, const float* samples, int64_t length, int64_t hop,
                   float* out);

// librosa.amplitude_to_db(S, ref=np.max, amin=1e-5, top_db) in place on `count` magnitudes:
// 20 log10(max(S, amin) / max(max(S), amin)), floored at -top_db (top_db <= 0: no floor).
void amplitude_to_db_ref_max(float* values, int64_t count, double top_db);

}  // namespace sonata::kernels::cpu
