// cross_entropy / nll_loss on CUDA against the CPU reference, f32 / f16 / bf16, covering the
// three line layouts of the kernels (warp rows, block rows for many classes, columns for
// [N, C, d...]) with weights, ignore_index, label smoothing and every reduction.
#include <catch2/catch.hpp>

#include <cmath>

#include "engine/ops.h"
#include "engine/ops/loss.h"
#include "tests/cuda/f64_parity.h"
#include "tests/cuda/parity_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

// Targets cycling through the classes, every fifth one ignored.
Tensor cycling_targets(const Shape& shape, int64_t classes) {
  std::vector<int64_t> values(size_t(shape_numel(shape)));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = i % 5 == 3 ? -100 : int64_t((i * 7 + 1) % size_t(classes));
  return index_input(values, shape);
}

}  // namespace

TEST_CASE("cuda cross_entropy matches the CPU", "[cuda][cross_entropy]") {
  struct Case {
    Shape logits;
    Shape target;
  };
  const std::vector<Case> cases = {
      {{16, 10}, {16}},           // warp per row
      {{4, 3000}, {4}},           // block per row
      {{4, 6, 5, 7}, {4, 5, 7}},  // columns
      {{16, 64}, {16}},           // warp per row in 16-byte packs (64: whole packs)
  };
  uint64_t seed = 300;
  for (const Case& test : cases) {
    const int64_t c = test.logits[1];
    const Tensor logits = parity_input(test.logits, ++seed, -4, 4);
    const Tensor target = cycling_targets(test.target, c);
    const Tensor weight = parity_input({c}, ++seed, 0.5, 2, false);
    for (bool weighted : {false, true})
      for (double smoothing : {0.0, 0.1})
        for (Reduction reduction : {Reduction::none, Reduction::sum, Reduction::mean}) {
          INFO("logits " << shape_str(test.logits) << " weighted " << weighted << " smoothing "
                         << smoothing << " reduction " << int(reduction));
          require_parity(
              [&](const std::vector<Tensor>& in) {
                return cross_entropy(in[0], in[1], weighted ? in[2] : Tensor(),
                                     {reduction, -100, smoothing});
              },
              {logits, target, weight});
        }
  }
}

TEST_CASE("cuda nll_loss matches the CPU", "[cuda][cross_entropy]") {
  const Tensor log_probs = parity_input({12, 7}, 351, -3, -0.1);
  const Tensor target = cycling_targets({12}, 7);
  for (Reduction reduction : {Reduction::none, Reduction::mean})
    require_parity(
        [&](const std::vector<Tensor>& in) {
          return nll_loss(in[0], in[1], Tensor(), {reduction});
        },
        {log_probs, target});
}

TEST_CASE("cuda cross_entropy of equal huge logits keeps the digits of p",
          "[cuda][cross_entropy]") {
  // Two equal logits per position: p = 0.5, loss log(2), target gradient -0.5. A saved
  // max + log(sum) rounds to 10000.6934 in float at 1e4, p then off by 2e-4 relative (over the
  // f32 tolerance); at 3e4 by 1.2e-3. Rows (warp per row) and columns ([N, C, d]).
  const std::vector<float> values = {1e4f, 1e4f, 3e4f, 3e4f, -1e4f, -1e4f, 0.25f, 0.25f};
  Tensor rows = from_vector(values, {4, 2});
  rows.set_requires_grad(true);
  const Tensor targets = index_input({0, 1, 0, 1}, {4});
  for (double smoothing : {0.0, 0.1}) {
    INFO("smoothing " << smoothing);
    require_parity(
        [&](const std::vector<Tensor>& in) {
          return cross_entropy(in[0], in[1], Tensor(), {Reduction::none, -100, smoothing});
        },
        {rows, targets});
    require_parity(
        [&](const std::vector<Tensor>& in) {
          return cross_entropy(in[0].t().unsqueeze(0), in[1].unsqueeze(0), Tensor(),
                               {Reduction::none, -100, smoothing});
        },
        {rows, targets});
  }
  Tensor huge = from_vector(std::vector<double>{1e10, 1e10, 1e4, 1e4}, {2, 2},
                            TensorOptions{}.with(DType::f64));
  huge.set_requires_grad(true);
  require_f64_parity(
      [&](const std::vector<Tensor>& in) {
        return cross_entropy(in[0], in[1], Tensor(), {Reduction::none});
      },
      {huge, index_input({0, 1}, {2})});
  // And by value: the gradient of the summed loss is p - [c == t] = -0.5 / +0.5.
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO(dtype_name(dtype));
    Tensor x = rows.detach().to(dtype).to(Device::cuda()).detach();
    x.set_requires_grad(true);
    cross_entropy(x, targets.to(Device::cuda()), Tensor(), {Reduction::sum}).backward();
    const std::vector<double> grad = x.grad().to(Device::cpu()).to_vector<double>();
    for (size_t i = 0; i < grad.size(); ++i) CHECK(std::abs(grad[i]) == Approx(0.5).epsilon(1e-6));
  }
}

TEST_CASE("cuda cross_entropy on rows not aligned to 16-byte packs", "[cuda][cross_entropy]") {
  // [6, 64] logits through a contiguous view one element into its storage: whole packs per
  // row, but misaligned, so the kernels read element by element.
  const Tensor storage = parity_input({1 + 6 * 64}, 361, -4, 4);
  const Tensor target = cycling_targets({6}, 64);
  for (double smoothing : {0.0, 0.1})
    require_parity(
        [&](const std::vector<Tensor>& in) {
          const Tensor logits = in[0].slice(0, 1, 1 + 6 * 64).view({6, 64});
          REQUIRE(logits.is_contiguous());
          return cross_entropy(logits, in[1], Tensor(), {Reduction::none, -100, smoothing});
        },
        {storage, target});
}
