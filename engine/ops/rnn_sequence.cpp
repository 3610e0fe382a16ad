#include "engine/ops/rnn_sequence.h"

#include <vector>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/autograd/record.h"
#include "engine/ops.h"
#include "engine/ops/backend.h"
#include "engine/ops/op_utils.h"
#include "kernels/cpu/rnn_cell.h"
#if SONATA_WITH_CUDA
#include "kernels/cuda/rnn_cell.h"
#endif

namespace sonata {
namespace {

// `op` over gates_x [T, N, gates * H], weight_hh [gates * H, H] and the [N, H] states
// (`extra` holds further tensors of the same dtype and device: bias_hh).
void check_inputs(const char* op, int64_t gates, const Tensor& gates_x, const Tensor& weight_hh,
                  const std::vector<Tensor>& states, const std::vector<Tensor>& extra,
                  const Tensor& lengths) {
  SONATA_CHECK(gates_x.defined() && weight_hh.defined(), op, ": an input is undefined");
  for (const Tensor& state : states) SONATA_CHECK(state.defined(), op, ": a state is undefined");
  check_floating(op, gates_x);
  const Tensor& h0 = states[0];
  for (const Tensor& state : states)
    SONATA_CHECK(state.dim() == 2 && state.shape() == h0.shape(), op,
                 ": the initial states must be [N, H] alike, got ", shape_str(state.shape()));
  const int64_t batch = h0.size(0), hidden = h0.size(1);
  SONATA_CHECK(gates_x.dim() == 3 && gates_x.size(1) == batch && gates_x.size(2) == gates * hidden,
               op, ": gates_x must be [T, ", batch, ", ", gates * hidden, "] for h0 ",
               shape_str(h0.shape()), ", got ", shape_str(gates_x.shape()));
  SONATA_CHECK(weight_hh.shape() == Shape({gates * hidden, hidden}), op, ": weight_hh must be [",
               gates * hidden, ", ", hidden, "], got ", shape_str(weight_hh.shape()));
  std::vector<Tensor> all{gates_x, weight_hh};
  all.insert(all.end(), states.begin(), states.end());
  all.insert(all.end(), extra.begin(), extra.end());
  for (const Tensor& t : all)
    SONATA_CHECK(t.dtype() == gates_x.dtype(), op, ": mixed dtypes ", dtype_name(t.dtype()),
                 " and ", dtype_name(gates_x.dtype()));
  check_same_device(op, all);
  check_step_lengths(op, lengths, batch, gates_x);
}

}  // namespace

LstmSequence lstm_sequence(const Tensor& gates_x, const Tensor& weight_hh, const Tensor& h0,
                           const Tensor& c0, const Tensor& lengths, bool reverse) {
  check_inputs("lstm_sequence", 4, gates_x, weight_hh, {h0, c0}, {}, lengths);
  const int64_t steps = gates_x.size(0), batch = h0.size(0), hidden = h0.size(1);
  const Device device = gates_x.device();
  const DType dtype = gates_x.dtype();
  const Tensor gx = gates_x.detach().contiguous();
  const Tensor w = weight_hh.detach().contiguous();
  const Tensor len = lengths.defined() ? lengths.contiguous() : Tensor();
  // h_prev @ weight_hh^T with the transpose made once, so every step's product reads its
  // right operand row by row.
  const Tensor w_t = w.t().contiguous();

  // What backward needs per step t: gates_h, and the states the step started from.
  std::vector<Tensor> gates_h(static_cast<size_t>(steps)), h_prev(static_cast<size_t>(steps)),
      c_prev(static_cast<size_t>(steps)), outputs(static_cast<size_t>(steps));
  Tensor h = h0.detach().contiguous(), c = c0.detach().contiguous();
  {
    NoGradGuard no_grad;
    for (int64_t s = 0; s < steps; ++s) {
      const int64_t t = reverse ? steps - 1 - s : s;
      const Tensor gh = matmul(h, w_t);
      Tensor h_next = empty_like(h), c_next = empty_like(c);
      if (batch * hidden > 0)
        SONATA_BACKEND(device, lstm_cell_forward, dtype, batch, hidden, gx.select(0, t).data_ptr(),
                       gh.data_ptr(), h.data_ptr(), c.data_ptr(), step_lengths_data(len), t,
                       h_next.data_ptr(), c_next.data_ptr());
      gates_h[size_t(t)] = gh;
      h_prev[size_t(t)] = h;
      c_prev[size_t(t)] = c;
      outputs[size_t(t)] = h_next;
      h = h_next;
      c = c_next;
    }
  }
  LstmSequence out;
  {
    NoGradGuard no_grad;
    out.output = steps > 0 ? stack(outputs, 0) : empty({0, batch, hidden}, h.options());
  }
  // Backward keeps the states steps began from, never the final ones: an output of this
  // node held by its own backward would be a reference cycle.
  out.h = h;
  out.c = c;
  const Tensor h0_values = h0.detach(), c0_values = c0.detach();
  record("lstm_sequence", {gates_x, weight_hh, h0, c0}, {&out.output, &out.h, &out.c},
         [=](const std::vector<Tensor>& grads) {
           NoGradGuard no_grad;
           const Tensor d_output = grads[0].defined() ? grads[0].contiguous() : Tensor();
           Tensor dh_carry = grads[1].defined() ? grads[1].contiguous() : zeros_like(h0_values);
           Tensor dc_carry = grads[2].defined() ? grads[2].contiguous() : zeros_like(c0_values);
           Tensor dgates = empty({steps, batch, 4 * hidden}, gx.options());
           for (int64_t s = steps - 1; s >= 0; --s) {
             const int64_t t = reverse ? steps - 1 - s : s;
             const Tensor dh = d_output.defined() ? add(d_output.select(0, t), dh_carry) : dh_carry;
             Tensor dgates_t = dgates.select(0, t);
             // With lengths, inactive samples pass dh straight back through the cell.
             Tensor dh_cell = len.defined() ? empty_like(dh) : Tensor();
             Tensor dc_prev = empty_like(dc_carry);
             if (batch * hidden > 0)
               SONATA_BACKEND(device, lstm_cell_backward, dtype, batch, hidden,
                              gx.select(0, t).data_ptr(), gates_h[size_t(t)].data_ptr(),
                              c_prev[size_t(t)].data_ptr(), step_lengths_data(len), t,
                              dh.data_ptr(), dc_carry.data_ptr(), dgates_t.data_ptr(),
                              dh_cell.defined() ? dh_cell.data_ptr() : nullptr, dc_prev.data_ptr());
             const Tensor recurrent = matmul(dgates_t, w);  // [N, 4H] x [4H, H]
             dh_carry = dh_cell.defined() ? add(dh_cell, recurrent) : recurrent;
             dc_carry = dc_prev;
           }
           // sum over t of dgates_t^T h_prev_t, as one product with k = T * N.
           Tensor d_weight = zeros_like(w);
           if (steps > 0)
             d_weight = matmul(dgates.reshape({steps * batch, 4 * hidden}).t(),
                               stack(h_prev, 0).reshape({steps * batch, hidden}));
           return std::vector<Tensor>{dgates, d_weight, dh_carry, dc_carry};
         });
  return out;
}

GruSequence gru_sequence(const Tensor& gates_x, const Tensor& weight_hh, const Tensor& bias_hh,
                         const Tensor& h0, const Tensor& lengths, bool reverse) {
  check_inputs("gru_sequence", 3, gates_x, weight_hh, {h0},
               bias_hh.defined() ? std::vector<Tensor>{bias_hh} : std::vector<Tensor>{}, lengths);
  const int64_t steps = gates_x.size(0), batch = h0.size(0), hidden = h0.size(1);
  SONATA_CHECK(!bias_hh.defined() || bias_hh.shape() == Shape{3 * hidden},
               "gru_sequence: bias_hh must be [", 3 * hidden, "], got ",
               shape_str(bias_hh.shape()));
  const Device device = gates_x.device();
  const DType dtype = gates_x.dtype();
  const Tensor gx = gates_x.detach().contiguous();
  const Tensor w = weight_hh.detach().contiguous();
  const Tensor b = bias_hh.defined() ? bias_hh.detach().contiguous() : Tensor();
  const Tensor len = lengths.defined() ? lengths.contiguous() : Tensor();
  const Tensor w_t = w.t().contiguous();

  std::vector<Tensor> gates_h(static_cast<size_t>(steps)), h_prev(static_cast<size_t>(steps)),
      outputs(static_cast<size_t>(steps));
  Tensor h = h0.detach().contiguous();
  GruSequence out;
  {
    NoGradGuard no_grad;
    for (int64_t s = 0; s < steps; ++s) {
      const int64_t t = reverse ? steps - 1 - s : s;
      const Tensor gh = b.defined() ? addmm(b, h, w_t) : matmul(h, w_t);
      Tensor h_next = empty_like(h);
      if (batch * hidden > 0)
        SONATA_BACKEND(device, gru_cell_forward, dtype, batch, hidden, gx.select(0, t).data_ptr(),
                       gh.data_ptr(), h.data_ptr(), step_lengths_data(len), t, h_next.data_ptr());
      gates_h[size_t(t)] = gh;
      h_prev[size_t(t)] = h;
      outputs[size_t(t)] = h_next;
      h = h_next;
    }
    out.output = steps > 0 ? stack(outputs, 0) : empty({0, batch, hidden}, h.options());
  }
  out.h = h;  // not kept by backward (see lstm_sequence)
  const Tensor h0_values = h0.detach();
  std::vector<Tensor> inputs{gates_x, weight_hh};
  if (bias_hh.defined()) inputs.push_back(bias_hh);
  inputs.push_back(h0);
  record("gru_sequence", inputs, {&out.output, &out.h}, [=](const std::vector<Tensor>& grads) {
    NoGradGuard no_grad;
    const Tensor d_output = grads[0].defined() ? grads[0].contiguous() : Tensor();
    Tensor dh_carry = grads[1].defined() ? grads[1].contiguous() : zeros_like(h0_values);
    Tensor d_gates_x = empty({steps, batch, 3 * hidden}, gx.options());
    Tensor d_gates_h = empty({steps, batch, 3 * hidden}, gx.options());
    for (int64_t s = steps - 1; s >= 0; --s) {
      const int64_t t = reverse ? steps - 1 - s : s;
      const Tensor dh = d_output.defined() ? add(d_output.select(0, t), dh_carry) : dh_carry;
      Tensor dgh_t = d_gates_h.select(0, t);
      Tensor dh_cell = empty_like(dh);
      if (batch * hidden > 0)
        SONATA_BACKEND(device, gru_cell_backward, dtype, batch, hidden, gx.select(0, t).data_ptr(),
                       gates_h[size_t(t)].data_ptr(), h_prev[size_t(t)].data_ptr(),
                       step_lengths_data(len), t, dh.data_ptr(), d_gates_x.select(0, t).data_ptr(),
                       dgh_t.data_ptr(), dh_cell.data_ptr());
      dh_carry = add(dh_cell, matmul(dgh_t, w));  // [N, 3H] x [3H, H]
    }
    Tensor d_weight = zeros_like(w), d_bias = b.defined() ? zeros_like(b) : Tensor();
    if (steps > 0) {
      const Tensor rows = d_gates_h.reshape({steps * batch, 3 * hidden});
      d_weight = matmul(rows.t(), stack(h_prev, 0).reshape({steps * batch, hidden}));
      if (b.defined()) d_bias = sum(rows, {0});
    }
    std::vector<Tensor> result{d_gates_x, d_weight};
    if (b.defined()) result.push_back(d_bias);
    result.push_back(dh_carry);
    return result;
  });
  return out;
}

}  // namespace sonata
