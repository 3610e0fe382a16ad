// Backward rules see whatever layout the next op's backward produced: broadcast (stride 0)
// gradients from sum/expand, transposed ones from t()/permute. These checks route such
// gradients into every op, and reuse one input several times so gradients accumulate.
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "engine/ops.h"
#include "tests/ops/op_test_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

struct OpCase {
  std::string name;
  Shape input;
  double low, high;
  std::function<Tensor(const Tensor&)> fn;  // gives a 2-D result
};

std::vector<OpCase> op_cases() {
  const Tensor index = i64_tensor({2, 0, 2}, {3});
  const Tensor gather_index = i64_tensor({0, 2, 2, 1, 0, 0, 1, 1, 2, 0, 2, 1}, {4, 3});
  const Tensor other = grad_input({3, 2}, 1001).detach();
  return {
      {"exp", {4, 3}, -1, 1, [](const Tensor& x) { return exp(x); }},
      {"sqrt", {4, 3}, 0.5, 2, [](const Tensor& x) { return sqrt(x); }},
      {"sigmoid", {4, 3}, -2, 2, [](const Tensor& x) { return sigmoid(x); }},
      {"mul by itself", {4, 3}, -1, 1, [](const Tensor& x) { return mul(x, x); }},
      {"div broadcast",
       {4, 3},
       0.5,
       1.5,
       [](const Tensor& x) { return div(x.select(1, 0).unsqueeze(1), x); }},
      {"softmax", {4, 3}, -2, 2, [](const Tensor& x) { return softmax(x, 1); }},
      {"log_softmax", {4, 3}, -2, 2, [](const Tensor& x) { return log_softmax(x, 0); }},
      {"matmul", {4, 3}, -1, 1, [other](const Tensor& x) { return matmul(x, other); }},
      {"matmul with itself", {4, 3}, -1, 1, [](const Tensor& x) { return matmul(x, x.t()); }},
      {"amax", {4, 3}, -1, 1, [](const Tensor& x) { return amax(x, {1}, true); }},
      {"max", {4, 3}, -1, 1, [](const Tensor& x) { return sonata::max(x, 0, true).first; }},
      {"var", {4, 3}, -1, 1, [](const Tensor& x) { return var(x, {0}, 1, true); }},
      {"index_select",
       {4, 3},
       -1,
       1,
       [index](const Tensor& x) { return index_select(x, 1, index); }},
      {"gather",
       {4, 3},
       -1,
       1,
       [gather_index](const Tensor& x) { return gather(x, 1, gather_index); }},
      {"scatter_add into itself",
       {4, 3},
       -1,
       1,
       [gather_index](const Tensor& x) { return scatter_add(x, 1, gather_index, mul(x, x)); }},
      {"cat with itself",
       {4, 3},
       -1,
       1,
       [](const Tensor& x) {
         return cat({x, exp(x)}, 1);
       }},
      {"split",
       {4, 3},
       -1,
       1,
       [](const Tensor& x) {
         const auto parts = split(x, 2, 0);
         return add(parts[0], mul(parts[1], 3.0));
       }},
      {"where",
       {4, 3},
       -1,
       1,
       [](const Tensor& x) { return where(gt(x, zeros({}, x.options())), x, mul(x, x)); }},
      {"addmm",
       {4, 3},
       -1,
       1,
       [other](const Tensor& x) { return addmm(x.select(1, 0).unsqueeze(1), x, other, 2.0, 0.5); }},
  };
}

}  // namespace

TEST_CASE("ops accept broadcast and transposed incoming gradients", "[ops][grad]") {
  for (const OpCase& c : op_cases()) {
    INFO(c.name);
    const Tensor x = grad_input(c.input, 1002, c.low, c.high);
    // sum's backward hands the op an expanded (stride 0) gradient.
    require_gradients([&](const std::vector<Tensor>& in) { return sum(c.fn(in[0]), {0}); }, {x});
    require_gradients([&](const std::vector<Tensor>& in) { return sum(c.fn(in[0])); }, {x});
    // t()'s backward hands it a transposed one.
    require_gradients([&](const std::vector<Tensor>& in) { return c.fn(in[0]).t(); }, {x});
    // expand's backward sums, the op sees a broadcast view of its own output's shape.
    require_gradients(
        [&](const std::vector<Tensor>& in) {
          const Tensor out = c.fn(in[0]);
          Shape bigger = out.shape();
          bigger.insert(bigger.begin(), 2);
          return out.expand(bigger);
        },
        {x});
  }
}

TEST_CASE("an input used by several ops accumulates its gradient", "[ops][grad]") {
  const Tensor x = grad_input({3, 3}, 1003, 0.5, 1.5);
  require_gradients(
      [](const std::vector<Tensor>& in) {
        const Tensor& v = in[0];
        return add(add(mul(v, v.t()), log(v)), matmul(v, softmax(v, 0)));
      },
      {x});
  // Backward twice through a retained graph adds into the leaf's gradient.
  const Tensor leaf = f64_leaf({1, 2}, {2});
  const Tensor y = sum(mul(leaf, leaf));
  y.backward(Tensor(), true);
  y.backward();
  CHECK(values_of(leaf.grad()) == std::vector<double>{4, 8});
}
