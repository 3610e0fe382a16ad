#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"

using namespace sonata;

namespace {
Tensor leaf(std::vector<double> values, Shape shape) {
  Tensor t = from_vector(values, shape, TensorOptions{}.with(DType::f64));
  t.set_requires_grad(true);
  return t;
}
std::vector<double> grad_of(const Tensor& t) {
  return t.grad().to_vector<double>();
}
}  // namespace

TEST_CASE("a diamond graph sums both paths", "[core][autograd]") {
  // y = a*x + x^2 through two branches from x; dy/dx = a + 2x.
  Tensor x = leaf({1.5, -2.0}, {2});
  Tensor a = leaf({3.0, 0.5}, {2});
  Tensor left = mul(a, x);
  Tensor right = mul(x, x);
  sum(add(left, right)).backward();
  CHECK(grad_of(x) == std::vector<double>{3.0 + 3.0, 0.5 - 4.0});
  CHECK(grad_of(a) == std::vector<double>{1.5, -2.0});
}

TEST_CASE("a leaf used many times accumulates once per use and across backwards",
          "[core][autograd]") {
  Tensor x = leaf({2.0}, {1});
  Tensor y = add(add(x, x), mul(x, 3.0));  // 5x
  y.backward();
  CHECK(grad_of(x) == std::vector<double>{5.0});
  mul(x, 2.0).backward();  // grads accumulate like PyTorch until cleared
  CHECK(grad_of(x) == std::vector<double>{7.0});
  x.set_grad(Tensor());
  mul(x, 2.0).backward();
  CHECK(grad_of(x) == std::vector<double>{2.0});
}

TEST_CASE("grad-ready hooks fire once per leaf, after its gradient is complete, latest leaf first",
          "[core][autograd]") {
  // w1 is used first in the forward, w3 last: backward finishes w3 first, as DDP expects.
  Tensor x = leaf({1.0, 2.0}, {2});
  Tensor w1 = leaf({0.5, 0.5}, {2});
  Tensor w2 = leaf({2.0, 1.0}, {2});
  Tensor w3 = leaf({1.0, -1.0}, {2});
  std::vector<std::string> order;
  std::vector<double> w2_grad_seen;
  w1.register_grad_ready_hook([&](Tensor&) { order.push_back("w1"); });
  w2.register_grad_ready_hook([&](Tensor& t) {
    order.push_back("w2");
    w2_grad_seen = t.grad().to_vector<double>();
  });
  w3.register_grad_ready_hook([&](Tensor&) { order.push_back("w3"); });
  Tensor h1 = mul(x, w1);
  Tensor h2 = mul(h1, w2);
  Tensor h3 = mul(add(h2, mul(h1, w2)), w3);  // w2 used twice: its hook must wait for both
  sum(h3).backward();
  REQUIRE(order == std::vector<std::string>{"w3", "w2", "w1"});
  // d/dw2 of sum(2*h1*w2*w3) = 2*h1*w3
  CHECK(w2_grad_seen == std::vector<double>{2 * 0.5 * 1.0, 2 * 1.0 * -1.0});
}

TEST_CASE("a second backward through a freed graph is a clear error and retain_graph keeps it",
          "[core][autograd]") {
  Tensor x = leaf({1.0, 2.0}, {2});
  Tensor y = sum(exp(x));
  y.backward({}, /*retain_graph=*/true);
  y.backward();  // allowed: the first kept the saved tensors
  const std::vector<double> g = grad_of(x);
  CHECK(g[0] == Approx(2 * std::exp(1.0)));
  CHECK(g[1] == Approx(2 * std::exp(2.0)));
  try {
    y.backward();
    FAIL("a third backward through a freed graph must throw");
  } catch (const Error& error) {
    CHECK_THAT(error.what(), Catch::Contains("second time") && Catch::Contains("retain_graph"));
  }
}

TEST_CASE("no_grad records nothing and detach cuts history", "[core][autograd]") {
  Tensor x = leaf({1.0}, {1});
  {
    NoGradGuard no_grad;
    Tensor y = mul(x, 2.0);
    CHECK_FALSE(y.requires_grad());
    CHECK(y.is_leaf());
  }
  Tensor z = mul(x, 2.0);
  CHECK(z.requires_grad());
  Tensor cut = z.detach();
  CHECK_FALSE(cut.requires_grad());
  CHECK(cut.data_ptr() == z.data_ptr());
  Tensor w = add(mul(cut, 5.0), z);  // only z's path reaches x
  w.backward();
  CHECK(grad_of(x) == std::vector<double>{2.0});
}

TEST_CASE("backward of a tensor that needs no grad, or of a non-scalar without gradient, throws",
          "[core][autograd]") {
  Tensor plain = ones({2});
  CHECK_THROWS_AS(plain.backward(ones({2})), Error);
  Tensor x = leaf({1.0, 2.0}, {2});
  Tensor y = mul(x, 2.0);
  CHECK_THROWS_WITH(y.backward(), Catch::Contains("gradient is needed"));
  y.backward(from_vector(std::vector<double>{1.0, 10.0}, {2}, TensorOptions{}.with(DType::f64)));
  CHECK(grad_of(x) == std::vector<double>{2.0, 20.0});
}

TEST_CASE("a 5,000-node chain runs backward and tears down without recursion", "[core][autograd]") {
  Tensor x = leaf({0.5}, {1});
  Tensor y = x;
  for (int i = 0; i < 5000; ++i) y = add(mul(y, 1.0001), 0.0);  // 10,000 nodes
  y.backward();
  CHECK(grad_of(x)[0] == Approx(std::pow(1.0001, 5000)).epsilon(1e-9));
  y = Tensor();  // the graph dies here, iteratively
  // A much longer one (an unrolled RNN over thousands of steps) must also be fine.
  Tensor z = x;
  for (int i = 0; i < 50000; ++i) z = tanh(z);
  z.backward();
  CHECK(std::isfinite(x.grad().item()));
}

TEST_CASE("in-place changes of tensors that require grad are refused while recording",
          "[core][autograd]") {
  Tensor x = leaf({1.0}, {1});
  CHECK_THROWS_WITH(x.add_(ones({1}, TensorOptions{}.with(DType::f64))),
                    Catch::Contains("in-place"));
  NoGradGuard no_grad;
  x.add_(ones({1}, TensorOptions{}.with(DType::f64)));
  CHECK(x.item() == 2.0);
}

TEST_CASE("gradients reach leaves through views and casts", "[core][autograd]") {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  // permute -> slice -> reshape -> cast to f32 and back
  Tensor y = x.t().slice(0, 1, 3).reshape({4}).to(DType::f32).to(DType::f64);
  sum(mul(y, y)).backward();
  // y holds columns 1 and 2 of x: gradient 2*x there, 0 in column 0.
  CHECK(grad_of(x) == std::vector<double>{0, 4, 6, 0, 10, 12});
}
