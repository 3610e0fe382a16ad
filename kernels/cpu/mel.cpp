#include "kernels/cpu/mel.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numbers>

#include "base/error.h"
#include "base/nvtx.h"
#include "kernels/cpu/capability_region.h"

SONATA_CPU_BEGIN
namespace {

constexpr int64_t kLanes = StftPlan::kLanes;

// Natural log of kLanes floats in one vectorised loop (glibc's logf is scalar without
// -ffast-math, and took a third of the front end's time). Cephes' logf: x = m 2^e with m in
// [sqrt(1/2), sqrt(2)), log(m) by a degree-9 polynomial in m - 1; within 1.2e-7 relative of
// logf for normal x. Lanes outside the normal floats (0, denormals, inf, NaN) take logf.
void log_lanes(const float* in, float* out) {
  int unusual = 0;
#pragma omp simd reduction(| : unusual)
  for (int64_t l = 0; l < kLanes; ++l) {
    const float x = in[l];
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof(bits));
    float e = float(int32_t((bits >> 23) & 0xffu) - 126);
    uint32_t mantissa_bits = (bits & 0x007fffffu) | 0x3f000000u;  // m in [0.5, 1)
    float m;
    std::memcpy(&m, &mantissa_bits, sizeof(m));
    const bool low = m < 0.707106781186547524f;
    e = low ? e - 1.0f : e;
    const float f = low ? m + m - 1.0f : m - 1.0f;
    const float z = f * f;
    float y = 7.0376836292e-2f;
    y = y * f - 1.1514610310e-1f;
    y = y * f + 1.1676998740e-1f;
    y = y * f - 1.2420140846e-1f;
    y = y * f + 1.4249322787e-1f;
    y = y * f - 1.6668057665e-1f;
    y = y * f + 2.0000714765e-1f;
    y = y * f - 2.4999993993e-1f;
    y = y * f + 3.3333331174e-1f;
    y = y * f * z;
    y += -2.12194440e-4f * e;
    y += -0.5f * z;
    out[l] = f + y + 0.693359375f * e;
    unusual |= int(x < FLT_MIN) | int(x > FLT_MAX) | int(x != x);
  }
  if (unusual) {
    for (int64_t l = 0; l < kLanes; ++l)
      if (!(in[l] >= FLT_MIN && in[l] <= FLT_MAX)) out[l] = std::log(in[l]);
  }
}

// Per-thread buffers for one block.
struct BlockBuffers {
  std::vector<float> workspace, power, mel;
  BlockBuffers(const StftPlan& plan, const MelBands& bands)
      : workspace(size_t(plan.workspace_floats())),
        power(size_t(plan.bins() * kLanes)),
        mel(size_t(bands.n_mels * kLanes)) {}
};

// Frames [first, first + count) of one clip into out, laid out for `frames` frames in all.
void mel_block(const StftPlan& plan, const MelBands& bands, const float* samples, int64_t length,
               int64_t frames, int64_t first, int64_t count, float power, const MelOutput& output,
               float* out, BlockBuffers& buffers) {
  plan.power_block(samples, length, first, count, power, buffers.power.data(),
                   buffers.workspace.data());
  const float* spectrum = buffers.power.data();
  float* mel = buffers.mel.data();
  const int64_t n_mels = bands.n_mels;
  for (int64_t m = 0; m < n_mels; ++m) {
    float acc[kLanes] = {};
    const float* w = bands.weights.data() + bands.offset[size_t(m)];
    for (int64_t k = bands.begin[size_t(m)]; k < bands.end[size_t(m)]; ++k, ++w) {
      const float* row = spectrum + k * kLanes;
#pragma omp simd
      for (int64_t l = 0; l < kLanes; ++l) acc[l] += *w * row[l];
    }
    float* dst = mel + m * kLanes;
    switch (output.log) {
      case MelLog::none:
        for (int64_t l = 0; l < kLanes; ++l) dst[l] = acc[l];
        break;
      case MelLog::log:
        for (int64_t l = 0; l < kLanes; ++l) acc[l] += output.log_offset;
        log_lanes(acc, dst);
        break;
      case MelLog::db: {
        // 10 log10(y) = (10 / ln 10) log(y).
        for (int64_t l = 0; l < kLanes; ++l) acc[l] = std::max(acc[l], output.db_amin);
        log_lanes(acc, dst);
        const float scale = output.db_multiplier / float(std::numbers::ln10);
        for (int64_t l = 0; l < kLanes; ++l) dst[l] *= scale;
        break;
      }
    }
  }
  if (output.frames_major) {
    for (int64_t l = 0; l < count; ++l) {
      float* row = out + (first + l) * n_mels;
      for (int64_t m = 0; m < n_mels; ++m) row[m] = mel[m * kLanes + l];
    }
  } else {
    for (int64_t m = 0; m < n_mels; ++m)
      std::copy(mel + m * kLanes, mel + m * kLanes + count, out + m * frames + first);
  }
}

}  // namespace

void mel_spectrogram_batch(const StftPlan& plan, const MelBands& bands, const float* const* samples,
                           const int64_t* lengths, int64_t clips, float power,
                           const MelOutput& output, float* const* outs) {
  SONATA_NVTX_RANGE("sonata::cpu::mel_spectrogram");
  SONATA_CHECK(bands.n_freqs == plan.bins(), "mel_spectrogram: a filterbank of ", bands.n_freqs,
               " bins does not fit n_fft ", plan.config().n_fft);
  // Every (clip, block) pair, in order.
  std::vector<int64_t> first_task(size_t(clips + 1), 0);
  for (int64_t c = 0; c < clips; ++c) {
    SONATA_CHECK(stft_length_ok(plan.config(), lengths[c]), "mel_spectrogram: clip ", c, " of ",
                 lengths[c], " samples gives no frame for n_fft ", plan.config().n_fft);
    const int64_t blocks = (plan.frames(lengths[c]) + kLanes - 1) / kLanes;
    first_task[size_t(c + 1)] = first_task[size_t(c)] + blocks;
  }
  const int64_t tasks = first_task.back();
#pragma omp parallel if (tasks > 1)
  {
    BlockBuffers buffers(plan, bands);
#pragma omp for schedule(static)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t c =
          std::upper_bound(first_task.begin(), first_task.end(), task) - first_task.begin() - 1;
      const int64_t frames = plan.frames(lengths[c]);
      const int64_t first = (task - first_task[size_t(c)]) * kLanes;
      mel_block(plan, bands, samples[c], lengths[c], frames, first,
                std::min(kLanes, frames - first), power, output, outs[c], buffers);
    }
  }
}

SONATA_CPU_END

#if SONATA_CPU_ENTRY_POINTS
// The filterbank's construction runs once; only the spectrogram is compiled per capability.
namespace sonata::kernels::cpu {
namespace {

// Slaney's scale (librosa / torchaudio): linear below 1 kHz at 200/3 Hz per mel, logarithmic
// above with 27 mels per factor 6.4.
constexpr double kSlaneyHzPerMel = 200.0 / 3.0;
constexpr double kSlaneyKneeHz = 1000.0;
constexpr double kSlaneyKneeMel = kSlaneyKneeHz / kSlaneyHzPerMel;
const double kSlaneyLogStep = std::log(6.4) / 27.0;

}  // namespace

double hz_to_mel(double hz, MelScale scale) {
  if (scale == MelScale::htk) return 2595.0 * std::log10(1.0 + hz / 700.0);
  if (hz < kSlaneyKneeHz) return hz / kSlaneyHzPerMel;
  return kSlaneyKneeMel + std::log(hz / kSlaneyKneeHz) / kSlaneyLogStep;
}

double mel_to_hz(double mel, MelScale scale) {
  if (scale == MelScale::htk) return 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0);
  if (mel < kSlaneyKneeMel) return mel * kSlaneyHzPerMel;
  return kSlaneyKneeHz * std::exp(kSlaneyLogStep * (mel - kSlaneyKneeMel));
}

void mel_filterbank(int64_t n_freqs, double f_min, double f_max, int64_t n_mels,
                    int64_t sample_rate, MelScale scale, MelNorm norm, double* out) {
  SONATA_CHECK(n_freqs >= 2 && n_mels >= 1, "mel_filterbank: needs at least 2 bins and 1 mel");
  const double nyquist = double(sample_rate / 2);
  const double m_min = hz_to_mel(f_min, scale), m_max = hz_to_mel(f_max, scale);
  std::vector<double> points(size_t(n_mels + 2));
  for (int64_t i = 0; i < n_mels + 2; ++i)
    points[size_t(i)] = mel_to_hz(m_min + (m_max - m_min) * double(i) / double(n_mels + 1), scale);
  for (int64_t k = 0; k < n_freqs; ++k) {
    const double f = nyquist * double(k) / double(n_freqs - 1);
    for (int64_t m = 0; m < n_mels; ++m) {
      const double lo = points[size_t(m)], mid = points[size_t(m + 1)], hi = points[size_t(m + 2)];
      const double down = (f - lo) / (mid - lo), up = (hi - f) / (hi - mid);
      double weight = std::max(0.0, std::min(down, up));
      if (norm == MelNorm::slaney) weight *= 2.0 / (hi - lo);
      out[k * n_mels + m] = weight;
    }
  }
}

MelBands MelBands::from_dense(const double* filterbank, int64_t n_freqs, int64_t n_mels) {
  MelBands bands;
  bands.n_freqs = n_freqs;
  bands.n_mels = n_mels;
  for (int64_t m = 0; m < n_mels; ++m) {
    int64_t begin = 0, end = 0;
    for (int64_t k = 0; k < n_freqs; ++k) {
      if (filterbank[k * n_mels + m] != 0.0) {
        if (end == begin) begin = k;
        end = k + 1;
      }
    }
    bands.begin.push_back(begin);
    bands.end.push_back(end);
    bands.offset.push_back(int64_t(bands.weights.size()));
    for (int64_t k = begin; k < end; ++k)
      bands.weights.push_back(float(filterbank[k * n_mels + m]));
  }
  return bands;
}

void mel_spectrogram(const StftPlan& plan, const MelBands& bands, const float* samples,
                     int64_t length, float power, const MelOutput& output, float* out) {
  mel_spectrogram_batch(plan, bands, &samples, &length, 1, power, output, &out);
}

SONATA_CPU_DECLARE(mel_spectrogram_batch)

void mel_spectrogram_batch(const StftPlan& plan, const MelBands& bands, const float* const* samples,
                           const int64_t* lengths, int64_t clips, float power,
                           const MelOutput& output, float* const* outs) {
  SONATA_CPU_CALL(mel_spectrogram_batch)(plan, bands, samples, lengths, clips, power, output, outs);
}

}  // namespace sonata::kernels::cpu
#endif
