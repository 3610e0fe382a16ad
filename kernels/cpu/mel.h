#pragma once
// Mel filterbanks as torchaudio builds them (torchaudio.functional.melscale_fbanks, 0.13), and
// the fused log-mel front end: STFT power (kernels/cpu/stft.h) -> filterbank -> log, one block
// of StftPlan::kLanes frames at a time, so nothing bigger than a block leaves the cache.
//
// The filterbank is applied band by band rather than as a dense [frames, bins] x [bins, mels]
// GEMM: each triangular filter covers a few bins (about 2 * bins nonzero weights in all, against
// bins * mels), so the banded sum does ~1/40 of the GEMM's multiply-adds for 201 x 80 and
// needs no [frames, bins] power buffer. Both give the same sums (the skipped weights are 0).
#include <cstdint>
#include <vector>

#include "kernels/cpu/stft.h"

namespace sonata::kernels::cpu {

enum class MelScale { htk, slaney };
enum class MelNorm { none, slaney };  // slaney: each filter scaled to unit area (2 / width)

double hz_to_mel(double hz, MelScale scale);
double mel_to_hz(double mel, MelScale scale);

// [n_freqs, n_mels] row-major, in double: triangles between n_mels + 2 points evenly spaced on
// the mel scale from f_min to f_max, over n_freqs bins evenly spaced from 0 to
// sample_rate // 2 (torchaudio's integer division).
void mel_filterbank(int64_t n_freqs, double f_min, double f_max, int64_t n_mels,
                    int64_t sample_rate, MelScale scale, MelNorm norm, double* out);

// A filterbank stored by its nonzero band per filter.
struct MelBands {
  int64_t n_freqs = 0, n_mels = 0;
  std::vector<int64_t> begin, end;  // filter m covers bins [begin[m], end[m])
  std::vector<int64_t> offset;      // weights of filter m start at weights[offset[m]]
  std::vector<float> weights;

  // From a dense [n_freqs, n_mels] filterbank (mel_filterbank's layout).
  static MelBands from_dense(const double* filterbank, int64_t n_freqs, int64_t n_mels);
};

// What happens to each mel value y before it is stored.
enum class MelLog {
  none,
  log,  // log(y + log_offset)
  db,   // db_multiplier * log10(max(y, db_amin)) (torchaudio's amplitude_to_DB, ref 1)
};
struct MelOutput {
  MelLog log = MelLog::log;
  float log_offset = 1e-6f;
  float db_multiplier = 10.0f;  // 10 for power spectra, 20 for magnitudes
  float db_amin = 1e-10f;
  bool frames_major = true;  // out[frame * n_mels + mel]; else out[mel * frames + frame]
};

// One clip: STFT |X|^power, filterbank, log, into out (frames x n_mels floats, see
// MelOutput::frames_major). The clip must suit the plan's padding (see StftPlan::power_block).
void mel_spectrogram(const StftPlan& plan, const MelBands& bands, const float* samples,
                     int64_t length, float power, const MelOutput& output, float* out);

// Many clips at once: OpenMP over every (clip, block of frames) pair, so short clips in a
// batch still keep every thread busy. outs[c] holds plan.frames(lengths[c]) * n_mels floats.
void mel_spectrogram_batch(const StftPlan& plan, const MelBands& bands, const float* const* samples,
                           const int64_t* lengths, int64_t clips, float power,
                           const MelOutput& output, float* const* outs);

}  // namespace sonata::kernels::cpu
