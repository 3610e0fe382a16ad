#pragma once
#include "engine/nn/module.h"

namespace sonata {

// torch.nn.Linear: y = x @ weight^T + bias, weight [out, in], for x of any rank >= 1.
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  Tensor& weight() { return weight_; }
  Tensor& bias() { return bias_; }

 private:
  Tensor weight_, bias_;
};

}  // namespace sonata
