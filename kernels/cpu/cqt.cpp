#include "kernels/cpu/cqt.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "base/error.h"
#include "base/nvtx.h"

namespace sonata::kernels::cpu {

CqtBank make_cqt_bank(double sample_rate, double fmin, int64_t bins, int64_t bins_per_octave) {
  SONATA_CHECK(sample_rate > 0 && fmin > 0 && bins > 0 && bins_per_octave > 0,
               "make_cqt_bank: the sample rate, fmin, bins and bins per octave must be positive");
  CqtBank bank;
  bank.bins = bins;
  // librosa's _relative_bandwidth: for geometric frequencies every bin's alpha is this one.
  const double step = std::pow(2.0, 2.0 / double(bins_per_octave));
  const double q = 1.0 / ((step - 1.0) / (step + 1.0));
  for (int64_t k = 0; k < bins; ++k) {
    const double f = fmin * std::pow(2.0, double(k) / double(bins_per_octave));
    const double length = q * sample_rate / f;
    // np.arange(-L // 2, L // 2): floor division of the float length.
    const int64_t taps = int64_t(std::floor(length / 2) - std::floor(-length / 2));
    double window_sum = 0;
    std::vector<double> window(static_cast<size_t>(taps));
    for (int64_t j = 0; j < taps; ++j) {
      window[size_t(j)] = 0.5 - 0.5 * std::cos(2 * std::numbers::pi * double(j) / double(taps));
      window_sum += window[size_t(j)];
    }
    const double scale = std::sqrt(length) / window_sum;
    bank.first.push_back(int64_t(bank.re.size()));
    for (int64_t j = 0; j < taps; ++j) {
      const double phase = 2 * std::numbers::pi * f * double(j) / sample_rate;
      bank.re.push_back(float(scale * window[size_t(j)] * std::cos(phase)));
      bank.im.push_back(float(scale * window[size_t(j)] * std::sin(phase)));
    }
    bank.taps.push_back(taps);
    bank.lengths.push_back(length);
    bank.frequencies.push_back(f);
    bank.longest = std::max(bank.longest, taps);
  }
  return bank;
}

int64_t cqt_frame_count(int64_t length, int64_t hop) {
  return 1 + length / hop;
}

void cqt_magnitude(const CqtBank& bank, const float* samples, int64_t length, int64_t hop,
                   float* out) {
  SONATA_NVTX_RANGE("sonata::cpu::cqt_magnitude");
  const int64_t frames = cqt_frame_count(length, hop);
  // The clip with longest / 2 zeros on both sides, so no tap needs a bounds check.
  const int64_t pad = bank.longest / 2 + 1;
  std::vector<float> padded(size_t(length + 2 * pad), 0.0f);
  std::copy_n(samples, length, padded.begin() + pad);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t t = 0; t < frames; ++t) {
    for (int64_t k = 0; k < bank.bins; ++k) {
      const int64_t taps = bank.taps[size_t(k)];
      const float* x = padded.data() + pad + t * hop - taps / 2;
      const float* re = bank.re.data() + bank.first[size_t(k)];
      const float* im = bank.im.data() + bank.first[size_t(k)];
      float sum_re = 0, sum_im = 0;
#pragma omp simd reduction(+ : sum_re, sum_im)
      for (int64_t j = 0; j < taps; ++j) {
        sum_re += re[j] * x[j];
        sum_im += im[j] * x[j];
      }
      out[k * frames + t] = std::sqrt(sum_re * sum_re + sum_im * sum_im);
    }
  }
}

void amplitude_to_db_ref_max(float* values, int64_t count, double top_db) {
  constexpr double kAmin = 1e-5;
  const float peak = count > 0 ? *std::max_element(values, values + count) : 0.0f;
  const double reference = 20 * std::log10(std::max(double(peak), kAmin));
  for (int64_t i = 0; i < count; ++i) {
    double db = 20 * std::log10(std::max(double(values[i]), kAmin)) - reference;
    if (top_db > 0) db = std::max(db, -top_db);
    values[i] = float(db);
  }
}

}  // namespace sonata::kernels::cpu
