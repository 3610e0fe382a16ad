#pragma once
#include <array>

#include "engine/nn/module.h"
#include "engine/ops/conv.h"

namespace sonata {

// torch.nn.Conv2d (groups = 1): weight [out, in, kh, kw], optional bias [out]. Initialised
// as torch does by default (kaiming_uniform with a = sqrt(5)); models re-initialise.
class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, std::array<int64_t, 2> kernel_size,
         const Conv2dParams& params = {}, bool bias = true);
  Tensor forward(const Tensor& x) override;
  Tensor& weight() { return weight_; }
  Tensor& bias() { return bias_; }
  const Conv2dParams& params() const { return params_; }

 private:
  Conv2dParams params_;
  Tensor weight_, bias_;
};

}  // namespace sonata
