// The loader's path to the GPU: batches pinned by the workers, copied on the stager's own
// stream one batch ahead, and ready on the compute stream when taken; pinned blocks reused;
// workers on the device they pin for.
#include <catch2/catch.hpp>

#include <mutex>
#include <vector>

#include "data/loader/batch_loader.h"
#include "data/loader/device_stager.h"
#include "engine/ops.h"
#include "tests/cuda/parity_util.h"

#if SONATA_WITH_CUDA
#include <cuda_runtime_api.h>

#include "engine/cuda/pinned_pool.h"
#endif

using namespace sonata;

#if SONATA_WITH_CUDA
namespace {

HostBatch numbered_batch(const std::vector<int64_t>& items, int64_t epoch) {
  // 1 MiB of input (what a copy engine would overlap) and a small second tensor.
  Tensor input = full({256, 1024}, double(epoch * 100 + items[0]));
  return {
      {{"value", input, true}, {"label", full({2}, double(items[0]))}}, int64_t(items.size()), 0.0};
}

}  // namespace
#endif

TEST_CASE("the stager moves the loader's pinned batches to the GPU in order", "[cuda][loader]") {
#if SONATA_WITH_CUDA
  const Device cuda = Device::cuda();
  BatchLoader loader(numbered_batch, 2, 4, /*pin_for=*/cuda);
  std::vector<std::vector<int64_t>> batches;
  for (int64_t b = 0; b < 12; ++b) batches.push_back({b});
  DeviceStager stager(cuda);
  const size_t pinned_before = PinnedPool::instance().cached_bytes();
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    loader.start(batches, epoch);
    stager.stage(*loader.next());
    std::vector<double> seen;
    while (stager.staged()) {
      HostBatch batch = stager.take();
      if (auto upcoming = loader.next()) stager.stage(std::move(*upcoming));
      REQUIRE(batch["value"].device() == cuda);
      CHECK(batch["label"].device().is_cpu());
      CHECK(batch["label"].is_pinned());
      // Work on the compute stream that reads the staged input: every element must be there.
      const Tensor total = sum(batch["value"]).to(Device::cpu());
      seen.push_back(total.item() / (256.0 * 1024.0));
    }
    std::vector<double> expected;
    for (int64_t b = 0; b < 12; ++b) expected.push_back(double(epoch * 100 + b));
    CHECK(seen == expected);
  }
  // 36 batches of 1 MiB went through; blocks are reused once their copy is done, so what is
  // pinned is bounded by the batches in flight (prefetch 4, one staged, one in use).
  CHECK(PinnedPool::instance().cached_bytes() - pinned_before < (size_t(16) << 20));
#endif
}

TEST_CASE("the loader's workers run on the device they pin for", "[cuda][loader]") {
#if SONATA_WITH_CUDA
  // The last GPU: with several, a worker left on the runtime's default would be on GPU 0.
  const Device target = Device::cuda(cuda_device_count() - 1);
  std::mutex mutex;
  std::vector<int> devices;
  {
    BatchLoader loader(
        [&](const std::vector<int64_t>& items, int64_t epoch) {
          int device = -1;
          if (cudaGetDevice(&device) != cudaSuccess) device = -2;  // no Catch macros off-thread
          const std::lock_guard lock(mutex);
          devices.push_back(device);
          return numbered_batch(items, epoch);
        },
        2, 2, /*pin_for=*/target);
    loader.start({{0}, {1}, {2}, {3}}, 0);
    while (std::optional<HostBatch> batch = loader.next()) CHECK((*batch)["value"].is_pinned());
  }
  CHECK(devices == std::vector<int>(4, target.index));
#endif
}
