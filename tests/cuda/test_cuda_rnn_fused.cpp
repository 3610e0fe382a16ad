// The LSTM / GRU layers on CUDA through cuDNN's RNN API (engine/ops/rnn_fused.h; here the
// emulated cuDNN's own loops, emu/libs/cudnn_rnn_*.cpp) against the CPU's per-step layers:
// every case of the sequence table (tests/cases/rnn_cases.h), as LSTM and GRU, one and two
// layers, one and two directions, with the initial states and every parameter as inputs, so
// that outputs, final states and the gradients of the input, h0, c0 and each weight and bias
// are compared, in f64, f32 and f16; and torch.nn.LSTM / GRU's fixture in f64.
// Only the GRU cases can see bias_ih and bias_hh swapped in the weight space: the LSTM's cell
// adds the two, so its outputs and both biases' gradients are the same either way.
#include <catch2/catch.hpp>

#include <vector>

#include "engine/ops.h"
#include "engine/ops/rnn_fused.h"
#include "models/layers/rnn.h"
#include "tests/cases/rnn_cases.h"
#include "tests/cuda/parity_util.h"
#include "tests/models/rnn_torch_fixture.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

constexpr int64_t kInput = 3;

// x, h0, (c0,) then the parameters in torch's order, as CPU f32 leaves requiring grad.
std::vector<Tensor> layer_inputs(const RnnOptions& o, bool lstm, const RnnSequenceCase& test) {
  const int64_t gates = lstm ? 4 : 3, directions = o.bidirectional ? 2 : 1;
  const int64_t rows = o.num_layers * directions, hidden = o.hidden_size;
  uint64_t seed = 101;
  std::vector<Tensor> in{parity_input({test.steps, test.batch, kInput}, seed++),
                         parity_input({rows, test.batch, hidden}, seed++)};
  if (lstm) in.push_back(parity_input({rows, test.batch, hidden}, seed++));
  for (int64_t layer = 0; layer < o.num_layers; ++layer)
    for (int64_t d = 0; d < directions; ++d) {
      const int64_t width = layer == 0 ? kInput : hidden * directions;
      in.push_back(parity_input({gates * hidden, width}, seed++, -0.5, 0.5));
      in.push_back(parity_input({gates * hidden, hidden}, seed++, -0.5, 0.5));
      if (o.bias) {
        in.push_back(parity_input({gates * hidden}, seed++, -0.5, 0.5));
        in.push_back(parity_input({gates * hidden}, seed++, -0.5, 0.5));
      }
    }
  return in;
}

}  // namespace

TEST_CASE("cuda fused rnn: cuDNN's LSTM and GRU match the CPU layers over the sequence cases",
          "[cuda][rnn][fused]") {
  REQUIRE(fused_rnn_available(zeros({1}, TensorOptions{}.with(Device::cuda(0)))));
  for (const RnnSequenceCase& test : rnn_sequence_cases())
    for (const bool lstm : {true, false})
      for (const int64_t layers : {int64_t(1), int64_t(2)})
        for (const bool bidirectional : {false, true})
          for (const bool bias : {true, false}) {
            // The large case and the bias-free layers once each, in their widest form.
            if ((test.large || !bias) && !(layers == 2 && bidirectional)) continue;
            if (!bias && test.name != rnn_sequence_cases()[1].name) continue;
            const RnnOptions o{.input_size = kInput,
                               .hidden_size = test.hidden,
                               .num_layers = layers,
                               .bidirectional = bidirectional,
                               .bias = bias};
            INFO(test.name << (lstm ? ", LSTM" : ", GRU") << ", layers " << layers
                           << ", bidirectional " << bidirectional << ", bias " << bias);
            const size_t first_param = lstm ? 3 : 2;
            const ParityFunction f = [&](const std::vector<Tensor>& in) {
              const std::vector<Tensor> params(in.begin() + long(first_param), in.end());
              const RnnResult r = recurrent_forward(o, lstm, params, in[0], test.lengths_tensor(),
                                                    in[1], lstm ? in[2] : Tensor());
              std::vector<Tensor> parts{r.output.flatten(), r.h_n.flatten()};
              if (lstm) parts.push_back(r.c_n.flatten());
              return cat(parts, 0);
            };
            const std::vector<Tensor> inputs = layer_inputs(o, lstm, test);
            for (const DType dtype : {DType::f64, DType::f32, DType::f16}) {
              INFO("dtype " << dtype_name(dtype));
              const ParityResult result = check_cuda_parity(f, inputs, dtype);
              INFO(result.report);
              REQUIRE(result.ok);
            }
          }
}

TEST_CASE("cuda fused rnn: cuDNN's LSTM matches torch.nn.LSTM on a packed ragged batch (f64)",
          "[cuda][rnn][fused]") {
  rnn_fixture::check_against_torch<LSTM>("lstm", true, Device::cuda(0));
}

TEST_CASE("cuda fused rnn: cuDNN's GRU matches torch.nn.GRU on a packed ragged batch (f64)",
          "[cuda][rnn][fused]") {
  rnn_fixture::check_against_torch<GRU>("gru", false, Device::cuda(0));
}
