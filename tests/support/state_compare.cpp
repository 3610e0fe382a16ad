#include "tests/support/state_compare.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace sonata::testing {

void check_close(Module& actual, Module& expected, bool with_buffers) {
  const NamedTensors a = with_buffers ? actual.state_dict() : actual.named_parameters();
  const NamedTensors e = with_buffers ? expected.state_dict() : expected.named_parameters();
  REQUIRE(a.size() == e.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first);
    REQUIRE(a[i].first == e[i].first);
    const auto x = a[i].second.to(DType::f64).to_vector<double>();
    const auto y = e[i].second.to(DType::f64).to_vector<double>();
    REQUIRE(x.size() == y.size());
    double scale = 1, gap = 0;
    for (size_t k = 0; k < y.size(); ++k) {
      scale = std::max(scale, std::abs(y[k]));
      gap = std::max(gap, std::abs(x[k] - y[k]));
    }
    CHECK(gap <= 1e-4 * scale);
    worst = std::max(worst, gap / scale);
  }
  INFO("largest relative gap " << worst);
  CHECK(worst < 1e-4);
}

// Two checkpoints' tensors: the same names in the same order, dtypes and shapes, the values
void check_same_state(const NamedTensors& actual, const NamedTensors& expected) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO(expected[i].first);
    REQUIRE(actual[i].first == expected[i].first);
    CHECK(actual[i].second.dtype() == expected[i].second.dtype());
    REQUIRE(actual[i].second.shape() == expected[i].second.shape());
    const auto x = actual[i].second.to(DType::f64).to_vector<double>();
    const auto y = expected[i].second.to(DType::f64).to_vector<double>();
    double scale = 1, gap = 0;
    for (size_t k = 0; k < y.size(); ++k) {
      scale = std::max(scale, std::abs(y[k]));
      gap = std::max(gap, std::abs(x[k] - y[k]));
    }
    CHECK(gap <= 1e-4 * scale);
  }
}

bool differs(Module& a, Module& b) {
  const NamedTensors x = a.named_parameters(), y = b.named_parameters();
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i].second.to_vector<float>() != y[i].second.to_vector<float>()) return true;
  return false;
}

}  // namespace sonata::testing
