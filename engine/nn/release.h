#pragma once
// Giving back the memory of tensors a process does not use (a pipeline stage's view of the
// other stages' layers) while keeping every handle valid: layers and modules hold copies of
// their parameters' handles, so the storage behind a handle is swapped, not the handle.
//
// A released tensor is deferred again (engine/deferred_init.h): it keeps its shape and
// dtype, owns no memory, and reading its elements is an error, as for a tensor of a model
// built deferred that was never materialised. So "not made here" and "given back" are one
// state, and whatever reads a released tensor's shape (a checkpoint's compatibility check,
// refilling it) sees the whole model's.
#include "engine/nn/module.h"

namespace sonata {

// Each tensor's storage replaced by a deferred one of its shape, dtype and device (no memory,
// no values) and its gradient dropped; a tensor already deferred is left as it is. Give one
// memory again with set_data (Tensor::set_data) before using it.
void release_storage(const NamedTensors& tensors);

// The bytes of memory a tensor's elements take: 0 when it is undefined or deferred (made
// nowhere yet, or released). And of a list of them.
int64_t tensor_bytes(const Tensor& tensor);
int64_t named_tensor_bytes(const NamedTensors& tensors);

}  // namespace sonata
