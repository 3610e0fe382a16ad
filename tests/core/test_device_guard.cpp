// Which CUDA device each thread selects, observed through a fake select call (no GPU needed):
// CudaDeviceGuard selects and restores, and the loader's workers run on the device their
// batches are pinned for instead of the runtime's default GPU 0.
#include <catch2/catch.hpp>

#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "data/loader/batch_loader.h"
#include "engine/device_guard.h"
#include "engine/ops.h"

using namespace sonata;

namespace {

struct Selection {
  std::thread::id thread;
  int index;
};
std::mutex g_mutex;
std::vector<Selection> g_selected;

void record_selection(int index) {
  const std::lock_guard lock(g_mutex);
  g_selected.push_back({std::this_thread::get_id(), index});
}

std::vector<Selection> selections() {
  const std::lock_guard lock(g_mutex);
  return g_selected;
}

// Swaps the fake in for one test and the real call back after it.
struct FakeSelect {
  FakeSelect() {
    g_selected.clear();
    previous = replace_select_cuda_device(record_selection);
  }
  ~FakeSelect() { replace_select_cuda_device(previous); }
  SelectCudaDevice previous;
};

// Runs `body` on a thread of its own, which starts with no device selected.
template <typename Body>
void on_fresh_thread(Body body) {
  std::thread thread(body);
  thread.join();
}

std::vector<int> indices(const std::vector<Selection>& selected) {
  std::vector<int> out;
  for (const Selection& s : selected) out.push_back(s.index);
  return out;
}

}  // namespace

TEST_CASE("a device guard selects its device and restores the previous one", "[core][device]") {
  const FakeSelect fake;
  std::vector<int> seen;
  on_fresh_thread([&] {
    seen.push_back(current_cuda_device());
    set_cuda_device(2);
    seen.push_back(current_cuda_device());
    {
      const CudaDeviceGuard guard(Device::cuda(5));
      seen.push_back(current_cuda_device());
      const CudaDeviceGuard same(Device::cuda(5));  // already current: no call
      const CudaDeviceGuard cpu(Device::cpu());     // not a CUDA device: no call
    }
    seen.push_back(current_cuda_device());
  });
  CHECK(seen == std::vector<int>{-1, 2, 5, 2});
  CHECK(indices(selections()) == std::vector<int>{2, 5, 2});
}

TEST_CASE("a device guard on a thread with no device leaves it unvouched after", "[core][device]") {
  const FakeSelect fake;
  int inside = -2, after = -2;
  on_fresh_thread([&] {
    {
      const CudaDeviceGuard guard(Device::cuda(1));
      inside = current_cuda_device();
    }
    after = current_cuda_device();
  });
  CHECK(inside == 1);
  CHECK(after == -1);  // the next set_cuda_device selects again
  CHECK(indices(selections()) == std::vector<int>{1});
}

TEST_CASE("negative device indices are refused naming the index", "[core][device]") {
  const FakeSelect fake;
  CHECK_THROWS_WITH(set_cuda_device(-3), Catch::Contains("-3"));
  CHECK(selections().empty());
}

TEST_CASE("the loader's workers work on the device they pin batches for", "[core][device]") {
  const FakeSelect fake;
  std::mutex mutex;
  std::vector<std::pair<std::thread::id, int>> built;  // (worker, its device) per batch
  {
    BatchLoader loader(
        [&](const std::vector<int64_t>& items, int64_t) {
          const std::lock_guard lock(mutex);
          built.emplace_back(std::this_thread::get_id(), current_cuda_device());
          return HostBatch{{{"value", full({2}, double(items[0]))}}, 1, 0.0};
        },
        3, 3, /*pin_for=*/Device::cuda(3));
    loader.start({{0}, {1}, {2}, {3}, {4}, {5}}, 0);
    while (loader.next()) {
    }
  }
  REQUIRE(built.size() == 6);
  for (const auto& [worker, device] : built) {
    CHECK(worker != std::this_thread::get_id());
    CHECK(device == 3);
  }
  // One selection per worker thread, each of device 3, none on the consumer's thread.
  const std::vector<Selection> selected = selections();
  CHECK(selected.size() == 3);
  for (const Selection& s : selected) {
    CHECK(s.index == 3);
    CHECK(s.thread != std::this_thread::get_id());
  }
}

TEST_CASE("a loader without a device selects none", "[core][device]") {
  const FakeSelect fake;
  BatchLoader loader(
      [](const std::vector<int64_t>&, int64_t) {
        return HostBatch{{{"value", zeros({1})}}, 1, 0.0};
      },
      2, 2);
  loader.start({{0}, {1}}, 0);
  while (loader.next()) {
  }
  CHECK(selections().empty());
}
