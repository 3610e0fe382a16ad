#include "engine/optim/clip_grad.h"

#include <map>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "engine/ops/backend.h"
#include "kernels/common/multi_tensor.h"
#include "kernels/cpu/grad_norm.h"
#if SONATA_WITH_CUDA
#include "kernels/cuda/grad_norm.h"
#endif

namespace sonata {
namespace {

// The gradients by dtype (each kernel call takes one), as pointers and sizes.
struct GradLists {
  Device device = Device::cpu();
  DType result_dtype = DType::f32;
  std::map<DType, std::vector<void*>> pointers;
  std::map<DType, std::vector<int64_t>> numels;
  int64_t chunks = 0;
};

GradLists collect_grads(const std::vector<Tensor>& parameters, const char* caller) {
  GradLists lists;
  bool first = true;
  for (size_t k = 0; k < parameters.size(); ++k) {
    Tensor p = parameters[k];
    if (!p.defined() || !p.grad().defined()) continue;
    Tensor grad = p.grad();
    if (first) lists.device = grad.device();
    SONATA_CHECK(grad.device() == lists.device, caller, ": the gradient of parameter ", k,
                 " is on ", grad.device().str(), ", earlier ones on ", lists.device.str());
    SONATA_CHECK(is_floating(grad.dtype()), caller, ": the gradient of parameter ", k, " is ",
                 dtype_name(grad.dtype()));
    // Clipping scales in place, so the gradient itself must be the contiguous tensor.
    if (!grad.is_contiguous()) {
      grad = grad.contiguous();
      p.set_grad(grad);
    }
    if (grad.dtype() == DType::f64) lists.result_dtype = DType::f64;
    lists.pointers[grad.dtype()].push_back(grad.data_ptr());
    lists.numels[grad.dtype()].push_back(grad.numel());
    lists.chunks += kernels::chunk_count(grad.numel());
    first = false;
  }
  return lists;
}

// Partial sums then [norm, clip factor] in one f64 buffer on the gradients' device.
Tensor norm_and_factor(const GradLists& lists, double max_norm) {
  Tensor buffer = empty({lists.chunks + 2}, TensorOptions{}.with(DType::f64).with(lists.device));
  double* partials = buffer.data<double>();
  int64_t offset = 0;
  for (const auto& [dtype, pointers] : lists.pointers) {
    const std::vector<int64_t>& numels = lists.numels.at(dtype);
    SONATA_BACKEND(lists.device, squared_norm_partials, dtype, pointers.data(), numels.data(),
                   int64_t(pointers.size()), partials + offset);
    offset += kernels::chunk_count(numels.data(), int64_t(numels.size()));
  }
  SONATA_BACKEND(lists.device, clip_coefficient, partials, lists.chunks, max_norm,
                 partials + lists.chunks);
  return buffer;
}

Tensor norm_result(const GradLists& lists, const Tensor& buffer) {
  const Tensor norm = buffer.slice(0, lists.chunks, lists.chunks + 1).reshape({});
  return lists.result_dtype == DType::f64 ? norm.clone() : norm.to(DType::f32);
}

}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm) {
  NoGradGuard no_grad;
  const GradLists lists = collect_grads(parameters, "clip_grad_norm_");
  if (lists.pointers.empty()) return zeros({});
  const Tensor buffer = norm_and_factor(lists, max_norm);
  const double* factor = buffer.data<double>() + lists.chunks + 1;
  for (const auto& [dtype, pointers] : lists.pointers)
    SONATA_BACKEND(lists.device, scale_tensors, dtype, pointers.data(),
                   lists.numels.at(dtype).data(), int64_t(pointers.size()), factor);
  return norm_result(lists, buffer);
}

Tensor grad_norm(const std::vector<Tensor>& parameters) {
  NoGradGuard no_grad;
  const GradLists lists = collect_grads(parameters, "grad_norm");
  if (lists.pointers.empty()) return zeros({});
  return norm_result(lists, norm_and_factor(lists, 1.0));
}

Tensor grad_squared_norm(const std::vector<Tensor>& parameters) {
  NoGradGuard no_grad;
  const GradLists lists = collect_grads(parameters, "grad_squared_norm");
  const TensorOptions f64 = TensorOptions{}.with(DType::f64);
  if (lists.pointers.empty()) return zeros({}, f64);
  const Tensor buffer = norm_and_factor(lists, 1.0);
  return sum(buffer.slice(0, 0, lists.chunks));
}

void clip_grads_to_norm_(const std::vector<Tensor>& parameters, double total_norm,
                         double max_norm) {
  NoGradGuard no_grad;
  const GradLists lists = collect_grads(parameters, "clip_grads_to_norm_");
  if (lists.pointers.empty()) return;
  const double coefficient = max_norm / (total_norm + 1e-6);
  // torch.clamp(max=1.0) keeps a NaN, as the fused kernel does.
  const Tensor factor = full({1}, coefficient > 1.0 ? 1.0 : coefficient,
                             TensorOptions{}.with(DType::f64).with(lists.device));
  for (const auto& [dtype, pointers] : lists.pointers)
    SONATA_BACKEND(lists.device, scale_tensors, dtype, pointers.data(),
                   lists.numels.at(dtype).data(), int64_t(pointers.size()), factor.data<double>());
}

}  // namespace sonata
