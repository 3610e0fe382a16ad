// No rank ever materialises another stage's parameters: under --pipeline-stages the task
// builds its model deferred (engine/deferred_init.h), and setting up the pipeline allocates
// this stage's tensors alone, with the values one process would have made.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>
#include <string>

#include "engine/allocator.h"
#include "engine/deferred_init.h"
#include "engine/io/safetensors.h"
#include "engine/nn/release.h"
#include "engine/optim/adamw.h"
#include "engine/optim/param_groups.h"
#include "engine/random.h"
#include "tests/comm/comm_group.h"
#include "tests/support/audio_files.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/tiny_ds2.h"
#include "train/pipeline/pipeline_parallel.h"
#include "train/setup/init_from.h"
#include "train/tasks/class_task.h"
#include "train/tasks/speech_task.h"

using namespace sonata;
using sonata::testing::comm_group;
using sonata::testing::job_folder;
using sonata::testing::shared_comm_group;

namespace {

// Builds the pipeline on a task whose model was built deferred; checks the memory it takes
// and that its stage's values are the eagerly built model's (`eager`, same seed).
void check_stage_built_alone(const TrainerOptions& options, Task& task, const Module& eager) {
  const NamedTensors whole = task.model().state_dict();
  int64_t whole_bytes = 0;
  for (const auto& [name, tensor] : whole) {
    INFO(name);
    CHECK(is_deferred(tensor));
    whole_bytes += tensor.numel() * int64_t(dtype_size(tensor.dtype()));  // none held yet
  }

  const Device cpu = Device::cpu();
  const int64_t allocated_before = cpu_memory_stats().allocated_bytes;
  cpu_reset_peak_memory_stats();
  PipelineParallel pipeline(options, task, shared_comm_group(), cpu);
  AdamW optimizer(pipeline.ownership().optimizer_groups(weight_decay_groups(task.model(), 0.01)),
                  AdamOptions{.lr = 1e-3});
  pipeline.start_training();
  const int64_t peak = cpu_memory_stats().peak_allocated_bytes - allocated_before;
  INFO(pipeline.describe());

  const NamedTensors stage = pipeline.state_dict();
  std::set<std::string> mine;
  int64_t stage_bytes = 0, largest_piece = 0;
  for (const auto& [name, tensor] : stage) {
    mine.insert(name);
    CHECK(!is_deferred(tensor));
    stage_bytes += tensor_bytes(tensor);
    if (pipeline.rows_of(name).rows != 0)
      largest_piece = std::max(largest_piece, tensor_bytes(tensor));
  }
  // A row piece of a random fill is made from its whole Philox blocks, then cut out: one
  // more of its size for a moment. A few KiB for the pipeline's own small buffers.
  const int64_t bound = stage_bytes + largest_piece + 4 * 1024;
  INFO("stage " << stage_bytes << " B, peak " << peak << " B, whole model " << whole_bytes << " B");
  REQUIRE(bound < whole_bytes);  // the check below could catch a whole model
  CHECK(peak <= bound);

  // Every other stage's tensor is still deferred, or released (deferred again): never made
  // here.
  for (const auto& [name, tensor] : task.model().state_dict()) {
    if (mine.count(name)) continue;
    INFO(name);
    CHECK((is_deferred(tensor) || tensor.numel() == 0));
  }
  // This stage's values are one process's (row pieces: their rows of it).
  std::map<std::string, Tensor> reference;
  for (const auto& [name, tensor] : eager.state_dict()) reference[name] = tensor;
  for (const auto& [name, tensor] : stage) {
    INFO(name);
    Tensor expected = reference.at(name);
    const RowShard rows = pipeline.rows_of(name);
    if (rows.rows != 0) expected = expected.slice(0, rows.begin, rows.end);
    CHECK(tensor.to(DType::f64).to_vector<double>() == expected.to(DType::f64).to_vector<double>());
  }
}

}  // namespace

TEST_CASE("pipeline stages build vgg19_bn and ds2 without making the other stages' tensors",
          "[comm][trainer][pipeline]") {
  ProcessGroup& world = comm_group();
  const int stages = world.world_size();
  if (stages < 2 || stages > 4) return;
  const std::string folder = job_folder("deferred_build");
  const std::string corpus = folder + "/corpus_" + std::to_string(world.rank());
  std::filesystem::create_directories(corpus);

  // One pass for both models (not Catch sections: each section reruns the case, and rank 0's
  // cleanup at its end would race another rank writing the next pass's corpus).
  {  // vgg19_bn, classifier.0 cut into row pieces
    TrainerOptions options =
        sonata::testing::tiny_vgg_options(sonata::testing::write_tone_tracks(corpus, 8));
    TrainerOptions one_process = options;
    manual_seed(options.seed);
    ClassTask eager(one_process);
    options.pipeline_stages = stages;
    manual_seed(options.seed);
    ClassTask task(options);
    check_stage_built_alone(options, task, eager.model());
  }
  {  // vgg19_bn fine-tuned from a weights file (--init-from): each stage reads its own part
    TrainerOptions options =
        sonata::testing::tiny_vgg_options(sonata::testing::write_tone_tracks(corpus, 8));
    manual_seed(options.seed + 100);
    ClassTask source(options);
    const std::string weights = corpus + "/weights.safetensors";
    save_safetensors(weights, source.model().state_dict());
    manual_seed(options.seed);
    ClassTask eager(options);
    init_from_weights(eager.model(), weights);
    options.pipeline_stages = stages;
    manual_seed(options.seed);
    ClassTask task(options);
    init_from_weights(task.model(), weights);
    check_stage_built_alone(options, task, eager.model());
  }
  {  // ds2
    TrainerOptions options = sonata::testing::tiny_ds2_options(
        sonata::testing::write_letters_corpus(corpus, "train", 4, 7));
    TrainerOptions one_process = options;
    manual_seed(options.seed);
    SpeechTask eager(one_process, Vocabulary());
    options.pipeline_stages = stages;
    manual_seed(options.seed);
    SpeechTask task(options, Vocabulary());
    check_stage_built_alone(options, task, eager.model());
  }
  world.barrier()->wait();
  if (world.rank() == 0) std::filesystem::remove_all(folder);
}
