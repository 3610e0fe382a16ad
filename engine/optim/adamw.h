#pragma once
// torch.optim.Adam and AdamW (PyTorch 1.13): bias-corrected moments, optional amsgrad, and
// weight decay either added to the gradient (Adam, L2) or applied to the weights (AdamW,
// decoupled: p *= 1 - lr * weight_decay). One fused pass per list of parameters.
#include <vector>

#include "engine/optim/optimizer.h"

namespace sonata {

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;  // torch.optim.AdamW's default is 1e-2: set it explicitly
  bool amsgrad = false;
};

class Adam : public Optimizer {
 public:
  // Options named in a group override `defaults`: "lr", "beta1", "beta2", "eps",
  // "weight_decay", "amsgrad".
  Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults);
  Adam(std::vector<Tensor> params, const AdamOptions& defaults);

 protected:
  Adam(const char* kind, bool decoupled_weight_decay, std::vector<ParamGroup> groups,
       const AdamOptions& defaults);
  void step_group(size_t group, const std::vector<size_t>& params,
                  const StepScaling& scaling) override;
  void check_options(size_t group) const override;

 private:
  bool decoupled_weight_decay_;
};

class AdamW : public Adam {
 public:
  AdamW(std::vector<ParamGroup> groups, const AdamOptions& defaults);
  AdamW(std::vector<Tensor> params, const AdamOptions& defaults);
};

}  // namespace sonata
