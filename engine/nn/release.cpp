#include "engine/nn/release.h"

#include "engine/autograd/grad_mode.h"
#include "engine/deferred_init.h"

namespace sonata {

void release_storage(const NamedTensors& tensors) {
  NoGradGuard no_grad;
  for (const auto& [name, tensor] : tensors) {
    if (is_deferred(tensor)) continue;
    Tensor handle = tensor;
    handle.set_grad(Tensor());
    handle.set_data(deferred_empty(handle.shape(), handle.options()));
  }
}

int64_t tensor_bytes(const Tensor& tensor) {
  return tensor.defined() && !is_deferred(tensor)
             ? tensor.numel() * int64_t(dtype_size(tensor.dtype()))
             : 0;
}

int64_t named_tensor_bytes(const NamedTensors& tensors) {
  int64_t bytes = 0;
  for (const auto& [name, tensor] : tensors) bytes += tensor_bytes(tensor);
  return bytes;
}

}  // namespace sonata
