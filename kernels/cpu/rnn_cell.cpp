#include "kernels/cpu/rnn_cell.h"

#include <algorithm>
#include <cmath>

#include "base/nvtx.h"
#include "kernels/cpu/capability_region.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/fast_math.h"

SONATA_CPU_BEGIN
namespace {

// Float cells (f32, and f16 / bf16 computing in f32) use the vectorisable forms; f64, the
// gradient checks' dtype, keeps libm.
inline float sigmoid(float x) {
  return sigmoid_f32(x);
}
inline double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}
inline float tanh_of(float x) {
  return tanh_f32(x);
}
inline double tanh_of(double x) {
  return std::tanh(x);
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
  dispatch_f32_f64(dtype, "lstm_cell_forward", [&]<typename T>() {
    using C = compute_t<T>;
    const T* gx = static_cast<const T*>(gates_x);
    const T* gh = static_cast<const T*>(gates_h);
    const T* hp = static_cast<const T*>(h_prev);
    const T* cp = static_cast<const T*>(c_prev);
    T* h_out = static_cast<T*>(h);
    T* c_out = static_cast<T*>(c);
#pragma omp parallel for schedule(static) if (batch * hidden >= kParallelElements)
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t first = b * hidden;
      if (!is_active(lengths, b, step)) {  // past this sample's end: the state carries over
        std::copy(hp + first, hp + first + hidden, h_out + first);
        std::copy(cp + first, cp + first + hidden, c_out + first);
        continue;
      }
      // One branch-free loop over the row, so that it vectorises.
      const T* gxb = gx + 4 * first;
      const T* ghb = gh + 4 * first;
#pragma omp simd
      for (int64_t j = 0; j < hidden; ++j) {
        const C i = sigmoid(load(gxb[j]) + load(ghb[j]));
        const C f = sigmoid(load(gxb[hidden + j]) + load(ghb[hidden + j]));
        const C g = tanh_of(load(gxb[2 * hidden + j]) + load(ghb[2 * hidden + j]));
        const C o = sigmoid(load(gxb[3 * hidden + j]) + load(ghb[3 * hidden + j]));
        const C c_new = f * load(cp[first + j]) + i * g;
        c_out[first + j] = store<T>(c_new);
        h_out[first + j] = store<T>(o * tanh_of(c_new));
      }
    }
  });
}

void lstm_cell_backward(DType dtype, int64_t batch, int64_t hidden, const void* gates_x,
                        const void* gates_h, const void* c_prev, const int64_t* lengths,
                        int64_t step, const void* grad_h, const void* grad_c, void* grad_gates,
                        void* grad_h_prev, void* grad_c_prev) {
  SONATA_NVTX_RANGE("sonata::cpu::lstm_cell_backward");
  dispatch_f32_f64(dtype, "lstm_cell_backward", [&]<typename T>() {
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
      const int64_t first = b * hidden;
      if (!is_active(lengths, b, step)) {  // past this sample's end: gradients pass through
        for (int64_t j = 0; j < hidden; ++j) {
          const C dh = dh_in ? load(dh_in[first + j]) : C(0);
          const C dc_next = dc_in ? load(dc_in[first + j]) : C(0);
          for (int k = 0; k < 4; ++k) dgates[4 * first + k * hidden + j] = store<T>(C(0));
          if (dh_prev) dh_prev[first + j] = store<T>(dh);
          dc_prev[first + j] = store<T>(dc_next);
        }
        continue;
      }
      if (dh_prev) std::fill(dh_prev + first, dh_prev + first + hidden, store<T>(C(0)));
      // One branch-free loop over the row, so that it vectorises.
      const T* gxb = gx + 4 * first;
      const T* ghb = gh + 4 * first;
      T* dgb = dgates + 4 * first;
#pragma omp simd
      for (int64_t j = 0; j < hidden; ++j) {
        const C dh = dh_in ? load(dh_in[first + j]) : C(0);
        const C dc_next = dc_in ? load(dc_in[first + j]) : C(0);
        const C i = sigmoid(load(gxb[j]) + load(ghb[j]));
        const C f = sigmoid(load(gxb[hidden + j]) + load(ghb[hidden + j]));
        const C g = tanh_of(load(gxb[2 * hidden + j]) + load(ghb[2 * hidden + j]));
        const C o = sigmoid(load(gxb[3 * hidden + j]) + load(ghb[3 * hidden + j]));
        const C c_old = load(cp[first + j]);
        const C tanh_c = tanh_of(f * c_old + i * g);
        const C dc = dc_next + dh * o * (C(1) - tanh_c * tanh_c);
        dgb[j] = store<T>(dc * g * i * (C(1) - i));
        dgb[hidden + j] = store<T>(dc * c_old * f * (C(1) - f));
        dgb[2 * hidden + j] = store<T>(dc * i * (C(1) - g * g));
        dgb[3 * hidden + j] = store<T>(dh * tanh_c * o * (C(1) - o));
        dc_prev[first + j] = store<T>(dc * f);
      }
    }
  });
}

void gru_cell_forward(DType dtype, int64_t batch, int64_t hidden, const void* gates_x,
                      const void* gates_h, const void* h_prev, const int64_t* lengths, int64_t step,
                      void* h) {
  SONATA_NVTX_RANGE("sonata::cpu::gru_cell_forward");
  dispatch_f32_f64(dtype, "gru_cell_forward", [&]<typename T>() {
    using C = compute_t<T>;
    const T* gx = static_cast<const T*>(gates_x);
    const T* gh = static_cast<const T*>(gates_h);
    const T* hp = static_cast<const T*>(h_prev);
    T* h_out = static_cast<T*>(h);
#pragma omp parallel for schedule(static) if (batch * hidden >= kParallelElements)
    for (int64_t b = 0; b < batch; ++b) {
      const bool active = is_active(lengths, b, step);
#pragma omp simd
      for (int64_t j = 0; j < hidden; ++j) {
        const int64_t e = b * hidden + j;
        if (!active) {
          h_out[e] = hp[e];
          continue;
        }
        const int64_t row = b * 3 * hidden + j;
        const C r = sigmoid(load(gx[row]) + load(gh[row]));
        const C z = sigmoid(load(gx[row + hidden]) + load(gh[row + hidden]));
        const C n = tanh_of(load(gx[row + 2 * hidden]) + r * load(gh[row + 2 * hidden]));
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
  dispatch_f32_f64(dtype, "gru_cell_backward", [&]<typename T>() {
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
#pragma omp simd
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
        const C n = tanh_of(load(gx[row + 2 * hidden]) + r * hn);
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

SONATA_CPU_END

#if SONATA_CPU_ENTRY_POINTS
// The public functions: each runs the active capability's copy.
namespace sonata::kernels::cpu {

SONATA_CPU_DECLARE(lstm_cell_forward)
SONATA_CPU_DECLARE(lstm_cell_backward)
SONATA_CPU_DECLARE(gru_cell_forward)
SONATA_CPU_DECLARE(gru_cell_backward)

void lstm_cell_forward(DType dtype, int64_t batch, int64_t hidden, const void* gates_x,
                       const void* gates_h, const void* h_prev, const void* c_prev,
                       const int64_t* lengths, int64_t step, void* h, void* c) {
  SONATA_CPU_CALL(lstm_cell_forward)
  (dtype, batch, hidden, gates_x, gates_h, h_prev, c_prev, lengths, step, h, c);
}

void lstm_cell_backward(DType dtype, int64_t batch, int64_t hidden, const void* gates_x,
                        const void* gates_h, const void* c_prev, const int64_t* lengths,
                        int64_t step, const void* grad_h, const void* grad_c, void* grad_gates,
                        void* grad_h_prev, void* grad_c_prev) {
  SONATA_CPU_CALL(lstm_cell_backward)
  (dtype, batch, hidden, gates_x, gates_h, c_prev, lengths, step, grad_h, grad_c, grad_gates,
   grad_h_prev, grad_c_prev);
}

void gru_cell_forward(DType dtype, int64_t batch, int64_t hidden, const void* gates_x,
                      const void* gates_h, const void* h_prev, const int64_t* lengths, int64_t step,
                      void* h) {
  SONATA_CPU_CALL(gru_cell_forward)
  (dtype, batch, hidden, gates_x, gates_h, h_prev, lengths, step, h);
}

void gru_cell_backward(DType dtype, int64_t batch, int64_t hidden, const void* gates_x,
                       const void* gates_h, const void* h_prev, const int64_t* lengths,
                       int64_t step, const void* grad_h, void* grad_gates_x, void* grad_gates_h,
                       void* grad_h_prev) {
  SONATA_CPU_CALL(gru_cell_backward)
  (dtype, batch, hidden, gates_x, gates_h, h_prev, lengths, step, grad_h, grad_gates_x,
   grad_gates_h, grad_h_prev);
}

}  // namespace sonata::kernels::cpu
#endif
