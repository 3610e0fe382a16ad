#include "tests/support/tensor_compare.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/ops.h"

namespace sonata::testing {

double relative_error(const Tensor& ours, const Tensor& theirs) {
  const std::vector<double> a = ours.to_vector<double>(), e = theirs.to_vector<double>();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - e[i]));
    scale = std::max(scale, std::abs(e[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

double max_abs(const Tensor& t) {
  return amax(abs(t.to(DType::f64))).item();
}

}  // namespace sonata::testing
