// The batch loader: batches come out in order whatever the number of workers and however
// long each takes, a worker's error surfaces at its batch, and restarting or destroying the
// loader with batches in flight neither deadlocks nor leaks.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "data/loader/batch_loader.h"
#include "data/loader/device_stager.h"

using namespace sonata;

namespace {

std::vector<std::vector<int64_t>> numbered_batches(int64_t count) {
  std::vector<std::vector<int64_t>> batches;
  for (int64_t b = 0; b < count; ++b) batches.push_back({b, b * 10});
  return batches;
}

// A batch whose single tensor holds (epoch * 1000 + first item); items with odd numbers take
// longer, so workers finish out of order.
HostBatch slow_batch(const std::vector<int64_t>& items, int64_t epoch) {
  std::this_thread::sleep_for(std::chrono::milliseconds(items[0] % 2 ? 3 : 0));
  return {{{"value", full({1}, double(epoch * 1000 + items[0]))}}, int64_t(items.size()), 0.0};
}

std::vector<double> drain(BatchLoader& loader) {
  std::vector<double> values;
  while (auto batch = loader.next()) values.push_back((*batch)["value"].item());
  return values;
}

}  // namespace

TEST_CASE("batch loader: in order for any number of workers", "[loader]") {
  std::vector<double> expected;
  for (int64_t b = 3; b < 20; ++b) expected.push_back(2000.0 + double(b));
  for (const int64_t workers : {1, 2, 5}) {
    INFO(workers << " workers");
    BatchLoader loader(slow_batch, workers, 3);
    loader.start(numbered_batches(20), 2, /*first=*/3);
    CHECK(drain(loader) == expected);
    CHECK_FALSE(loader.next().has_value());
  }
}

TEST_CASE("batch loader: a worker's error reaches the consumer at its batch", "[loader]") {
  BatchLoader loader(
      [](const std::vector<int64_t>& items, int64_t epoch) {
        if (items[0] == 4) throw std::runtime_error("clip 4 is corrupt");
        return slow_batch(items, epoch);
      },
      3, 4);
  loader.start(numbered_batches(8), 0);
  for (int b = 0; b < 4; ++b) CHECK((*loader.next())["value"].item() == double(b));
  CHECK_THROWS_WITH(loader.next(), "clip 4 is corrupt");
  CHECK((*loader.next())["value"].item() == 5.0);  // the loader goes on
}

TEST_CASE("batch loader: restarting and destroying with batches in flight", "[loader]") {
  std::atomic<int64_t> built{0};
  {
    BatchLoader loader(
        [&](const std::vector<int64_t>& items, int64_t epoch) {
          ++built;
          return slow_batch(items, epoch);
        },
        2, 4);
    loader.start(numbered_batches(50), 0);
    CHECK((*loader.next())["value"].item() == 0.0);
    loader.start(numbered_batches(6), 1);  // the old epoch's work is dropped
    CHECK(drain(loader) == std::vector<double>{1000, 1001, 1002, 1003, 1004, 1005});
    loader.start(numbered_batches(50), 2);
  }  // destroyed with work in flight
  // Only a window's worth ahead of the consumer is ever built.
  CHECK(built < 30);
}

TEST_CASE("device stager: on the CPU a batch passes through unchanged", "[loader]") {
  DeviceStager stager(Device::cpu());
  CHECK_FALSE(stager.staged());
  CHECK_THROWS_WITH(stager.take(), Catch::Contains("nothing staged"));
  stager.stage({{{"input", full({2}, 3.0), true}, {"lengths", full({1}, 4.0)}}, 2, 0.5});
  CHECK(stager.staged());
  CHECK_THROWS_WITH(stager.stage({{{"input", full({1}, 1.0), true}}, 1, 0.0}),
                    Catch::Contains("already staged"));
  const HostBatch batch = stager.take();
  CHECK_FALSE(stager.staged());
  CHECK(batch.items == 2);
  CHECK(batch["input"].to_vector<double>() == std::vector<double>{3.0, 3.0});
  CHECK(batch["lengths"].device().is_cpu());
  // pin_batch leaves a CPU-only machine's batch as it is.
  HostBatch plain{{{"input", full({3}, 1.0)}}, 1, 0.0};
  pin_batch(plain);
  CHECK(plain["input"].to_vector<double>() == std::vector<double>{1.0, 1.0, 1.0});
}

TEST_CASE("host batch: fields by name, a missing one named with what the batch holds", "[loader]") {
  HostBatch batch;
  batch.add("input", full({2}, 1.0), /*staged=*/true);
  batch.add("targets", full({3}, 2.0));
  CHECK(batch.has("targets"));
  CHECK_FALSE(batch.has("label"));
  CHECK(batch.fields[0].staged);
  CHECK_FALSE(batch.fields[1].staged);
  CHECK(batch["targets"].numel() == 3);
  batch["targets"] = full({1}, 5.0);
  CHECK(batch["targets"].item() == 5.0);
  CHECK_THROWS_WITH(batch["label"],
                    Catch::Contains("no tensor 'label'") && Catch::Contains("input, targets"));
  CHECK_THROWS_WITH(batch.add("input", full({1}, 0.0)), Catch::Contains("already has"));
}
