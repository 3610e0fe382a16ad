// The CUDA runtime around the ops: Philox fills equal to the CPU's, allocator statistics,
// host<->device round trips for every dtype, pinned memory with non-blocking copies, streams
// ordered by events, queries that leave no error behind, the record-stream rule, copies
// between GPUs ordered on both streams, and uploads that do not wait for the stream.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "data/features/spectrogram.h"
#include "engine/allocator.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "tests/cuda/parity_util.h"

#if SONATA_WITH_CUDA
#include <cuda_runtime_api.h>

#include "engine/cuda/pinned_pool.h"
#include "engine/cuda/stream.h"
#endif

using namespace sonata;
using namespace sonata::testing;

namespace {

TensorOptions on_cuda(DType dtype = DType::f32) {
  return TensorOptions{}.with(dtype).with(Device::cuda());
}
TensorOptions on_cpu(DType dtype = DType::f32) {
  return TensorOptions{}.with(dtype);
}

}  // namespace

TEST_CASE("rand equals the CPU's for the same generator", "[cuda][rng]") {
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    INFO(dtype_name(dtype));
    Generator cpu_generator(1234, 3), cuda_generator(1234, 3);
    cpu_generator.set_offset(5);
    cuda_generator.set_offset(5);
    // Sizes with partial Philox blocks, and enough blocks for a multi-block grid.
    for (int64_t n : {1, 7, 4096, 100003}) {
      INFO("n " << n);
      const std::vector<double> cpu = rand({n}, on_cpu(dtype), &cpu_generator).to_vector<double>();
      const Tensor cuda = rand({n}, on_cuda(dtype), &cuda_generator);
      REQUIRE(cuda.device().is_cuda());
      const std::vector<double> got = cuda.to_vector<double>();
      size_t mismatches = 0;
      for (size_t i = 0; i < cpu.size(); ++i) mismatches += got[i] != cpu[i];
      CHECK(mismatches == 0);
      CHECK(cpu_generator.offset() == cuda_generator.offset());
    }
  }
}

TEST_CASE("randn equals the CPU's up to the math library", "[cuda][rng]") {
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    INFO(dtype_name(dtype));
    Generator cpu_generator(99), cuda_generator(99);
    const int64_t n = 50001;
    const std::vector<double> cpu = randn({n}, on_cpu(dtype), &cpu_generator).to_vector<double>();
    const std::vector<double> got = randn({n}, on_cuda(dtype), &cuda_generator).to_vector<double>();
    // f32/f64: log, sqrt, sin and cos differ by a few ulps between libm and CUDA's library.
    // f16/bf16: such an ulp can move a value across a rounding boundary of the stored type,
    // which the parity tolerance of that dtype covers.
    const bool half = is_half(dtype);
    const Tolerance tolerance = half ? parity_tolerance(dtype) : Tolerance{1e-5, 0};
    size_t mismatches = 0;
    double worst = 0;
    for (size_t i = 0; i < cpu.size(); ++i) {
      const double error = std::abs(got[i] - cpu[i]);
      worst = std::max(worst, error);
      mismatches += !(error <= tolerance.atol + tolerance.rtol * std::abs(cpu[i]));
    }
    INFO("worst difference " << worst);
    CHECK(mismatches == 0);
    CHECK(cpu_generator.offset() == cuda_generator.offset());
  }
}

TEST_CASE("in-place fills of unaligned and strided tensors equal the CPU's", "[cuda][rng]") {
  Generator cpu_generator(5, 1), cuda_generator(5, 1);
  // A slice starting one element in: the device cannot use aligned vector stores.
  Tensor cpu_base = zeros({1003}), cuda_base = zeros({1003}, on_cuda());
  Tensor cpu_part = cpu_base.slice(0, 1, 1002), cuda_part = cuda_base.slice(0, 1, 1002);
  uniform_(cpu_part, -2.0, 3.0, &cpu_generator);
  uniform_(cuda_part, -2.0, 3.0, &cuda_generator);
  CHECK(cuda_base.to_vector<double>() == cpu_base.to_vector<double>());
  // A transposed (non-contiguous) target.
  Tensor cpu_t = zeros({31, 17}).t(), cuda_t = zeros({31, 17}, on_cuda()).t();
  uniform_(cpu_t, 0.0, 1.0, &cpu_generator);
  uniform_(cuda_t, 0.0, 1.0, &cuda_generator);
  CHECK(cuda_t.to_vector<double>() == cpu_t.to_vector<double>());
  normal_(cpu_t, 1.5, 0.5, &cpu_generator);
  normal_(cuda_t, 1.5, 0.5, &cuda_generator);
  const std::vector<double> cpu = cpu_t.to_vector<double>(), got = cuda_t.to_vector<double>();
  for (size_t i = 0; i < cpu.size(); ++i) CHECK(std::abs(got[i] - cpu[i]) <= 1e-5);
  // The default generator, reseeded, gives the same stream on both devices.
  manual_seed(77);
  const std::vector<double> from_cuda = rand({37}, on_cuda()).to_vector<double>();
  manual_seed(77);
  CHECK(rand({37}).to_vector<double>() == from_cuda);
}

TEST_CASE("memory statistics follow allocations", "[cuda][memory]") {
  (void)empty({1}, on_cuda());  // first use: streams and the pool exist from here on
  const MemoryStats before = cuda_memory_stats(0);
  const int64_t nbytes = int64_t(1) << 22;
  {
    const Tensor a = empty({nbytes / 4}, on_cuda());
    const MemoryStats with_a = cuda_memory_stats(0);
    CHECK(with_a.allocated_bytes == before.allocated_bytes + nbytes);
    CHECK(with_a.allocations == before.allocations + 1);
    CHECK(with_a.peak_allocated_bytes >= with_a.allocated_bytes);
    {
      const Tensor b = zeros({nbytes / 8}, on_cuda(DType::f64));
      CHECK(cuda_memory_stats(0).allocated_bytes == before.allocated_bytes + 2 * nbytes);
    }
    const MemoryStats after_b = cuda_memory_stats(0);
    CHECK(after_b.allocated_bytes == before.allocated_bytes + nbytes);
    CHECK(after_b.peak_allocated_bytes >= before.allocated_bytes + 2 * nbytes);
    // Views share the storage: no allocation.
    const Tensor view = a.view({1024, -1}).t().slice(0, 0, 100, 3);
    CHECK(cuda_memory_stats(0).allocations == after_b.allocations);
    CHECK(cuda_memory_stats(0).allocated_bytes == after_b.allocated_bytes);
  }
  const MemoryStats after = cuda_memory_stats(0);
  CHECK(after.allocated_bytes == before.allocated_bytes);
  CHECK(after.peak_allocated_bytes >= before.allocated_bytes + 2 * nbytes);

  cuda_reset_peak_memory_stats(0);
  const MemoryStats reset = cuda_memory_stats(0);
  CHECK(reset.peak_allocated_bytes == reset.allocated_bytes);
  {
    const Tensor c = empty({1000}, on_cuda(DType::f64));
    CHECK(cuda_memory_stats(0).peak_allocated_bytes == reset.allocated_bytes + 8000);
  }
  CHECK(cuda_memory_stats(0).peak_allocated_bytes == reset.allocated_bytes + 8000);
  CHECK(cuda_memory_stats(0).allocated_bytes == reset.allocated_bytes);
}

TEST_CASE("round trips keep every dtype's values", "[cuda][copy]") {
  const std::vector<double> floats{0, 1, -2, 0.5, 1024, -0.25, 3};
  const std::vector<double> signed_ints{0, 1, -2, 7, 100, -100, 3};
  const std::vector<double> bytes{0, 1, 2, 7, 100, 255, 3};
  const std::vector<double> bools{0, 1, 1, 0, 1, 0, 1};
  for (DType dtype : kAllDTypes) {
    INFO(dtype_name(dtype));
    const std::vector<double>& values = is_floating(dtype)        ? floats
                                        : dtype == DType::u8      ? bytes
                                        : dtype == DType::boolean ? bools
                                                                  : signed_ints;
    const Tensor host = from_vector(values, {7}, on_cpu(DType::f64)).to(dtype);
    REQUIRE(host.dtype() == dtype);
    const Tensor device = host.to(Device::cuda());
    CHECK(device.device().is_cuda());
    CHECK(device.dtype() == dtype);
    const Tensor back = device.to(Device::cpu());
    CHECK(back.device().is_cpu());
    CHECK(back.dtype() == dtype);
    CHECK(back.to_vector<double>() == values);
    // Copies on the device, of a strided view, for every dtype.
    const Tensor matrix = from_vector(std::vector<double>(values.begin(), values.begin() + 6),
                                      {2, 3}, on_cpu(DType::f64))
                              .to(dtype);
    const Tensor on_device = matrix.to(Device::cuda());
    CHECK(on_device.t().contiguous().to_vector<double>() ==
          matrix.t().contiguous().to_vector<double>());
    CHECK(matrix.t().to(Device::cuda()).to_vector<double>() ==
          matrix.t().contiguous().to_vector<double>());
    CHECK(on_device.clone().to_vector<double>() == matrix.to_vector<double>());
  }
  // i64 beyond double-free ranges and empty tensors.
  const std::vector<int64_t> big{int64_t(1) << 40, -(int64_t(1) << 50) + 3, 0};
  CHECK(from_vector(big, {3}).to(Device::cuda()).to_vector<int64_t>() == big);
  CHECK(zeros({0, 3}, on_cuda()).to(Device::cpu()).shape() == Shape{0, 3});
}

TEST_CASE("device copies carry gradients back to the host", "[cuda][copy]") {
  Tensor x = from_vector(std::vector<float>{1, 2, 3}, {3});
  x.set_requires_grad(true);
  const Tensor y = mul(x.to(Device::cuda()), 2.0);
  sum(mul(y, y)).backward();
  REQUIRE(x.grad().defined());
  CHECK(x.grad().device().is_cpu());
  CHECK(x.grad().to_vector<double>() == std::vector<double>{8, 16, 24});
}

#if SONATA_WITH_CUDA

namespace {

void wait_for_device(int device = 0) {
  Event done;
  done.record(current_stream(device));
  done.synchronize();
}

// Device work on the current stream that a copy queued after it waits behind (a few tenths
// of a millisecond on an H100; the CPU emulator computes its GEMMs with naive loops, so it
// is kept at 1024); entries of 1/1024 keep every product at 1/1024, so nothing overflows.
void keep_stream_busy() {
  const Tensor a = full({1024, 1024}, 1.0 / 1024, on_cuda());
  Tensor acc = a;
  for (int i = 0; i < 8; ++i) acc = matmul(acc, a);
}

// A host callback that holds its stream until `open` is set (or a deadline passes, so that a
// failing test cannot hang).
struct Gate {
  std::atomic<bool> open{false};
};
void CUDART_CB hold_until_open(void* data) {
  auto* gate = static_cast<Gate*>(data);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!gate->open.load() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// Holds `stream` from construction until open() or the end of the scope: work queued on it
// meanwhile waits, and still_held() tells (by an event, not a clock) that it has not moved.
class HeldStream {
 public:
  explicit HeldStream(cudaStream_t stream) : stream_(stream), gate_(std::make_unique<Gate>()) {
    REQUIRE(cudaLaunchHostFunc(stream_, hold_until_open, gate_.get()) == cudaSuccess);
    held_.record(stream_);
  }
  ~HeldStream() {
    open();
    // The callback reads the gate until it returns: keep it alive until then.
    (void)cudaStreamSynchronize(stream_);
  }
  HeldStream(const HeldStream&) = delete;
  HeldStream& operator=(const HeldStream&) = delete;
  void open() { gate_->open = true; }
  bool still_held() const { return !held_.query(); }

 private:
  cudaStream_t stream_;
  std::unique_ptr<Gate> gate_;
  Event held_;
};

}  // namespace

TEST_CASE("pinned host tensors with non-blocking copies", "[cuda][pinned]") {
  TensorOptions pinned = on_cpu();
  pinned.pinned = true;
  const int64_t n = 1 << 20;
  Tensor host = empty({n}, pinned);
  CHECK(host.is_pinned());
  host.copy_(arange(0, double(n), 1.0));
  const Tensor device = host.to(Device::cuda(), /*non_blocking=*/true);
  const Tensor back = device.to(Device::cpu(), /*non_blocking=*/true);
  CHECK(back.is_pinned());
  wait_for_device();
  const std::vector<float> values = back.to_vector<float>();
  size_t mismatches = 0;
  for (int64_t i = 0; i < n; ++i) mismatches += values[size_t(i)] != float(i);
  CHECK(mismatches == 0);

  SECTION("a released pinned block is not reused while a copy still reads it") {
    Tensor copied;
    // The copy below stays pending behind the held stream (by a gate, not a clock) until the
    // reused block has been overwritten.
    HeldStream held(current_stream(0));
    {
      Tensor staging = empty({n}, pinned);
      staging.fill_(1.0);
      copied = staging.to(Device::cuda(), /*non_blocking=*/true);
    }  // staging goes back to the pool with its copy still pending
    Tensor reused = empty({n}, pinned);
    reused.fill_(2.0);
    held.open();
    wait_for_device();
    CHECK(sum(eq(copied, ones({}, on_cuda())).to(DType::f32)).item() == double(n));
  }
  SECTION("a blocking copy from pinned memory may be overwritten at once") {
    Tensor staging = empty({n}, pinned);
    staging.fill_(3.0);
    keep_stream_busy();
    const Tensor copied = staging.to(Device::cuda());
    staging.fill_(4.0);
    CHECK(sum(copied).item() == 3.0 * double(n));
  }
}

TEST_CASE("ops run on the stream a StreamGuard selects", "[cuda][stream]") {
  const int64_t n = 1 << 16;
  Generator generator(3);
  const Tensor x = rand({n}, on_cuda(), &generator);
  const std::vector<float> x_host = x.to_vector<float>();
  cudaStream_t compute = current_stream(0);

  // Pinned before the gate closes: allocating pinned memory may synchronize the device.
  TensorOptions pinned = on_cpu();
  pinned.pinned = true;
  const Tensor y_host = empty({n}, pinned);

  Stream side(0);
  Event x_ready, y_ready, compute_held;
  // Static: if the test stops early, the callback may still read it until its deadline.
  static Gate gate;
  gate.open = false;
  x_ready.record(compute);
  // Hold the compute stream: anything queued on it from here waits for the gate.
  REQUIRE(cudaLaunchHostFunc(compute, hold_until_open, &gate) == cudaSuccess);
  compute_held.record(compute);

  Tensor y;
  {
    StreamGuard guard(side);
    CHECK(current_stream(0) == side.get());
    x_ready.block(side.get());
    y = mul(exp(x), 2.0);
    y_ready.record(side.get());
  }
  CHECK(current_stream(0) == compute);

  // y is complete although the compute stream is still held: it ran on the side stream.
  const cudaError_t copied =
      cudaMemcpyAsync(y_host.data_ptr(), y.data_ptr(), size_t(n) * sizeof(float),
                      cudaMemcpyDeviceToHost, side.get());
  const cudaError_t synced = cudaStreamSynchronize(side.get());
  const bool compute_was_held = !compute_held.query();
  gate.open = true;
  REQUIRE(copied == cudaSuccess);
  REQUIRE(synced == cudaSuccess);
  CHECK(compute_was_held);

  // Order the compute stream after the side stream before it touches x or y again.
  y_ready.block(compute);
  wait_for_device();
  const std::vector<float> y_values = y_host.to_vector<float>();
  const Tolerance tolerance = parity_tolerance(DType::f32);
  size_t mismatches = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double expected = 2.0 * std::exp(double(x_host[size_t(i)]));
    mismatches += !(std::abs(y_values[size_t(i)] - expected) <=
                    tolerance.atol + tolerance.rtol * std::abs(expected));
  }
  CHECK(mismatches == 0);
  // Reading y on the compute stream, now ordered, gives the same values.
  CHECK(y.to_vector<float>() == y_values);
}

TEST_CASE("a query of unfinished work leaves no error for the next kernel's check",
          "[cuda][stream]") {
  const Tensor x = full({1024}, 1.0, on_cuda());
  wait_for_device();
  Tensor y;
  {
    HeldStream held(current_stream(0));
    Event pending;
    pending.record(current_stream(0));
    CHECK_FALSE(pending.query());  // cudaErrorNotReady, which the runtime also keeps
    // The launch check after this kernel reads the thread's last error.
    CHECK_NOTHROW(y = mul(x, 2.0));
    CHECK(cudaGetLastError() == cudaSuccess);
  }
  CHECK(sum(y).item() == 2048.0);
}

TEST_CASE("reusing pinned memory past a pending copy leaves no error for the next kernel",
          "[cuda][pinned]") {
  TensorOptions pinned = on_cpu();
  pinned.pinned = true;
  // 40 MiB: a size class (64 MiB blocks) no other test uses, so these two blocks are its
  // only ones. The pool walks free blocks by address: the pending copy goes on the lower one,
  // so the pool must query it (not ready) before it reaches the higher one, which is free.
  const int64_t n = (int64_t(40) << 20) / 4;
  Tensor a = empty({n}, pinned), b = empty({n}, pinned);
  Tensor lower = a.data_ptr() < b.data_ptr() ? a : b;
  void* const higher = std::max(a.data_ptr(), b.data_ptr());
  a = b = Tensor();
  const Tensor x = full({1024}, 1.0, on_cuda());
  wait_for_device();
  Tensor copied, y;
  {
    HeldStream held(current_stream(0));
    copied = lower.to(Device::cuda(), /*non_blocking=*/true);  // queued behind the gate
    lower = Tensor();                                          // released, its copy pending
    const Tensor again = empty({n}, pinned);
    REQUIRE(again.data_ptr() == higher);
    CHECK(held.still_held());  // so the lower block's copy was still pending when queried
    CHECK_NOTHROW(y = mul(x, 2.0));
    CHECK(cudaGetLastError() == cudaSuccess);
  }
  CHECK(sum(y).item() == 2048.0);
}

TEST_CASE("memory recorded on another stream is not reused before that stream's work",
          "[cuda][memory]") {
  const int64_t n = 1 << 18;
  Stream side(0);
  Tensor u;
  Event filled;
  {
    HeldStream held(side.get());
    void* address = nullptr;
    {
      Tensor t = empty({n}, on_cuda());  // allocated on the compute stream
      address = t.data_ptr();
      wait_for_device();
      // Work on the side stream writes t after the gate: a copy engine filling it.
      REQUIRE(cudaMemsetAsync(t.data_ptr(), 0, size_t(n) * sizeof(float), side.get()) ==
              cudaSuccess);
      t.record_stream(side.get());
    }  // t is freed on the compute stream while the side stream's write is pending
    u = empty({n}, on_cuda());
    INFO("u " << (u.data_ptr() == address ? "reuses" : "does not reuse") << " t's memory");
    u.fill_(1.0);
    filled.record(current_stream(0));
    // Without the rule the fill runs at once: give it the chance to, before the side stream
    // writes. With it, the compute stream waits for the side stream and this poll runs out.
    for (int i = 0; i < 500 && !filled.query(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(sum(u).item() == double(n));
}

TEST_CASE("a copy between GPUs waits for the source's stream and outlives its free",
          "[cuda][copy]") {
  if (cuda_device_count() < 2) {
    WARN("one GPU: copies between GPUs are not tested");
    return;
  }
  const int64_t n = 1 << 20;
  Tensor x = zeros({n}, on_cuda());
  wait_for_device();
  Tensor y;
  {
    HeldStream held(current_stream(0));
    x.fill_(7.0);  // queued behind the gate on cuda:0
    y = x.to(Device::cuda(1));
    x = Tensor();  // freed on cuda:0's stream, stream-ordered after the copy
    const Tensor reuse = full({n}, 9.0, on_cuda());
  }
  CHECK(y.device() == Device::cuda(1));
  CHECK(sum(y).item() == 7.0 * double(n));
}

TEST_CASE("small uploads from pageable memory do not wait for the stream", "[cuda][copy]") {
  const std::vector<float> values(1000, 3.0f);
  (void)from_vector(values, {1000}).to(Device::cuda());  // the staging block exists from here
  wait_for_device();
  Tensor uploaded;
  {
    HeldStream held(current_stream(0));
    uploaded = from_vector(values, {1000}).to(Device::cuda());
    CHECK(held.still_held());  // the host came back while the stream was still held
  }
  CHECK(sum(uploaded).item() == 3000.0);
}

TEST_CASE("log-mel on the GPU queues its uploads without waiting for the stream", "[cuda][mel]") {
  const FeatureExtractor extractor;
  const std::vector<float> first(16000, 0.25f), second(12000, -0.5f);
  const std::vector<std::span<const float>> clips{first, second};
  const std::vector<Tensor> expected = extractor.log_mel_on(Device::cuda(), clips);
  wait_for_device();  // tables, plans and pinned blocks exist from here
  std::vector<Tensor> again;
  {
    HeldStream held(current_stream(0));
    again = extractor.log_mel_on(Device::cuda(), clips);
    CHECK(held.still_held());
  }
  REQUIRE(again.size() == 2);
  for (size_t c = 0; c < 2; ++c) {
    const std::vector<float> got = again[c].to_vector<float>(),
                             want = expected[c].to_vector<float>();
    REQUIRE(got.size() == want.size());
    size_t mismatches = 0;
    for (size_t i = 0; i < got.size(); ++i) mismatches += !(std::abs(got[i] - want[i]) <= 1e-5f);
    CHECK(mismatches == 0);
  }
}

#endif  // SONATA_WITH_CUDA
