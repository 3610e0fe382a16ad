// Views of views: shape changes on tensors that are already transposed, sliced or expanded,
// where a view must find strides that fit or reshape must fall back to a copy.
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "engine/ops.h"
#include "tests/ops/op_test_util.h"

using namespace sonata;
using namespace sonata::testing;

TEST_CASE("views of non-contiguous tensors", "[ops][shape][grad]") {
  struct Case {
    std::string name;
    Shape input;
    std::function<Tensor(const Tensor&)> fn;
  };
  const std::vector<Case> cases = {
      {"select of a transposed tensor", {4, 3}, [](const Tensor& x) { return x.t().select(0, 1); }},
      {"select of a strided slice",
       {6, 3},
       [](const Tensor& x) { return x.slice(0, 0, 6, 2).select(1, 2); }},
      {"unsqueeze of a transposed tensor",
       {4, 3},
       [](const Tensor& x) { return x.t().unsqueeze(1); }},
      {"unsqueeze then squeeze of a transposed tensor",
       {4, 3},
       [](const Tensor& x) { return x.t().unsqueeze(0).unsqueeze(2).squeeze(0); }},
      {"squeeze of a permuted tensor",
       {4, 1, 3},
       [](const Tensor& x) {
         return x.permute({2, 1, 0}).squeeze(1);
       }},
      {"view splitting a dim of a transposed tensor",
       {4, 6},
       [](const Tensor& x) {
         return x.t().view({2, 3, 4});
       }},
      {"view merging contiguous dims of a permuted tensor",
       {2, 3, 4},
       [](const Tensor& x) {
         return x.permute({2, 0, 1}).view({4, 6});
       }},
      {"reshape of an expanded tensor",
       {3, 1},
       [](const Tensor& x) {
         return x.expand({3, 4}).reshape({12});
       }},
      {"reshape of a leading expand",
       {3},
       [](const Tensor& x) {
         return x.expand({2, 3}).reshape({6});
       }},
      {"flatten of a strided slice",
       {3, 8},
       [](const Tensor& x) { return x.slice(1, 0, 8, 2).flatten(); }},
      {"flatten of a 0-d tensor", {}, [](const Tensor& x) { return x.flatten(); }},
      {"expand of a 0-d tensor",
       {},
       [](const Tensor& x) {
         return x.expand({2, 3});
       }},
      {"expand of a transposed tensor",
       {1, 3},
       [](const Tensor& x) {
         return x.t().expand({3, 4});
       }},
      {"transpose of an expand",
       {3, 1},
       [](const Tensor& x) {
         return x.expand({3, 4}).t().contiguous();
       }},
      {"empty slice next to a full one",
       {4, 3},
       [](const Tensor& x) {
         return cat({x.slice(0, 3, 1), x.slice(0, 1, 3)}, 0);
       }},
      {"permute of a permute",
       {2, 3, 4},
       [](const Tensor& x) {
         return x.permute({1, 2, 0}).permute({2, 0, 1}).permute({0, 2, 1});
       }},
  };
  uint64_t seed = 1100;
  for (const Case& c : cases) {
    INFO(c.name);
    const Tensor x = grad_input(c.input, ++seed);
    const Tensor forward = c.fn(x.detach());
    const Tensor pattern = grad_input(forward.shape(), ++seed).detach();
    require_gradients([&](const std::vector<Tensor>& in) { return mul(c.fn(in[0]), pattern); },
                      {x});
  }
}

TEST_CASE("views of non-contiguous tensors index as expected", "[ops][shape]") {
  const Tensor m = arange(0, 24, 1, f64_options()).view({4, 6});
  // m.t() is [6,4] with m.t()[i][j] = 6j + i; split dim 0 into [2,3].
  const Tensor v = m.t().view({2, 3, 4});
  const std::vector<double> got = values_of(v);
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t j = 0; j < 4; ++j)
        CHECK(got[size_t(flat_index({2, 3, 4}, {a, b, j}))] == double(6 * j + (3 * a + b)));
  CHECK(v.storage() == m.storage());
  CHECK(values_of(m.t().select(0, 1)) == std::vector<double>{1, 7, 13, 19});
  CHECK(values_of(f64_tensor({1, 2, 3}, {3}).expand({2, 3}).reshape({6})) ==
        std::vector<double>{1, 2, 3, 1, 2, 3});
  CHECK(values_of(m.slice(1, 0, 6, 2).flatten()) ==
        std::vector<double>{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22});
}
