// LSTM / GRU cells and layers on CUDA against the CPU reference in f32, f16 and bf16: the
// fused cells and sequences forward and backward over the tables in tests/cases/rnn_cases.h
// (masked samples, both directions, with and without b_hh), and a small ragged bidirectional
// LSTM and GRU end to end (outputs, final states and input gradients).
#include <catch2/catch.hpp>

#include <vector>

#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "engine/ops/rnn_cell.h"
#include "engine/ops/rnn_sequence.h"
#include "models/layers/rnn.h"
#include "tests/cases/rnn_cases.h"
#include "tests/cuda/parity_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

// The layer test's ragged batch: sample 1 stops after 2 steps, odd sizes.
const std::vector<int64_t> kLengths{4, 2, 3, 7, 1};
constexpr int64_t kBatch = 5;

}  // namespace

TEST_CASE("cuda lstm_cell matches the CPU", "[cuda][rnn_cell][lstm]") {
  for (const RnnCellCase& test : rnn_cell_cases()) {
    const std::vector<Tensor> inputs{parity_input({test.batch, 4 * test.hidden}, 11, -2, 2),
                                     parity_input({test.batch, 4 * test.hidden}, 12, -2, 2),
                                     parity_input({test.batch, test.hidden}, 13),
                                     parity_input({test.batch, test.hidden}, 14)};
    for (bool ragged : {false, true}) {
      INFO(test.name << ", ragged " << ragged);
      auto lengths = [&](const Tensor& like) {
        return ragged ? test.lengths_tensor(like.device()) : Tensor();
      };
      require_parity(
          [&](const std::vector<Tensor>& in) {
            const LstmState s = lstm_cell(in[0], in[1], in[2], in[3], lengths(in[0]), test.step);
            return cat({s.h, s.c}, 1);
          },
          inputs);
      // Only h used: c's gradient never arrives.
      require_parity(
          [&](const std::vector<Tensor>& in) {
            return lstm_cell(in[0], in[1], in[2], in[3], lengths(in[0]), test.step).h;
          },
          inputs);
    }
  }
}

TEST_CASE("cuda lstm_sequence matches the CPU in both directions", "[cuda][rnn_sequence]") {
  for (const RnnSequenceCase& test : rnn_sequence_cases()) {
    const std::vector<Tensor> inputs{
        parity_input({test.steps, test.batch, 4 * test.hidden}, 31, -2, 2),
        parity_input({4 * test.hidden, test.hidden}, 32, -0.3, 0.3),
        parity_input({test.batch, test.hidden}, 33), parity_input({test.batch, test.hidden}, 34)};
    for (const bool reverse : {false, true}) {
      INFO(test.name << ", reverse " << reverse);
      require_parity(
          [&](const std::vector<Tensor>& in) {
            const LstmSequence run = lstm_sequence(in[0], in[1], in[2], in[3],
                                                   test.lengths_tensor(in[0].device()), reverse);
            return cat({run.output.reshape({-1}), run.h.reshape({-1}), run.c.reshape({-1})}, 0);
          },
          inputs);
      // Only the sequence output used: the final states' gradients never arrive.
      require_parity(
          [&](const std::vector<Tensor>& in) {
            return lstm_sequence(in[0], in[1], in[2], in[3], test.lengths_tensor(in[0].device()),
                                 reverse)
                .output;
          },
          inputs);
    }
  }
}

TEST_CASE("cuda gru_sequence matches the CPU in both directions", "[cuda][rnn_sequence]") {
  for (const RnnSequenceCase& test : rnn_sequence_cases()) {
    for (const bool reverse : {false, true})
      for (const bool bias : {true, false}) {
        INFO(test.name << ", reverse " << reverse << " bias " << bias);
        // b_hh last, left out when unused (its gradient would never arrive).
        std::vector<Tensor> inputs{
            parity_input({test.steps, test.batch, 3 * test.hidden}, 41, -2, 2),
            parity_input({3 * test.hidden, test.hidden}, 42, -0.3, 0.3),
            parity_input({test.batch, test.hidden}, 44)};
        if (bias) inputs.push_back(parity_input({3 * test.hidden}, 43));
        require_parity(
            [&](const std::vector<Tensor>& in) {
              const GruSequence run = gru_sequence(in[0], in[1], bias ? in[3] : Tensor(), in[2],
                                                   test.lengths_tensor(in[0].device()), reverse);
              return cat({run.output.reshape({-1}), run.h.reshape({-1})}, 0);
            },
            inputs);
      }
  }
}

TEST_CASE("cuda gru_cell matches the CPU", "[cuda][rnn_cell][gru]") {
  for (const RnnCellCase& test : rnn_cell_cases()) {
    const std::vector<Tensor> inputs{parity_input({test.batch, 3 * test.hidden}, 21, -2, 2),
                                     parity_input({test.batch, 3 * test.hidden}, 22, -2, 2),
                                     parity_input({test.batch, test.hidden}, 23)};
    for (bool ragged : {false, true}) {
      INFO(test.name << ", ragged " << ragged);
      require_parity(
          [&](const std::vector<Tensor>& in) {
            return gru_cell(in[0], in[1], in[2],
                            ragged ? test.lengths_tensor(in[0].device()) : Tensor(), test.step);
          },
          inputs);
    }
  }
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
