// The constant-Q front end (data/features/cqt.h): a tone's bin and level from the definition
// worked by hand, the dB image's reference and floor, and parity with librosa.cqt from the
// fixture (tests/fixtures/make_cqt.py) within the bounds the header states.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/features/cqt.h"
#include "engine/io/npy.h"
#include "train/tasks/class_task.h"

using namespace sonata;
using Catch::Contains;

namespace {

std::vector<float> tone(double hz, double amplitude, int64_t rate, int64_t length) {
  std::vector<float> x(static_cast<size_t>(length));
  for (int64_t i = 0; i < length; ++i)
    x[size_t(i)] =
        float(amplitude * std::sin(2 * std::numbers::pi * hz * double(i) / double(rate)));
  return x;
}

std::string fixture(const std::string& name) {
  return std::string(SONATA_FIXTURES_DIR) + "/cqt/" + name;
}

}  // namespace

TEST_CASE("cqt: a tone at a bin's frequency peaks there at A sqrt(L) / 2", "[cqt]") {
  // For x = A sin(w j) at the bin's own w, sum_j w[j] e^(i w j) x[j] = A / (2i) sum_j w[j]
  // (plus a term at -2w that the window suppresses), so |C| = sqrt(L) / sum(w) * A sum(w) / 2.
  const ConstantQ cqt;  // librosa's defaults: 22050 Hz, hop 512, C1, 84 bins, 12 per octave
  const int64_t rate = 22050, length = 3 * rate;
  for (const int64_t bin : {int64_t(30), int64_t(57), int64_t(83)}) {
    INFO("bin " << bin);
    const double hz = 32.703195662574829 * std::pow(2.0, double(bin) / 12.0);
    const double L = 17.331590297652433 * double(rate) / hz;  // Q = 1 / alpha, alpha at 12 bpo
    const Tensor magnitude = cqt.magnitude(tone(hz, 0.5, rate, length));
    REQUIRE(magnitude.shape() == Shape{84, 1 + length / 512});
    const int64_t frames = magnitude.size(1), middle = frames / 2;
    const float* m = magnitude.data<float>();
    int64_t loudest = 0;
    for (int64_t k = 0; k < 84; ++k)
      if (m[k * frames + middle] > m[loudest * frames + middle]) loudest = k;
    CHECK(loudest == bin);
    CHECK(m[bin * frames + middle] == Approx(0.5 * std::sqrt(L) / 2).epsilon(0.01));
  }
}

TEST_CASE("cqt: dB against the clip's max, floored at -80", "[cqt]") {
  const ConstantQ cqt;
  std::vector<float> x = tone(440.0, 0.3, 22050, 22050);
  std::fill(x.begin() + 8000, x.begin() + 16000, 0.0f);  // silence: the floor
  const Tensor magnitude = cqt.magnitude(x);
  const Tensor db = cqt.db(x);
  const auto m = magnitude.to_vector<float>(), d = db.to_vector<float>();
  const float peak = *std::max_element(m.begin(), m.end());
  CHECK(*std::max_element(d.begin(), d.end()) == 0.0f);
  CHECK(*std::min_element(d.begin(), d.end()) == -80.0f);
  for (size_t i = 0; i < m.size(); ++i)
    REQUIRE(
        d[i] ==
        Approx(std::max(20 * std::log10(std::max(double(m[i]), 1e-5) / peak), -80.0)).margin(1e-4));
}

TEST_CASE("cqt: bad settings are refused naming them", "[cqt]") {
  CHECK_THROWS_WITH(ConstantQ(CqtConfig{.sample_rate = 8000}), Contains("past the Nyquist"));
  CHECK_THROWS_WITH(ConstantQ(CqtConfig{.hop_length = 0}), Contains("hop length"));
  const ConstantQ cqt;
  CHECK_THROWS_WITH(cqt.db(std::vector<float>{}), Contains("no samples"));
}

TEST_CASE("cqt: the dB image matches librosa.cqt within the stated tolerance", "[cqt]") {
  const std::vector<float> waveform = load_npy(fixture("waveform.npy")).to_vector<float>();
  for (const int64_t rate : {int64_t(22050), int64_t(16000)}) {
    INFO("sample rate " << rate);
    const size_t length = rate == 22050 ? waveform.size() : 16000;
    const Tensor db = ConstantQ(CqtConfig{.sample_rate = rate})
                          .db(std::span<const float>(waveform.data(), length));
    const std::string name = "db_" + std::to_string(rate);
    for (const bool sparse : {false, true}) {
      INFO((sparse ? "librosa's default sparsity 0.01" : "sparsity 0"));
      const Tensor reference = load_npy(fixture(name + (sparse ? "_sparse.npy" : ".npy")));
      REQUIRE(db.shape() == reference.shape());
      const auto mine = db.to_vector<float>(), theirs = reference.to_vector<float>();
      const int64_t frames = db.size(1);
      std::vector<double> loud;  // |difference| of the cells librosa puts above -60 dB
      double top_octave = 0;
      for (size_t i = 0; i < mine.size(); ++i) {
        if (theirs[i] <= -60) continue;
        const double difference = std::abs(double(mine[i]) - double(theirs[i]));
        loud.push_back(difference);
        if (int64_t(i) / frames >= 72) top_octave = std::max(top_octave, difference);
      }
      std::sort(loud.begin(), loud.end());
      double mean = 0;
      for (const double d : loud) mean += d / double(loud.size());
      const double p99 = loud[size_t(0.99 * double(loud.size() - 1))];
      INFO("mean " << mean << " dB, p99 " << p99 << " dB, worst " << loud.back()
                   << " dB, top octave " << top_octave << " dB");
      if (sparse) {
        CHECK(mean < 0.7);
        CHECK(p99 < 8.0);
      } else {
        CHECK(top_octave < 0.15);
        CHECK(mean < 0.25);
        CHECK(p99 < 1.5);
        CHECK(loud.back() < 5.0);
      }
    }
  }
}

TEST_CASE("cqt: the classification image puts the high bins on top, within [-1, 1]", "[cqt]") {
  const ConstantQ cqt;
  for (const auto& [hz, top_is_loud] : {std::pair{3000.0, true}, std::pair{60.0, false}}) {
    const Tensor image = cqt_image(tone(hz, 0.5, 22050, 22050), cqt, 42, 20);
    REQUIRE(image.shape() == Shape{42, 20});
    const auto v = image.to_vector<float>();
    double top = 0, bottom = 0;
    for (int64_t x = 0; x < 20; ++x) {
      top += v[size_t(2 * 20 + x)];      // about bin 78 (3 kHz is bin 78.2)
      bottom += v[size_t(36 * 20 + x)];  // about bin 10 (60 Hz is bin 10.5)
    }
    CHECK((top > bottom) == top_is_loud);
    for (const float value : v) REQUIRE((value >= -1.0f && value <= 1.0f));
  }
}
