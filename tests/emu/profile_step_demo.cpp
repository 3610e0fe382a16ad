// A program whose "steps" (NVTX ranges named as the trainer's) the emulated profile's budget
// check reads, with one planted defect on request, so that each budget is shown to fail on
// its defect and to pass without it (tests/emu/profile_demo_check.sh):
//   profile_step_demo none|malloc|sync|strided|launches
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <string>
#include <vector>

#include "kernels/profile_kernels.h"

using namespace sonata::emu::test;

int main(int argc, char** argv) {
  const std::string plant = argc > 1 ? argv[1] : "none";
  if (plant != "none" && plant != "malloc" && plant != "sync" && plant != "strided" &&
      plant != "launches") {
    std::fprintf(stderr, "profile_step_demo: unknown defect '%s'\n", plant.c_str());
    return 2;
  }
  const int n = 256, steps = 4;
  std::vector<float> host(size_t(n) * 8, 1.0f);
  float *in = nullptr, *out = nullptr;
  cudaMalloc(&in, host.size() * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  cudaMemcpy(in, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
  for (int step = 0; step < steps; ++step) {
    nvtxRangePushA("sonata::step");
    strided_gather(in, out, n, plant == "strided" ? 8 : 1);
    if (plant == "launches")
      for (int extra = 0; extra < 4; ++extra) strided_gather(in, out, n, 1);
    if (plant == "malloc") {
      void* scratch = nullptr;
      cudaMalloc(&scratch, 1 << 20);
      cudaFree(scratch);
    }
    if (plant == "sync") cudaStreamSynchronize(nullptr);
    nvtxRangePop();
  }
  const cudaError_t status = cudaDeviceSynchronize();
  cudaFree(in);
  cudaFree(out);
  return status == cudaSuccess ? 0 : 1;
}
