// The emulated runtime's memory: allocation, the memory map's verdicts, adversarial reuse,
// the stream-ordered pool, pinned memory, copies and memsets.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cuda_runtime_api.h"
#include "emu/runtime/memory_arena.h"
#include "emu/runtime/memory_map.h"
#include "emu_runtime_test_util.h"

using namespace sonata::emu;

TEST_CASE("emu runtime: copies round-trip through device memory", "[emu][runtime]") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  std::vector<float> host(100), back(100, 0.0f);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i) * 0.5f;
  float* device = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&device), 400) == cudaSuccess);
  CHECK(in_device_arena(device));
  CHECK(reinterpret_cast<uintptr_t>(device) % 256 == 0);
  REQUIRE(cudaMemcpy(device, host.data(), 400, cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaMemcpy(back.data(), device, 400, cudaMemcpyDefault) == cudaSuccess);
  CHECK(back == host);
  REQUIRE(cudaMemset(device, 0, 400) == cudaSuccess);
  REQUIRE(cudaMemcpy(back.data(), device, 400, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(back == std::vector<float>(100, 0.0f));
  // A copy whose kind the pointers contradict is refused.
  CHECK(cudaMemcpy(back.data(), device, 400, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
  CHECK(cudaGetLastError() == cudaErrorInvalidValue);
  REQUIRE(cudaFree(device) == cudaSuccess);
}

TEST_CASE("emu runtime: the memory map's verdicts", "[emu][runtime]") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  char* p = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&p), 100) == cudaSuccess);
  CHECK(check_access(p, 4, AccessKind::read).verdict == AccessVerdict::uninitialised);
  CHECK(check_access(p, 4, AccessKind::write).verdict == AccessVerdict::ok);
  CHECK(check_access(p, 4, AccessKind::read).verdict == AccessVerdict::ok);
  CHECK(check_access(p + 2, 4, AccessKind::read).verdict == AccessVerdict::uninitialised);
  const AccessCheck past = check_access(p + 98, 4, AccessKind::write);
  CHECK(past.verdict == AccessVerdict::out_of_bounds);
  CHECK(past.detail.find("of 100 bytes on device 0") != std::string::npos);
  CHECK(check_access(p - 16, 4, AccessKind::read).verdict == AccessVerdict::out_of_bounds);
  int local = 0;
  CHECK(check_access(&local, 4, AccessKind::read).verdict == AccessVerdict::outside_device_memory);
  REQUIRE(cudaFree(p) == cudaSuccess);
  const AccessCheck freed = check_access(p, 4, AccessKind::read);
  CHECK(freed.verdict == AccessVerdict::freed);
  CHECK(freed.detail.find("freed") != std::string::npos);
  // A double free is refused.
  CHECK(cudaFree(p) == cudaErrorInvalidValue);
  cudaGetLastError();
}

TEST_CASE("emu runtime: a freed block is handed out again at once", "[emu][runtime]") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  void* first = nullptr;
  void* second = nullptr;
  REQUIRE(cudaMalloc(&first, 1000) == cudaSuccess);
  REQUIRE(cudaFree(first) == cudaSuccess);
  REQUIRE(cudaMalloc(&second, 900) == cudaSuccess);
  CHECK(second == first);
  // New memory is garbage (0xFF: NaN as float), not zero.
  unsigned char byte = 0;
  REQUIRE(cudaMemcpy(&byte, second, 1, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(byte == 0xFF);
  REQUIRE(cudaFree(second) == cudaSuccess);
}

TEST_CASE("emu runtime: freeing a large block leaves its neighbour's bytes alone",
          "[emu][runtime]") {
  // Large freed blocks give their pages back; blocks are 256-byte aligned, so the page
  // holding a block's end can hold the next block's first bytes too. (Found by a DS2 run
  // on the emulated card whose fourth batch lost its first bytes.) Sizes no earlier block
  // has make every allocation here a fresh one, carved one after another: a probe shows
  // where the next begins, a spacer puts the large block on a page boundary, and the
  // neighbour begins 256 bytes past its end, inside its last page.
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  constexpr uintptr_t kPage = 4096, kMiB = uintptr_t(1) << 20;
  void* probe = nullptr;
  REQUIRE(cudaMalloc(&probe, 300 * kMiB) == cudaSuccess);
  const uintptr_t after_probe = reinterpret_cast<uintptr_t>(probe) + 300 * kMiB + kRedZone;
  uintptr_t spacer_extra = (kPage - (after_probe + 400 * kMiB + kRedZone) % kPage) % kPage;
  void* spacer = nullptr;
  REQUIRE(cudaMalloc(&spacer, 400 * kMiB + spacer_extra) == cudaSuccess);
  void* large = nullptr;
  void* neighbour = nullptr;
  REQUIRE(cudaMalloc(&large, 500 * kMiB + 256) == cudaSuccess);
  REQUIRE(cudaMalloc(&neighbour, 600 * kMiB) == cudaSuccess);
  REQUIRE(reinterpret_cast<uintptr_t>(large) % kPage == 0);
  REQUIRE(reinterpret_cast<uintptr_t>(neighbour) ==
          reinterpret_cast<uintptr_t>(large) + 500 * kMiB + 256 + kRedZone);
  std::vector<unsigned char> pattern(1024), back(1024, 0);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<unsigned char>(i * 7 + 1);
  REQUIRE(cudaMemcpy(neighbour, pattern.data(), pattern.size(), cudaMemcpyHostToDevice) ==
          cudaSuccess);
  REQUIRE(cudaFree(large) == cudaSuccess);
  REQUIRE(cudaMemcpy(back.data(), neighbour, back.size(), cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(back == pattern);
  for (void* block : {probe, spacer, neighbour}) REQUIRE(cudaFree(block) == cudaSuccess);
}

TEST_CASE("emu runtime: the stream-ordered pool and its attributes", "[emu][runtime]") {
  REQUIRE(cudaSetDevice(2) == cudaSuccess);
  cudaMemPool_t pool = nullptr;
  REQUIRE(cudaDeviceGetDefaultMemPool(&pool, 2) == cudaSuccess);
  uint64_t keep_all = UINT64_MAX;
  REQUIRE(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all) == cudaSuccess);
  uint64_t threshold = 0;
  REQUIRE(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold) ==
          cudaSuccess);
  CHECK(threshold == UINT64_MAX);
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
  void* block = nullptr;
  REQUIRE(cudaMallocAsync(&block, 4096, stream) == cudaSuccess);
  uint64_t used = 0, reserved = 0;
  REQUIRE(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) == cudaSuccess);
  CHECK(used == 4096);
  REQUIRE(cudaFreeAsync(block, stream) == cudaSuccess);
  // Freed in stream order: still live until the stream gets there.
  CHECK(check_access(block, 4, AccessKind::write).verdict == AccessVerdict::ok);
  CHECK(cudaFreeAsync(block, stream) == cudaErrorInvalidValue);  // already pending
  cudaGetLastError();
  REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
  CHECK(check_access(block, 4, AccessKind::write).verdict == AccessVerdict::freed);
  REQUIRE(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) == cudaSuccess);
  REQUIRE(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) ==
          cudaSuccess);
  CHECK(used == 0);
  CHECK(reserved == 4096);  // kept: the threshold is above it
  REQUIRE(cudaMemPoolTrimTo(pool, 0) == cudaSuccess);
  REQUIRE(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) ==
          cudaSuccess);
  CHECK(reserved == 0);
  uint64_t zero = 0;
  REQUIRE(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &zero) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(stream) == cudaSuccess);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
}

TEST_CASE("emu runtime: pinned memory is registered, pageable sources are staged at the call",
          "[emu][runtime]") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  int* pinned = nullptr;
  REQUIRE(cudaHostAlloc(reinterpret_cast<void**>(&pinned), sizeof(int), cudaHostAllocDefault) ==
          cudaSuccess);
  CHECK_FALSE(in_device_arena(pinned));
  CHECK(check_access(pinned, sizeof(int), AccessKind::write).verdict == AccessVerdict::ok);
  CHECK(check_access(pinned + 1, sizeof(int), AccessKind::read).verdict ==
        AccessVerdict::out_of_bounds);
  int* device = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&device), 2 * sizeof(int)) == cudaSuccess);
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);

  int pageable = 1;
  *pinned = 1;
  REQUIRE(cudaMemcpyAsync(device, &pageable, sizeof(int), cudaMemcpyHostToDevice, stream) ==
          cudaSuccess);
  REQUIRE(cudaMemcpyAsync(device + 1, pinned, sizeof(int), cudaMemcpyHostToDevice, stream) ==
          cudaSuccess);
  pageable = 2;  // too late: staged at the call
  *pinned = 2;   // in time: read when the copy runs
  REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
  int back[2] = {0, 0};
  REQUIRE(cudaMemcpy(back, device, sizeof back, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(back[0] == 1);
  CHECK(back[1] == 2);

  REQUIRE(cudaStreamDestroy(stream) == cudaSuccess);
  REQUIRE(cudaFree(device) == cudaSuccess);
  REQUIRE(cudaFreeHost(pinned) == cudaSuccess);
  CHECK(check_access(pinned, sizeof(int), AccessKind::read).verdict == AccessVerdict::freed);
  CHECK(cudaFreeHost(pinned) == cudaErrorInvalidValue);
  cudaGetLastError();
}

TEST_CASE("emu runtime: cudaFree synchronises the device", "[emu][runtime]") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  int* device = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&device), sizeof(int)) == cudaSuccess);
  bool ran = false;
  Work work;
  work.name = "marker";
  work.run = [&ran] { ran = true; };
  REQUIRE(enqueue(stream, std::move(work)) == cudaSuccess);
  CHECK_FALSE(ran);  // lazy: nothing runs at enqueue
  REQUIRE(cudaFree(device) == cudaSuccess);
  CHECK(ran);
  REQUIRE(cudaStreamDestroy(stream) == cudaSuccess);
}

TEST_CASE("emu runtime: work touching memory outside its allocation poisons the device",
          "[emu][runtime]") {
  REQUIRE(cudaSetDevice(6) == cudaSuccess);
  int* device = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&device), 4 * sizeof(int)) == cudaSuccess);
  test::StderrCapture capture;
  REQUIRE(enqueue(nullptr, test::write_int(device + 4, 1, "kernel past_the_end")) == cudaSuccess);
  CHECK(cudaDeviceSynchronize() == cudaErrorIllegalAddress);
  const std::string message = capture.text();
  CHECK(message.find("kernel past_the_end") != std::string::npos);
  CHECK(message.find("runs past the end of allocation") != std::string::npos);
  REQUIRE(cudaDeviceReset() == cudaSuccess);
  cudaGetLastError();
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
}

TEST_CASE("emu runtime: a copy from freed memory faults when it runs, copies carry initcheck",
          "[emu][runtime]") {
  REQUIRE(cudaSetDevice(6) == cudaSuccess);
  char* source = nullptr;
  char* target = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&source), 64) == cudaSuccess);
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&target), 64) == cudaSuccess);
  REQUIRE(cudaMemset(source, 1, 32) == cudaSuccess);  // the first half only
  REQUIRE(cudaMemcpy(target, source, 64, cudaMemcpyDeviceToDevice) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);  // a device-to-device cudaMemcpy does not wait
  CHECK(check_access(target, 32, AccessKind::read).verdict == AccessVerdict::ok);
  CHECK(check_access(target + 32, 1, AccessKind::read).verdict == AccessVerdict::uninitialised);

  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaFreeAsync(source, stream) == cudaSuccess);
  char host[64];
  test::StderrCapture capture;
  CHECK(cudaMemcpyAsync(host, source, 64, cudaMemcpyDeviceToHost, stream) ==
        cudaErrorIllegalAddress);
  const std::string message = capture.text();
  CHECK(message.find("cudaMemcpyAsync DeviceToHost (64 bytes)") != std::string::npos);
  CHECK(message.find("in freed allocation") != std::string::npos);
  REQUIRE(cudaDeviceReset() == cudaSuccess);
  cudaGetLastError();
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
}

namespace {
// A consumer kernel on `stream` that reads the int at `source` into `seen` (host memory).
void read_on(cudaStream_t stream, const int* source, int* seen) {
  Work work;
  work.name = "kernel reader";
  work.reads.push_back({source, sizeof(int)});
  work.run = [source, seen] { *seen = *source; };
  REQUIRE(enqueue(stream, std::move(work)) == cudaSuccess);
}
}  // namespace

TEST_CASE("emu runtime: a synchronous cudaMemcpy to the device may land after it returns",
          "[emu][runtime]") {
  // "API synchronization behavior": from pageable host memory "the DMA to final destination
  // may not have completed" when cudaMemcpy returns; device to device "no host-side
  // synchronization is performed". A non-blocking stream reading the destination without
  // an event may see the old bytes; a blocking stream is ordered after the copy.
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  int* device = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&device), 3 * sizeof(int)) == cudaSuccess);
  int* from_host = device;
  int* from_device = device + 1;
  int* source = device + 2;
  REQUIRE(cudaMemset(device, 0, 3 * sizeof(int)) == cudaSuccess);
  REQUIRE(enqueue(nullptr, test::write_int(source, 5)) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  cudaStream_t non_blocking = nullptr, blocking = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&non_blocking, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaStreamCreate(&blocking) == cudaSuccess);

  std::vector<int> pageable = {7};
  REQUIRE(cudaMemcpy(from_host, pageable.data(), sizeof(int), cudaMemcpyHostToDevice) ==
          cudaSuccess);
  pageable[0] = 9;  // staged at the call: the host buffer is free again
  REQUIRE(cudaMemcpy(from_device, source, sizeof(int), cudaMemcpyDeviceToDevice) == cudaSuccess);
  int early_host = -1, early_device = -1, ordered_host = -1, ordered_device = -1;
  read_on(non_blocking, from_host, &early_host);
  read_on(non_blocking, from_device, &early_device);
  read_on(blocking, from_host, &ordered_host);
  read_on(blocking, from_device, &ordered_device);
  REQUIRE(cudaStreamSynchronize(non_blocking) == cudaSuccess);
  CHECK(early_host == 0);
  CHECK(early_device == 0);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(ordered_host == 7);
  CHECK(ordered_device == 5);
  int back[2] = {0, 0};
  REQUIRE(cudaMemcpy(back, device, sizeof back, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(back[0] == 7);
  CHECK(back[1] == 5);
  REQUIRE(cudaStreamDestroy(non_blocking) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(blocking) == cudaSuccess);
  REQUIRE(cudaFree(device) == cudaSuccess);
}
