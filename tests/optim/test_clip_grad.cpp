// clip_grad_norm_ against torch.nn.utils.clip_grad_norm_ (tests/fixtures/optim/clip_*.txt):
// the returned norm and the clipped gradients, f64 within 1e-12 and f32 within 1e-6.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "engine/ops.h"
#include "engine/optim/clip_grad.h"
#include "engine/random.h"
#include "tests/support/text_fixture.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

void check_clip_case(const std::string& name) {
  INFO("case " << name);
  const TextFixture f =
      read_text_fixture(std::string(SONATA_FIXTURES_DIR) + "/optim/" + name + ".txt");
  const DType dtype = f.at("dtype")[0] == "f64" ? DType::f64 : DType::f32;
  const double rtol = dtype == DType::f64 ? 1e-12 : 1e-6;
  std::vector<Tensor> params;
  for (int i = 0; i < std::stoi(f.at("params")[0]); ++i) {
    const std::string key = "grad." + std::to_string(i);
    Shape shape;
    for (double d : fixture_doubles(f, key + ".shape")) shape.push_back(int64_t(d));
    Tensor p = zeros(shape, TensorOptions{}.with(dtype).grad());
    p.set_grad(
        from_vector(fixture_doubles(f, key), shape, TensorOptions{}.with(DType::f64)).to(dtype));
    params.push_back(p);
  }
  params.push_back(zeros({3}, TensorOptions{}.with(dtype).grad()));  // no gradient: skipped
  const Tensor norm = clip_grad_norm_(params, std::stod(f.at("max_norm")[0]));
  CHECK(norm.dim() == 0);
  CHECK(norm.dtype() == dtype);
  const double expected_norm = fixture_doubles(f, "norm")[0];
  CHECK(std::abs(norm.item() - expected_norm) <= rtol * expected_norm);
  for (size_t i = 0; i + 1 < params.size(); ++i) {
    const std::vector<double> got = params[i].grad().to_vector<double>();
    const std::vector<double> want = fixture_doubles(f, "clipped." + std::to_string(i));
    REQUIRE(got.size() == want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      INFO("gradient " << i << " element " << k);
      CHECK(std::abs(got[k] - want[k]) <= rtol * std::max(std::abs(want[k]), 1.0));
    }
  }
  CHECK(!params.back().grad().defined());
}

}  // namespace

TEST_CASE("clip_grad_norm_ matches torch", "[optim]") {
  for (const char* name : {"clip_f64", "clip_f32", "clip_unclipped_f64"}) check_clip_case(name);
}

TEST_CASE("the gradient norm spans chunks, dtypes and parallel loops exactly", "[optim]") {
  // Several chunks of kernels/common/multi_tensor.h and an f32 tensor beside an f64 one: the
  // norm is the f64 sum of squares of everything; repeated calls give the same bits.
  manual_seed(3);
  Tensor big = zeros({200001}, TensorOptions{}.with(DType::f64).grad());
  Tensor small = zeros({5}, TensorOptions{}.grad());
  big.set_grad(randn({200001}, TensorOptions{}.with(DType::f64)));
  small.set_grad(randn({5}));
  double sum = 0;
  for (double v : big.grad().to_vector<double>()) sum += v * v;
  for (double v : small.grad().to_vector<double>()) sum += v * v;
  const Tensor norm = grad_norm({big, small});
  CHECK(norm.dtype() == DType::f64);
  CHECK(std::abs(norm.item() - std::sqrt(sum)) <= 1e-12 * std::sqrt(sum));
  CHECK(grad_norm({big, small}).item() == norm.item());

  const std::vector<double> before = big.grad().to_vector<double>();
  const Tensor clipped_norm = clip_grad_norm_({big, small}, 1.0);
  CHECK(clipped_norm.item() == norm.item());
  const double factor = 1.0 / (norm.item() + 1e-6);
  const std::vector<double> after = big.grad().to_vector<double>();
  for (size_t k = 0; k < after.size(); k += 997) CHECK(after[k] == before[k] * factor);
  CHECK(std::abs(grad_norm({big, small}).item() - 1.0) < 1e-5);
}

TEST_CASE("clip_grad_norm_ of no gradients is 0 and a NaN spreads as in torch", "[optim]") {
  Tensor p = zeros({2}, TensorOptions{}.grad());
  CHECK(clip_grad_norm_({p}, 1.0).item() == 0.0);
  p.set_grad(from_vector(std::vector<float>{1.0f, NAN}, {2}));
  CHECK(std::isnan(clip_grad_norm_({p}, 1.0).item()));
  CHECK(std::isnan(p.grad().to_vector<float>()[0]));
}

TEST_CASE("a norm summed over parts of the gradients clips as clip_grad_norm_ over them all",
          "[optim]") {
  // Two "stages" hold parts of one model's gradients (f64, so the comparison is exact up to
  // the order of a few additions).
  manual_seed(11);
  const TensorOptions f64 = TensorOptions{}.with(DType::f64);
  auto make = [&](const std::vector<Shape>& shapes) {
    std::vector<Tensor> params;
    for (const Shape& shape : shapes) {
      Tensor p = zeros(shape, f64.grad());
      p.set_grad(randn(shape, f64) * 3.0);
      params.push_back(p);
    }
    return params;
  };
  const std::vector<Tensor> first = make({{4, 5}, {7}}), second = make({{3, 3, 2}});
  std::vector<Tensor> all = first;
  all.insert(all.end(), second.begin(), second.end());
  // The reference: every gradient copied, then clipped as one.
  std::vector<Tensor> reference;
  for (const Tensor& p : all) {
    Tensor copy = zeros(p.shape(), f64.grad());
    copy.set_grad(p.grad().clone());
    reference.push_back(copy);
  }
  double by_hand = 0;
  for (const Tensor& p : all)
    for (const double g : p.grad().to_vector<double>()) by_hand += g * g;
  const double part_sum = grad_squared_norm(first).item() + grad_squared_norm(second).item();
  CHECK(part_sum == Approx(by_hand).epsilon(1e-13));
  CHECK(grad_squared_norm({zeros({2}, f64.grad())}).item() == 0.0);  // no gradient at all

  const double max_norm = 0.25 * std::sqrt(by_hand);  // clips by about 4
  const double total = clip_grad_norm_(reference, max_norm).item();
  CHECK(total == Approx(std::sqrt(part_sum)).epsilon(1e-13));
  clip_grads_to_norm_(first, std::sqrt(part_sum), max_norm);
  clip_grads_to_norm_(second, std::sqrt(part_sum), max_norm);
  for (size_t i = 0; i < all.size(); ++i) {
    const auto got = all[i].grad().to_vector<double>();
    const auto want = reference[i].grad().to_vector<double>();
    for (size_t k = 0; k < got.size(); ++k) CHECK(got[k] == Approx(want[k]).epsilon(1e-13));
  }
  // A norm under max_norm leaves the gradients alone.
  const std::vector<double> before = first[0].grad().to_vector<double>();
  clip_grads_to_norm_(first, 0.5 * max_norm, max_norm);
  CHECK(first[0].grad().to_vector<double>() == before);
}
