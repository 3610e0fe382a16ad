// Fused recurrent cells: one thread per (sample, hidden unit), walking the batch * hidden
// elements with a grid-stride loop. Each thread reads its unit's 4 (LSTM) or 3 (GRU) gate
// pre-activations, so a step's elementwise work is one launch instead of a dozen.
#include "base/nvtx.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/rnn_cell.h"

namespace sonata::kernels::cuda {
namespace {

template <typename C>
__device__ __forceinline__ C sigmoid_of(C x) {
  if constexpr (std::is_same_v<C, double>) {
    return 1.0 / (1.0 + exp(-x));
  } else {
    return 1.0f / (1.0f + expf(-x));
  }
}

template <typename C>
__device__ __forceinline__ C tanh_of(C x) {
  if constexpr (std::is_same_v<C, double>) {
    return tanh(x);
  } else {
    return tanhf(x);
  }
}

__device__ __forceinline__ bool is_active(const int64_t* lengths, int64_t b, int64_t step) {
  return lengths == nullptr || step < lengths[b];
}

template <typename T>
__global__ void __launch_bounds__(kBlockSize)
    lstm_forward_kernel(int64_t n, int64_t hidden, const T* gx, const T* gh, const T* hp,
                        const T* cp, const int64_t* lengths, int64_t step, T* h, T* c) {
  using C = float_compute_t<T>;
  for (int64_t e = thread_index(); e < n; e += thread_count()) {
    const int64_t b = e / hidden, j = e % hidden;
    if (!is_active(lengths, b, step)) {
      h[e] = hp[e];
      c[e] = cp[e];
      continue;
    }
    const int64_t row = b * 4 * hidden + j;
    C pre[4];
#pragma unroll
    for (int k = 0; k < 4; ++k)
      pre[k] = C(load(gx[row + k * hidden])) + C(load(gh[row + k * hidden]));
    const C i = sigmoid_of(pre[0]), f = sigmoid_of(pre[1]), g = tanh_of(pre[2]),
            o = sigmoid_of(pre[3]);
    const C c_new = f * C(load(cp[e])) + i * g;
    c[e] = store<T>(c_new);
    h[e] = store<T>(o * tanh_of(c_new));
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlockSize)
    lstm_backward_kernel(int64_t n, int64_t hidden, const T* gx, const T* gh, const T* cp,
                         const int64_t* lengths, int64_t step, const T* dh_in, const T* dc_in,
                         T* dgates, T* dh_prev, T* dc_prev) {
  using C = float_compute_t<T>;
  for (int64_t e = thread_index(); e < n; e += thread_count()) {
    const int64_t b = e / hidden, j = e % hidden;
    const int64_t row = b * 4 * hidden + j;
    const C dh = dh_in ? C(load(dh_in[e])) : C(0);
    const C dc_next = dc_in ? C(load(dc_in[e])) : C(0);
    if (!is_active(lengths, b, step)) {
#pragma unroll
      for (int k = 0; k < 4; ++k) dgates[row + k * hidden] = store<T>(C(0));
      if (dh_prev) dh_prev[e] = store<T>(dh);
      dc_prev[e] = store<T>(dc_next);
      continue;
    }
    C pre[4];
#pragma unroll
    for (int k = 0; k < 4; ++k)
      pre[k] = C(load(gx[row + k * hidden])) + C(load(gh[row + k * hidden]));
    const C i = sigmoid_of(pre[0]), f = sigmoid_of(pre[1]), g = tanh_of(pre[2]),
            o = sigmoid_of(pre[3]);
    const C c_old = C(load(cp[e]));
    const C tanh_c = tanh_of(f * c_old + i * g);
    const C dc = dc_next + dh * o * (C(1) - tanh_c * tanh_c);
    dgates[row] = store<T>(dc * g * i * (C(1) - i));
    dgates[row + hidden] = store<T>(dc * c_old * f * (C(1) - f));
    dgates[row + 2 * hidden] = store<T>(dc * i * (C(1) - g * g));
    dgates[row + 3 * hidden] = store<T>(dh * tanh_c * o * (C(1) - o));
    if (dh_prev) dh_prev[e] = store<T>(C(0));
    dc_prev[e] = store<T>(dc * f);
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlockSize)
    gru_forward_kernel(int64_t n, int64_t hidden, const T* gx, const T* gh, const T* hp,
                       const int64_t* lengths, int64_t step, T* h) {
  using C = float_compute_t<T>;
  for (int64_t e = thread_index(); e < n; e += thread_count()) {
    const int64_t b = e / hidden, j = e % hidden;
    if (!is_active(lengths, b, step)) {
      h[e] = hp[e];
      continue;
    }
    const int64_t row = b * 3 * hidden + j;
    const C r = sigmoid_of(C(load(gx[row])) + C(load(gh[row])));
    const C z = sigmoid_of(C(load(gx[row + hidden])) + C(load(gh[row + hidden])));
    const C nn = tanh_of(C(load(gx[row + 2 * hidden])) + r * C(load(gh[row + 2 * hidden])));
    h[e] = store<T>((C(1) - z) * nn + z * C(load(hp[e])));
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlockSize)
    gru_backward_kernel(int64_t n, int64_t hidden, const T* gx, const T* gh, const T* hp,
                        const int64_t* lengths, int64_t step, const T* dh_in, T* dgx, T* dgh,
                        T* dh_prev) {
  using C = float_compute_t<T>;
  for (int64_t e = thread_index(); e < n; e += thread_count()) {
    const int64_t b = e / hidden, j = e % hidden;
    const int64_t row = b * 3 * hidden + j;
    const C dh = C(load(dh_in[e]));
    if (!is_active(lengths, b, step)) {
#pragma unroll
      for (int k = 0; k < 3; ++k) {
        dgx[row + k * hidden] = store<T>(C(0));
        dgh[row + k * hidden] = store<T>(C(0));
      }
      dh_prev[e] = store<T>(dh);
      continue;
    }
    const C r = sigmoid_of(C(load(gx[row])) + C(load(gh[row])));
    const C z = sigmoid_of(C(load(gx[row + hidden])) + C(load(gh[row + hidden])));
    const C hn = C(load(gh[row + 2 * hidden]));
    const C nn = tanh_of(C(load(gx[row + 2 * hidden])) + r * hn);
    const C dn = dh * (C(1) - z) * (C(1) - nn * nn);
    const C dr = dn * hn * r * (C(1) - r);
    const C dz = dh * (C(load(hp[e])) - nn) * z * (C(1) - z);
    dgx[row] = store<T>(dr);
    dgh[row] = store<T>(dr);
    dgx[row + hidden] = store<T>(dz);
    dgh[row + hidden] = store<T>(dz);
    dgx[row + 2 * hidden] = store<T>(dn);
    dgh[row + 2 * hidden] = store<T>(dn * r);
    dh_prev[e] = store<T>(dh * z);
  }
}

}  // namespace

void lstm_cell_forward(DType dtype, int64_t batch, int64_t hidden, const void* gates_x,
                       const void* gates_h, const void* h_prev, const void* c_prev,
                       const int64_t* lengths, int64_t step, void* h, void* c,
                       cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::lstm_cell_forward");
  dispatch_f16_bf16_f32_f64(dtype, "lstm_cell_forward", [&]<typename T>() {
    linear_kernel(lstm_forward_kernel<T>, 0, stream, batch * hidden, hidden,
                  static_cast<const T*>(gates_x), static_cast<const T*>(gates_h),
                  static_cast<const T*>(h_prev), static_cast<const T*>(c_prev), lengths, step,
                  static_cast<T*>(h), static_cast<T*>(c));
    CUDA_CHECK_LAUNCH();
  });
}

void lstm_cell_backward(DType dtype, int64_t batch, int64_t hidden, const void* gates_x,
                        const void* gates_h, const void* c_prev, const int64_t* lengths,
                        int64_t step, const void* grad_h, const void* grad_c, void* grad_gates,
                        void* grad_h_prev, void* grad_c_prev, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::lstm_cell_backward");
  dispatch_f16_bf16_f32_f64(dtype, "lstm_cell_backward", [&]<typename T>() {
    linear_kernel(lstm_backward_kernel<T>, 0, stream, batch * hidden, hidden,
                  static_cast<const T*>(gates_x), static_cast<const T*>(gates_h),
                  static_cast<const T*>(c_prev), lengths, step, static_cast<const T*>(grad_h),
                  static_cast<const T*>(grad_c), static_cast<T*>(grad_gates),
                  static_cast<T*>(grad_h_prev), static_cast<T*>(grad_c_prev));
    CUDA_CHECK_LAUNCH();
  });
}

void gru_cell_forward(DType dtype, int64_t batch, int64_t hidden, const void* gates_x,
                      const void* gates_h, const void* h_prev, const int64_t* lengths, int64_t step,
                      void* h, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::gru_cell_forward");
  dispatch_f16_bf16_f32_f64(dtype, "gru_cell_forward", [&]<typename T>() {
    linear_kernel(gru_forward_kernel<T>, 0, stream, batch * hidden, hidden,
                  static_cast<const T*>(gates_x), static_cast<const T*>(gates_h),
                  static_cast<const T*>(h_prev), lengths, step, static_cast<T*>(h));
    CUDA_CHECK_LAUNCH();
  });
}

void gru_cell_backward(DType dtype, int64_t batch, int64_t hidden, const void* gates_x,
                       const void* gates_h, const void* h_prev, const int64_t* lengths,
                       int64_t step, const void* grad_h, void* grad_gates_x, void* grad_gates_h,
                       void* grad_h_prev, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::gru_cell_backward");
  dispatch_f16_bf16_f32_f64(dtype, "gru_cell_backward", [&]<typename T>() {
    linear_kernel(gru_backward_kernel<T>, 0, stream, batch * hidden, hidden,
                  static_cast<const T*>(gates_x), static_cast<const T*>(gates_h),
                  static_cast<const T*>(h_prev), lengths, step, static_cast<const T*>(grad_h),
                  static_cast<T*>(grad_gates_x), static_cast<T*>(grad_gates_h),
                  static_cast<T*>(grad_h_prev));
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace sonata::kernels::cuda
