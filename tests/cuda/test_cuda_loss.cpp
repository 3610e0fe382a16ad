// cross_entropy / nll_loss on CUDA against the CPU reference, f32 / f16 / bf16, covering the
// three line layouts of the kernels (warp rows, block rows for many classes, columns for
// [N, C, d...]) with weights, ignore_index, label smoothing and every reduction.
#include <catch2/catch.hpp>

#include "engine/ops.h"
#include "engine/ops/loss.h"
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
