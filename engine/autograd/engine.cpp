// The backward pass: an iterative walk (no recursion, so graphs of any depth work) that runs
// each node once all gradients for it have arrived, latest-created first like PyTorch, so
// that leaves finish in reverse order of use, which the data-parallel reducer relies on.
#include <queue>
#include <unordered_map>

#include "base/error.h"
#include "base/nvtx.h"
#include "engine/autograd/grad_mode.h"
#include "engine/autograd/node.h"
#include "engine/ops.h"

namespace sonata {
namespace {

struct LaterFirst {
  bool operator()(const Node* a, const Node* b) const {
    return a->sequence_nr() < b->sequence_nr();
  }
};

void check_gradient(const Node& node, size_t input, const Tensor& grad) {
  const InputMeta& meta = node.input_meta[input];
  if (grad.shape() != meta.shape || grad.dtype() != meta.dtype || grad.device() != meta.device)
    throw Error(str("autograd: ", node.name(), " produced a gradient of shape ",
                    shape_str(grad.shape()), " ", dtype_name(grad.dtype()), " on ",
                    grad.device().str(), " for its input ", input, ", which is ",
                    shape_str(meta.shape), " ", dtype_name(meta.dtype), " on ", meta.device.str()));
}

void accumulate(Tensor& slot, Tensor&& grad) {
  if (!slot.defined()) {
    slot = std::move(grad);
  } else {
    // A fresh sum, never in place: the slot may alias a tensor that another branch still
    // reads. add() keeps the operands' layout when they share one (the per-step transposed
    // weight gradients of an RNN), so the sum is one flat pass, not a copy plus a strided add.
    slot = add(slot, grad);
  }
}

}  // namespace

void run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads,
                  bool retain_graph) {
  SONATA_NVTX_RANGE("sonata::backward");
  NoGradGuard no_grad;  // backward rules compute with plain ops

  // Pending gradients per node, one slot per node output.
  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  std::unordered_map<Node*, int> dependencies;
  std::vector<std::shared_ptr<Node>> keep_alive;

  std::vector<Node*> stack;
  auto discover = [&](const std::shared_ptr<Node>& start) {
    if (dependencies.count(start.get())) return;
    dependencies[start.get()] = 0;
    keep_alive.push_back(start);
    stack.push_back(start.get());
    while (!stack.empty()) {
      Node* node = stack.back();
      stack.pop_back();
      for (const Edge& edge : node->next_edges) {
        if (!edge.valid()) continue;
        auto [it, inserted] = dependencies.try_emplace(edge.fn.get(), 0);
        ++it->second;
        if (inserted) stack.push_back(edge.fn.get());
      }
    }
  };

  std::priority_queue<Node*, std::vector<Node*>, LaterFirst> ready;
  for (size_t r = 0; r < roots.size(); ++r) {
    const Tensor& root = roots[r];
    SONATA_CHECK(root.requires_grad(),
                 "backward: the tensor does not require grad and has no grad_fn (was it made "
                 "under no_grad, or from inputs that do not require grad?)");
    Edge edge = gradient_edge(root);
    discover(edge.fn);
    auto& slots = buffers[edge.fn.get()];
    slots.resize(edge.fn->num_outputs());
    accumulate(slots[edge.input_nr], Tensor(grads[r]));
  }
  for (size_t r = 0; r < roots.size(); ++r) {
    Node* node = gradient_edge(roots[r]).fn.get();
    if (dependencies[node] == 0) {
      dependencies[node] = -1;  // queued
      ready.push(node);
    }
  }

  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    std::vector<Tensor> node_grads = std::move(buffers[node]);
    buffers.erase(node);
    node_grads.resize(node->num_outputs());
    bool any = false;
    for (const Tensor& g : node_grads) any = any || g.defined();

    std::vector<Tensor> input_grads;
    if (any) {
      input_grads = node->apply(std::move(node_grads));
      if (!retain_graph) node->release_saved();
    }
    for (size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& edge = node->next_edges[i];
      if (!edge.valid()) continue;
      if (i < input_grads.size() && input_grads[i].defined()) {
        check_gradient(*node, i, input_grads[i]);
        auto& slots = buffers[edge.fn.get()];
        slots.resize(edge.fn->num_outputs());
        accumulate(slots[edge.input_nr], std::move(input_grads[i]));
      }
      if (--dependencies[edge.fn.get()] == 0) ready.push(edge.fn.get());
    }
  }
}

}  // namespace sonata
