#include "models/layers/rnn.h"

#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "engine/ops.h"
#include "engine/ops/rnn_fused.h"
#include "engine/ops/rnn_sequence.h"
#include "models/layers/init.h"

namespace sonata {
namespace {

// Valid lengths as a vector, or empty when every sequence is full (then no masking at all).
std::vector<int64_t> ragged_lengths(const Tensor& lengths, int64_t steps, int64_t batch) {
  if (!lengths.defined()) return {};
  SONATA_CHECK(
      lengths.dtype() == DType::i64 && lengths.shape() == Shape{batch} && lengths.device().is_cpu(),
      "RNN: lengths must be an i64 CPU tensor [", batch, "], got ", dtype_name(lengths.dtype()),
      " ", shape_str(lengths.shape()), " on ", lengths.device().str());
  std::vector<int64_t> values = lengths.to_vector<int64_t>();
  bool full = true;
  for (size_t n = 0; n < values.size(); ++n) {
    SONATA_CHECK(values[n] >= 0 && values[n] <= steps, "RNN: lengths[", n, "] = ", values[n],
                 " is outside [0, ", steps, "]");
    full = full && values[n] == steps;
  }
  return full ? std::vector<int64_t>{} : values;
}

// 1 where frame t of sample n is valid, else 0: [T, N, 1] in x's dtype and device.
Tensor valid_frames(const std::vector<int64_t>& lengths, int64_t steps, const Tensor& like) {
  const int64_t batch = int64_t(lengths.size());
  std::vector<double> mask(size_t(steps * batch));
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t n = 0; n < batch; ++n) mask[size_t(t * batch + n)] = t < lengths[n] ? 1.0 : 0.0;
  return from_vector(mask, {steps, batch, 1}, like.options());
}

// State `index` of an optional [L*D, N, H] initial state, zeros when undefined.
Tensor initial_state(const Tensor& state, int64_t index, int64_t rows, const Shape& state_shape,
                     const Tensor& like, const char* name) {
  if (!state.defined()) return zeros(state_shape, like.options());
  const Shape expected{rows, state_shape[0], state_shape[1]};
  SONATA_CHECK(state.shape() == expected, "RNN: ", name, " must be ", shape_str(expected), ", got ",
               shape_str(state.shape()));
  return state.select(0, index);
}

}  // namespace

RecurrentBase::RecurrentBase(const RnnOptions& options, int64_t gates, bool has_cell_state)
    : options_(options), has_cell_state_(has_cell_state) {
  SONATA_CHECK(options.input_size > 0 && options.hidden_size > 0 && options.num_layers > 0,
               "RNN: input_size, hidden_size and num_layers must be positive, got ",
               options.input_size, ", ", options.hidden_size, ", ", options.num_layers);
  const int64_t hidden = options.hidden_size;
  // torch's RNNBase.reset_parameters: every parameter U(-1/sqrt(H), 1/sqrt(H)).
  for (int64_t layer = 0; layer < options.num_layers; ++layer) {
    const int64_t in = layer == 0 ? options.input_size : hidden * directions();
    for (int64_t d = 0; d < directions(); ++d) {
      const std::string suffix = "_l" + std::to_string(layer) + (d == 1 ? "_reverse" : "");
      DirectionWeights w;
      w.weight_ih = register_parameter("weight_ih" + suffix,
                                       default_uniform_init({gates * hidden, in}, hidden));
      w.weight_hh = register_parameter("weight_hh" + suffix,
                                       default_uniform_init({gates * hidden, hidden}, hidden));
      if (options.bias) {
        w.bias_ih =
            register_parameter("bias_ih" + suffix, default_uniform_init({gates * hidden}, hidden));
        w.bias_hh =
            register_parameter("bias_hh" + suffix, default_uniform_init({gates * hidden}, hidden));
      }
      weights_.push_back(w);
    }
  }
}

Tensor RecurrentBase::forward(const Tensor& x) {
  return forward(x, Tensor()).output;
}

RnnResult RecurrentBase::forward(const Tensor& x, const Tensor& lengths, const Tensor& h0,
                                 const Tensor& c0) {
  std::vector<Tensor> params;
  for (const DirectionWeights& w : weights_) {
    params.insert(params.end(), {w.weight_ih, w.weight_hh});
    if (options_.bias) params.insert(params.end(), {w.bias_ih, w.bias_hh});
  }
  return recurrent_forward(options_, has_cell_state_, params, x, lengths, h0, c0);
}

namespace {

struct DirectionWeights {
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;
};
struct DirectionResult {
  Tensor output, h, c;  // output [T, N, H]
};

DirectionResult run_direction(const RnnOptions& options, bool lstm, const DirectionWeights& w,
                              const Tensor& x, bool reverse, const Tensor& lengths, Tensor h,
                              Tensor c) {
  const int64_t steps = x.size(0), batch = x.size(1), hidden = options.hidden_size;
  if (steps == 0 || batch == 0) return {zeros({steps, batch, hidden}, x.options()), h, c};
  // Every step's input projection in one GEMM.
  const Tensor rows = x.reshape({steps * batch, x.size(2)});
  const Tensor weight_ih_t = w.weight_ih.t();
  // The LSTM's cell only ever adds the two biases, so both go into the one input GEMM and
  // the per-step GEMM needs neither a bias broadcast nor, in backward, a bias reduction. The
  // GRU's b_hn sits inside r * (W_hn h + b_hn) and must stay in the step.
  const bool fold_bias_hh = lstm && w.bias_hh.defined();
  const Tensor input_bias = fold_bias_hh ? add(w.bias_ih, w.bias_hh) : w.bias_ih;
  const Tensor projected =
      input_bias.defined() ? addmm(input_bias, rows, weight_ih_t) : matmul(rows, weight_ih_t);
  // Every step of the direction as one node: see engine/ops/rnn_sequence.h.
  const Tensor gates_x = projected.view({steps, batch, projected.size(1)});
  if (lstm) {
    const LstmSequence run = lstm_sequence(gates_x, w.weight_hh, h, c, lengths, reverse);
    return {run.output, run.h, run.c};
  }
  const GruSequence run = gru_sequence(gates_x, w.weight_hh, w.bias_hh, h, lengths, reverse);
  return {run.output, run.h, c};
}

}  // namespace

RnnResult recurrent_forward(const RnnOptions& options, bool lstm, const std::vector<Tensor>& params,
                            const Tensor& x, const Tensor& lengths, const Tensor& h0,
                            const Tensor& c0) {
  SONATA_CHECK(x.defined() && x.dim() == 3 && x.size(2) == options.input_size,
               "RNN: input must be [T, N, ", options.input_size, "], got ",
               x.defined() ? shape_str(x.shape()) : std::string("undefined"));
  SONATA_CHECK(lstm || !c0.defined(), "GRU: takes no initial cell state c0");
  const int64_t directions = options.bidirectional ? 2 : 1;
  const int64_t per_direction = options.bias ? 4 : 2;
  SONATA_CHECK(int64_t(params.size()) == options.num_layers * directions * per_direction,
               "RNN: ", options.num_layers * directions * per_direction,
               " parameters expected, got ", params.size());
  const Tensor& weight = params[0];
  SONATA_CHECK(x.dtype() == weight.dtype() && x.device() == weight.device(), "RNN: the input is ",
               dtype_name(x.dtype()), " on ", x.device().str(), " but the parameters are ",
               dtype_name(weight.dtype()), " on ", weight.device().str());
  const int64_t steps = x.size(0), batch = x.size(1), hidden = options.hidden_size;
  const std::vector<int64_t> ragged = ragged_lengths(lengths, steps, batch);
  const int64_t rows = options.num_layers * directions;
  if (fused_rnn_available(x)) {
    // CUDA: every layer and direction in one cuDNN call each way (engine/ops/rnn_fused.h).
    for (const auto& [state, name] : {std::pair{&h0, "h0"}, std::pair{&c0, "c0"}})
      SONATA_CHECK(!state->defined() || state->shape() == Shape({rows, batch, hidden}),
                   "RNN: ", name, " must be ", shape_str(Shape{rows, batch, hidden}), ", got ",
                   shape_str(state->shape()));
    const FusedRnnResult r = fused_rnn({.lstm = lstm,
                                        .hidden = hidden,
                                        .layers = options.num_layers,
                                        .bidirectional = options.bidirectional,
                                        .bias = options.bias},
                                       x, params, ragged, h0, c0);
    return {r.output, r.h_n, r.c_n};
  }
  Tensor device_lengths, mask;
  if (!ragged.empty()) {
    device_lengths = from_vector(ragged, {batch}, x.device());
    mask = valid_frames(ragged, steps, x);
  }

  std::vector<Tensor> final_h, final_c;
  Tensor input = x;
  for (int64_t layer = 0; layer < options.num_layers; ++layer) {
    std::vector<Tensor> outputs;
    for (int64_t d = 0; d < directions; ++d) {
      const int64_t index = layer * directions + d;
      const Tensor h = initial_state(h0, index, rows, {batch, hidden}, x, "h0");
      const Tensor c = lstm ? initial_state(c0, index, rows, {batch, hidden}, x, "c0") : Tensor();
      const size_t at = size_t(index * per_direction);
      const DirectionWeights w{params[at], params[at + 1], options.bias ? params[at + 2] : Tensor(),
                               options.bias ? params[at + 3] : Tensor()};
      DirectionResult r = run_direction(options, lstm, w, input, d == 1, device_lengths, h, c);
      outputs.push_back(r.output);
      final_h.push_back(r.h);
      if (lstm) final_c.push_back(r.c);
    }
    input = outputs.size() == 1 ? outputs[0] : cat(outputs, 2);
    // The cells carry the state through padded frames; the output there is 0, as torch's
    // pad_packed_sequence gives (and no gradient reaches those frames' copies).
    if (mask.defined()) input = mul(input, mask);
  }
  RnnResult result;
  result.output = input;
  result.h_n = stack(final_h, 0);
  if (lstm) result.c_n = stack(final_c, 0);
  return result;
}

}  // namespace sonata
