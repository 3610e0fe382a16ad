#include "engine/autograd/node.h"

#include <atomic>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"

namespace sonata {
namespace {
std::atomic<uint64_t> g_next_sequence_nr{0};
}

Node::Node(std::string name, size_t num_outputs)
    : name_(std::move(name)), num_outputs_(num_outputs), sequence_nr_(g_next_sequence_nr++) {}

Node::~Node() {
  // Tear long chains down iteratively: a 10,000-step unrolled graph would otherwise recurse
  // once per node through shared_ptr destructors and overflow the stack.
  std::vector<std::shared_ptr<Node>> orphans;
  for (Edge& edge : next_edges)
    if (edge.fn && edge.fn.use_count() == 1) orphans.push_back(std::move(edge.fn));
  while (!orphans.empty()) {
    std::shared_ptr<Node> node = std::move(orphans.back());
    orphans.pop_back();
    // Saved tensors may hold the last references to nodes further up: drop them first.
    node->release_saved();
    for (Edge& edge : node->next_edges)
      if (edge.fn && edge.fn.use_count() == 1) orphans.push_back(std::move(edge.fn));
  }
}

FunctionNode::FunctionNode(std::string name, size_t num_outputs, BackwardFn backward)
    : Node(std::move(name), num_outputs), backward_(std::move(backward)) {}

std::vector<Tensor> FunctionNode::apply(std::vector<Tensor>&& grads) {
  if (released_)
    throw Error(str("backward through ", name(),
                    " a second time: its saved tensors were freed by the first backward; pass "
                    "retain_graph=true to that backward to keep them"));
  return backward_(grads);
}

void FunctionNode::release_saved() {
  released_ = true;
  backward_ = nullptr;
}

AccumulateGrad::AccumulateGrad(std::shared_ptr<TensorImpl> leaf)
    : Node("AccumulateGrad", 1), leaf_(leaf) {}

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>&& grads) {
  std::shared_ptr<TensorImpl> impl = leaf_.lock();
  if (!impl || !grads[0].defined()) return {};
  Tensor leaf(impl);
  Tensor& incoming = grads[0];
  AutogradMeta& meta = impl->autograd;
  if (!meta.grad || !meta.grad->defined()) {
    // Steal the incoming gradient when nothing else holds it; otherwise copy, because a
    // later accumulation is in place and must not write through someone else's tensor.
    const bool sole_owner = incoming.impl_ptr().use_count() == 1 &&
                            incoming.storage().use_count() == 1 && incoming.is_contiguous();
    meta.grad = std::make_shared<Tensor>(sole_owner ? incoming : incoming.contiguous().clone());
  } else {
    NoGradGuard no_grad;
    meta.grad->add_(incoming);
  }
  for (GradReadyHook& hook : meta.grad_ready_hooks) hook(leaf);
  return {};
}

Edge gradient_edge(const Tensor& tensor) {
  if (!tensor.defined() || !tensor.requires_grad()) return {};
  AutogradMeta& meta = tensor.impl().autograd;
  if (meta.grad_fn) return {meta.grad_fn, meta.output_nr};
  std::shared_ptr<Node> accumulator = meta.grad_accumulator.lock();
  if (!accumulator) {
    accumulator = std::make_shared<AccumulateGrad>(tensor.impl_ptr());
    meta.grad_accumulator = accumulator;
  }
  return {accumulator, 0};
}

}  // namespace sonata
