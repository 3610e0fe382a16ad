// Polyphase windowed-sinc resampling, written from torchaudio 0.13's
// _get_sinc_resample_kernel / _apply_sinc_resample_kernel (a strided conv1d of the padded
// signal with N filters, the N outputs of each stride interleaved).
#include "kernels/cpu/resample.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>

#include "base/error.h"
#include "base/nvtx.h"

namespace sonata::kernels::cpu {
namespace {

// Below this many output samples a parallel region costs more than the loop.
constexpr int64_t kParallelOutputs = 1 << 14;

void check_rates(int64_t orig_rate, int64_t new_rate) {
  SONATA_CHECK(orig_rate > 0 && new_rate > 0, "cannot resample from ", orig_rate, " Hz to ",
               new_rate, " Hz: sample rates must be positive");
}

}  // namespace

ResampleFilter make_resample_filter(int64_t orig_rate, int64_t new_rate,
                                    int64_t lowpass_filter_width, double rolloff) {
  check_rates(orig_rate, new_rate);
  SONATA_CHECK(lowpass_filter_width > 0, "the resampling filter's lowpass_filter_width is ",
               lowpass_filter_width, "; it must be positive");
  SONATA_CHECK(rolloff > 0 && rolloff <= 1, "the resampling filter's rolloff is ", rolloff,
               "; it must be in (0, 1]");
  ResampleFilter filter;
  if (orig_rate == new_rate) return filter;

  const int64_t gcd = std::gcd(orig_rate, new_rate);
  const int64_t O = orig_rate / gcd, N = new_rate / gcd;
  const double L = double(lowpass_filter_width);
  const double base = double(std::min(O, N)) * rolloff;
  filter.orig = O;
  filter.target = N;
  filter.identity = false;
  filter.width = int64_t(std::ceil(L * double(O) / base));
  const int64_t taps = 2 * filter.width + O;

  // t(j, k) = base * num / (O*N) with the integer num = (k - width)*N - j*O, so the window's
  // support |t| < L is |num| < L*O*N/base: phase j's taps centre on k = width + j*O/N and
  // reach `reach` taps either side. Only those are evaluated.
  const double reach = L * double(O) / base;
  std::vector<std::vector<float>> phases(static_cast<size_t>(N));
  filter.first.assign(size_t(N), 0);
  filter.count.assign(size_t(N), 0);
  for (int64_t j = 0; j < N; ++j) {
    const double centre = double(filter.width) + double(j * O) / double(N);
    const int64_t lo = std::max<int64_t>(0, int64_t(std::floor(centre - reach)) - 1);
    const int64_t hi = std::min<int64_t>(taps - 1, int64_t(std::ceil(centre + reach)) + 1);
    std::vector<float>& phase = phases[size_t(j)];
    for (int64_t k = lo; k <= hi; ++k) {
      const double t = base * double((k - filter.width) * N - j * O) / double(O * N);
      if (std::abs(t) >= L) {
        // Past the support on the left: not started yet; on the right: done.
        if (phase.empty()) continue;
        break;
      }
      if (phase.empty()) filter.first[size_t(j)] = k;
      const double window = std::pow(std::cos(t * std::numbers::pi / (2 * L)), 2);
      const double sinc = t == 0 ? 1.0 : std::sin(std::numbers::pi * t) / (std::numbers::pi * t);
      phase.push_back(float(sinc * window * base / double(O)));
    }
    filter.count[size_t(j)] = int64_t(phase.size());
    filter.stride = std::max(filter.stride, int64_t(phase.size()));
  }
  filter.weights.assign(size_t(N * filter.stride), 0.0f);
  for (int64_t j = 0; j < N; ++j)
    std::copy(phases[size_t(j)].begin(), phases[size_t(j)].end(),
              filter.weights.begin() + j * filter.stride);
  return filter;
}

int64_t resampled_length(int64_t length, int64_t orig_rate, int64_t new_rate) {
  check_rates(orig_rate, new_rate);
  SONATA_CHECK(length >= 0, "cannot resample a signal of ", length, " samples");
  const int64_t gcd = std::gcd(orig_rate, new_rate);
  const int64_t O = orig_rate / gcd, N = new_rate / gcd;
  return (N * length + O - 1) / O;
}

void resample(const ResampleFilter& filter, const float* x, int64_t length, float* y) {
  SONATA_NVTX_RANGE("sonata::cpu::resample");
  if (filter.identity) {
    std::copy(x, x + length, y);
    return;
  }
  const int64_t O = filter.orig, N = filter.target;
  const int64_t outputs = resampled_length(length, O, N);
#pragma omp parallel for schedule(static) if (outputs >= kParallelOutputs)
  for (int64_t i = 0; i < outputs; ++i) {
    const int64_t m = i / N, j = i % N;
    const int64_t start = m * O - filter.width + filter.first[size_t(j)];
    // Taps that fall on the zero padding before 0 or past the end contribute nothing.
    const int64_t lo = std::max<int64_t>(0, -start);
    const int64_t hi = std::min<int64_t>(filter.count[size_t(j)], length - start);
    const float* h = filter.weights.data() + j * filter.stride;
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t k = lo; k < hi; ++k) sum += double(h[k]) * double(x[start + k]);
    y[i] = float(sum);
  }
}

}  // namespace sonata::kernels::cpu
