#pragma once
// How an op enters the graph: after computing `outputs` from `inputs`, it calls record()
// with a closure that maps output gradients to input gradients. Nothing is recorded when
// grad mode is off or no input requires grad. Closures must capture saved tensors through
// save() (data without history), so a node never owns the tensors that own it.
#include <string>
#include <vector>

#include "engine/autograd/node.h"

namespace sonata {

bool needs_grad(const std::vector<Tensor>& inputs);
void record(const std::string& name, const std::vector<Tensor>& inputs,
            const std::vector<Tensor*>& outputs, BackwardFn backward);
inline Tensor save(const Tensor& tensor) {
  return tensor.defined() ? tensor.detach() : Tensor();
}

}  // namespace sonata
