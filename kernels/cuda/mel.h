#pragma once
// The log-mel front end of a batch of clips on CUDA, equal to kernels/cpu/mel.h's
// mel_spectrogram_batch followed by data/features' finish() (top_db, normalisation):
//   1. framing: clip b's frame f (torch.stft's placement, center padding by reflect or zeros
//      computed in the kernel) times the window, into rows [b * max_frames + f] of n_fft;
//   2. one-sided DFT of every row: a batched cuFFT R2C plan, cached per (device, stream,
//      n_fft, rows per execution) in a bounded LRU cache; an evicted plan is destroyed once
//      an event recorded after its last execution has completed (no device-wide sync);
//   3. |X|^power;
//   4. the filterbank as one SGEMM: power [rows, bins] x filterbank [bins, n_mels] (full
//      fp32 unless --tf32 all, as torchaudio's matmul under allow_tf32; the 1e-4 parity
//      holds in the default mode);
//   5. log(y + offset) or dB, rows past a clip's frame count set to 0;
//   6. when asked, top_db per clip and per-utterance / per-feature normalisation, one block
//      per clip (per (clip, mel) for per-feature), statistics in double as on the CPU.
// Everything is asynchronous on `stream`; the pointers are device memory; the caller owns
// every buffer (the engine's caching allocator gives them), this file only the cuFFT plans.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace sonata::kernels::cuda {

enum class MelPadding { reflect, constant };
enum class MelLogKind { none, log, db };
enum class MelNormalize { none, utterance, per_feature };

struct LogMelConfig {
  int64_t n_fft = 400;
  int64_t hop_length = 200;
  bool center = true;
  MelPadding padding = MelPadding::reflect;
  int64_t n_mels = 80;
  float power = 2.0f;
  MelLogKind log = MelLogKind::log;
  float log_offset = 1e-6f;
  float db_multiplier = 10.0f;  // 10 for power spectra, 20 for magnitudes
  float db_amin = 1e-10f;
  float top_db = -1.0f;  // MelLogKind::db only; negative: no floor
  MelNormalize normalize = MelNormalize::none;

  int64_t bins() const { return n_fft / 2 + 1; }
};

// torch.stft's frame count for a clip of `length` samples (0 when shorter than one frame).
int64_t mel_frame_count(const LogMelConfig& config, int64_t length);

// The batch: clip b's samples start at samples + b * sample_stride; its length and frame
// count (mel_frame_count of the length) are in device arrays. Output rows are
// [clips * max_frames, n_mels], clip b's frame f at row b * max_frames + f.
struct LogMelBatch {
  int64_t clips = 0;
  int64_t sample_stride = 0;
  int64_t max_frames = 0;
  const int64_t* lengths = nullptr;  // [clips], device
  const int64_t* frames = nullptr;   // [clips], device
};

// Floats of device workspace that log_mel needs for `clips * max_frames` rows (frames, then
// the complex spectrum; the power reuses the frames' space).
int64_t log_mel_workspace_floats(const LogMelConfig& config, int64_t rows);

// The cuFFT plan cache's bound (at least 1; 32 by default): each DFT size and rows-per-
// execution chunk per stream takes one entry.
inline constexpr size_t kDefaultFftPlanCacheCapacity = 32;
void set_fft_plan_cache_capacity(size_t capacity);
struct FftPlanCacheStats {
  size_t cached = 0;   // plans in the cache
  size_t retired = 0;  // evicted plans whose last execution has not completed yet
};
// Also destroys the retired plans that are ready.
FftPlanCacheStats fft_plan_cache_stats();

// `window`: [n_fft] (the periodic Hann, zero-padded as the CPU's hann_window);
// `filterbank`: [bins, n_mels] row-major f32; `out`: [clips * max_frames, n_mels].
// `host_lengths` (clips values) are the same lengths as batch.lengths, read on the host to
// check each clip suits the padding, as the CPU front end does.
void log_mel(const LogMelConfig& config, const float* window, const float* filterbank,
             const float* samples, const LogMelBatch& batch, const int64_t* host_lengths,
             float* workspace, float* out, cudaStream_t stream);

}  // namespace sonata::kernels::cuda
