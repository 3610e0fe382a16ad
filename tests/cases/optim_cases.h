#pragma once
// The optimizers' configurations, written once: the CPU check against the update written with
// tensor ops in torch's order (tests/optim/test_optim.cpp) and the CUDA parity checks over
// many tensors (tests/cuda/test_cuda_optim.cpp) iterate this table; CUDA's scaling and resume
// tests take named cases from it. The torch fixtures (tests/fixtures/optim) carry their own
// options and stay by name.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/optim/adamw.h"
#include "engine/optim/sgd.h"

namespace sonata::testing {

struct OptimizerCase {
  enum class Kind { sgd, adam, adamw };
  std::string name;
  Kind kind;
  SgdOptions sgd;    // for Kind::sgd
  AdamOptions adam;  // for Kind::adam and Kind::adamw (decoupled weight decay)
  int steps;
  uint64_t seed;  // the CUDA parity check's inputs

  std::unique_ptr<Optimizer> make(std::vector<Tensor> params) const;
};

// Nesterov SGD with weight decay, SGD with dampening, AdamW, Adam with L2 and amsgrad.
const std::vector<OptimizerCase>& optimizer_cases();
const OptimizerCase& optimizer_case(const std::string& name);

}  // namespace sonata::testing
