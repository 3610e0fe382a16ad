// DDP's overhead ([ddp] benchmark): the step time of R data-parallel ranks against the same
// ranks stepping alone (the same per-rank batch, the same share of the machine, no
// communication), and how much of the communication backward hid. Run under mpirun:
//   mpirun -np 2 build/bench_ddp [--device cuda] [--batch 4] [--frames 200] [--bucket-mb 25]
//   build/bench_ddp --device cuda --group nccl    (one process: the reducer over a one-rank
//                                                  NCCL group, no MPI needed)
// Work: DeepSpeech2 (peer_torch.py's ds2 by default, --hidden/--layers to shrink it) on random
// log-mel frames, the trainer's CTC loss (speech_training_loss), AdamW. Phases, every rank at once,
// each after a barrier:
//   local - forward, backward, step: no reducer;
//   ddp   - the same under DistributedDataParallel (buckets all-reduced while backward runs);
//   comm  - the buckets' all-reduces alone, back to back, nothing else running.
// One JSON line from rank 0 (times are means over ranks):
//   overhead_pct = ddp / local - 1; exposed_ms = ddp - local; finish_wait_ms = time spent in
//   finish() waiting for the last buckets; hidden_share = 1 - exposed / comm (communication
//   that ran under backward), clamped to [0, 1].
// On this project's CPU machines the ranks share two cores, so "local" is measured with the
// ranks running concurrently (as they do under DDP), not one process owning the machine.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "base/error.h"
#include "comm/bootstrap.h"
#include "comm/compressed_all_reduce.h"
#include "comm/ddp.h"
#include "engine/ops.h"
#include "engine/optim/adamw.h"
#include "engine/random.h"
#include "kernels/cpu/capability.h"
#include "models/ds2.h"
#include "models/speech_training_loss.h"

using namespace sonata;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Mean of `value` over the ranks.
double mean_over_ranks(ProcessGroup& group, double value) {
  Tensor t = full({1}, value, TensorOptions{}.with(DType::f64).with(group.device()));
  group.all_reduce(t, ReduceOp::avg)->synchronize();
  return t.to(Device::cpu()).item();
}

struct Workload {
  std::shared_ptr<Ds2> model;
  Tensor x, targets, input_lengths, target_lengths;
};

Workload make_workload(Device device, int rank, int64_t batch, int64_t frames, int64_t hidden,
                       int64_t layers) {
  manual_seed(0);  // the same weights everywhere (DDP would broadcast them anyway)
  Ds2Options options;
  options.hidden = hidden;
  options.layers = layers;
  Workload w;
  w.model = std::make_shared<Ds2>(options);
  w.model->to(device);
  manual_seed(uint64_t(100 + rank));  // each rank its own data
  const int64_t labels = std::max<int64_t>(1, frames / 10);
  const TensorOptions i64 = TensorOptions{}.with(DType::i64);
  w.x = randn({batch, 1, frames, 80}, TensorOptions{}.with(device));
  w.targets = (rand({batch, labels}) * 28.0).to(DType::i64).add_(ones({batch, labels}, i64));
  w.input_lengths = full({batch}, double(frames), i64);
  w.target_lengths = full({batch}, double(labels), i64);
  return w;
}

Tensor loss_of(const Workload& w) {
  return speech_training_loss(*w.model, w.x, w.input_lengths, w.targets, w.target_lengths);
}

struct Timing {
  double step_s = 0;
  double finish_s = 0;  // ddp: time in finish()
};

// `steps` timed steps after `warmup`, every rank starting together.
template <typename Step>
Timing time_phase(ProcessGroup& group, Device device, int warmup, int steps, Step step) {
  Timing total;
  for (int i = 0; i < warmup; ++i) step(total);
  device_synchronize(device);
  group.barrier()->synchronize();
  total = Timing{};
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < steps; ++i) step(total);
  device_synchronize(device);
  return {seconds_since(start) / steps, total.finish_s / steps};
}

}  // namespace

int main(int argc, char** argv) {
  std::string device_name = "cpu", comm_dtype = "same", group_kind = "launch";
  int64_t batch = 4, frames = 200, hidden = 256, layers = 3;
  double bucket_mb = 25;
  int warmup = 1, steps = 3;
  CLI::App app{"sonata DDP overhead: R ranks against the same ranks without communication"};
  app.add_option("--device", device_name, "cpu (MPI) | cuda (NCCL)")->capture_default_str();
  app.add_option("--batch", batch, "utterances per rank")->capture_default_str();
  app.add_option("--frames", frames, "frames per utterance")->capture_default_str();
  app.add_option("--hidden", hidden, "DS2 LSTM width")->capture_default_str();
  app.add_option("--layers", layers, "DS2 LSTM layers")->capture_default_str();
  app.add_option("--bucket-mb", bucket_mb, "gradient bucket cap")->capture_default_str();
  app.add_option("--comm-dtype", comm_dtype, "same | fp16 | bf16")->capture_default_str();
  app.add_option("--group", group_kind,
                 "launch (the launcher's world: MPI or NCCL, a single group alone) | nccl (one "
                 "process on a one-rank NCCL group)")
      ->check(CLI::IsMember({"launch", "nccl"}))
      ->capture_default_str();
  app.add_option("--warmup", warmup, "untimed steps per phase")->capture_default_str();
  app.add_option("--steps", steps, "timed steps per phase")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    SONATA_CHECK(batch > 0 && frames >= 20 && hidden > 0 && layers > 0,
                 "bench_ddp: --batch, --hidden and --layers must be positive and --frames at "
                 "least 20");
    SONATA_CHECK(steps > 0 && warmup >= 0 && bucket_mb > 0,
                 "bench_ddp: --steps and --bucket-mb must be positive, --warmup not negative");
    SONATA_CHECK(comm_dtype == "same" || comm_dtype == "fp16" || comm_dtype == "bf16",
                 "bench_ddp: --comm-dtype must be same, fp16 or bf16, got '", comm_dtype, "'");
    const Device device = Device::parse(device_name);
    auto group =
        group_kind == "nccl" ? init_one_rank_nccl_group(device) : init_process_group(device);
    const int rank = group->rank(), world = group->world_size();
    Workload w = make_workload(device, rank, batch, frames, hidden, layers);
    AdamW optimizer(w.model->parameters(), AdamOptions{.lr = 1e-4});

    const Timing local = time_phase(*group, device, warmup, steps, [&](Timing&) {
      optimizer.zero_grad();
      loss_of(w).backward();
      optimizer.step();
    });

    DdpOptions options;
    options.reducer.bucket_cap_bytes = int64_t(bucket_mb * double(1 << 20));
    options.reducer.first_bucket_cap_bytes =
        std::min(options.reducer.bucket_cap_bytes, int64_t(1) << 20);
    if (comm_dtype != "same")
      options.reducer.comm_dtype = comm_dtype == "fp16" ? DType::f16 : DType::bf16;
    DistributedDataParallel ddp(w.model, group, options);
    const Timing distributed = time_phase(*group, device, warmup, steps, [&](Timing& t) {
      ddp.broadcast_buffers();
      ddp.prepare_for_backward();
      loss_of(w).backward();
      const Clock::time_point start = Clock::now();
      ddp.finish();
      device_synchronize(device);
      t.finish_s += seconds_since(start);
      optimizer.step();
    });

    // The same buckets (sizes and dtypes) all-reduced with nothing else running.
    std::vector<Tensor> buckets;
    const NamedTensors parameters = w.model->named_parameters();
    for (const std::vector<size_t>& bucket : ddp.reducer().bucket_layout()) {
      int64_t numel = 0;
      for (size_t i : bucket) numel += parameters[i].second.numel();
      buckets.push_back(zeros({numel}, parameters[bucket.front()].second.options()));
    }
    const std::shared_ptr<ProcessGroup> gather_group = group->split(0, rank);
    const Timing comm = time_phase(*group, device, warmup, steps, [&](Timing&) {
      std::vector<std::shared_ptr<Work>> works;
      for (Tensor& bucket : buckets)
        works.push_back(options.reducer.comm_dtype
                            ? all_reduce_compressed(*group, *gather_group, bucket,
                                                    *options.reducer.comm_dtype, ReduceOp::avg)
                            : group->all_reduce(bucket, ReduceOp::avg));
      for (auto& work : works) work->synchronize();
    });

    const double local_ms = mean_over_ranks(*group, local.step_s) * 1e3;
    const double ddp_ms = mean_over_ranks(*group, distributed.step_s) * 1e3;
    const double finish_ms = mean_over_ranks(*group, distributed.finish_s) * 1e3;
    const double comm_ms = mean_over_ranks(*group, comm.step_s) * 1e3;
    const double exposed_ms = ddp_ms - local_ms;
    const double hidden_share =
        comm_ms > 0 ? std::clamp(1.0 - exposed_ms / comm_ms, 0.0, 1.0) : 1.0;
    int64_t bytes = 0;
    for (const Tensor& bucket : buckets) bytes += bucket.numel() * dtype_size(bucket.dtype());
    if (rank == 0)
      std::printf(
          "{\"work\": \"ddp_overhead\", \"backend\": \"%s\", \"device\": \"%s\", \"world\": %d, "
          "\"model\": \"ds2\", \"hidden\": %lld, \"layers\": %lld, \"batch_per_rank\": %lld, "
          "\"frames\": %lld, \"grad_bytes\": %lld, \"buckets\": %zu, \"bucket_mb\": %g, "
          "\"comm_dtype\": \"%s\", \"step_ms_local\": %.1f, \"step_ms_ddp\": %.1f, "
          "\"overhead_pct\": %.1f, \"exposed_ms\": %.1f, \"finish_wait_ms\": %.1f, "
          "\"comm_alone_ms\": %.1f, \"hidden_share\": %.2f, \"cpu_capability\": \"%s\"}\n",
          group->backend().c_str(), device.str().c_str(), world, static_cast<long long>(hidden),
          static_cast<long long>(layers), static_cast<long long>(batch),
          static_cast<long long>(frames), static_cast<long long>(bytes), buckets.size(), bucket_mb,
          comm_dtype.c_str(), local_ms, ddp_ms, (ddp_ms / local_ms - 1) * 100, exposed_ms,
          finish_ms, comm_ms, hidden_share, kernels::cpu::capability_name());
    std::fflush(stdout);
    group.reset();
    finalize();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_ddp: %s\n", error.what());
    return 1;
  }
  return 0;
}
