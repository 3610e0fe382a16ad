// Resampling on CUDA (data/audio/resample.h's tensor overload, kernels/cuda/resample.h)
// against torchaudio's fixtures (tests/fixtures/resample, float64 references: 1e-6, as the
// CPU is held to) and against the CPU on random unit-range signals of many lengths, the
// shortest included (within 1e-6: both accumulate in double); the output length; and the
// identity 16000 -> 16000.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "data/audio/resample.h"
#include "engine/tensor.h"
#include "tests/support/text_fixture.h"

using namespace sonata;

namespace {

double max_abs_difference(const std::vector<float>& a, const std::vector<double>& b) {
  double worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, std::abs(double(a[i]) - b[i]));
  return worst;
}

std::vector<float> uniform(int64_t length, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> draw(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(length));
  for (float& v : x) v = draw(rng);
  return x;
}

std::vector<float> on_cuda(const std::vector<float>& x, int64_t from_rate, int64_t to_rate) {
  const Tensor in = from_vector(x, {int64_t(x.size())}, TensorOptions{}.with(Device::cuda()));
  const Tensor out = resample(in, from_rate, to_rate);
  REQUIRE(out.device().is_cuda());
  return out.to_vector<float>();
}

}  // namespace

TEST_CASE("CUDA resample matches torchaudio.functional.resample", "[cuda][resample]") {
  const std::string name =
      GENERATE(as<std::string>{}, "22050_to_16000.txt", "44100_to_16000.txt", "48000_to_16000.txt",
               "8000_to_16000.txt", "11025_to_16000.txt");
  INFO(name);
  const testing::TextFixture fixture =
      testing::read_text_fixture(std::string(SONATA_FIXTURES_DIR) + "/resample/" + name);
  const auto orig_rate = int64_t(testing::fixture_doubles(fixture, "orig_rate").at(0));
  const auto new_rate = int64_t(testing::fixture_doubles(fixture, "new_rate").at(0));
  std::vector<float> input;
  for (const double pcm : testing::fixture_doubles(fixture, "input_pcm16"))
    input.push_back(float(pcm / 32768.0));
  const std::vector<double> expected = testing::fixture_doubles(fixture, "output");
  const std::vector<float> out = on_cuda(input, orig_rate, new_rate);
  REQUIRE(out.size() == expected.size());
  CHECK(max_abs_difference(out, expected) < 1e-6);
}

TEST_CASE("CUDA resample equals the CPU on random signals", "[cuda][resample]") {
  const auto [from_rate, to_rate] = GENERATE(
      std::pair<int64_t, int64_t>{22050, 16000}, std::pair<int64_t, int64_t>{44100, 16000},
      std::pair<int64_t, int64_t>{48000, 16000}, std::pair<int64_t, int64_t>{16000, 22050});
  for (const int64_t length :
       {int64_t(1), int64_t(7), int64_t(100), int64_t(4410), int64_t(3 * 44100 + 17)}) {
    INFO(from_rate << " -> " << to_rate << ", " << length << " samples");
    const std::vector<float> x = uniform(length, uint32_t(length + from_rate));
    const std::vector<float> cpu = resample(std::span<const float>(x), from_rate, to_rate);
    const std::vector<float> gpu = on_cuda(x, from_rate, to_rate);
    REQUIRE(int64_t(gpu.size()) == resampled_length(length, from_rate, to_rate));
    REQUIRE(gpu.size() == cpu.size());
    const std::vector<double> reference(cpu.begin(), cpu.end());
    CHECK(max_abs_difference(gpu, reference) < 1e-6);
  }
}

TEST_CASE("CUDA resample 16000 -> 16000 returns a copy of the input", "[cuda][resample]") {
  const std::vector<float> x = uniform(16001, 5);
  const Tensor in = from_vector(x, {16001}, TensorOptions{}.with(Device::cuda()));
  const Tensor out = resample(in, 16000, 16000);
  REQUIRE(out.device().is_cuda());
  CHECK(out.data_ptr() != in.data_ptr());
  CHECK(out.to_vector<float>() == x);
}
