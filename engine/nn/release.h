#pragma once
// Giving back the memory of tensors a process does not use (a pipeline stage's view of the
// other stages' layers) while keeping every handle valid: layers and modules hold copies of
// their parameters' handles, so the storage behind a handle is swapped, not the handle.
#include "engine/nn/module.h"

namespace sonata {

// Each tensor's storage replaced by an empty one of its dtype on its device (shape {0}) and
// its gradient dropped. Restore one with set_data (Tensor::set_data) before using it again.
void release_storage(const NamedTensors& tensors);

// The bytes of a tensor's elements (0 when undefined), and of a list of them.
int64_t tensor_bytes(const Tensor& tensor);
int64_t named_tensor_bytes(const NamedTensors& tensors);

}  // namespace sonata
