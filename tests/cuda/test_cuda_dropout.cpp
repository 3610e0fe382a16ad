// dropout on CUDA: the same mask as the CPU for the same generator state (bitwise in f32),
// and forward/backward parity in f32 / f16 / bf16.
#include <catch2/catch.hpp>

#include "engine/ops.h"
#include "engine/ops/dropout.h"
#include "engine/random.h"
#include "tests/cuda/parity_util.h"

using namespace sonata;
using namespace sonata::testing;

TEST_CASE("cuda dropout drops the same elements as the CPU", "[cuda][dropout]") {
  for (int64_t n : {int64_t(1), int64_t(37), int64_t(4096), int64_t(100003)}) {
    for (DType dtype : kParityDTypes) {
      INFO("n " << n << " dtype " << dtype_name(dtype));
      Generator cpu_generator(21, 4), cuda_generator(21, 4);
      cpu_generator.set_offset(3);
      cuda_generator.set_offset(3);
      const Tensor x = parity_input({n}, 401, 0.5, 1.5, false).to(dtype).to(DType::f32);
      const std::vector<float> cpu = dropout(x, 0.35, true, &cpu_generator).to_vector<float>();
      const std::vector<float> cuda =
          dropout(x.to(dtype).to(Device::cuda()), 0.35, true, &cuda_generator)
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
  // Odd sizes and an offset view exercise the unpacked path too.
  for (const Shape& shape : {Shape{64, 33}, Shape{5, 7}, Shape{2, 1024}}) {
    INFO("shape " << shape_str(shape));
    const Tensor x = parity_input(shape, 411);
    require_parity([](const std::vector<Tensor>& in) { return dropout(in[0], 0.2, true); }, {x});
    require_parity(
        [](const std::vector<Tensor>& in) {
          return dropout(in[0].slice(1, 1, in[0].size(1)), 0.5, true);
        },
        {x});
  }
}
