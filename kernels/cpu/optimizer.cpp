#include "kernels/cpu/optimizer.h"

#include <type_traits>

#include "base/error.h"
#include "base/nvtx.h"
#include "kernels/cpu/capability_region.h"
#include "kernels/cpu/dispatch.h"

SONATA_CPU_BEGIN
namespace {

// Below this many elements the OpenMP fork costs more than the loop.
constexpr int64_t kParallelGrain = 1 << 15;

// body(std::true_type{}) or body(std::false_type{}): an option becomes a compile-time
// constant, so the per-element loop holds no branch on it and vectorises.
template <typename Body>
void with_flag(bool value, Body&& body) {
  if (value) {
    body(std::true_type{});
  } else {
    body(std::false_type{});
  }
}

template <typename Tensors>
void check_no_master(const Tensors* tensors, int64_t count, const char* kernel) {
  for (int64_t t = 0; t < count; ++t)
    SONATA_CHECK(tensors[t].master == nullptr, "sonata::cpu::", kernel,
                 ": fp32 master weights are for half-precision parameters, which need CUDA");
}

// The scaler's hook on host memory: false when the step is to be skipped.
bool read_scaling(const GradScaling& scaling, float* inv_scale) {
  *inv_scale = scaling.inv_scale ? *scaling.inv_scale : 1.0f;
  return !(scaling.found_inf && *scaling.found_inf != 0);
}

// One tensor's pass. Parameter, gradient and state are distinct tensors: __restrict lets the
// vectoriser assume so, and the scalars arrive by value, so no store can change them.
template <typename T, bool kWeightDecay, bool kMomentum, bool kNesterov, bool kFirstStep>
void sgd_tensor(T* __restrict param, const T* __restrict grad, T* __restrict momentum_buffer,
                int64_t n, const SgdScalars<T> scalars, const T inv_scale) {
#pragma omp parallel for schedule(static) if (n >= kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    T buf{};
    if constexpr (kMomentum && !kFirstStep) buf = momentum_buffer[i];
    param[i] = sgd_update<kWeightDecay, kMomentum, kNesterov, kFirstStep>(
        param[i], grad[i] * inv_scale, buf, scalars);
    if constexpr (kMomentum) momentum_buffer[i] = buf;
  }
}

// Vectorises only under -fno-math-errno: otherwise GCC keeps a scalar branch per element
// for sqrt's errno.
template <typename T, AdamWeightDecay kDecay, bool kAmsgrad>
void adam_tensor(T* __restrict param, const T* __restrict grad, T* __restrict exp_avg,
                 T* __restrict exp_avg_sq, T* __restrict max_exp_avg_sq, int64_t n,
                 const AdamScalars<T> scalars, const T inv_scale) {
#pragma omp parallel for schedule(static) if (n >= kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    T m = exp_avg[i], v = exp_avg_sq[i], v_max{};
    if constexpr (kAmsgrad) v_max = max_exp_avg_sq[i];
    param[i] = adam_update<kDecay, kAmsgrad>(param[i], grad[i] * inv_scale, m, v, v_max, scalars);
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    if constexpr (kAmsgrad) max_exp_avg_sq[i] = v_max;
  }
}

}  // namespace

void sgd_step(DType dtype, const SgdTensors* tensors, int64_t count, const SgdHyper& hyper,
              const GradScaling& scaling) {
  SONATA_NVTX_RANGE("sonata::cpu::sgd_step");
  check_no_master(tensors, count, "sgd_step");
  float inv_scale_value = 1;
  if (!read_scaling(scaling, &inv_scale_value)) return;
  const bool momentum = hyper.momentum != 0;
  dispatch_f32_f64(dtype, "sgd_step", [&]<typename T>() {
    const SgdScalars<T> scalars(hyper);
    const T inv_scale = T(inv_scale_value);
    with_flag(hyper.weight_decay != 0, [&](auto kWeightDecay) {
      with_flag(momentum, [&](auto kMomentum) {
        with_flag(momentum && hyper.nesterov, [&](auto kNesterov) {
          with_flag(momentum && hyper.first_step, [&](auto kFirstStep) {
            if constexpr (kMomentum || (!kNesterov && !kFirstStep)) {
              for (int64_t t = 0; t < count; ++t)
                sgd_tensor<T, kWeightDecay, kMomentum, kNesterov, kFirstStep>(
                    static_cast<T*>(tensors[t].param), static_cast<const T*>(tensors[t].grad),
                    static_cast<T*>(tensors[t].momentum_buffer), tensors[t].numel, scalars,
                    inv_scale);
            }
          });
        });
      });
    });
  });
}

void adam_step(DType dtype, const AdamTensors* tensors, int64_t count, const AdamHyper& hyper,
               const GradScaling& scaling) {
  SONATA_NVTX_RANGE("sonata::cpu::adam_step");
  check_no_master(tensors, count, "adam_step");
  SONATA_CHECK(hyper.step >= 1, "sonata::cpu::adam_step: step ", hyper.step, " is not positive");
  float inv_scale_value = 1;
  if (!read_scaling(scaling, &inv_scale_value)) return;
  const AdamWeightDecay decay = hyper.weight_decay != 0 ? hyper.decay : AdamWeightDecay::none;
  dispatch_f32_f64(dtype, "adam_step", [&]<typename T>() {
    const AdamScalars<T> scalars(hyper);
    const T inv_scale = T(inv_scale_value);
    auto run = [&]<AdamWeightDecay kDecay>() {
      with_flag(hyper.amsgrad, [&](auto kAmsgrad) {
        for (int64_t t = 0; t < count; ++t)
          adam_tensor<T, kDecay, kAmsgrad>(
              static_cast<T*>(tensors[t].param), static_cast<const T*>(tensors[t].grad),
              static_cast<T*>(tensors[t].exp_avg), static_cast<T*>(tensors[t].exp_avg_sq),
              static_cast<T*>(tensors[t].max_exp_avg_sq), tensors[t].numel, scalars, inv_scale);
      });
    };
    switch (decay) {
      case AdamWeightDecay::none:
        return run.template operator()<AdamWeightDecay::none>();
      case AdamWeightDecay::l2:
        return run.template operator()<AdamWeightDecay::l2>();
      case AdamWeightDecay::decoupled:
        return run.template operator()<AdamWeightDecay::decoupled>();
    }
  });
}

SONATA_CPU_END

#if SONATA_CPU_ENTRY_POINTS
// The public functions: each runs the active capability's copy.
namespace sonata::kernels::cpu {

SONATA_CPU_DECLARE(sgd_step)
SONATA_CPU_DECLARE(adam_step)

void sgd_step(DType dtype, const SgdTensors* tensors, int64_t count, const SgdHyper& hyper,
              const GradScaling& scaling) {
  SONATA_CPU_CALL(sgd_step)(dtype, tensors, count, hyper, scaling);
}

void adam_step(DType dtype, const AdamTensors* tensors, int64_t count, const AdamHyper& hyper,
               const GradScaling& scaling) {
  SONATA_CPU_CALL(adam_step)(dtype, tensors, count, hyper, scaling);
}

}  // namespace sonata::kernels::cpu
#endif
