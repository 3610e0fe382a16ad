// dropout on CUDA over the table in tests/cases/dropout_cases.h: the same mask as the CPU for
// the same generator state (bitwise in f32), and forward/backward parity in f32 / f16 / bf16.
#include <catch2/catch.hpp>

#include "engine/ops.h"
#include "engine/ops/dropout.h"
#include "engine/random.h"
#include "tests/cases/dropout_cases.h"
#include "tests/cuda/parity_util.h"

using namespace sonata;
using namespace sonata::testing;

TEST_CASE("cuda dropout drops the same elements as the CPU", "[cuda][dropout]") {
  for (const DropoutCase& test : dropout_cases()) {
    for (DType dtype : kParityDTypes) {
      INFO(test.name << ", p " << test.p << " dtype " << dtype_name(dtype));
      Generator cpu_generator(21, 4), cuda_generator(21, 4);
      cpu_generator.set_offset(3);
      cuda_generator.set_offset(3);
      const Tensor x = parity_input(test.shape, 401, 0.5, 1.5, false).to(dtype).to(DType::f32);
      const std::vector<float> cpu =
          dropout(test.input_of(x), test.p, true, &cpu_generator).to_vector<float>();
      const std::vector<float> cuda =
          dropout(test.input_of(x.to(dtype).to(Device::cuda())), test.p, true, &cuda_generator)
              .to(DType::f32)
              .to_vector<float>();
      CHECK(cuda_generator.offset() == cpu_generator.offset());
      REQUIRE(cpu.size() == cuda.size());
      for (size_t i = 0; i < cpu.size(); ++i) {
        INFO("element " << i);
        REQUIRE((cpu[i] == 0) == (cuda[i] == 0));
        if (dtype == DType::f32) REQUIRE(cpu[i] == cuda[i]);
      }
    }
  }
}

TEST_CASE("cuda dropout forward and backward match the CPU", "[cuda][dropout]") {
  for (const DropoutCase& test : dropout_cases()) {
    INFO(test.name << ", p " << test.p);
    require_parity(
        [&](const std::vector<Tensor>& in) { return dropout(test.input_of(in[0]), test.p, true); },
        {parity_input(test.shape, 411)});
  }
}
