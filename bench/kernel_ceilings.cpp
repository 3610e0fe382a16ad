// The ceilings every kernel's figures are read against, measured on the device in the same
// run: the copy bandwidth of a buffer far larger than the last-level cache, and the rate of
// a large square GEMM in the benchmark's precision.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "bench/kernel_bench.h"
#include "engine/allocator.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "engine/random.h"

#if SONATA_WITH_CUDA
#include <cuda_runtime_api.h>

#include "base/cuda_check.h"
#include "engine/cuda/stream.h"
#endif

namespace sonata::bench {
namespace {

// A memcpy split over the OpenMP threads, as the CPU kernels split their loops: one
// thread's memcpy cannot draw the socket's bandwidth.
void threaded_copy(char* destination, const char* source, int64_t bytes) {
  constexpr int64_t kChunk = int64_t(1) << 20;
  const int64_t chunks = (bytes + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < chunks; ++i) {
    const int64_t begin = i * kChunk;
    std::memcpy(destination + begin, source + begin, size_t(std::min(kChunk, bytes - begin)));
  }
}

// The best of two timed runs: a ceiling is what the device can do, not what it did on average.
double best_time(const KernelBenchOptions& options, const std::function<void(int)>& call) {
  double best = 1e30;
  for (int trial = 0; trial < 2; ++trial)
    best = std::min(best, time_rotated(options, 1, call).seconds_per_call);
  return best;
}

double copy_gbps(const KernelBenchOptions& options) {
  // Twice the last-level cache at least, so the copy runs from and to memory.
  const double wanted = std::max(2 * last_level_cache_bytes(options.device),
                                 options.device.is_cuda() ? double(1 << 30) : double(256 << 20));
  const int64_t bytes =
      options.quick ? int64_t(16) << 20 : std::min(int64_t(wanted), int64_t(1) << 30);
  // u8 tensors from the engine's allocator on the device under test. Host pages are
  // written first: reading never-touched pages would read the shared zero page.
  const TensorOptions on_device = TensorOptions{}.with(DType::u8).with(options.device);
  Tensor source = empty({bytes}, on_device), destination = empty({bytes}, on_device);
  if (options.device.is_cpu()) {
    std::memset(source.data_ptr(), 1, size_t(bytes));
    std::memset(destination.data_ptr(), 0, size_t(bytes));
  }
  std::function<void(int)> copy;
#if SONATA_WITH_CUDA
  if (options.device.is_cuda()) {
    const cudaStream_t stream = current_stream(options.device.index);
    copy = [&, stream](int) {
      CUDA_CHECK(cudaMemcpyAsync(destination.data_ptr(), source.data_ptr(), size_t(bytes),
                                 cudaMemcpyDeviceToDevice, stream));
    };
  }
#endif
  if (!copy)
    copy = [&](int) { threaded_copy(destination.data<char>(), source.data<const char>(), bytes); };
  return 2.0 * double(bytes) / best_time(options, copy) / 1e9;  // read + written
}

double gemm_tflops(const KernelBenchOptions& options) {
  const int64_t n = options.quick ? 256 : options.device.is_cuda() ? 8192 : 2048;
  const TensorOptions on_device = TensorOptions{}.with(options.dtype).with(options.device);
  const Tensor a = randn({n, n}, on_device), b = randn({n, n}, on_device);
  NoGradGuard no_grad;
  const double seconds = best_time(options, [&](int) { matmul(a, b); });
  return 2.0 * double(n) * double(n) * double(n) / seconds / 1e12;
}

}  // namespace

double last_level_cache_bytes(Device device) {
#if SONATA_WITH_CUDA
  if (device.is_cuda()) {
    int bytes = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, device.index));
    return double(bytes);
  }
#endif
  (void)device;
  const long bytes = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return bytes > 0 ? double(bytes) : 0.0;
}

Ceilings measure_ceilings(const KernelBenchOptions& options) {
  // The CPU's ceilings are the whole machine's, whatever OMP_NUM_THREADS gives the kernels.
  const int threads = omp_get_max_threads();
  omp_set_num_threads(omp_get_num_procs());
  struct RestoreThreads {
    int threads;
    ~RestoreThreads() { omp_set_num_threads(threads); }
  } restore{threads};
  KernelBenchOptions timing = options;
  // A few calls each: the CPU's 2048^3 GEMM takes a fifth of a second on two cores; the
  // GPU's copies take a millisecond, so they run for a tenth of a second.
  timing.min_calls = options.quick ? 1 : 3;
  timing.min_seconds = options.quick || options.device.is_cpu() ? 0 : 0.1;
  const Ceilings ceilings{copy_gbps(timing), gemm_tflops(timing)};
  // The copy's gigabyte buffers would otherwise stay in the allocator's cache, too large
  // for any kernel's block, while the kernels' first allocations took pages the process
  // had never touched: on a VM each such page faults in the host as well (a [1024, 1000]
  // gradient's first allocation took 13 ms against 0.7 ms for a reused one).
  if (options.device.is_cpu()) cpu_release_cached_memory();
  return ceilings;
}

}  // namespace sonata::bench
