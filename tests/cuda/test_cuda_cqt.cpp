// The CUDA constant-Q dB image (ConstantQ::db_batch, kernels/cuda/cqt.h) against the CPU
// reference on a batch of noisy tones at 22050 and 16000 Hz: every cell the CPU puts above
// -20 dB within 1e-3 dB (the two sum the taps in different orders), every cell within 2e-5 of
// the peak as an amplitude (weak cells are small differences of large sums, so their dB may
// differ more), the 0 dB reference and the -80 dB floor kept; then the
// librosa fixture's top octave on the GPU within the CPU test's 0.15 dB.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "data/features/cqt.h"
#include "engine/io/npy.h"

using namespace sonata;

namespace {

std::vector<float> noisy_tones(int64_t rate, int64_t length, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::uniform_real_distribution<double> pitch(40.0, 3000.0);
  const double a = pitch(rng), b = pitch(rng);
  std::vector<float> x(static_cast<size_t>(length));
  for (int64_t i = 0; i < length; ++i) {
    const double t = double(i) / double(rate);
    x[size_t(i)] = float(0.4 * std::sin(2 * std::numbers::pi * a * t) +
                         0.2 * std::sin(2 * std::numbers::pi * b * t)) +
                   normal(rng);
  }
  return x;
}

}  // namespace

TEST_CASE("cuda cqt: the dB image of a batch equals the CPU's", "[cuda][cqt]") {
  for (const int64_t rate : {int64_t(22050), int64_t(16000)}) {
    INFO("sample rate " << rate);
    const ConstantQ cqt(CqtConfig{.sample_rate = rate});
    const int64_t clips = 3, length = rate + 777;
    std::vector<float> batch;
    std::vector<Tensor> expected;
    for (int64_t c = 0; c < clips; ++c) {
      const std::vector<float> clip = noisy_tones(rate, length, uint32_t(11 + c));
      batch.insert(batch.end(), clip.begin(), clip.end());
      expected.push_back(cqt.db(clip));
    }
    const Tensor gpu = cqt.db_batch(from_vector(batch, {clips, length}).to(Device::cuda()));
    REQUIRE(gpu.device().is_cuda());
    REQUIRE(gpu.shape() == Shape{clips, 84, cqt.frames(length)});
    const Tensor host = gpu.to(Device::cpu());
    for (int64_t c = 0; c < clips; ++c) {
      INFO("clip " << c);
      const auto ours = host.select(0, c).contiguous().to_vector<float>();
      const auto theirs = expected[size_t(c)].to_vector<float>();
      double loud = 0, linear = 0;
      for (size_t i = 0; i < ours.size(); ++i) {
        if (theirs[i] > -20) loud = std::max(loud, std::abs(double(ours[i]) - double(theirs[i])));
        // As amplitudes relative to the clip's peak: float sums of the same taps in another
        // order differ by a few 1e-7 of the peak, whatever the cell's level.
        linear = std::max(linear, std::abs(std::pow(10.0, double(ours[i]) / 20) -
                                           std::pow(10.0, double(theirs[i]) / 20)));
      }
      CHECK(loud < 1e-3);
      CHECK(linear < 2e-5);
      CHECK(*std::max_element(ours.begin(), ours.end()) == 0.0f);
      CHECK(*std::min_element(ours.begin(), ours.end()) >= -80.0f);
    }
  }
}

TEST_CASE("cuda cqt: librosa's top octave on the GPU within 0.15 dB", "[cuda][cqt]") {
  const std::string dir = std::string(SONATA_FIXTURES_DIR) + "/cqt/";
  const Tensor waveform = load_npy(dir + "waveform.npy");
  const int64_t length = waveform.size(0);
  const Tensor db =
      ConstantQ().db_batch(waveform.view({1, length}).to(Device::cuda())).to(Device::cpu());
  const auto ours = db.contiguous().to_vector<float>();
  const auto theirs = load_npy(dir + "db_22050.npy").to_vector<float>();
  REQUIRE(ours.size() == theirs.size());
  const size_t frames = theirs.size() / 84;
  double worst = 0;
  for (size_t i = 72 * frames; i < theirs.size(); ++i)
    if (theirs[i] > -60) worst = std::max(worst, std::abs(double(ours[i]) - double(theirs[i])));
  CHECK(worst < 0.15);
}
