// A pipelined evaluation (PipelineParallel::evaluate: the eval batches forward through the
// stages, the last stage counting) sums over the world to one process's evaluate() (train/task.h):
// the same edit counts and clips, the loss equal up to the order of the sum with one
// replica; with two, each replica batches other clips together (other padding, other GEMM
// shapes in f32), so the loss agrees to f32 rounding.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/random.h"
#include "tests/comm/comm_group.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/tiny_ds2.h"
#include "train/pipeline/pipeline_parallel.h"
#include "train/tasks/speech_task.h"
#include "train/train_loop.h"

using namespace sonata;
using sonata::testing::comm_group;
using sonata::testing::job_folder;
using sonata::testing::rank_corpus_folder;
using sonata::testing::shared_comm_group;
using sonata::testing::tiny_ds2_options;

TEST_CASE("a pipelined evaluation counts what one process's evaluate counts",
          "[comm][trainer][pipeline]") {
  ProcessGroup& world = comm_group();
  const int R = world.world_size();
  if (R < 2 || R > 4) return;
  const int64_t stages = R == 4 ? 2 : R;
  const std::string folder = job_folder("pipeline_eval");
  const std::string corpus = rank_corpus_folder(folder, world.rank());
  TrainerOptions options =
      tiny_ds2_options(sonata::testing::write_letters_corpus(corpus, "train", 4, 7));
  options.val_manifest = sonata::testing::write_letters_corpus(corpus, "val", 37, 9);
  options.batch_size = 2;  // eval batches of 16: three batches, the last partial
  options.pipeline_stages = stages;
  const Device cpu = Device::cpu();

  manual_seed(options.seed);
  SpeechTask single(options, Vocabulary());
  const EvalCounts expected = evaluate(single, "val", cpu, 0, 1);

  manual_seed(options.seed);
  SpeechTask task(options, Vocabulary());
  PipelineParallel pipeline(options, task, shared_comm_group(), cpu);
  pipeline.start_training();  // the other stages released: the pass needs only this one's
  EvalCounts counts = pipeline.evaluate("val", cpu);
  REQUIRE(counts.sums.size() == expected.sums.size());
  std::vector<double> values;
  for (const auto& [name, value] : counts.sums) values.push_back(value);
  Tensor sums = from_vector(values, {int64_t(values.size())}, TensorOptions{}.with(DType::f64));
  world.all_reduce(sums, ReduceOp::sum)->synchronize();
  const std::vector<double> totals = sums.to_vector<double>();
  size_t i = 0;
  for (const auto& [name, value] : expected.sums) {
    INFO(name);
    REQUIRE(counts.sums.count(name));
    const double total = totals[i++];
    const double tolerance = R == stages ? 1e-9 : 1e-5;
    if (name == "loss_sum")
      CHECK(std::abs(total - value) <= tolerance * std::abs(value));
    else
      CHECK(total == value);
  }
  CHECK(expected.sums.at("clips") == 37);
  CHECK(expected.sums.at("chars") > 0);
  world.barrier()->wait();
  if (world.rank() == 0) std::filesystem::remove_all(folder);
}

TEST_CASE("trainer --pipeline-stages evaluates --val through the stages as one process does",
          "[comm][trainer][pipeline]") {
  ProcessGroup& world = comm_group();
  const int R = world.world_size();
  if (R < 2 || R > 3) return;  // one replica: the same shard as one process
  const std::string folder = job_folder("pipeline_val");
  const std::string corpus = rank_corpus_folder(folder, world.rank());
  TrainerOptions options =
      tiny_ds2_options(sonata::testing::write_letters_corpus(corpus, "train", 8, 7));
  options.val_manifest = sonata::testing::write_letters_corpus(corpus, "val", 20, 9);
  options.accum_steps = 2;
  options.epochs = 1;
  options.optimizer = "sgd";
  options.lr = 5e-2;
  auto run = [&](TrainerOptions run_options, std::shared_ptr<ProcessGroup> group) {
    manual_seed(run_options.seed);
    SpeechTask task(run_options, Vocabulary());
    return run_training(run_options, task, Device::cpu(), std::move(group)).last_val;
  };
  TrainerOptions single = options;
  single.metrics = corpus + "/single.jsonl";
  const EvalResult expected = run(single, nullptr);
  TrainerOptions piped = options;
  piped.pipeline_stages = R;
  piped.metrics = corpus + "/piped.jsonl";
  const EvalResult actual = run(piped, shared_comm_group());
  // The weights agree to rounding (test_trainer_pipeline.cpp), so the loss does.
  REQUIRE(actual.metrics.count("loss"));
  CHECK(std::abs(actual.metrics.at("loss") - expected.metrics.at("loss")) <=
        1e-4 * std::abs(expected.metrics.at("loss")));
  CHECK(actual.metrics.count("cer"));
  world.barrier()->wait();
  if (world.rank() == 0) std::filesystem::remove_all(folder);
}
