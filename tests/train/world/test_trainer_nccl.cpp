// The trainer on CUDA devices under mpiexec, through the NCCL group (ctest's cuda/ entries;
// under the CPU emulator each rank has its own emulated devices and the collectives meet in
// shared memory): data parallel trains what the same run over the MPI group on the CPU
// trains, with identical replicas; a pipeline of 2 stages trains what one process on the
// device trains with --accum-steps 2. Each rank uses cuda:<rank> (one node).
#include <catch2/catch.hpp>

#if SONATA_WITH_NCCL
#include <mpi.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/math_mode.h"
#include "comm/nccl_group.h"
#include "engine/device.h"
#include "engine/random.h"
#include "tests/comm/comm_group.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/state_compare.h"
#include "tests/support/tiny_ds2.h"
#include "train/tasks/speech_task.h"
#include "train/train_loop.h"

using namespace sonata;
using sonata::testing::check_close;
using sonata::testing::comm_group;
using sonata::testing::job_folder;
using sonata::testing::rank_corpus_folder;
using sonata::testing::shared_comm_group;

namespace {

std::unique_ptr<SpeechTask> train(const TrainerOptions& options, Device device,
                                  std::shared_ptr<ProcessGroup> group) {
  manual_seed(options.seed);
  auto task = std::make_unique<SpeechTask>(options, Vocabulary());
  const TrainResult result = run_training(options, *task, device, std::move(group));
  CHECK(!result.stopped_bad);
  CHECK(result.steps > 0);
  task->model().to(Device::cpu());
  return task;
}

TrainerOptions tiny_run(const std::string& corpus) {
  TrainerOptions options = sonata::testing::tiny_ds2_options(
      sonata::testing::write_letters_corpus(corpus, "train", 8, 7));
  options.epochs = 1;
  options.optimizer = "sgd";
  options.lr = 5e-2;
  options.log_every = 1;
  return options;
}

}  // namespace

TEST_CASE("trainer --device cuda under mpiexec: data parallel over NCCL trains as over MPI",
          "[comm][nccl][trainer]") {
  ProcessGroup& world = comm_group();
  if (world.world_size() < 2) return;  // the entry runs under mpiexec -np 2
  if (cuda_device_count() < world.world_size()) {
    WARN("one device per rank needed; skipped with " << cuda_device_count());
    return;
  }
  // fp32's rounding on both devices (TF32 convolutions, the default, drift by 1e-3).
  const Tf32ModeGuard fp32_rounding(Tf32Mode::off);
  const std::string folder = job_folder("nccl_ddp");
  const std::string corpus = rank_corpus_folder(folder, world.rank());
  const TrainerOptions options = tiny_run(corpus);

  TrainerOptions on_cpu = options;
  on_cpu.metrics = corpus + "/cpu.jsonl";
  const auto reference = train(on_cpu, Device::cpu(), shared_comm_group());

  auto nccl = std::make_shared<NcclGroup>(MPI_COMM_WORLD, world.rank());
  TrainerOptions on_cuda = options;
  on_cuda.metrics = corpus + "/cuda.jsonl";
  on_cuda.checkpoint_dir = folder + "/cuda";  // rank 0 writes
  const auto result = train(on_cuda, Device::cuda(world.rank()), nccl);
  check_close(result->model(), reference->model(), true);

  // The replicas are identical: rank 0's parameters reach every rank over MPI.
  std::vector<double> values;
  for (const auto& [name, tensor] : result->model().named_parameters()) {
    const auto v = tensor.to(DType::f64).to_vector<double>();
    values.insert(values.end(), v.begin(), v.end());
  }
  Tensor first = from_vector(values, {int64_t(values.size())}, TensorOptions{}.with(DType::f64));
  world.broadcast(first, 0)->wait();
  CHECK(first.to_vector<double>() == values);
  nccl.reset();
  world.barrier()->wait();
  if (world.rank() == 0) std::filesystem::remove_all(folder);
}

TEST_CASE("trainer --device cuda --pipeline-stages 2 trains what one process on the device trains",
          "[comm][nccl][trainer][pipeline]") {
  ProcessGroup& world = comm_group();
  if (world.world_size() != 2) return;  // the entry runs under mpiexec -np 2
  if (cuda_device_count() < 2) {
    WARN("one device per rank needed; skipped with " << cuda_device_count());
    return;
  }
  // fp32's rounding: the two runs may choose different convolution algorithms.
  const Tf32ModeGuard fp32_rounding(Tf32Mode::off);
  const std::string folder = job_folder("nccl_pipeline");
  const std::string corpus = rank_corpus_folder(folder, world.rank());
  TrainerOptions options = tiny_run(corpus);
  options.accum_steps = 2;  // --micro-batches 2

  TrainerOptions single = options;
  single.metrics = corpus + "/single.jsonl";
  const auto reference = train(single, Device::cuda(world.rank()), nullptr);

  auto nccl = std::make_shared<NcclGroup>(MPI_COMM_WORLD, world.rank());
  TrainerOptions piped = options;
  piped.pipeline_stages = 2;
  piped.metrics = corpus + "/piped.jsonl";
  check_close(train(piped, Device::cuda(world.rank()), nccl)->model(), reference->model(), true);
  nccl.reset();
  world.barrier()->wait();
  if (world.rank() == 0) std::filesystem::remove_all(folder);
}
#endif
