#pragma once
// The backward graph. A Node turns the gradients of its outputs into gradients of its
// inputs; its edges point at the nodes that produced those inputs (or at the accumulators
// of leaves). Nodes are made by ops through record() in engine/autograd/record.h.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace sonata {

class Node;

struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;  // which output of `fn` this edge feeds
  bool valid() const { return fn != nullptr; }
};

// What a gradient flowing into an input must look like.
struct InputMeta {
  Shape shape;
  DType dtype = DType::f32;
  Device device;
};

class Node {
 public:
  Node(std::string name, size_t num_outputs);
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // grads[k] is the gradient of output k (undefined when none reached it). Returns one
  // gradient per input (undefined for inputs that get none).
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grads) = 0;
  // Frees what the forward saved for backward; called after backward unless retain_graph.
  virtual void release_saved() {}

  const std::string& name() const { return name_; }
  size_t num_outputs() const { return num_outputs_; }
  uint64_t sequence_nr() const { return sequence_nr_; }

  std::vector<Edge> next_edges;  // one per input
  std::vector<InputMeta> input_meta;

 private:
  std::string name_;
  size_t num_outputs_;
  uint64_t sequence_nr_;
};

using BackwardFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& grads)>;

// A node whose backward is a closure over the tensors the forward saved.
class FunctionNode : public Node {
 public:
  FunctionNode(std::string name, size_t num_outputs, BackwardFn backward);
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  void release_saved() override;

 private:
  BackwardFn backward_;
  bool released_ = false;
};

// Sums gradients into a leaf's .grad, then runs its grad-ready hooks.
class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf);
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;

 private:
  std::weak_ptr<TensorImpl> leaf_;
};

// The edge a gradient for `tensor` must travel: its grad_fn, its leaf accumulator, or none.
Edge gradient_edge(const Tensor& tensor);

// Runs backward from `roots` with the given gradients (engine/autograd/engine.cpp).
void run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads,
                  bool retain_graph);

}  // namespace sonata
