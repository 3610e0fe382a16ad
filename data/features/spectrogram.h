#pragma once
// Spectrogram and mel features of mono float clips on the CPU, matching torchaudio's
// Spectrogram / MelSpectrogram (0.13) for the same FeatureConfig: periodic Hann window,
// torch.stft framing (center: 1 + length / hop frames), one-sided |X|^power. The work is
// kernels/cpu/stft.h (a batched mixed-radix FFT) and kernels/cpu/mel.h (banded filterbank,
// log fused); see there for why.
//
// Layouts follow the users: spectrogram and mel_spectrogram are [freq, frames] like
// torchaudio; log_mel is [frames, n_mels], what DS2 consumes ([T, 80]), with the config's log
// and normalisation applied. Every result is a float32 CPU tensor.
//
// log_mel_on / log_mel_batch compute the same log_mel on a CUDA device (kernels/cuda/mel.h:
// cuFFT, the filterbank as one SGEMM, top_db and normalisation as small reductions), within
// 1e-4 of the CPU; in a build without CUDA they throw.
//
// A clip must give at least one frame: center with reflect padding needs more than
// n_fft / 2 samples (as torch.stft), no center needs n_fft; anything shorter throws naming
// the clip's length and the requirement.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "data/features/feature_config.h"
#include "engine/tensor.h"
#include "kernels/cpu/mel.h"
#include "kernels/cpu/stft.h"

namespace sonata {

// The window and filterbank uploaded to each CUDA device on first use (spectrogram_cuda.cpp).
struct FeatureDeviceTables;
std::shared_ptr<FeatureDeviceTables> make_feature_device_tables();

// Builds the window, FFT plan and filterbank once; thread-safe to share.
class FeatureExtractor {
 public:
  explicit FeatureExtractor(const FeatureConfig& config = {});

  const FeatureConfig& config() const { return config_; }
  int64_t frames(int64_t samples) const { return plan_.frames(samples); }

  Tensor spectrogram(std::span<const float> samples) const;      // [n_fft / 2 + 1, frames]
  Tensor mel_spectrogram(std::span<const float> samples) const;  // [n_mels, frames], no log
  Tensor log_mel(std::span<const float> samples) const;          // [frames, n_mels]
  // One [frames_c, n_mels] tensor per clip, computed together (threads over all clips). The
  // tensors are contiguous views of one batch-sized block, which lives while any of them does.
  std::vector<Tensor> log_mel(const std::vector<std::span<const float>>& clips) const;
  // The same on `device`: on CUDA the clips go to the device as one [B, L_max] block and each
  // result is a [frames_c, n_mels] view of one log_mel_batch result there; on the CPU it is
  // log_mel(clips).
  std::vector<Tensor> log_mel_on(Device device,
                                 const std::vector<std::span<const float>>& clips) const;
  // A batch already on a CUDA device: `samples` [B, L_max] f32, clip b its first lengths[b]
  // samples. Returns [B, F_max, n_mels] on that device (F_max: the most frames of any clip),
  // clip b's rows past its frames(lengths[b]) zero. Asynchronous on the current stream.
  Tensor log_mel_batch(const Tensor& samples, const std::vector<int64_t>& lengths) const;

  // The filterbank, [n_fft / 2 + 1, n_mels] float64 (torchaudio's melscale_fbanks layout).
  const std::vector<double>& filterbank() const { return filterbank_; }

 private:
  void check_clip(int64_t samples, const char* what) const;
  void finish(float* values, int64_t frames) const;  // top_db and normalisation

  FeatureConfig config_;
  kernels::cpu::StftPlan plan_;
  std::vector<double> filterbank_;
  kernels::cpu::MelBands bands_;
  std::shared_ptr<FeatureDeviceTables> device_tables_;  // shared by copies: same config
};

// One-off conveniences (each builds a FeatureExtractor).
Tensor spectrogram(std::span<const float> samples, const FeatureConfig& config = {});
Tensor mel_spectrogram(std::span<const float> samples, const FeatureConfig& config = {});
Tensor log_mel(std::span<const float> samples, const FeatureConfig& config = {});

// torchaudio.functional.melscale_fbanks for the config: [n_fft / 2 + 1, n_mels] float64.
Tensor mel_filterbank(const FeatureConfig& config);

}  // namespace sonata
