// masked_batch_norm on CUDA against the CPU reference, f32 / f16 / bf16: outputs (0 on
// padding), updated running stats and the gradients of x, weight and bias, in training and
// evaluation, over tests/cases/batch_norm_cases.h's masked table.
#include <catch2/catch.hpp>

#include <vector>

#include "engine/ops.h"
#include "engine/ops/masked_batch_norm.h"
#include "tests/cases/batch_norm_cases.h"
#include "tests/cuda/parity_util.h"

using namespace sonata;
using namespace sonata::testing;

TEST_CASE("cuda masked_batch_norm matches the CPU in training and evaluation",
          "[cuda][batch_norm][masked_batch_norm]") {
  uint64_t seed = 300;
  for (const MaskedBatchNormCase& test : masked_batch_norm_cases()) {
    const int64_t c = test.x[1];
    const Tensor lengths = from_vector(test.lengths, {int64_t(test.lengths.size())});
    const Tensor x = parity_input(test.x, ++seed, -1, 3);
    const Tensor w = parity_input({c}, ++seed, 0.5, 1.5), b = parity_input({c}, ++seed);
    const Tensor rm = parity_input({c}, ++seed, -0.5, 0.5, false);
    const Tensor rv = parity_input({c}, ++seed, 0.5, 2, false);
    for (bool training : {true, false}) {
      INFO(test.name << ", training " << training);
      const BatchNormOptions options{training, 0.1, 1e-5};
      require_parity(
          [&](const std::vector<Tensor>& in) {
            // The lengths stay on the CPU: the op moves them to x's device.
            const Tensor y = masked_batch_norm(in[0], lengths, in[1], in[2], in[3], in[4], options);
            return cat({y.to(DType::f32).flatten(), in[3].to(DType::f32), in[4].to(DType::f32)}, 0);
          },
          {x, w, b, rm, rv});
    }
  }
}
