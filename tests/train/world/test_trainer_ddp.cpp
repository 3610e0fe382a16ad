// The trainer under data parallel: every rank ends with the same weights, and a run stopped
// after k steps and resumed (all ranks reading rank 0's checkpoint) ends bit for bit where an
// unbroken run of the same world size ends. Under world 1 these are the single-process
// paths. The corpus: tests/support/letters_corpus.h.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/random.h"
#include "tests/comm/comm_group.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/tiny_ds2.h"
#include "tests/train/trainer_test_util.h"
#include "train/tasks/speech_task.h"
#include "train/train_loop.h"

using namespace sonata;
using sonata::testing::comm_group;
using sonata::testing::job_folder;
using sonata::testing::rank_corpus_folder;
using sonata::testing::shared_comm_group;
using sonata::testing::tiny_ds2_options;

namespace {

// Parameters, or the whole state (with BatchNorm's running statistics, which each rank
// updates from its own batch after rank 0's were broadcast before the forward).
std::vector<double> all_weights(Module& model, bool with_buffers = true) {
  std::vector<double> values;
  for (const auto& [name, tensor] : with_buffers ? model.state_dict() : model.named_parameters()) {
    const auto v = tensor.to(DType::f64).to_vector<double>();
    values.insert(values.end(), v.begin(), v.end());
  }
  return values;
}

}  // namespace

TEST_CASE("trainer under DDP: identical replicas, and --resume continues bit for bit",
          "[comm][trainer]") {
  ProcessGroup& group = comm_group();
  const std::string folder = job_folder("trainer");
  // Each rank writes its own copy of the (deterministic) corpus; checkpoints are shared.
  const std::string corpus = rank_corpus_folder(folder, group.rank());
  const std::string train = sonata::testing::write_letters_corpus(corpus, "train", 12, 7);
  TrainerOptions options = tiny_ds2_options(train);
  options.epochs = 2;
  options.lr = 1e-2;
  options.log_every = 1;

  auto run = [&](TrainerOptions run_options) {
    manual_seed(run_options.seed);
    auto task = std::make_unique<SpeechTask>(run_options, Vocabulary());
    run_training(run_options, *task, Device::cpu(), shared_comm_group());
    return std::pair{all_weights(task->model(), false), all_weights(task->model())};
  };
  TrainerOptions straight = options;
  straight.checkpoint_dir = folder + "/straight";
  straight.metrics = corpus + "/straight.jsonl";
  const auto [parameters, reference] = run(straight);

  // Every rank holds rank 0's parameters.
  Tensor first =
      from_vector(parameters, {int64_t(parameters.size())}, TensorOptions{}.with(DType::f64));
  group.broadcast(first, 0)->wait();
  CHECK(first.to_vector<double>() == parameters);

  TrainerOptions split = options;
  split.checkpoint_dir = folder + "/split";
  split.metrics = corpus + "/split.jsonl";
  split.stop_after = 2;
  run(split);
  split.stop_after = 0;
  split.resume = "auto";
  CHECK(run(split).second == reference);

  group.barrier()->wait();
  if (group.rank() == 0) std::filesystem::remove_all(folder);
}

TEST_CASE("trainer with --sync-bn and a bf16 all-reduce keeps whole replicas identical",
          "[comm][trainer]") {
  ProcessGroup& group = comm_group();
  const std::string folder = job_folder("sync_bn");
  const std::string corpus = rank_corpus_folder(folder, group.rank());
  TrainerOptions options =
      tiny_ds2_options(sonata::testing::write_letters_corpus(corpus, "train", 12, 7));
  options.epochs = 1;
  options.lr = 1e-2;
  options.metrics = corpus + "/metrics.jsonl";
  options.sync_bn = true;
  options.ddp_comm_dtype = "bf16";
  options.bucket_mb = 0.01;  // many buckets: several compressed all-reduces in flight
  manual_seed(options.seed);
  auto task = std::make_unique<SpeechTask>(options, Vocabulary());
  const TrainResult result = run_training(options, *task, Device::cpu(), shared_comm_group());
  CHECK(!result.stopped_bad);
  CHECK(result.steps > 0);
  // BatchNorm's running statistics are not broadcast under --sync-bn: they agree only because
  // every rank normalised with the statistics of the global batch.
  const std::vector<double> state = all_weights(task->model());
  Tensor first = from_vector(state, {int64_t(state.size())}, TensorOptions{}.with(DType::f64));
  group.broadcast(first, 0)->wait();
  CHECK(first.to_vector<double>() == state);
  group.barrier()->wait();
  if (group.rank() == 0) std::filesystem::remove_all(folder);
}

TEST_CASE("--comm-timeout reaches the process group and is checked", "[comm][trainer][timeout]") {
  CHECK(sonata::testing::parse_command_line({"--comm-timeout", "7.5"}).comm_timeout == 7.5);
  TrainerOptions negative;
  negative.model = "ds2";
  negative.train_manifest = "train.tsv";
  negative.comm_timeout = -1;
  CHECK_THROWS_WITH(negative.check(), Catch::Contains("--comm-timeout"));

  ProcessGroup& group = comm_group();
  if (group.world_size() == 1) return;  // one process: no group to time out
  const std::string folder = job_folder("comm_timeout");
  const std::string corpus = rank_corpus_folder(folder, group.rank());
  TrainerOptions options =
      tiny_ds2_options(sonata::testing::write_letters_corpus(corpus, "train", 4, 7));
  options.max_steps = 1;
  options.metrics = corpus + "/metrics.jsonl";
  options.comm_timeout = 123;
  // A duplicate of the test group, so the setting does not outlive this test.
  const std::shared_ptr<ProcessGroup> part = group.split(0, group.rank());
  const double before = part->timeout();
  manual_seed(options.seed);
  auto task = std::make_unique<SpeechTask>(options, Vocabulary());
  run_training(options, *task, Device::cpu(), part);
  CHECK(before != 123);
  CHECK(part->timeout() == 123);
  group.barrier()->wait();
  if (group.rank() == 0) std::filesystem::remove_all(folder);
}
