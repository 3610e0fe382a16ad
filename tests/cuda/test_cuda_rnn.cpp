// LSTM / GRU cells and layers on CUDA against the CPU reference in f32, f16 and bf16:
// the fused cells forward and backward (with masked samples), and a small ragged
// bidirectional LSTM and GRU end to end (outputs, final states and input gradients).
#include <catch2/catch.hpp>

#include <vector>

#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "engine/ops/rnn_cell.h"
#include "engine/ops/rnn_sequence.h"
#include "models/layers/rnn.h"
#include "tests/cuda/parity_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

// Sample 1 is inactive at step 2; odd sizes leave the grid-stride tail partly empty.
const std::vector<int64_t> kLengths{4, 2, 3, 7, 1};
constexpr int64_t kStep = 2, kBatch = 5, kHidden = 37;

Tensor lengths_on(const Tensor& like) {
  return from_vector(kLengths, {kBatch}, like.device());
}

}  // namespace

TEST_CASE("cuda lstm_cell matches the CPU", "[cuda][rnn_cell][lstm]") {
  const std::vector<Tensor> inputs{parity_input({kBatch, 4 * kHidden}, 11, -2, 2),
                                   parity_input({kBatch, 4 * kHidden}, 12, -2, 2),
                                   parity_input({kBatch, kHidden}, 13),
                                   parity_input({kBatch, kHidden}, 14)};
  require_parity(
      [](const std::vector<Tensor>& in) {
        const LstmState s = lstm_cell(in[0], in[1], in[2], in[3], lengths_on(in[0]), kStep);
        return cat({s.h, s.c}, 1);
      },
      inputs);
  require_parity(
      [](const std::vector<Tensor>& in) { return lstm_cell(in[0], in[1], in[2], in[3]).h; },
      inputs);
}

TEST_CASE("cuda lstm_sequence matches the CPU in both directions", "[cuda][rnn_sequence]") {
  constexpr int64_t kSteps = 7;  // kLengths' longest
  const std::vector<Tensor> inputs{parity_input({kSteps, kBatch, 4 * kHidden}, 31, -2, 2),
                                   parity_input({4 * kHidden, kHidden}, 32, -0.3, 0.3),
                                   parity_input({kBatch, kHidden}, 33),
                                   parity_input({kBatch, kHidden}, 34)};
  for (const bool reverse : {false, true})
    require_parity(
        [reverse](const std::vector<Tensor>& in) {
          const LstmSequence run =
              lstm_sequence(in[0], in[1], in[2], in[3], lengths_on(in[0]), reverse);
          return cat({run.output.reshape({-1}), run.h.reshape({-1}), run.c.reshape({-1})}, 0);
        },
        inputs);
}

TEST_CASE("cuda gru_sequence matches the CPU in both directions", "[cuda][rnn_sequence]") {
  constexpr int64_t kSteps = 7;  // kLengths' longest
  const std::vector<Tensor> inputs{parity_input({kSteps, kBatch, 3 * kHidden}, 41, -2, 2),
                                   parity_input({3 * kHidden, kHidden}, 42, -0.3, 0.3),
                                   parity_input({3 * kHidden}, 43),
                                   parity_input({kBatch, kHidden}, 44)};
  for (const bool reverse : {false, true})
    require_parity(
        [reverse](const std::vector<Tensor>& in) {
          const GruSequence run =
              gru_sequence(in[0], in[1], in[2], in[3], lengths_on(in[0]), reverse);
          return cat({run.output.reshape({-1}), run.h.reshape({-1})}, 0);
        },
        inputs);
}

TEST_CASE("cuda gru_cell matches the CPU", "[cuda][rnn_cell][gru]") {
  const std::vector<Tensor> inputs{parity_input({kBatch, 3 * kHidden}, 21, -2, 2),
                                   parity_input({kBatch, 3 * kHidden}, 22, -2, 2),
                                   parity_input({kBatch, kHidden}, 23)};
  require_parity(
      [](const std::vector<Tensor>& in) {
        return gru_cell(in[0], in[1], in[2], lengths_on(in[0]), kStep);
      },
      inputs);
  require_parity([](const std::vector<Tensor>& in) { return gru_cell(in[0], in[1], in[2]); },
                 inputs);
}

TEST_CASE("cuda rnn: LSTM and GRU layers match the CPU on a ragged batch", "[cuda][rnn]") {
  const RnnOptions options{
      .input_size = 6, .hidden_size = 8, .num_layers = 2, .bidirectional = true, .bias = true};
  LSTM lstm(options);
  GRU gru(options);
  for (RecurrentBase* module :
       {static_cast<RecurrentBase*>(&lstm), static_cast<RecurrentBase*>(&gru)}) {
    // The parameters travel as inputs (no gradient compared) so that the check rounds them
    // to the dtype under test and moves them; the function points the module at them.
    std::vector<Tensor> inputs{parity_input({7, kBatch, 6}, 31)};
    for (const Tensor& p : module->parameters()) inputs.push_back(p.detach().clone());
    require_parity(
        [module](const std::vector<Tensor>& in) {
          {
            NoGradGuard no_grad;
            std::vector<Tensor> params = module->parameters();
            for (size_t k = 0; k < params.size(); ++k) params[k].set_data(in[k + 1]);
          }
          const RnnResult r = module->forward(in[0], from_vector(kLengths, {kBatch}));
          std::vector<Tensor> parts{r.output.flatten(), r.h_n.flatten()};
          if (r.c_n.defined()) parts.push_back(r.c_n.flatten());
          return cat(parts, 0);
        },
        inputs);
  }
}
