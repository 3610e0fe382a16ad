#include "kernels/cpu/rnn_cell.h"

#include <cmath>

#include "base/nvtx.h"
#include "kernels/cpu/dispatch.h"

namespace sonata::kernels::cpu {
namespace {

template <typename C>
C sigmoid(C x) {
  return C(1) / (C(1) + std::exp(-x));
}

bool is_active(const int64_t* lengths, int64_t b, int64_t step) {
  return lengths == nullptr || step < lengths[b];
}

// Every sample's row is independent; only large batches are worth the threads.
constexpr int64_t kParallelElements = int64_t(1) << 14;

}  // namespace

void lstm_cell_forward(DType dtype, int64_t batch, int64_t hidden, const void* gates_x,
                       const void* gates_h, const void* h_prev, const void* c_prev,
                       const int64_t* lengths, int64_t step, void* h, void* c) {
  SONATA_NVTX_RANGE("sonata::cpu::lstm_cell_forward");
  dispatch_float(dtype, "lstm_cell_forward", [&]<typename T>() {
    using C = compute_t<T>;
    const T* gx = static_cast<const T*>(gates_x);
    const T* gh = static_cast<const T*>(gates_h);
    const T* hp = static_cast<const T*>(h_prev);
    const T* cp = static_cast<const T*>(c_prev);
    T* h_out = static_cast<T*>(h);
    T* c_out = static_cast<T*>(c);
#pragma omp parallel for schedule(static) if (batch * hidden >= kParallelElements)
    for (int64_t b = 0; b < batch; ++b) {
      const bool active = is_active(lengths, b, step);
      for (int64_t j = 0; j < hidden; ++j) {
        const int64_t e = b * hidden + j;
        if (!active) {
          h_out[e] = hp[e];
          c_out[e] = cp[e];
          continue;
        }
        auto gate = [&](int k) {
          const int64_t at = b * 4 * hidden + k * hidden + j;
          return load(gx[at]) + load(gh[at]);
        };
        const C i = sigmoid(gate(0)), f = sigmoid(gate(1)), g = std::tanh(gate(2)),
                o = sigmoid(gate(3));
        const C c_new = f * load(cp[e]) + i * g;
        c_out[e] = store<T>(c_new);
        h_out[e] = store<T>(o * std::tanh(c_new));
      }
    }
  });
}

void lstm_cell_backward(DType dtype, int64_t batch, int64_t hidden, const void* gates_x,
                        const void* gates_h, const void* c_prev, const int64_t* lengths,
                        int64_t step, const void* grad_h, const void* grad_c, void* grad_gates,
                        void* grad_h_prev, void* grad_c_prev) {
  SONATA_NVTX_RANGE("sonata::cpu::lstm_cell_backward");
  dispatch_float(dtype, "lstm_cell_backward", [&]<typename T>() {
    using C = compute_t<T>;
    const T* gx = static_cast<const T*>(gates_x);
    const T* gh = static_cast<const T*>(gates_h);
    const T* cp = static_cast<const T*>(c_prev);
    const T* dh_in = static_cast<const T*>(grad_h);
    const T* dc_in = static_cast<const T*>(grad_c);
    T* dgates = static_cast<T*>(grad_gates);
    T* dh_prev = static_cast<T*>(grad_h_prev);
    T* dc_prev = static_cast<T*>(grad_c_prev);
#pragma omp parallel for schedule(static) if (batch * hidden >= kParallelElements)
    for (int64_t b = 0; b < batch; ++b) {
      const bool active = is_active(lengths, b, step);
      for (int64_t j = 0; j < hidden; ++j) {
        const int64_t e = b * hidden + j;
        const C dh = dh_in ? load(dh_in[e]) : C(0);
        const C dc_next = dc_in ? load(dc_in[e]) : C(0);
        const int64_t row = b * 4 * hidden + j;
        if (!active) {
          for (int k = 0; k < 4; ++k) dgates[row + k * hidden] = store<T>(C(0));
          if (dh_prev) dh_prev[e] = store<T>(dh);
          dc_prev[e] = store<T>(dc_next);
          continue;
        }
        auto gate = [&](int k) { return load(gx[row + k * hidden]) + load(gh[row + k * hidden]); };
        const C i = sigmoid(gate(0)), f = sigmoid(gate(1)), g = std::tanh(gate(2)),
                o = sigmoid(gate(3));
        const C c_old = load(cp[e]);
        const C tanh_c = std::tanh(f * c_old + i * g);
        const C dc = dc_next + dh * o * (C(1) - tanh_c * tanh_c);
        dgates[row] = store<T>(dc * g * i * (C(1) - i));
        dgates[row + hidden] = store<T>(dc * c_old * f * (C(1) - f));
        dgates[row + 2 * hidden] = store<T>(dc * i * (C(1) - g * g));
        dgates[row + 3 * hidden] = store<T>(dh * tanh_c * o * (C(1) - o));
        if (dh_prev) dh_prev[e] = store<T>(C(0));
        dc_prev[e] = store<T>(dc * f);
      }
    }
  });
}

void gru_cell_forward(DType dtype, int64_t batch, int64_t hidden, const void* gates_x,
                      const void* gates_h, const void* h_prev, const int64_t* lengths, int64_t step,
                      void* h) {
  SONATA_NVTX_RANGE("sonata::cpu::gru_cell_forward");
  dispatch_float(dtype, "gru_cell_forward", [&]<typename T>() {
    using C = compute_t<T>;
    const T* gx = static_cast<const T*>(gates_x);
    const T* gh = static_cast<const T*>(gates_h);
    const T* hp = static_cast<const T*>(h_prev);
    T* h_out = static_cast<T*>(h);
#pragma omp parallel for schedule(static) if (batch * hidden >= kParallelElements)
    for (int64_t b = 0; b < batch; ++b) {
      const bool active = is_active(lengths, b, step);
      for (int64_t j = 0; j < hidden; ++j) {
        const int64_t e = b * hidden + j;
        if (!active) {
          h_out[e] = hp[e];
          continue;
        }
        const int64_t row = b * 3 * hidden + j;
        const C r = sigmoid(load(gx[row]) + load(gh[row]));
        const C z = sigmoid(load(gx[row + hidden]) + load(gh[row + hidden]));
        const C n = std::tanh(load(gx[row + 2 * hidden]) + r * load(gh[row + 2 * hidden]));
        h_out[e] = store<T>((C(1) - z) * n + z * load(hp[e]));
      }
    }
  });
}

void gru_cell_backward(DType dtype, int64_t batch, int64_t hidden, const void* gates_x,
                       const void* gates_h, const void* h_prev, const int64_t* lengths,
                       int64_t step, const void* grad_h, void* grad_gates_x, void* grad_gates_h,
                       void* grad_h_prev) {
  SONATA_NVTX_RANGE("sonata::cpu::gru_cell_backward");
  dispatch_float(dtype, "gru_cell_backward", [&]<typename T>() {
    using C = compute_t<T>;
    const T* gx = static_cast<const T*>(gates_x);
    const T* gh = static_cast<const T*>(gates_h);
    const T* hp = static_cast<const T*>(h_prev);
    const T* dh_in = static_cast<const T*>(grad_h);
    T* dgx = static_cast<T*>(grad_gates_x);
    T* dgh = static_cast<T*>(grad_gates_h);
    T* dh_prev = static_cast<T*>(grad_h_prev);
#pragma omp parallel for schedule(static) if (batch * hidden >= kParallelElements)
    for (int64_t b = 0; b < batch; ++b) {
      const bool active = is_active(lengths, b, step);
      for (int64_t j = 0; j < hidden; ++j) {
        const int64_t e = b * hidden + j;
        const int64_t row = b * 3 * hidden + j;
        const C dh = load(dh_in[e]);
        if (!active) {
          for (int k = 0; k < 3; ++k) {
            dgx[row + k * hidden] = store<T>(C(0));
            dgh[row + k * hidden] = store<T>(C(0));
          }
          dh_prev[e] = store<T>(dh);
          continue;
        }
        const C r = sigmoid(load(gx[row]) + load(gh[row]));
        const C z = sigmoid(load(gx[row + hidden]) + load(gh[row + hidden]));
        const C hn = load(gh[row + 2 * hidden]);
        const C n = std::tanh(load(gx[row + 2 * hidden]) + r * hn);
        const C dn = dh * (C(1) - z) * (C(1) - n * n);
        const C dr = dn * hn * r * (C(1) - r);
        const C dz = dh * (load(hp[e]) - n) * z * (C(1) - z);
        dgx[row] = store<T>(dr);
        dgh[row] = store<T>(dr);
        dgx[row + hidden] = store<T>(dz);
        dgh[row + hidden] = store<T>(dz);
        dgx[row + 2 * hidden] = store<T>(dn);
        dgh[row + 2 * hidden] = store<T>(dn * r);
        dh_prev[e] = store<T>(dh * z);
      }
    }
  });
}

}  // namespace sonata::kernels::cpu
