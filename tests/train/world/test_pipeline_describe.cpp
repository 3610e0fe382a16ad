// The pipelined run's start lines: the task names the whole model's parameter count (not the
// stage's this rank holds after the others are released), and the pipeline each stage's share.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "engine/random.h"
#include "tests/comm/comm_group.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/tiny_ds2.h"
#include "train/pipeline/pipeline_parallel.h"
#include "train/tasks/speech_task.h"

using namespace sonata;
using Catch::Contains;
using sonata::testing::comm_group;
using sonata::testing::job_folder;
using sonata::testing::shared_comm_group;

TEST_CASE("a pipelined run reports the whole model's parameters and each stage's share",
          "[comm][trainer][pipeline]") {
  ProcessGroup& world = comm_group();
  const int stages = world.world_size();
  if (stages < 2 || stages > 4) return;
  const std::string folder = job_folder("pipeline_describe");
  const std::string corpus = folder + "/corpus_" + std::to_string(world.rank());
  std::filesystem::create_directories(corpus);
  {
    TrainerOptions options = sonata::testing::tiny_ds2_options(
        sonata::testing::write_letters_corpus(corpus, "train", 4, 7));
    manual_seed(options.seed);
    const int64_t whole = SpeechTask(options, Vocabulary()).model().parameter_count();
    options.pipeline_stages = stages;
    manual_seed(options.seed);
    SpeechTask task(options, Vocabulary());
    const Device cpu = Device::cpu();
    PipelineParallel pipeline(options, task, shared_comm_group(), cpu);
    pipeline.start_training();  // built: the other stages' tensors are released
    CHECK_THAT(task.describe(), Contains("ds2 (" + std::to_string(whole) + " parameters)"));
    const std::string line = pipeline.describe();
    INFO(line);
    CHECK_THAT(line, Contains(" of " + std::to_string(whole) + ")"));
    // One share per stage, "a + b + ...", summing to the whole.
    const size_t begin = line.find("; parameters ") + 13, end = line.find(" of ", begin);
    REQUIRE(begin != std::string::npos + 13);
    int64_t sum = 0, shares = 0;
    for (size_t at = begin; at < end;) {
      size_t used = 0;
      sum += std::stoll(line.substr(at), &used);
      ++shares;
      at += used;
      if (line.compare(at, 3, " + ") == 0) at += 3;
    }
    CHECK(shares == stages);
    CHECK(sum == whole);
  }
  world.barrier()->wait();
  if (world.rank() == 0) std::filesystem::remove_all(folder);
}
