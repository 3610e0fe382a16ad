// In-place elementwise ops on CUDA, where the kernel's input is its own output: the packed
// path must read with plain loads, not through the read-only data cache (__ldg,
// ld.global.nc), which the CUDA Programming Guide and the PTX ISA allow only for data that
// no thread writes during the kernel. On a card the stale read is rare; the emulator can
// refuse an __ldg of memory the running kernel writes. Sizes take the 16-byte packs and the
// scalar tail.
#include <catch2/catch.hpp>

#include <vector>

#include "engine/ops.h"
#include "tests/cuda/parity_util.h"

using namespace sonata;
using namespace sonata::testing;

TEST_CASE("in-place adds and scales on CUDA equal the CPU's", "[cuda][elementwise]") {
  for (DType dtype : kParityDTypes) {
    INFO("dtype " << dtype_name(dtype));
    for (int64_t n : {int64_t(4096), int64_t(4096 + 5)}) {
      INFO("elements " << n);
      const Tensor source = parity_input({n}, 5000 + uint64_t(n), -2, 2, false).to(dtype);
      Tensor cpu = source.to(DType::f32);
      Tensor gpu = source.to(Device::cuda());
      cpu.add_(cpu, 0.5);  // x += 0.5 x: both inputs are the output
      gpu.add_(gpu, 0.5);
      cpu.mul_(3.0);
      gpu.mul_(3.0);
      const ParityResult result =
          compare_tensors(gpu.to(DType::f32).to(Device::cpu()), cpu.to(dtype).to(DType::f32),
                          parity_tolerance(dtype), "x");
      INFO(result.report);
      CHECK(result.ok);
    }
  }
}
