#pragma once
#include <memory>
#include <string>

#include "engine/nn/layer_sequence.h"
#include "engine/nn/module.h"

namespace sonata {

// torch.nn.Linear: y = x @ weight^T + bias, weight [out, in], for x of any rank >= 1.
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  Tensor& weight() { return weight_; }
  Tensor& bias() { return bias_; }
  int64_t in_features() const { return weight_.size(1); }
  int64_t out_features() const { return weight_.size(0); }

  // A Linear computing this one's output features [begin, end): copies of those rows of the
  // weight and bias (no random numbers drawn, so the generator stays where one process has
  // it).
  std::shared_ptr<Linear> rows(int64_t begin, int64_t end) const;

 private:
  struct FromTensors {};
  Linear(FromTensors, Tensor weight, Tensor bias);

  Tensor weight_, bias_;
};

// `linear` as one layer of a model's sequence, under `prefix` ("classifier.0"), that a
// pipeline may cut into row pieces (ModelLayer::piece, engine/nn/layer_sequence.h).
ModelLayer linear_layer(const std::string& prefix, const std::shared_ptr<Linear>& linear);

}  // namespace sonata
