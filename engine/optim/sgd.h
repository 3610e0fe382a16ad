#pragma once
// torch.optim.SGD (PyTorch 1.13): weight decay, momentum with dampening (the buffer starts as
// the first gradient), Nesterov. Each step is one fused pass per list of parameters
// (kernels/*/optimizer.h); half-precision parameters on CUDA step through fp32 masters.
#include <vector>

#include "engine/optim/optimizer.h"

namespace sonata {

struct SgdOptions {
  double lr = 0.01;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;  // needs momentum > 0 and no dampening
};

class SGD : public Optimizer {
 public:
  // Options named in a group override `defaults`: "lr", "momentum", "dampening",
  // "weight_decay", "nesterov".
  SGD(std::vector<ParamGroup> groups, const SgdOptions& defaults);
  SGD(std::vector<Tensor> params, const SgdOptions& defaults);

 protected:
  void step_group(size_t group, const std::vector<size_t>& params,
                  const StepScaling& scaling) override;
  void check_options(size_t group) const override;
};

}  // namespace sonata
