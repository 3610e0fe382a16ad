// max_pool2d on the CPU when a window lies wholly in the padding (a large dilation): the
// reference PyTorch gives, -inf at index -1, and no gradient routed from it.
#include <catch2/catch.hpp>

#include <limits>
#include <vector>

#include "engine/ops.h"
#include "engine/ops/pool.h"

using namespace sonata;

TEST_CASE("max_pool2d: a window wholly in the padding holds -inf and index -1", "[ops][pool]") {
  // 1x1 input, kernel 2, padding 1, dilation 2: the window reads rows and columns -1 and 1.
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO(dtype_name(dtype));
    Tensor x = from_vector(std::vector<double>{-3.5, 2.0}, {2, 1, 1, 1}).to(dtype).detach();
    x.set_requires_grad(true);
    const auto [y, index] = max_pool2d(x, {2, 2}, {2, 2}, {1, 1}, {2, 2});
    REQUIRE(y.shape() == Shape{2, 1, 1, 1});
    CHECK(y.to(DType::f64).to_vector<double>() ==
          std::vector<double>(2, -std::numeric_limits<double>::infinity()));
    CHECK(index.to_vector<int64_t>() == std::vector<int64_t>{-1, -1});
    sum(y).backward();
    CHECK(x.grad().to(DType::f64).to_vector<double>() == std::vector<double>{0.0, 0.0});
  }
}
