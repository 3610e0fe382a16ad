// Fused SGD and Adam / AdamW over lists of tensors (multi_tensor.cuh), with the arithmetic
// of kernels/common/optimizer.h that the CPU reference uses. Options are template
// arguments, so the per-element loop has no branch; every supported parameter type
// computes in float.
#include "kernels/cuda/optimizer.h"

#include <climits>
#include <type_traits>

#include "base/nvtx.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/multi_tensor.cuh"

namespace sonata::kernels::cuda {
namespace {

// f64 parameters train on the CPU; the fp32-master path is what half types need. Not
// launch.cuh's dispatch_f16_bf16_f32_f64: that would instantiate the update for double, which the
// fp32-master kernels do not compile for.
template <typename F>
void dispatch_param(DType dtype, const char* kernel, F&& body) {
  switch (dtype) {
    case DType::f16:
      return body.template operator()<__half>();
    case DType::bf16:
      return body.template operator()<__nv_bfloat16>();
    case DType::f32:
      return body.template operator()<float>();
    default:
      break;
  }
  SONATA_CHECK(false, "sonata::cuda::", kernel, ": parameters of dtype ", dtype_name(dtype),
               " are not supported (use f32, f16 or bf16)");
}

template <typename Body>
void with_flag(bool value, Body&& body) {
  if (value) {
    body(std::true_type{});
  } else {
    body(std::false_type{});
  }
}

template <typename T, typename Tensors>
void check_masters(const Tensors* tensors, int64_t count, const char* kernel) {
  for (int64_t t = 0; t < count; ++t)
    SONATA_CHECK((tensors[t].master != nullptr) == is_half_v<T>, "sonata::cuda::", kernel,
                 ": tensor ", t,
                 is_half_v<T> ? " is half-precision and needs an fp32 master copy"
                              : " is f32 and takes no master copy");
}

void check_grid(int64_t chunks, const char* kernel) {
  SONATA_CHECK(chunks <= INT_MAX, "sonata::cuda::", kernel, ": ", chunks,
               " chunks exceed one launch's grid");
}

__device__ __forceinline__ bool step_skipped(const GradScaling& scaling) {
  return scaling.found_inf != nullptr && *scaling.found_inf != 0;
}

__device__ __forceinline__ float grad_factor(const GradScaling& scaling) {
  return scaling.inv_scale != nullptr ? *scaling.inv_scale : 1.0f;
}

// list.pointers: 0 param (T), 1 grad (T), 2 fp32 master (half T only), 3 momentum buffer.
template <typename T, bool kWeightDecay, bool kMomentum, bool kNesterov, bool kFirstStep>
__global__ void __launch_bounds__(kBlockSize)
    sgd_kernel(const __grid_constant__ TensorList<4> list, SgdScalars<float> scalars,
               GradScaling scaling) {
  if (step_skipped(scaling)) return;
  const ChunkRange range = block_chunk(list);
  T* param = static_cast<T*>(list.pointers[0][range.tensor]);
  const T* grad = static_cast<const T*>(list.pointers[1][range.tensor]);
  float* master = static_cast<float*>(list.pointers[2][range.tensor]);
  float* buf = static_cast<float*>(list.pointers[3][range.tensor]);
  const float inv_scale = grad_factor(scaling);
  for (int64_t i = range.begin + threadIdx.x; i < range.end; i += kBlockSize) {
    float b = 0;
    if constexpr (kMomentum && !kFirstStep) b = buf[i];
    float p;
    if constexpr (is_half_v<T>) {
      p = master[i];
    } else {
      p = param[i];
    }
    p = sgd_update<kWeightDecay, kMomentum, kNesterov, kFirstStep>(p, load(grad[i]) * inv_scale, b,
                                                                   scalars);
    if constexpr (kMomentum) buf[i] = b;
    if constexpr (is_half_v<T>) master[i] = p;
    param[i] = store<T>(p);
  }
}

// list.pointers: 0 param, 1 grad, 2 master, 3 exp_avg, 4 exp_avg_sq, 5 max_exp_avg_sq.
template <typename T, AdamWeightDecay kDecay, bool kAmsgrad>
__global__ void __launch_bounds__(kBlockSize)
    adam_kernel(const __grid_constant__ TensorList<6> list, AdamScalars<float> scalars,
                GradScaling scaling) {
  if (step_skipped(scaling)) return;
  const ChunkRange range = block_chunk(list);
  T* param = static_cast<T*>(list.pointers[0][range.tensor]);
  const T* grad = static_cast<const T*>(list.pointers[1][range.tensor]);
  float* master = static_cast<float*>(list.pointers[2][range.tensor]);
  float* exp_avg = static_cast<float*>(list.pointers[3][range.tensor]);
  float* exp_avg_sq = static_cast<float*>(list.pointers[4][range.tensor]);
  float* max_exp_avg_sq = static_cast<float*>(list.pointers[5][range.tensor]);
  const float inv_scale = grad_factor(scaling);
  for (int64_t i = range.begin + threadIdx.x; i < range.end; i += kBlockSize) {
    float m = exp_avg[i], v = exp_avg_sq[i], v_max = 0;
    if constexpr (kAmsgrad) v_max = max_exp_avg_sq[i];
    float p;
    if constexpr (is_half_v<T>) {
      p = master[i];
    } else {
      p = param[i];
    }
    p = adam_update<kDecay, kAmsgrad>(p, load(grad[i]) * inv_scale, m, v, v_max, scalars);
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    if constexpr (kAmsgrad) max_exp_avg_sq[i] = v_max;
    if constexpr (is_half_v<T>) master[i] = p;
    param[i] = store<T>(p);
  }
}

}  // namespace

void sgd_step(DType dtype, const SgdTensors* tensors, int64_t count, const SgdHyper& hyper,
              const GradScaling& scaling, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::sgd_step");
  const bool momentum = hyper.momentum != 0;
  dispatch_param(dtype, "sgd_step", [&]<typename T>() {
    check_masters<T>(tensors, count, "sgd_step");
    const SgdScalars<float> scalars(hyper);
    auto describe = [&](int64_t t, std::array<void*, 4>& pointers) {
      pointers = {tensors[t].param, const_cast<void*>(tensors[t].grad), tensors[t].master,
                  tensors[t].momentum_buffer};
      return tensors[t].numel;
    };
    with_flag(hyper.weight_decay != 0, [&](auto kWeightDecay) {
      with_flag(momentum, [&](auto kMomentum) {
        with_flag(momentum && hyper.nesterov, [&](auto kNesterov) {
          with_flag(momentum && hyper.first_step, [&](auto kFirstStep) {
            if constexpr (kMomentum || (!kNesterov && !kFirstStep)) {
              for_each_tensor_list<4>(
                  count, describe, [&](const TensorList<4>& list, int64_t chunks) {
                    check_grid(chunks, "sgd_step");
                    launch(sgd_kernel<T, kWeightDecay, kMomentum, kNesterov, kFirstStep>,
                           unsigned(chunks), kBlockSize, 0, stream, list, scalars, scaling);
                    CUDA_CHECK_LAUNCH();
                  });
            }
          });
        });
      });
    });
  });
}

void adam_step(DType dtype, const AdamTensors* tensors, int64_t count, const AdamHyper& hyper,
               const GradScaling& scaling, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::adam_step");
  SONATA_CHECK(hyper.step >= 1, "sonata::cuda::adam_step: step ", hyper.step, " is not positive");
  const AdamWeightDecay decay = hyper.weight_decay != 0 ? hyper.decay : AdamWeightDecay::none;
  dispatch_param(dtype, "adam_step", [&]<typename T>() {
    check_masters<T>(tensors, count, "adam_step");
    const AdamScalars<float> scalars(hyper);
    auto describe = [&](int64_t t, std::array<void*, 6>& pointers) {
      pointers = {tensors[t].param,      const_cast<void*>(tensors[t].grad),
                  tensors[t].master,     tensors[t].exp_avg,
                  tensors[t].exp_avg_sq, tensors[t].max_exp_avg_sq};
      return tensors[t].numel;
    };
    using enum AdamWeightDecay;
    dispatch_enum<AdamWeightDecay, none, l2, decoupled>(
        decay, "adam_step", [&]<AdamWeightDecay kDecay>() {
          with_flag(hyper.amsgrad, [&](auto kAmsgrad) {
            for_each_tensor_list<6>(count, describe,
                                    [&](const TensorList<6>& list, int64_t chunks) {
                                      check_grid(chunks, "adam_step");
                                      launch(adam_kernel<T, kDecay, kAmsgrad>, unsigned(chunks),
                                             kBlockSize, 0, stream, list, scalars, scaling);
                                      CUDA_CHECK_LAUNCH();
                                    });
          });
        });
  });
}

}  // namespace sonata::kernels::cuda
