#include "data/features/cqt.h"

#include <cmath>

#include "base/error.h"

namespace sonata {

void CqtConfig::validate() const {
  SONATA_CHECK(sample_rate > 0, "cqt: the sample rate must be positive, got ", sample_rate);
  SONATA_CHECK(hop_length > 0, "cqt: the hop length must be positive, got ", hop_length);
  SONATA_CHECK(fmin > 0, "cqt: fmin must be positive, got ", fmin);
  SONATA_CHECK(bins > 0 && bins_per_octave > 0, "cqt: bins and bins per octave must be positive");
  SONATA_CHECK(top_db >= 0, "cqt: top_db must not be negative (0: no floor)");
  // librosa's check: the top filter's main lobe (Hann: 1.5 bins wide) must end below Nyquist.
  const double step = std::pow(2.0, 2.0 / double(bins_per_octave));
  const double alpha = (step - 1) / (step + 1);
  const double top = fmin * std::pow(2.0, double(bins - 1) / double(bins_per_octave));
  const double cutoff = top * (1 + 0.5 * 1.50018310546875 * alpha);
  SONATA_CHECK(cutoff <= double(sample_rate) / 2, "cqt: the top bin's band reaches ", cutoff,
               " Hz, past the Nyquist frequency of ", double(sample_rate) / 2,
               " Hz; use fewer bins or a higher sample rate");
}

ConstantQ::ConstantQ(const CqtConfig& config)
    : config_(config), device_bank_(make_cqt_device_bank()) {
  config_.validate();
  bank_ = kernels::cpu::make_cqt_bank(double(config.sample_rate), config.fmin, config.bins,
                                      config.bins_per_octave);
}

int64_t ConstantQ::frames(int64_t samples) const {
  return kernels::cpu::cqt_frame_count(samples, config_.hop_length);
}

Tensor ConstantQ::magnitude(std::span<const float> samples) const {
  SONATA_CHECK(!samples.empty(), "cqt: the clip holds no samples");
  Tensor out = empty({config_.bins, frames(int64_t(samples.size()))});
  kernels::cpu::cqt_magnitude(bank_, samples.data(), int64_t(samples.size()), config_.hop_length,
                              out.data<float>());
  return out;
}

Tensor ConstantQ::db(std::span<const float> samples) const {
  Tensor out = magnitude(samples);
  kernels::cpu::amplitude_to_db_ref_max(out.data<float>(), out.numel(), config_.top_db);
  return out;
}

}  // namespace sonata
