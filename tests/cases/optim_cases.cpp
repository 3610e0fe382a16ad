#include "tests/cases/optim_cases.h"

#include "base/error.h"

namespace sonata::testing {

std::unique_ptr<Optimizer> OptimizerCase::make(std::vector<Tensor> params) const {
  switch (kind) {
    case Kind::sgd:
      return std::make_unique<SGD>(std::move(params), sgd);
    case Kind::adam:
      return std::make_unique<Adam>(std::move(params), adam);
    case Kind::adamw:
      return std::make_unique<AdamW>(std::move(params), adam);
  }
  return nullptr;
}

const std::vector<OptimizerCase>& optimizer_cases() {
  using Kind = OptimizerCase::Kind;
  static const std::vector<OptimizerCase> cases = {
      {"nesterov SGD",
       Kind::sgd,
       {.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-2, .nesterov = true},
       {},
       4,
       100},
      {"damped SGD", Kind::sgd, {.lr = 0.1, .momentum = 0.8, .dampening = 0.3}, {}, 3, 200},
      {"AdamW", Kind::adamw, {}, {.lr = 1e-2, .beta2 = 0.99, .weight_decay = 0.1}, 4, 300},
      {"Adam amsgrad", Kind::adam, {}, {.lr = 1e-2, .weight_decay = 1e-2, .amsgrad = true}, 3, 400},
  };
  return cases;
}

const OptimizerCase& optimizer_case(const std::string& name) {
  for (const OptimizerCase& c : optimizer_cases())
    if (c.name == name) return c;
  SONATA_CHECK(false, "no optimizer case named ", name);
  return optimizer_cases()[0];
}

}  // namespace sonata::testing
