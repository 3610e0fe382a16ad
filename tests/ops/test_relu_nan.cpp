// ReLU keeps NaN (PyTorch: relu(nan) = nan), fused with batch_norm or alone: a NaN in the
// forward pass must reach the loss, where the loss scaler and the bad-step check see it,
// instead of becoming a silent 0. Negative values still become 0.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "engine/ops.h"
#include "engine/ops/batch_norm.h"

using namespace sonata;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// [2, 2, 2, 2]: one NaN in each channel, the rest of either sign.
Tensor input_with_nans(DType dtype) {
  std::vector<double> values(16);
  for (size_t i = 0; i < values.size(); ++i) values[i] = (i % 3 == 0 ? -1.0 : 1.0) * double(i + 1);
  values[1] = kNaN;   // channel 0
  values[13] = kNaN;  // channel 1
  return from_vector(values, {2, 2, 2, 2}, TensorOptions{}.with(DType::f64)).to(dtype);
}

}  // namespace

TEST_CASE("the fused batch_norm + ReLU keeps NaN and zeroes negatives", "[ops][batch_norm]") {
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO("dtype " << dtype_name(dtype));
    const Tensor x = input_with_nans(dtype);
    const auto options = TensorOptions{}.with(dtype);
    // Evaluation: running statistics, so the NaN does not spread over its channel's mean.
    const Tensor mean = zeros({2}, options), var = ones({2}, options);
    const Tensor y = batch_norm_relu(x, Tensor(), Tensor(), mean, var, {false, 0.1, 0.0})
                         .to(DType::f64)
                         .contiguous();
    const std::vector<double> in = x.to(DType::f64).to_vector<double>();
    const std::vector<double> out = y.to_vector<double>();
    for (size_t i = 0; i < in.size(); ++i) {
      INFO("element " << i << " input " << in[i]);
      if (std::isnan(in[i]))
        CHECK(std::isnan(out[i]));
      else
        CHECK(out[i] == (in[i] < 0 ? 0.0 : in[i]));
    }
  }
}

TEST_CASE("relu keeps NaN", "[ops][elementwise]") {
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO("dtype " << dtype_name(dtype));
    const Tensor y =
        relu(from_vector(std::vector<double>{-2, kNaN, 3}, {3}, TensorOptions{}.with(DType::f64))
                 .to(dtype))
            .to(DType::f64);
    const std::vector<double> out = y.to_vector<double>();
    CHECK(out[0] == 0.0);
    CHECK(std::isnan(out[1]));
    CHECK(out[2] == 3.0);
  }
}
