// All-reduce bandwidth over the process group, like nccl-tests' all_reduce_perf: sizes from
// --min-bytes to --max-bytes doubling, --warmup untimed then --iters timed all-reduces
// (sum, f32) per size, one JSON line per size from rank 0:
//   {"work": "allreduce", "backend": "mpi", "world": 2, "bytes": 8, "time_us": ...,
//    "algbw_GBps": bytes / time, "busbw_GBps": algbw * 2 (n - 1) / n}
// The time is the mean over ranks of each rank's mean per all-reduce. Run under mpirun:
//   mpirun -np 2 build/bench_allreduce [--device cuda] [--max-bytes 1073741824]
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>

#include "base/error.h"
#include "comm/bootstrap.h"
#include "kernels/cpu/capability.h"

using namespace sonata;

namespace {

// Mean seconds per all-reduce of `tensor` on this rank; synchronize() waits on the host
// for the last one (all-reduces on one group finish in order).
double time_allreduce(ProcessGroup& group, Tensor& tensor, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) group.all_reduce(tensor, ReduceOp::sum)->synchronize();
  group.barrier()->synchronize();
  const auto start = std::chrono::steady_clock::now();
  std::shared_ptr<Work> last;
  for (int i = 0; i < iters; ++i) {
    last = group.all_reduce(tensor, ReduceOp::sum);
    last->wait();  // NCCL: orders the next call after this one without a host wait
  }
  last->synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device_name = "cpu";
  int64_t min_bytes = 8, max_bytes = -1;
  int warmup = 5, iters = 20;
  CLI::App app{"sonata all-reduce bandwidth (nccl-tests' all_reduce_perf figures)"};
  app.add_option("--device", device_name, "cpu (MPI) | cuda (NCCL)")->capture_default_str();
  app.add_option("--min-bytes", min_bytes, "smallest message")->capture_default_str();
  app.add_option("--max-bytes", max_bytes,
                 "largest message (default 64 MiB on cpu, 1 GiB on cuda)");
  app.add_option("--warmup", warmup, "untimed all-reduces per size")->capture_default_str();
  app.add_option("--iters", iters, "timed all-reduces per size")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    const Device device = Device::parse(device_name);
    if (max_bytes < 0) max_bytes = device.is_cuda() ? int64_t(1) << 30 : int64_t(64) << 20;
    SONATA_CHECK(min_bytes >= 4 && min_bytes <= max_bytes, "bench_allreduce: --min-bytes ",
                 min_bytes, " must be at least 4 and at most --max-bytes ", max_bytes);
    SONATA_CHECK(iters > 0 && warmup >= 0, "bench_allreduce: --iters must be positive and ",
                 "--warmup not negative");
    auto group = init_process_group(device);
    const int world = group->world_size();
    for (int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
      const int64_t n = bytes / 4;
      Tensor tensor = ones({n}, TensorOptions{}.with(DType::f32).with(group->device()));
      const double seconds = time_allreduce(*group, tensor, warmup, iters);
      Tensor mean = full({1}, seconds, TensorOptions{}.with(DType::f64).with(group->device()));
      group->all_reduce(mean, ReduceOp::avg)->wait();
      const double time_s = mean.item();
      const double algbw = double(n * 4) / time_s / 1e9;
      const double busbw = algbw * 2.0 * (world - 1) / world;
      if (group->rank() == 0)
        std::printf(
            "{\"work\": \"allreduce\", \"backend\": \"%s\", \"world\": %d, \"bytes\": %lld, "
            "\"time_us\": %.2f, \"algbw_GBps\": %.4f, \"busbw_GBps\": %.4f, "
            "\"cpu_capability\": \"%s\"}\n",
            group->backend().c_str(), world, static_cast<long long>(n * 4), time_s * 1e6, algbw,
            busbw, kernels::cpu::capability_name());
      std::fflush(stdout);
    }
    group.reset();
    finalize();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_allreduce: %s\n", error.what());
    return 1;
  }
  return 0;
}
