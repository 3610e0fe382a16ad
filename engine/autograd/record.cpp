#include "engine/autograd/record.h"

#include "engine/autograd/grad_mode.h"

namespace sonata {

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!GradMode::enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.requires_grad()) return true;
  return false;
}

void record(const std::string& name, const std::vector<Tensor>& inputs,
            const std::vector<Tensor*>& outputs, BackwardFn backward) {
  if (!needs_grad(inputs)) return;
  auto node = std::make_shared<FunctionNode>(name, outputs.size(), std::move(backward));
  node->next_edges.reserve(inputs.size());
  node->input_meta.reserve(inputs.size());
  for (const Tensor& input : inputs) {
    node->next_edges.push_back(gradient_edge(input));
    if (input.defined())
      node->input_meta.push_back({input.shape(), input.dtype(), input.device()});
    else
      node->input_meta.push_back({});
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    AutogradMeta& meta = outputs[k]->impl().autograd;
    meta.requires_grad = true;
    meta.grad_fn = node;
    meta.output_nr = uint32_t(k);
  }
}

}  // namespace sonata
