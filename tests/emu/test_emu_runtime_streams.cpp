// The emulated runtime's streams, events, host functions, queries and sticky faults.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cuda_runtime_api.h"
#include "emu_runtime_test_util.h"

using namespace sonata::emu;

namespace {

Work count_work(int* counter) {
  Work work;
  work.name = "count";
  work.run = [counter] { ++*counter; };
  return work;
}

}  // namespace

TEST_CASE("emu runtime: elapsed time needs two timing events, both recorded", "[emu][runtime]") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  cudaEvent_t start, end, untimed, never;
  REQUIRE(cudaEventCreate(&start) == cudaSuccess);
  REQUIRE(cudaEventCreateWithFlags(&end, cudaEventDefault) == cudaSuccess);
  REQUIRE(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming) == cudaSuccess);
  REQUIRE(cudaEventCreate(&never) == cudaSuccess);
  REQUIRE(cudaEventRecord(start, 0) == cudaSuccess);
  REQUIRE(cudaEventRecord(untimed, 0) == cudaSuccess);
  REQUIRE(cudaEventRecord(end, 0) == cudaSuccess);
  REQUIRE(cudaEventSynchronize(end) == cudaSuccess);
  float ms = -1.0f;
  REQUIRE(cudaEventElapsedTime(&ms, start, end) == cudaSuccess);
  CHECK(ms >= 0.0f);
  CHECK(cudaEventElapsedTime(&ms, start, untimed) == cudaErrorInvalidResourceHandle);
  CHECK(cudaEventElapsedTime(&ms, untimed, end) == cudaErrorInvalidResourceHandle);
  CHECK(cudaEventElapsedTime(&ms, start, never) == cudaErrorInvalidResourceHandle);
  CHECK(cudaGetLastError() == cudaErrorInvalidResourceHandle);
  // An event never recorded is complete.
  CHECK(cudaEventQuery(never) == cudaSuccess);
  for (cudaEvent_t e : {start, end, untimed, never}) REQUIRE(cudaEventDestroy(e) == cudaSuccess);
  CHECK(cudaEventQuery(start) == cudaErrorInvalidResourceHandle);
  cudaGetLastError();
}

TEST_CASE("emu runtime: a destroyed stream's outstanding work still completes", "[emu][runtime]") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  int counter = 0;
  for (int i = 0; i < 3; ++i) REQUIRE(enqueue(stream, count_work(&counter)) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(stream) == cudaSuccess);
  CHECK(counter == 0);
  CHECK(cudaStreamQuery(stream) == cudaErrorInvalidResourceHandle);
  cudaGetLastError();
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(counter == 3);
}

TEST_CASE("emu runtime: a query makes bounded progress, so a polling loop ends", "[emu][runtime]") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
  int counter = 0;
  for (int i = 0; i < 20; ++i) REQUIRE(enqueue(stream, count_work(&counter)) == cudaSuccess);
  cudaEvent_t done;
  REQUIRE(cudaEventCreateWithFlags(&done, cudaEventDisableTiming) == cudaSuccess);
  REQUIRE(cudaEventRecord(done, stream) == cudaSuccess);
  int polls = 0;
  cudaError_t status = cudaErrorNotReady;
  while ((status = cudaEventQuery(done)) == cudaErrorNotReady && polls < 1000) ++polls;
  CHECK(status == cudaSuccess);
  CHECK(counter == 20);
  CHECK(polls > 1);    // not all at once: a query is bounded
  CHECK(polls <= 20);  // but it progresses
  cudaGetLastError();
  for (int i = 0; i < 5; ++i) REQUIRE(enqueue(stream, count_work(&counter)) == cudaSuccess);
  polls = 0;
  while (cudaStreamQuery(stream) == cudaErrorNotReady && polls < 1000) ++polls;
  CHECK(counter == 25);
  cudaGetLastError();
  REQUIRE(cudaEventDestroy(done) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(stream) == cudaSuccess);
}

TEST_CASE("emu runtime: a query of pending work answers cudaErrorNotReady before success",
          "[emu][runtime]") {
  // On a card, work still pending when a query is asked (right after a long kernel) is
  // cudaErrorNotReady; a query that finished short work itself and answered success at once
  // would never run a caller's NotReady branch.
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
  int counter = 0;
  cudaEvent_t start, done;
  REQUIRE(cudaEventCreate(&start) == cudaSuccess);
  REQUIRE(cudaEventCreate(&done) == cudaSuccess);
  REQUIRE(cudaEventRecord(start, stream) == cudaSuccess);
  REQUIRE(enqueue(stream, count_work(&counter)) == cudaSuccess);
  REQUIRE(cudaEventRecord(done, stream) == cudaSuccess);
  float ms = -1.0f;
  CHECK(cudaEventElapsedTime(&ms, start, done) == cudaErrorNotReady);
  cudaGetLastError();
  CHECK(cudaEventQuery(done) == cudaErrorNotReady);
  cudaGetLastError();
  int polls = 0;
  while (cudaEventQuery(done) == cudaErrorNotReady && polls < 10) ++polls, cudaGetLastError();
  CHECK(cudaEventQuery(done) == cudaSuccess);
  CHECK(counter == 1);
  CHECK(cudaEventElapsedTime(&ms, start, done) == cudaSuccess);

  REQUIRE(enqueue(stream, count_work(&counter)) == cudaSuccess);
  CHECK(cudaStreamQuery(stream) == cudaErrorNotReady);
  cudaGetLastError();
  polls = 0;
  while (cudaStreamQuery(stream) == cudaErrorNotReady && polls < 10) ++polls, cudaGetLastError();
  CHECK(cudaStreamQuery(stream) == cudaSuccess);
  CHECK(counter == 2);
  REQUIRE(cudaEventDestroy(start) == cudaSuccess);
  REQUIRE(cudaEventDestroy(done) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(stream) == cudaSuccess);
}

TEST_CASE("emu runtime: stream priorities are clamped to the device's range", "[emu][runtime]") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  cudaStream_t high = nullptr, low = nullptr;
  REQUIRE(cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, -100) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithPriority(&low, cudaStreamDefault, 3) == cudaSuccess);
  int priority = 1;
  REQUIRE(cudaStreamGetPriority(high, &priority) == cudaSuccess);
  CHECK(priority == -5);
  REQUIRE(cudaStreamGetPriority(low, &priority) == cudaSuccess);
  CHECK(priority == 0);
  REQUIRE(cudaStreamDestroy(high) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(low) == cudaSuccess);
}

namespace {

struct HostFnCall {
  std::vector<int>* order;
  int tag;
  cudaError_t inner = cudaSuccess;
};

void host_function(void* data) {
  auto* call = static_cast<HostFnCall*>(data);
  call->order->push_back(call->tag);
  void* p = nullptr;
  call->inner = cudaMalloc(&p, 16);  // refused: no CUDA calls in a host function
}

}  // namespace

TEST_CASE("emu runtime: host functions run in stream order and may not call CUDA",
          "[emu][runtime]") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  std::vector<int> order;
  HostFnCall first{&order, 1}, second{&order, 3};
  REQUIRE(cudaLaunchHostFunc(stream, host_function, &first) == cudaSuccess);
  Work middle;
  middle.name = "middle";
  middle.run = [&order] { order.push_back(2); };
  REQUIRE(enqueue(stream, std::move(middle)) == cudaSuccess);
  REQUIRE(cudaLaunchHostFunc(stream, host_function, &second) == cudaSuccess);
  test::StderrCapture capture;
  REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
  CHECK(capture.text().find("cudaMalloc called inside a host function") != std::string::npos);
  CHECK(order == std::vector<int>{1, 2, 3});
  CHECK(first.inner == cudaErrorNotPermitted);
  CHECK(second.inner == cudaErrorNotPermitted);
  REQUIRE(cudaStreamDestroy(stream) == cudaSuccess);
}

TEST_CASE("emu runtime: a fault is sticky: every later call on its device returns it",
          "[emu][runtime]") {
  REQUIRE(cudaSetDevice(7) == cudaSuccess);
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  int after = 0;
  Work faulting;
  faulting.name = "kernel faulting";
  faulting.run = [] { report_device_fault(cudaErrorIllegalAddress, "out of bounds"); };
  REQUIRE(enqueue(stream, std::move(faulting)) == cudaSuccess);
  REQUIRE(enqueue(stream, count_work(&after)) == cudaSuccess);
  test::StderrCapture capture;
  CHECK(cudaStreamSynchronize(stream) == cudaErrorIllegalAddress);
  CHECK(capture.text().find("kernel faulting: out of bounds") != std::string::npos);
  CHECK(after == 0);  // the poisoned device's later work does not run
  void* p = nullptr;
  CHECK(cudaMalloc(&p, 16) == cudaErrorIllegalAddress);
  CHECK(cudaGetLastError() == cudaErrorIllegalAddress);
  CHECK(cudaGetLastError() == cudaErrorIllegalAddress);  // sticky: not cleared
  CHECK(enqueue(stream, count_work(&after)) == cudaErrorIllegalAddress);
  // Another device is unaffected.
  REQUIRE(cudaSetDevice(5) == cudaSuccess);
  REQUIRE(cudaMalloc(&p, 16) == cudaSuccess);
  REQUIRE(cudaFree(p) == cudaSuccess);
  CHECK(cudaGetLastError() == cudaSuccess);
  REQUIRE(cudaSetDevice(7) == cudaSuccess);
  REQUIRE(cudaDeviceReset() == cudaSuccess);
  CHECK(cudaGetLastError() == cudaSuccess);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
}

TEST_CASE("emu runtime: the legacy default stream synchronises with blocking streams only",
          "[emu][runtime]") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  int* value = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&value), sizeof(int)) == cudaSuccess);
  int* seen = nullptr;
  REQUIRE(cudaMallocHost(reinterpret_cast<void**>(&seen), sizeof(int)) == cudaSuccess);
  bool stale_blocking = false, stale_nonblocking = false;
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    set_seed(seed);
    for (unsigned flags : {unsigned{cudaStreamDefault}, unsigned{cudaStreamNonBlocking}}) {
      REQUIRE(cudaMemset(value, 0, sizeof(int)) == cudaSuccess);
      REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
      cudaStream_t stream = nullptr;
      REQUIRE(cudaStreamCreateWithFlags(&stream, flags) == cudaSuccess);
      REQUIRE(enqueue(stream, test::write_int(value, 1, "producer")) == cudaSuccess);
      REQUIRE(enqueue(nullptr, test::copy_int(seen, value, "consumer on stream 0")) == cudaSuccess);
      REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
      if (*seen != 1) (flags == cudaStreamDefault ? stale_blocking : stale_nonblocking) = true;
      REQUIRE(cudaStreamDestroy(stream) == cudaSuccess);
    }
  }
  CHECK_FALSE(stale_blocking);
  CHECK(stale_nonblocking);
  set_seed(1);
  REQUIRE(cudaFree(value) == cudaSuccess);
  REQUIRE(cudaFreeHost(seen) == cudaSuccess);
}

TEST_CASE("emu runtime: work may enqueue more work, which runs in its own stream's order",
          "[emu][runtime]") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  cudaStream_t first = nullptr, second = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&first, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&second, cudaStreamNonBlocking) == cudaSuccess);
  std::vector<int> order;
  Work outer;
  outer.name = "outer";
  outer.run = [&order, second] {
    order.push_back(1);
    Work inner;
    inner.name = "inner";
    inner.run = [&order] { order.push_back(2); };
    REQUIRE(enqueue(second, std::move(inner)) == cudaSuccess);
  };
  REQUIRE(enqueue(first, std::move(outer)) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(first) == cudaSuccess);
  CHECK(order == std::vector<int>{1});
  REQUIRE(cudaStreamSynchronize(second) == cudaSuccess);
  CHECK(order == std::vector<int>{1, 2});
  REQUIRE(cudaStreamDestroy(first) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(second) == cudaSuccess);
}

TEST_CASE("emu runtime: work reading memory never written fails initcheck", "[emu][runtime]") {
  REQUIRE(cudaSetDevice(6) == cudaSuccess);
  int* device = nullptr;
  int* out = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&device), 2 * sizeof(int)) == cudaSuccess);
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&out), sizeof(int)) == cudaSuccess);
  REQUIRE(enqueue(nullptr, test::write_int(device, 1, "kernel write_first")) == cudaSuccess);
  REQUIRE(enqueue(nullptr, test::copy_int(out, device, "kernel read_first")) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);  // twin: reads what was written
  test::StderrCapture capture;
  REQUIRE(enqueue(nullptr, test::copy_int(out, device + 1, "kernel read_second")) == cudaSuccess);
  CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure);
  const std::string message = capture.text();
  CHECK(message.find("initcheck: kernel read_second") != std::string::npos);
  CHECK(message.find("was never written") != std::string::npos);
  REQUIRE(cudaDeviceReset() == cudaSuccess);
  cudaGetLastError();
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
}

namespace {

struct Gate {
  std::atomic<bool> open{false};
  std::atomic<bool> timed_out{false};
};

void CUDART_CB hold_until_open(void* data) {
  auto* gate = static_cast<Gate*>(data);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!gate->open.load()) {
    if (std::chrono::steady_clock::now() > deadline) {
      gate->timed_out = true;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

TEST_CASE("emu runtime: a host function may hold its stream until the host opens it",
          "[emu][runtime]") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  Gate gate;
  REQUIRE(cudaLaunchHostFunc(stream, hold_until_open, &gate) == cudaSuccess);
  int after = 0;
  REQUIRE(enqueue(stream, count_work(&after)) == cudaSuccess);
  cudaEvent_t passed;
  REQUIRE(cudaEventCreateWithFlags(&passed, cudaEventDisableTiming) == cudaSuccess);
  REQUIRE(cudaEventRecord(passed, stream) == cudaSuccess);
  for (int i = 0; i < 50; ++i) CHECK(cudaEventQuery(passed) == cudaErrorNotReady);
  CHECK(after == 0);
  cudaGetLastError();
  gate.open = true;
  REQUIRE(cudaEventSynchronize(passed) == cudaSuccess);
  CHECK(after == 1);
  CHECK_FALSE(gate.timed_out);
  REQUIRE(cudaEventDestroy(passed) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(stream) == cudaSuccess);
}

namespace {

// The order in which 4 streams' 3 pieces of work each run, for `seed`.
std::vector<int> run_order(uint64_t seed) {
  set_seed(seed);
  std::vector<cudaStream_t> streams(4);
  for (cudaStream_t& s : streams)
    REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  std::vector<int> order;
  for (int item = 0; item < 3; ++item) {
    for (int s = 0; s < 4; ++s) {
      Work work;
      work.name = "item";
      work.run = [&order, s, item] { order.push_back(10 * s + item); };
      REQUIRE(enqueue(streams[size_t(s)], std::move(work)) == cudaSuccess);
    }
  }
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  for (cudaStream_t s : streams) REQUIRE(cudaStreamDestroy(s) == cudaSuccess);
  set_seed(1);
  return order;
}

}  // namespace

TEST_CASE("emu runtime: a seed fixes the order, seeds explore orders, streams keep theirs",
          "[emu][runtime]") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  CHECK(run_order(5) == run_order(5));
  std::set<std::vector<int>> orders;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const std::vector<int> order = run_order(seed);
    REQUIRE(order.size() == 12);
    for (int s = 0; s < 4; ++s) {  // each stream's items in its order
      std::vector<int> mine;
      for (int v : order) {
        if (v / 10 == s) mine.push_back(v % 10);
      }
      CHECK(mine == std::vector<int>{0, 1, 2});
    }
    orders.insert(order);
  }
  CHECK(orders.size() >= 4);
  // The least convenient order is preferred: the most recently enqueued ready work (the last
  // stream's first item) goes first more often than the fair 1 in 4.
  int last_first = 0;
  for (uint64_t seed = 1; seed <= 16; ++seed) last_first += run_order(seed).front() == 30;
  CHECK(last_first > 8);
}

TEST_CASE("emu runtime: work that waits for its own stream fails instead of hanging",
          "[emu][runtime]") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  cudaError_t inner = cudaSuccess;
  Work waits;
  waits.name = "waits for itself";
  waits.run = [&inner, stream] { inner = cudaStreamSynchronize(stream); };
  REQUIRE(enqueue(stream, std::move(waits)) == cudaSuccess);
  test::StderrCapture capture;
  REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
  CHECK(inner == cudaErrorUnknown);
  CHECK(capture.text().find("waits for work ordered after itself") != std::string::npos);
  cudaGetLastError();
  REQUIRE(cudaStreamDestroy(stream) == cudaSuccess);
}
