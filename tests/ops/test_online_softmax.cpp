// The online max / sum of exponentials (kernels/common/online_softmax.h) that the CUDA
// softmax and cross-entropy accumulate in one read: against the two-pass sums, whatever order
// the lanes merge in, and with the special values of the two-pass form.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "kernels/common/online_softmax.h"

using sonata::kernels::MaxSum;
using sonata::kernels::MergeMaxSum;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

template <typename C>
MaxSum<C> online(const std::vector<double>& xs, size_t begin, size_t end) {
  MaxSum<C> s = MaxSum<C>::empty();
  for (size_t i = begin; i < end; ++i) s.add(C(xs[i]));
  return s;
}

// The two-pass form the kernels used before (and the CPU reference uses), in double.
struct TwoPass {
  double max, sum;
};
TwoPass two_pass(const std::vector<double>& xs) {
  double peak = -kInf;
  for (double x : xs) peak = std::fmax(peak, x);
  const double shift = peak == -kInf ? 0 : peak;
  double sum = 0;
  for (double x : xs) sum += std::exp(x - shift);
  return {peak, sum};
}

std::vector<double> random_row(size_t n, uint32_t seed, double low, double high) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(low, high);
  std::vector<double> xs(n);
  for (double& x : xs) x = uniform(rng);
  return xs;
}

}  // namespace

TEST_CASE("online max and exp-sum equal the two-pass ones", "[ops][softmax][online]") {
  for (const auto& [low, high] : {std::pair{-3.0, 3.0}, {-50.0, 50.0}, {1e4, 1e4 + 20}}) {
    INFO("values in [" << low << ", " << high << ")");
    // Increasing values force a rescale at every step, decreasing ones at none.
    std::vector<double> rising = random_row(300, 7, low, high), falling = rising;
    std::sort(rising.begin(), rising.end());
    std::sort(falling.rbegin(), falling.rend());
    for (const std::vector<double>& xs : {random_row(1000, 11, low, high), rising, falling}) {
      const TwoPass expected = two_pass(xs);
      const MaxSum<double> d = online<double>(xs, 0, xs.size());
      CHECK(d.max == expected.max);
      CHECK(d.sum == Approx(expected.sum).epsilon(1e-13));
      // float against the two-pass sum of the same values rounded to float.
      std::vector<double> rounded;
      for (double x : xs) rounded.push_back(double(float(x)));
      const MaxSum<float> f = online<float>(xs, 0, xs.size());
      CHECK(f.max == float(expected.max));
      CHECK(f.sum == Approx(two_pass(rounded).sum).epsilon(1e-5));
    }
  }
}

TEST_CASE("merged online states give the sum whatever the split", "[ops][softmax][online]") {
  const std::vector<double> xs = random_row(257, 13, -30, 30);
  const TwoPass expected = two_pass(xs);
  const MergeMaxSum<double> merge;
  for (size_t cut : {size_t(0), size_t(1), size_t(100), size_t(256), size_t(257)}) {
    INFO("cut at " << cut);
    const MaxSum<double> a = online<double>(xs, 0, cut), b = online<double>(xs, cut, xs.size());
    const MaxSum<double> ab = merge(a, b), ba = merge(b, a);
    CHECK(ab.max == expected.max);
    CHECK(ab.sum == Approx(expected.sum).epsilon(1e-13));
    // Bit for bit the same both ways: every lane of a butterfly ends with one state.
    CHECK(ab.max == ba.max);
    CHECK(ab.sum == ba.sum);
  }
  // 32 lanes taking every 32nd element, merged as a butterfly.
  std::vector<MaxSum<double>> lanes(32, MaxSum<double>::empty());
  for (size_t i = 0; i < xs.size(); ++i) lanes[i % 32].add(xs[i]);
  for (size_t mask = 16; mask > 0; mask >>= 1) {
    std::vector<MaxSum<double>> next = lanes;
    for (size_t lane = 0; lane < 32; ++lane) next[lane] = merge(lanes[lane], lanes[lane ^ mask]);
    lanes = next;
  }
  for (const MaxSum<double>& lane : lanes) {
    CHECK(lane.sum == lanes[0].sum);
    CHECK(lane.sum == Approx(expected.sum).epsilon(1e-13));
  }
}

TEST_CASE("online sums keep the two-pass special values", "[ops][softmax][online]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const MergeMaxSum<double> merge;
  // A NaN anywhere (even beside -inf only) makes the sum NaN; the max skips it.
  for (const std::vector<double>& xs : {std::vector<double>{1, nan, 2}, {nan, 1}, {-kInf, nan}}) {
    const MaxSum<double> s = online<double>(xs, 0, xs.size());
    CHECK(std::isnan(s.sum));
    CHECK(std::isnan(two_pass(xs).sum));
    CHECK(!std::isnan(s.max));
    CHECK(std::isnan(merge(s, online<double>({3.0}, 0, 1)).sum));
  }
  // +inf: exp(inf - inf) is NaN in the two-pass sum too.
  CHECK(std::isnan(online<double>({1, kInf, 2}, 0, 3).sum));
  CHECK(std::isnan(two_pass({1, kInf, 2}).sum));
  CHECK(std::isnan(merge(online<double>({kInf}, 0, 1), online<double>({1}, 0, 1)).sum));
  // A line of -inf: max -inf, sum 0, also merged with an empty state.
  const MaxSum<double> ninf = online<double>({-kInf, -kInf}, 0, 2);
  CHECK(ninf.max == -kInf);
  CHECK(ninf.sum == 0);
  const MaxSum<double> merged = merge(ninf, MaxSum<double>::empty());
  CHECK(merged.max == -kInf);
  CHECK(merged.sum == 0);
  // -inf beside finite values contributes exp(-inf) = 0.
  CHECK(online<double>({-kInf, 0, -kInf}, 0, 3).sum == 1);
}
