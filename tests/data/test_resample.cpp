// Resampling against torchaudio 0.13 (tests/fixtures/resample, written by
// tests/fixtures/make_resample.py), the output length formula, identity, bad rates, and the
// shared filter cache under concurrent callers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "data/audio/resample.h"
#include "kernels/cpu/resample.h"
#include "tests/support/text_fixture.h"

using namespace sonata;
using Catch::Contains;

namespace {

struct ResampleCase {
  int64_t orig_rate, new_rate;
  std::vector<float> input;
  // torchaudio on the signal in float64 (the algorithm's value) and in float32 (as a user
  // calls it; its filter then carries float32 rounding, see tests/fixtures/make_resample.py).
  std::vector<double> output, output_f32;
};

ResampleCase read_case(const std::string& name) {
  const testing::TextFixture fixture =
      testing::read_text_fixture(std::string(SONATA_FIXTURES_DIR) + "/resample/" + name);
  ResampleCase c;
  c.orig_rate = int64_t(testing::fixture_doubles(fixture, "orig_rate").at(0));
  c.new_rate = int64_t(testing::fixture_doubles(fixture, "new_rate").at(0));
  for (const double pcm : testing::fixture_doubles(fixture, "input_pcm16"))
    c.input.push_back(float(pcm / 32768.0));
  c.output = testing::fixture_doubles(fixture, "output");
  c.output_f32 = testing::fixture_doubles(fixture, "output_f32");
  return c;
}

template <typename A, typename B>
double max_abs_difference(const std::vector<A>& a, const std::vector<B>& b) {
  double worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, std::abs(double(a[i]) - double(b[i])));
  return worst;
}

}  // namespace

TEST_CASE("Resample matches torchaudio.functional.resample", "[resample]") {
  const std::string name =
      GENERATE(as<std::string>{}, "22050_to_16000.txt", "44100_to_16000.txt", "48000_to_16000.txt",
               "8000_to_16000.txt", "11025_to_16000.txt");
  INFO(name);
  const ResampleCase c = read_case(name);
  const std::vector<float> out = resample(c.input, c.orig_rate, c.new_rate);
  REQUIRE(out.size() == c.output.size());
  CHECK(resampled_length(int64_t(c.input.size()), c.orig_rate, c.new_rate) ==
        int64_t(c.output.size()));
  // sonata builds its filter in double: the float64 reference to float32 rounding.
  CHECK(max_abs_difference(out, c.output) < 1e-6);
  // torchaudio's float32 path, within 1e-5 plus its own float32-vs-float64 difference
  // (1.5e-5 for 11025 -> 16000, under 1e-5 for the others).
  CHECK(max_abs_difference(out, c.output_f32) < 1e-5 + max_abs_difference(c.output_f32, c.output));
}

TEST_CASE("Resample output length is ceil(new * length / orig)", "[resample]") {
  CHECK(resampled_length(22050, 22050, 16000) == 16000);
  CHECK(resampled_length(2213, 22050, 16000) == 1606);  // 1605.8...
  CHECK(resampled_length(1, 44100, 16000) == 1);
  CHECK(resampled_length(0, 44100, 16000) == 0);
  CHECK(resampled_length(4, 48000, 16000) == 2);  // 1.33...
  CHECK(resampled_length(3, 48000, 16000) == 1);  // exactly 1
  CHECK(resampled_length(3, 8000, 16000) == 6);
  CHECK(resampled_length(7, 16000, 16000) == 7);
  // Ten hours at 48 kHz: no overflow in the product (rates are reduced by their gcd first).
  CHECK(resampled_length(int64_t(48000) * 36000, 48000, 44100) == int64_t(44100) * 36000);
  // Very short signals still give the promised number of samples.
  for (const int64_t length : {0, 1, 2, 5})
    CHECK(resample(std::vector<float>(size_t(length), 0.5f), 44100, 16000).size() ==
          size_t(resampled_length(length, 44100, 16000)));
}

TEST_CASE("Resample to the same rate returns the input", "[resample]") {
  const std::vector<float> x = {0.25f, -1.0f, 0.5f, 3.0f, 0.0f};
  CHECK(resample(x, 16000, 16000) == x);
  CHECK(resample(std::vector<float>{}, 8000, 8000).empty());
  const kernels::cpu::ResampleFilter filter = kernels::cpu::make_resample_filter(16000, 16000);
  CHECK(filter.identity);
  std::vector<float> y(x.size());
  kernels::cpu::resample(filter, x.data(), int64_t(x.size()), y.data());
  CHECK(y == x);
}

TEST_CASE("Resample filter: phases sum to the passband gain", "[resample]") {
  // Each phase samples the same low-pass impulse response at a different offset, so a
  // constant input comes out (away from the edges) as that constant times the response's
  // sum: close to 1 for every phase, the same for all of them to ~1e-3.
  const kernels::cpu::ResampleFilter filter = kernels::cpu::make_resample_filter(44100, 16000);
  CHECK(filter.orig == 441);
  CHECK(filter.target == 160);
  CHECK(filter.width == 17);  // ceil(6 * 441 / (160 * 0.99))
  double lowest = 2, highest = 0;
  for (int64_t j = 0; j < filter.target; ++j) {
    double sum = 0;
    for (int64_t k = 0; k < filter.count[size_t(j)]; ++k)
      sum += filter.weights[size_t(j * filter.stride + k)];
    lowest = std::min(lowest, sum);
    highest = std::max(highest, sum);
  }
  CHECK(lowest > 0.99);
  CHECK(highest < 1.01);
  // Only the taps inside the window are kept: about 2 * 6 * 441 / 158.4 of torchaudio's 475.
  CHECK(filter.stride <= 36);
}

TEST_CASE("Resample rejects non-positive rates naming them", "[resample]") {
  const std::vector<float> x(10, 0.0f);
  REQUIRE_THROWS_WITH(resample(x, 0, 16000), Contains("from 0 Hz to 16000 Hz"));
  REQUIRE_THROWS_WITH(resample(x, 16000, -8000), Contains("from 16000 Hz to -8000 Hz"));
  REQUIRE_THROWS_WITH(resampled_length(10, 44100, 0), Contains("must be positive"));
  REQUIRE_THROWS_AS(kernels::cpu::make_resample_filter(44100, 16000, 0), Error);
  REQUIRE_THROWS_AS(kernels::cpu::make_resample_filter(44100, 16000, 6, 1.5), Error);
}

TEST_CASE("Resample from many threads shares one filter per rate pair", "[resample]") {
  const ResampleCase c = read_case("22050_to_16000.txt");
  const ResampleCase up = read_case("8000_to_16000.txt");
  std::vector<std::vector<float>> results(8);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t)
    threads.emplace_back([&, t] {
      const ResampleCase& mine = t % 2 ? c : up;
      results[t] = resample(mine.input, mine.orig_rate, mine.new_rate);
    });
  for (std::thread& thread : threads) thread.join();
  double worst = 0;
  for (size_t t = 0; t < results.size(); ++t) {
    const ResampleCase& mine = t % 2 ? c : up;
    REQUIRE(results[t].size() == mine.output.size());
    worst = std::max(worst, max_abs_difference(results[t], mine.output));
  }
  CHECK(worst < 1e-6);
}

TEST_CASE("Resample of a CPU tensor equals the span overload and other tensors throw",
          "[resample]") {
  std::vector<float> x(4410);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(std::sin(0.05 * double(i)));
  const Tensor out = resample(from_vector(x, {int64_t(x.size())}), 44100, 16000);
  CHECK(out.device().is_cpu());
  CHECK(out.to_vector<float>() == resample(std::span<const float>(x), 44100, 16000));
  CHECK(resample(from_vector(x, {int64_t(x.size())}), 16000, 16000).to_vector<float>() == x);
  REQUIRE_THROWS_WITH(resample(zeros({2, 3}), 44100, 16000), Contains("1-D f32"));
  REQUIRE_THROWS_WITH(resample(from_vector(x, {int64_t(x.size())}), 0, 16000),
                      Contains("sample rates must be positive"));
}
