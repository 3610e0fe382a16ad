#pragma once
// Module: named parameters, buffers and children, with PyTorch's state_dict names
// ("features.0.weight", "rnn.weight_ih_l0_reverse", "bn.running_mean"), train/eval, and
// moves between devices and dtypes that keep every Tensor handle a layer holds valid.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/tensor.h"

namespace sonata {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Layers with one input and one output override this; Sequential chains them.
  virtual Tensor forward(const Tensor& input);

  NamedTensors named_parameters() const;  // recursive, in registration order
  NamedTensors named_buffers() const;
  std::vector<Tensor> parameters() const;
  // Parameters then buffers of each module, depth-first, as torch's state_dict orders them.
  NamedTensors state_dict() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const {
    return children_;
  }
  int64_t parameter_count() const;

  void train(bool training = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // Moves parameters and buffers in place (the handles layers hold stay valid). Buffers
  // that hold integers (num_batches_tracked) keep their dtype.
  void to(Device device);
  void to(DType dtype);
  void zero_grad();

 protected:
  Tensor& register_parameter(const std::string& name, Tensor value);
  Tensor& register_buffer(const std::string& name, Tensor value);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void collect(const std::string& prefix, NamedTensors* parameters, NamedTensors* buffers) const;

  // Each slot is a stable handle: layers keep copies of these Tensors, and moves change
  // the tensor behind the handle rather than the handle.
  std::vector<std::pair<std::string, Tensor>> parameters_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// Children named "0", "1", ... applied in order.
class Sequential : public Module {
 public:
  Sequential() = default;
  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return children().size(); }
  Module& operator[](size_t index) const { return *children()[index].second; }
  Tensor forward(const Tensor& input) override;
};

}  // namespace sonata
