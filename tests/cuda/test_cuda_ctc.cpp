// CTC loss on CUDA against the CPU reference, for f32, f16 and bf16 log-probabilities and
// the fused-from-logits variant: ragged lengths, repeats, empty targets, zero_infinity, and
// 300-label targets (601 states: more than one recursion block's threads).
#include <catch2/catch.hpp>

#include "engine/ops.h"
#include "engine/ops/ctc.h"
#include "engine/random.h"
#include "tests/cuda/parity_util.h"
#include "tests/ops/ctc_test_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

CtcOptions options_for(int64_t blank, Reduction reduction, bool zero_infinity = false) {
  CtcOptions options;
  options.blank = blank;
  options.reduction = reduction;
  options.zero_infinity = zero_infinity;
  return options;
}

// log_probs as the input under test (normalised on the CPU first), so that the CTC kernels
// alone are compared; the targets and lengths go to the device with them.
void require_ctc_parity(const CtcCase& c, const CtcOptions& options, uint64_t seed,
                        bool padded = true) {
  const Tensor logits = parity_input({c.frames, c.batch(), c.classes}, seed, -3, 3, false);
  const Tensor log_probs = log_softmax(logits, 2).detach().set_requires_grad(true);
  const Tensor targets = padded ? c.padded_targets(c.blank) : c.concatenated_targets();
  const std::vector<Tensor> inputs{log_probs, targets, c.input_lengths_tensor(),
                                   c.target_lengths_tensor()};
  {
    INFO("ctc_loss");
    require_parity(
        [&](const std::vector<Tensor>& in) {
          return ctc_loss(in[0], in[1], in[2], in[3], options);
        },
        inputs);
  }
  {
    INFO("ctc_loss_from_logits");
    const Tensor leaf = logits.detach().set_requires_grad(true);
    require_parity(
        [&](const std::vector<Tensor>& in) {
          return ctc_loss_from_logits(in[0], in[1], in[2], in[3], options);
        },
        {leaf, targets, c.input_lengths_tensor(), c.target_lengths_tensor()});
  }
}

}  // namespace

TEST_CASE("cuda ctc_loss matches the CPU on a ragged batch", "[cuda][ctc]") {
  const CtcCase c{12, 6, 0, {12, 9, 5, 1, 0}, {{1, 2, 2, 3}, {4, 4}, {}, {5}, {}}};
  for (Reduction reduction : {Reduction::none, Reduction::sum, Reduction::mean}) {
    INFO("reduction " << int(reduction));
    require_ctc_parity(c, options_for(0, reduction), 800, true);
    require_ctc_parity(c, options_for(0, reduction), 801, false);
  }
  const CtcCase blank_last{10, 5, 4, {10, 7}, {{0, 1, 1, 3}, {2}}};
  require_ctc_parity(blank_last, options_for(4, Reduction::mean), 802);
}

TEST_CASE("cuda ctc_loss zero_infinity", "[cuda][ctc]") {
  // Sample 1 needs 3 labels + 2 repeats = 5 frames and has 4.
  const CtcCase c{6, 4, 0, {6, 4, 6}, {{1, 2}, {1, 1, 1}, {3, 3}}};
  require_ctc_parity(c, options_for(0, Reduction::none, true), 810);
  require_ctc_parity(c, options_for(0, Reduction::mean, true), 811);
}

TEST_CASE("cuda ctc_loss with 300 labels", "[cuda][ctc]") {
  Generator generator(820, 0);
  const std::vector<double> u = rand({500}, {}, &generator).to_vector<double>();
  CtcCase c{700, 29, 0, {700, 520}, {{}, {}}};
  for (size_t j = 0; j < 300; ++j) c.targets[0].push_back(1 + int64_t(u[j] * 28));
  for (size_t j = 300; j < 500; ++j) c.targets[1].push_back(1 + int64_t(u[j] * 28));
  require_ctc_parity(c, options_for(0, Reduction::mean), 821);
  require_ctc_parity(c, options_for(0, Reduction::sum), 822, false);
}
