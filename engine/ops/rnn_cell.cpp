#include "engine/ops/rnn_cell.h"

#include <string_view>
#include <vector>

#include "base/error.h"
#include "engine/autograd/record.h"
#include "engine/ops/backend.h"
#include "engine/ops/op_utils.h"
#include "kernels/cpu/rnn_cell.h"
#if SONATA_WITH_CUDA
#include "kernels/cuda/rnn_cell.h"
#endif

namespace sonata {
namespace {

// Shapes [N, gates * H] and [N, H] with one dtype and device; returns H.
int64_t check_cell_inputs(std::string_view op, int64_t gates, const Tensor& gates_x,
                          const Tensor& gates_h, const std::vector<Tensor>& states,
                          const Tensor& lengths) {
  SONATA_CHECK(gates_x.defined() && gates_h.defined(), op, ": gates are undefined");
  for (const Tensor& s : states) SONATA_CHECK(s.defined(), op, ": a previous state is undefined");
  check_floating(op, gates_x);
  const Tensor& h_prev = states[0];
  SONATA_CHECK(h_prev.dim() == 2, op, ": h_prev must be [N, H], got ", shape_str(h_prev.shape()));
  const int64_t batch = h_prev.size(0), hidden = h_prev.size(1);
  const Shape gate_shape{batch, gates * hidden};
  SONATA_CHECK(gates_x.shape() == gate_shape && gates_h.shape() == gate_shape, op,
               ": gates must be ", shape_str(gate_shape), " for h_prev ", shape_str(h_prev.shape()),
               ", got ", shape_str(gates_x.shape()), " and ", shape_str(gates_h.shape()));
  std::vector<Tensor> all{gates_x, gates_h};
  for (const Tensor& s : states) {
    SONATA_CHECK(s.shape() == h_prev.shape(), op, ": states ", shape_str(s.shape()), " and ",
                 shape_str(h_prev.shape()), " differ");
    all.push_back(s);
  }
  for (const Tensor& t : all)
    SONATA_CHECK(t.dtype() == gates_x.dtype(), op, ": mixed dtypes ", dtype_name(t.dtype()),
                 " and ", dtype_name(gates_x.dtype()));
  check_same_device(op, all);
  check_step_lengths(op, lengths, batch, gates_x);
  return hidden;
}

const void* data_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr() : nullptr;
}

}  // namespace

LstmState lstm_cell(const Tensor& gates_x, const Tensor& gates_h, const Tensor& h_prev,
                    const Tensor& c_prev, const Tensor& lengths, int64_t step) {
  const int64_t hidden =
      check_cell_inputs("lstm_cell", 4, gates_x, gates_h, {h_prev, c_prev}, lengths);
  const int64_t batch = h_prev.size(0);
  const Tensor gx = gates_x.detach().contiguous(), gh = gates_h.detach().contiguous();
  const Tensor hp = h_prev.detach().contiguous(), cp = c_prev.detach().contiguous();
  const Tensor len = lengths.defined() ? lengths.contiguous() : Tensor();
  LstmState out{empty_like(hp), empty_like(cp)};
  if (batch * hidden > 0)
    SONATA_BACKEND(gx.device(), lstm_cell_forward, gx.dtype(), batch, hidden, gx.data_ptr(),
                   gh.data_ptr(), hp.data_ptr(), cp.data_ptr(), step_lengths_data(len), step,
                   out.h.data_ptr(), out.c.data_ptr());
  record("lstm_cell", {gates_x, gates_h, h_prev, c_prev}, {&out.h, &out.c},
         [=](const std::vector<Tensor>& grads) {
           const Tensor dh = grads[0].defined() ? grads[0].contiguous() : Tensor();
           const Tensor dc = grads[1].defined() ? grads[1].contiguous() : Tensor();
           Tensor dgates = empty_like(gx), dc_prev = empty_like(cp);
           // Without lengths every sample is active and h_prev's gradient comes only
           // through gates_h, so the cell gives it none.
           Tensor dh_prev = len.defined() ? empty_like(hp) : Tensor();
           if (batch * hidden > 0)
             SONATA_BACKEND(gx.device(), lstm_cell_backward, gx.dtype(), batch, hidden,
                            gx.data_ptr(), gh.data_ptr(), cp.data_ptr(), step_lengths_data(len),
                            step, data_or_null(dh), data_or_null(dc), dgates.data_ptr(),
                            dh_prev.defined() ? dh_prev.data_ptr() : nullptr, dc_prev.data_ptr());
           return std::vector<Tensor>{dgates, dgates, dh_prev, dc_prev};
         });
  return out;
}

Tensor gru_cell(const Tensor& gates_x, const Tensor& gates_h, const Tensor& h_prev,
                const Tensor& lengths, int64_t step) {
  const int64_t hidden = check_cell_inputs("gru_cell", 3, gates_x, gates_h, {h_prev}, lengths);
  const int64_t batch = h_prev.size(0);
  const Tensor gx = gates_x.detach().contiguous(), gh = gates_h.detach().contiguous();
  const Tensor hp = h_prev.detach().contiguous();
  const Tensor len = lengths.defined() ? lengths.contiguous() : Tensor();
  Tensor h = empty_like(hp);
  if (batch * hidden > 0)
    SONATA_BACKEND(gx.device(), gru_cell_forward, gx.dtype(), batch, hidden, gx.data_ptr(),
                   gh.data_ptr(), hp.data_ptr(), step_lengths_data(len), step, h.data_ptr());
  record("gru_cell", {gates_x, gates_h, h_prev}, {&h}, [=](const std::vector<Tensor>& grads) {
    if (!grads[0].defined()) return std::vector<Tensor>(3);
    const Tensor dh = grads[0].contiguous();
    Tensor dgx = empty_like(gx), dgh = empty_like(gh), dh_prev = empty_like(hp);
    if (batch * hidden > 0)
      SONATA_BACKEND(gx.device(), gru_cell_backward, gx.dtype(), batch, hidden, gx.data_ptr(),
                     gh.data_ptr(), hp.data_ptr(), step_lengths_data(len), step, dh.data_ptr(),
                     dgx.data_ptr(), dgh.data_ptr(), dh_prev.data_ptr());
    return std::vector<Tensor>{dgx, dgh, dh_prev};
  });
  return h;
}

}  // namespace sonata
