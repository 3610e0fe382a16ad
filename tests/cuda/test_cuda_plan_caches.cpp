// The bounded per-shape caches on the GPU: cuDNN convolution plans (kernels/cuda/conv.h) and
// cuFFT plans (kernels/cuda/mel.h). With tiny bounds every new shape evicts, also while the
// evicted plan's work may still be queued; results must still equal the CPU's, the caches
// must stay within their bounds, and evicted cuFFT plans must be destroyed once their work
// has run. Also cuDNN's heuristic choice next to the measured default, and determinism.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <random>
#include <span>
#include <thread>
#include <vector>

#include "base/determinism.h"
#include "base/math_mode.h"
#include "data/features/feature_config.h"
#include "data/features/spectrogram.h"
#include "engine/device.h"
#include "engine/ops.h"
#include "engine/ops/conv.h"
#include "tests/cuda/parity_util.h"

// The cache controls are CUDA kernels' own functions: without the CUDA backend the cases
// below are empty (and the binary skips them all anyway).
#if SONATA_WITH_CUDA
#include <cuda_runtime_api.h>

#include "engine/cuda/stream.h"
#include "kernels/cuda/conv.h"
#include "kernels/cuda/mel.h"
#endif

using namespace sonata;
using namespace sonata::testing;

namespace {

#if SONATA_WITH_CUDA
struct ConvCacheBound {
  explicit ConvCacheBound(size_t capacity) {
    kernels::cuda::set_conv_plan_cache_capacity(capacity);
  }
  ~ConvCacheBound() {
    kernels::cuda::set_conv_plan_cache_capacity(kernels::cuda::kDefaultConvPlanCacheCapacity);
  }
};

struct FftCacheBound {
  explicit FftCacheBound(size_t capacity) { kernels::cuda::set_fft_plan_cache_capacity(capacity); }
  ~FftCacheBound() {
    kernels::cuda::set_fft_plan_cache_capacity(kernels::cuda::kDefaultFftPlanCacheCapacity);
  }
};

ParityFunction conv_with(Conv2dParams params) {
  return [params](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], in[2], params); };
}

std::vector<float> noise(int64_t length, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  std::vector<float> x(static_cast<size_t>(length));
  for (float& v : x) v = normal(rng);
  return x;
}
#endif

}  // namespace

TEST_CASE("cuDNN plans stay within the cache's bound and evictions keep results right",
          "[cuda][conv][cache]") {
#if SONATA_WITH_CUDA
  const ConvCacheBound bound(2);
  CHECK(kernels::cuda::conv_plan_cache_size() <= 2);
  const Conv2dParams same{{1, 1}, {1, 1}, {1, 1}};
  uint64_t seed = 4200;
  // Five lengths, as DS2's buckets, each twice: every call evicts a plan another may still
  // have queued work for.
  for (int round = 0; round < 2; ++round)
    for (int64_t width : {9, 14, 21, 30, 41}) {
      INFO("width " << width);
      require_parity(conv_with(same),
                     {parity_input({2, 4, 7, width}, ++seed),
                      parity_input({6, 4, 3, 3}, ++seed, -0.25, 0.25), parity_input({6}, ++seed)});
      CHECK(kernels::cuda::conv_plan_cache_size() <= 2);
    }
#endif
}

TEST_CASE("cuDNN's heuristic choice matches the CPU too", "[cuda][conv][cache]") {
#if SONATA_WITH_CUDA
  kernels::cuda::set_conv_algorithm_search(kernels::cuda::ConvAlgorithmSearch::heuristic);
  const Conv2dParams strided{{2, 1}, {1, 2}, {1, 1}};
  // A shape no other test uses, so that the heuristics choose it.
  require_parity(conv_with(strided),
                 {parity_input({3, 5, 13, 17}, 4300), parity_input({7, 5, 3, 5}, 4301, -0.25, 0.25),
                  parity_input({7}, 4302)});
  kernels::cuda::set_conv_algorithm_search(kernels::cuda::ConvAlgorithmSearch::measured);
#endif
}

TEST_CASE("conv2d under --deterministic gives the same gradients twice", "[cuda][conv][cache]") {
  const bool previous = deterministic_algorithms();
  set_deterministic_algorithms(true);
  const Tensor x = parity_input({4, 8, 20, 20}, 4400, -1, 1, false).to(Device::cuda());
  const Tensor w = parity_input({16, 8, 3, 3}, 4401, -0.25, 0.25, false).to(Device::cuda());
  const Tensor g = parity_input({4, 16, 20, 20}, 4402, -1, 1, false).to(Device::cuda());
  std::vector<std::vector<float>> runs;
  for (int run = 0; run < 2; ++run) {
    Tensor xr = x.detach(), wr = w.detach();
    xr.set_requires_grad(true);
    wr.set_requires_grad(true);
    conv2d(xr, wr, Tensor(), {{1, 1}, {1, 1}, {1, 1}}).backward(g);
    std::vector<float> grads = wr.grad().to(Device::cpu()).to_vector<float>();
    const std::vector<float> gx = xr.grad().to(Device::cpu()).to_vector<float>();
    grads.insert(grads.end(), gx.begin(), gx.end());
    runs.push_back(grads);
  }
  set_deterministic_algorithms(previous);
  CHECK(runs[0] == runs[1]);
}

TEST_CASE(
    "cuFFT plans stay within the cache's bound, and evicted ones are destroyed after their work",
    "[cuda][mel][cache]") {
#if SONATA_WITH_CUDA
  const FftCacheBound bound(1);
  FeatureConfig config;
  config.hop_length = 160;
  const FeatureExtractor extractor(config);
  // Row counts that need different plans (64, 256 and 2048 rows per execution), launched
  // back to back before any result is read: each evicts the plan the previous one queued.
  const std::vector<std::vector<int64_t>> batches{{3000}, {16000, 20000}, {160000, 150000}};
  std::vector<std::vector<std::vector<float>>> clips;
  std::vector<std::vector<Tensor>> gpu;
  uint32_t seed = 4500;
  for (const std::vector<int64_t>& lengths : batches) {
    clips.emplace_back();
    for (int64_t length : lengths) clips.back().push_back(noise(length, ++seed));
    const std::vector<std::span<const float>> spans(clips.back().begin(), clips.back().end());
    gpu.push_back(extractor.log_mel_on(Device::cuda(), spans));
    CHECK(kernels::cuda::fft_plan_cache_stats().cached <= 1);
  }
  for (size_t b = 0; b < batches.size(); ++b) {
    const std::vector<std::span<const float>> spans(clips[b].begin(), clips[b].end());
    const std::vector<Tensor> cpu = extractor.log_mel(spans);
    REQUIRE(cpu.size() == gpu[b].size());
    for (size_t c = 0; c < cpu.size(); ++c) {
      INFO("batch " << b << ", clip " << c);
      const ParityResult result =
          compare_tensors(gpu[b][c].to(Device::cpu()), cpu[c], {1e-4, 1e-4}, "log_mel");
      INFO(result.report);
      REQUIRE(result.ok);
    }
  }
  // Once the device has run everything, nothing evicted is left waiting.
  device_synchronize(Device::cuda());
  CHECK(kernels::cuda::fft_plan_cache_stats().retired == 0);
#endif
}

#if SONATA_WITH_CUDA
namespace {

// Holds a stream inside a host function until released (or 30 s passed, which counts as
// timed out): whatever synchronises the whole device waits for it meanwhile.
struct StreamGate {
  std::atomic<bool> released{false}, timed_out{false};
  static void CUDART_CB hold(void* self) {
    auto* gate = static_cast<StreamGate*>(self);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!gate->released.load()) {
      if (std::chrono::steady_clock::now() > deadline) {
        gate->timed_out = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
};

}  // namespace
#endif

TEST_CASE("destroying an evicted cuFFT plan does not synchronise the device",
          "[cuda][mel][cache]") {
#if SONATA_WITH_CUDA
  // cufftDestroy of a plan that allocated its own work area cudaFrees it, and cudaFree waits
  // for every stream of the device (NCCL's kernels included). The work areas come from the
  // stream-ordered pool instead: evicting and destroying plans while another stream is held
  // must not wait for that stream.
  const FftCacheBound bound(1);
  FeatureConfig config;
  config.hop_length = 160;
  const FeatureExtractor extractor(config);
  const Stream side(0);
  StreamGate gate;
  REQUIRE(cudaLaunchHostFunc(side.get(), StreamGate::hold, &gate) == cudaSuccess);
  uint32_t seed = 4600;
  for (int64_t length : {3000, 20000, 160000, 3000}) {
    const std::vector<float> clip = noise(length, ++seed);
    const std::vector<std::span<const float>> spans{clip};
    (void)extractor.log_mel_on(Device::cuda(), spans);
  }
  // The compute stream's work is done, so every evicted plan is destroyed now, the side
  // stream still held.
  REQUIRE(cudaStreamSynchronize(current_stream(0)) == cudaSuccess);
  CHECK(kernels::cuda::fft_plan_cache_stats().retired == 0);
  gate.released = true;
  REQUIRE(cudaStreamSynchronize(side.get()) == cudaSuccess);
  CHECK_FALSE(gate.timed_out.load());
#endif
}
