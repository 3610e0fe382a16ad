// cross_entropy / nll_loss on CUDA against the CPU reference, f32 / f16 / bf16, over the table
// in tests/cases/cross_entropy_cases.h: the three line layouts of the kernels (warp rows, block
// rows for many classes, columns for [N, C, d...]), whole and misaligned 16-byte packs, with
// weights, ignore_index, label smoothing and every reduction.
#include <catch2/catch.hpp>

#include <cmath>

#include "engine/ops.h"
#include "engine/ops/loss.h"
#include "tests/cases/cross_entropy_cases.h"
#include "tests/cuda/f64_parity.h"
#include "tests/cuda/parity_util.h"

using namespace sonata;
using namespace sonata::testing;

TEST_CASE("cuda cross_entropy matches the CPU", "[cuda][cross_entropy]") {
  uint64_t seed = 300;
  for (const CrossEntropyCase& test : cross_entropy_cases()) {
    const Tensor input = parity_input(test.input_shape(), ++seed, -4, 4);
    const Tensor weight = class_weight_tensor(test.classes(), DType::f32);
    for (bool weighted : {false, true})
      for (int64_t ignore : kIgnoreIndices) {
        const Tensor target = test.target_tensor(ignore);
        for (double smoothing : kLabelSmoothings)
          for (Reduction reduction : kLossReductions) {
            INFO(test.name << ": weighted " << weighted << " ignore_index " << ignore
                           << " smoothing " << smoothing << " reduction " << int(reduction));
            require_parity(
                [&](const std::vector<Tensor>& in) {
                  const Tensor logits = test.logits_of(in[0]);
                  if (test.misaligned) REQUIRE(logits.is_contiguous());
                  return cross_entropy(logits, in[1], weighted ? in[2] : Tensor(),
                                       {reduction, ignore, smoothing});
                },
                {input, target, weight});
          }
      }
  }
}

TEST_CASE("cuda nll_loss matches the CPU", "[cuda][cross_entropy]") {
  uint64_t seed = 350;
  for (const CrossEntropyCase& test : cross_entropy_cases()) {
    const Tensor log_probs = parity_input(test.input_shape(), ++seed, -3, -0.1);
    const Tensor weight = class_weight_tensor(test.classes(), DType::f32);
    for (bool weighted : {false, true})
      for (int64_t ignore : kIgnoreIndices) {
        const Tensor target = test.target_tensor(ignore);
        for (Reduction reduction : kLossReductions) {
          INFO(test.name << ": weighted " << weighted << " ignore_index " << ignore << " reduction "
                         << int(reduction));
          require_parity(
              [&](const std::vector<Tensor>& in) {
                return nll_loss(test.logits_of(in[0]), in[1], weighted ? in[2] : Tensor(),
                                {reduction, ignore});
              },
              {log_probs, target, weight});
        }
      }
  }
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
