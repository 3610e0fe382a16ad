// The planted-defect suite's runtime half (issue #36 item 6): each call sequence has one
// defect of stream ordering, error handling or device selection that the emulator shows,
// and a correct twin that passes for every seed. Work items that write memory stand in for
// kernels.
#include <catch2/catch.hpp>
#include <string>
#include <thread>

#include "cuda_runtime_api.h"
#include "emu_runtime_test_util.h"

using namespace sonata::emu;

namespace {

constexpr uint64_t kSeeds = 16;

struct Buffers {
  int* device = nullptr;
  int* pinned = nullptr;
  Buffers() {
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&device), sizeof(int)) == cudaSuccess);
    REQUIRE(cudaMallocHost(reinterpret_cast<void**>(&pinned), sizeof(int)) == cudaSuccess);
  }
  ~Buffers() {
    cudaFree(device);
    cudaFreeHost(pinned);
    set_seed(1);
  }
};

// (a) A consumer stream reads what a producer stream writes. Returns what it saw.
int producer_consumer(bool wait_for_producer) {
  Buffers b;
  REQUIRE(cudaMemset(b.device, 0, sizeof(int)) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  cudaStream_t producer, consumer;
  REQUIRE(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking) == cudaSuccess);
  cudaEvent_t produced;
  REQUIRE(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming) == cudaSuccess);
  REQUIRE(enqueue(producer, test::write_int(b.device, 42, "kernel produce")) == cudaSuccess);
  REQUIRE(cudaEventRecord(produced, producer) == cudaSuccess);
  if (wait_for_producer) REQUIRE(cudaStreamWaitEvent(consumer, produced, 0) == cudaSuccess);
  REQUIRE(enqueue(consumer, test::copy_int(b.pinned, b.device, "kernel consume")) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  const int seen = *b.pinned;
  cudaEventDestroy(produced);
  cudaStreamDestroy(producer);
  cudaStreamDestroy(consumer);
  return seen;
}

}  // namespace

TEST_CASE("emu defect: missing cudaStreamWaitEvent between producer and consumer streams",
          "[emu][runtime][defect]") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  int stale = 0;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    set_seed(seed);
    if (producer_consumer(/*wait_for_producer=*/false) != 42) ++stale;
  }
  CHECK(stale > 0);
  SECTION("twin: the consumer waits for the producer's event") {
    for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
      set_seed(seed);
      CHECK(producer_consumer(/*wait_for_producer=*/true) == 42);
    }
  }
}

namespace {

// (b) A stream frees a block that another stream's work still reads. Returns the device's
// status after synchronising, and what was printed.
cudaError_t free_while_reading(bool order_free_after_reader, std::string* message) {
  REQUIRE(cudaSetDevice(3) == cudaSuccess);
  cudaStream_t owner, reader;
  REQUIRE(cudaStreamCreateWithFlags(&owner, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&reader, cudaStreamNonBlocking) == cudaSuccess);
  int* block = nullptr;
  int* result = nullptr;
  REQUIRE(cudaMallocAsync(reinterpret_cast<void**>(&block), sizeof(int), owner) == cudaSuccess);
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&result), sizeof(int)) == cudaSuccess);
  REQUIRE(enqueue(owner, test::write_int(block, 5, "kernel fill")) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(owner) == cudaSuccess);
  REQUIRE(enqueue(reader, test::copy_int(result, block, "kernel read_block")) == cudaSuccess);
  cudaEvent_t read_done;
  REQUIRE(cudaEventCreateWithFlags(&read_done, cudaEventDisableTiming) == cudaSuccess);
  REQUIRE(cudaEventRecord(read_done, reader) == cudaSuccess);
  if (order_free_after_reader) REQUIRE(cudaStreamWaitEvent(owner, read_done, 0) == cudaSuccess);
  REQUIRE(cudaFreeAsync(block, owner) == cudaSuccess);
  test::StderrCapture capture;
  const cudaError_t status = cudaDeviceSynchronize();
  *message = capture.text();
  cudaEventDestroy(read_done);
  cudaStreamDestroy(owner);
  cudaStreamDestroy(reader);
  if (status == cudaSuccess) {
    REQUIRE(cudaFree(result) == cudaSuccess);
  } else {
    REQUIRE(cudaDeviceReset() == cudaSuccess);
    cudaGetLastError();
  }
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  return status;
}

}  // namespace

TEST_CASE("emu defect: cudaFreeAsync on one stream while another stream still reads",
          "[emu][runtime][defect]") {
  int caught = 0;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    set_seed(seed);
    std::string message;
    if (free_while_reading(/*order_free_after_reader=*/false, &message) ==
        cudaErrorIllegalAddress) {
      ++caught;
      CHECK(message.find("kernel read_block") != std::string::npos);
      CHECK(message.find("in freed allocation") != std::string::npos);
    }
  }
  set_seed(1);
  CHECK(caught > 0);
  SECTION("twin: the free waits for the reader's event") {
    for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
      set_seed(seed);
      std::string message;
      CHECK(free_while_reading(/*order_free_after_reader=*/true, &message) == cudaSuccess);
    }
    set_seed(1);
  }
}

namespace {

// (c) The host reads a pinned destination of a device-to-host copy.
int read_pinned_copy(bool synchronize_first) {
  Buffers b;
  cudaStream_t stream;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  *b.pinned = 0;
  REQUIRE(enqueue(stream, test::write_int(b.device, 7, "kernel compute")) == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(b.pinned, b.device, sizeof(int), cudaMemcpyDeviceToHost, stream) ==
          cudaSuccess);
  if (synchronize_first) REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
  const int seen = *b.pinned;
  REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
  cudaStreamDestroy(stream);
  return seen;
}

}  // namespace

TEST_CASE("emu defect: the host reads a pinned copy destination before synchronising",
          "[emu][runtime][defect]") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  CHECK(read_pinned_copy(/*synchronize_first=*/false) == 0);
  SECTION("twin: synchronise, then read") {
    CHECK(read_pinned_copy(/*synchronize_first=*/true) == 7);
  }
}

namespace {

// (d) A query's cudaErrorNotReady stays the last error unless the caller clears it, so the
// next launch check (cudaGetLastError) reports a failure that is not one.
cudaError_t launch_check_after_query(bool clear_not_ready) {
  cudaStream_t stream;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  int counter = 0;
  for (int i = 0; i < 8; ++i) {
    Work work;
    work.name = "kernel busy";
    work.run = [&counter] { ++counter; };
    REQUIRE(enqueue(stream, std::move(work)) == cudaSuccess);
  }
  cudaEvent_t event;
  REQUIRE(cudaEventCreateWithFlags(&event, cudaEventDisableTiming) == cudaSuccess);
  REQUIRE(cudaEventRecord(event, stream) == cudaSuccess);
  const cudaError_t query = cudaEventQuery(event);
  REQUIRE(query == cudaErrorNotReady);
  if (clear_not_ready && query == cudaErrorNotReady) cudaGetLastError();  // as PyTorch does
  // A later, successful launch, and its check:
  REQUIRE(enqueue(stream, test::write_int(&counter, 0, "kernel next")) == cudaSuccess);
  const cudaError_t launch_check = cudaGetLastError();
  REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
  cudaEventDestroy(event);
  cudaStreamDestroy(stream);
  return launch_check;
}

}  // namespace

TEST_CASE("emu defect: a query's sticky cudaErrorNotReady left set", "[emu][runtime][defect]") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  cudaGetLastError();
  CHECK(launch_check_after_query(/*clear_not_ready=*/false) == cudaErrorNotReady);
  SECTION("twin: the caller clears it after the query") {
    CHECK(launch_check_after_query(/*clear_not_ready=*/true) == cudaSuccess);
  }
}

namespace {

// (e) A worker thread calls the runtime in a process whose main thread selected device 3:
// an allocation, and (the watchdog's case) a query of the main thread's event.
cudaError_t worker_allocates(bool select_first, std::string* message,
                             cudaError_t* query_status = nullptr) {
  forget_device_selections();
  REQUIRE(cudaSetDevice(3) == cudaSuccess);
  cudaEvent_t event;
  REQUIRE(cudaEventCreateWithFlags(&event, cudaEventDisableTiming) == cudaSuccess);
  REQUIRE(cudaEventRecord(event, 0) == cudaSuccess);
  cudaError_t status = cudaSuccess, query = cudaSuccess;
  void* p = nullptr;
  test::StderrCapture capture;
  std::thread worker([&] {
    if (select_first) REQUIRE(cudaSetDevice(3) == cudaSuccess);
    status = cudaMalloc(&p, 64);
    if (status == cudaSuccess) cudaFree(p);
    query = cudaEventSynchronize(event);
  });
  worker.join();
  *message = capture.text();
  if (query_status) *query_status = query;
  REQUIRE(cudaEventDestroy(event) == cudaSuccess);
  forget_device_selections();
  return status;
}

}  // namespace

TEST_CASE("emu defect: a worker thread uses the runtime without selecting its device",
          "[emu][runtime][defect]") {
  std::string message;
  cudaError_t query = cudaSuccess;
  CHECK(worker_allocates(/*select_first=*/false, &message, &query) == cudaErrorDeviceUninitialized);
  CHECK(query == cudaErrorDeviceUninitialized);
  CHECK(message.find("cudaMalloc refused") != std::string::npos);
  CHECK(message.find("cudaEventSynchronize refused") != std::string::npos);
  CHECK(message.find("never called cudaSetDevice") != std::string::npos);
  CHECK(message.find("selected device 3") != std::string::npos);
  SECTION("twin: the worker calls cudaSetDevice first") {
    CHECK(worker_allocates(/*select_first=*/true, &message, &query) == cudaSuccess);
    CHECK(query == cudaSuccess);
  }
}

namespace {

// (f) A peer copy from device 1 to device 0, on device 0's stream, of what device 1's
// stream produces.
int peer_copy(bool wait_for_producer) {
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  int* source = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&source), sizeof(int)) == cudaSuccess);
  REQUIRE(cudaMemset(source, 0, sizeof(int)) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  cudaStream_t producer;
  REQUIRE(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking) == cudaSuccess);
  cudaEvent_t produced;
  REQUIRE(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming) == cudaSuccess);
  REQUIRE(enqueue(producer, test::write_int(source, 9, "kernel produce on device 1")) ==
          cudaSuccess);
  REQUIRE(cudaEventRecord(produced, producer) == cudaSuccess);

  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  Buffers b;
  cudaStream_t consumer;
  REQUIRE(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking) == cudaSuccess);
  if (wait_for_producer) REQUIRE(cudaStreamWaitEvent(consumer, produced, 0) == cudaSuccess);
  REQUIRE(cudaMemcpyPeerAsync(b.device, 0, source, 1, sizeof(int), consumer) == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(b.pinned, b.device, sizeof(int), cudaMemcpyDeviceToHost, consumer) ==
          cudaSuccess);
  REQUIRE(cudaStreamSynchronize(consumer) == cudaSuccess);
  const int seen = *b.pinned;
  cudaStreamDestroy(consumer);
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  REQUIRE(cudaFree(source) == cudaSuccess);
  cudaEventDestroy(produced);
  cudaStreamDestroy(producer);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  return seen;
}

}  // namespace

TEST_CASE("emu defect: a peer copy that does not wait for the producer on the other device",
          "[emu][runtime][defect]") {
  int stale = 0;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    set_seed(seed);
    if (peer_copy(/*wait_for_producer=*/false) != 9) ++stale;
  }
  CHECK(stale > 0);
  SECTION("twin: the copy's stream waits for the producer's event") {
    for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
      set_seed(seed);
      CHECK(peer_copy(/*wait_for_producer=*/true) == 9);
    }
  }
  set_seed(1);
}
