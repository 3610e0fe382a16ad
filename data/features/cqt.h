#pragma once
// Constant-Q spectrograms, librosa.cqt's (0.10) definition as the CCMusic baselines use it:
// hop 512, fmin C1 (32.70 Hz), 84 bins, 12 per octave, Hann-windowed wavelets of
// filter_scale 1 (librosa's relative bandwidth, Q = 17.3), norm 1, scale=True, centred frames
// over zero padding, magnitude, then amplitude_to_db(ref=np.max, top_db=80).
//
// One definition, chosen: every bin's wavelet correlated with the clip in the time domain at
// the clip's own rate (kernels/cpu/cqt.h), as nnAudio's CQT1992v2 does. librosa computes the
// same response octave by octave, halving the rate with a resampler for each lower octave, and
// by default drops the smallest 1 % of each filter's spectrum (sparsity 0.01), which leaves a
// leakage floor in weak cells. Measured on the fixture (tests/fixtures/make_cqt.py: librosa
// 0.10.2 from its source, res_type="polyphase" as Debian has no soxr for librosa's default),
// over the cells above -60 dB, at 22050 Hz (16 kHz in brackets):
//   vs librosa.cqt(sparsity=0): top octave (no resampling there) within 0.07 dB (0.09), mean
//     0.14 dB (0.19), 99 % within 0.86 dB (1.3), worst 2.7 dB (4.3), at resampler edges;
//   vs librosa.cqt() as released (sparsity 0.01): mean 0.47 dB (0.55), 99 % within 5.2 dB
//     (7.0), worst 22 dB (24), in cells the sparsified filters leak into.
// tests/data/test_cqt.cpp holds sonata to these bounds with a small margin.
//
// db_batch computes the same on a CUDA device (kernels/cuda/cqt.h): every amplitude within
// 2e-5 of the clip's peak of the CPU's (1e-3 dB above -20 dB); without CUDA it throws.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/tensor.h"
#include "kernels/cpu/cqt.h"

namespace sonata {

struct CqtConfig {
  int64_t sample_rate = 22050;
  int64_t hop_length = 512;
  double fmin = 32.703195662574829;  // C1, librosa.note_to_hz("C1")
  int64_t bins = 84;
  int64_t bins_per_octave = 12;
  double top_db = 80;  // 0: no floor

  // Throws naming the first bad field (the highest filter's band must stay below Nyquist).
  void validate() const;
};

// The bank uploaded to each CUDA device on first use (cqt_cuda.cpp).
struct CqtDeviceBank;
std::shared_ptr<CqtDeviceBank> make_cqt_device_bank();

// Builds the filter bank once; thread-safe to share.
class ConstantQ {
 public:
  explicit ConstantQ(const CqtConfig& config = {});

  const CqtConfig& config() const { return config_; }
  const kernels::cpu::CqtBank& bank() const { return bank_; }
  int64_t frames(int64_t samples) const;

  // [bins, frames] f32 CPU: |C|, and its dB image (ref = the clip's max, floored at -top_db).
  // A clip must hold at least one sample.
  Tensor magnitude(std::span<const float> samples) const;
  Tensor db(std::span<const float> samples) const;

  // A batch on a CUDA device: `samples` [B, L] f32, every clip L samples long. Returns
  // [B, bins, frames(L)] dB on that device, each clip referenced to its own max. Asynchronous
  // on the current stream.
  Tensor db_batch(const Tensor& samples) const;

 private:
  CqtConfig config_;
  kernels::cpu::CqtBank bank_;
  std::shared_ptr<CqtDeviceBank> device_bank_;
};

}  // namespace sonata
