// A pipelined run's checkpoint (train/pipeline/pipeline_parallel.h): written on world rank 0
// in one process's format with each other stage's tensor received only when the writer
// asks for it, so that rank 0 holds, beyond its own stage, one tensor at a time (counted by
// the CPU allocator at each fetch and at its peak); and read back by every stage for its
// own tensors alone (the allocator again), which are bitwise the ones it saved.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/allocator.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/nn/release.h"
#include "engine/optim/adamw.h"
#include "engine/optim/param_groups.h"
#include "engine/random.h"
#include "tests/comm/comm_group.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/tiny_ds2.h"
#include "train/pipeline/pipeline_parallel.h"
#include "train/tasks/speech_task.h"

using namespace sonata;
using sonata::testing::comm_group;
using sonata::testing::job_folder;
using sonata::testing::shared_comm_group;

namespace {

// What the CPU allocator charges for a tensor of `bytes` (64-byte blocks).
int64_t charged(int64_t bytes) {
  return (std::max<int64_t>(bytes, 1) + int64_t(kCpuAlignment) - 1) / int64_t(kCpuAlignment) *
         int64_t(kCpuAlignment);
}

int64_t spec_bytes(const TensorSpec& spec) {
  int64_t numel = 1;
  for (const int64_t extent : spec.shape) numel *= extent;
  return numel * int64_t(dtype_size(spec.dtype));
}

std::vector<uint8_t> bytes_of(const Tensor& tensor) {
  const Tensor c = tensor.contiguous();
  const auto* p = static_cast<const uint8_t*>(c.data_ptr());
  return std::vector<uint8_t>(p, p + tensor_bytes(c));
}

}  // namespace

TEST_CASE(
    "a pipelined checkpoint streams to rank 0 a tensor at a time and each stage reads "
    "back its own alone",
    "[comm][trainer][pipeline]") {
  ProcessGroup& world = comm_group();
  const int R = world.world_size();
  if (R < 2 || R > 4) return;
  const int64_t stages = R == 4 ? 2 : R;
  const std::string folder = job_folder("pipeline_checkpoint");
  const std::string corpus = folder + "/corpus_" + std::to_string(world.rank());
  std::filesystem::create_directories(corpus);
  TrainerOptions options;
  options.model = "ds2";
  options.model_config = {{"conv-channels", "4"}, {"hidden", "16"}, {"layers", "1"}};
  options.features.n_mels = 40;
  options.train_manifest = sonata::testing::write_letters_corpus(corpus, "train", 4, 7);
  options.batch_size = 2;
  options.accum_steps = 2;
  options.pipeline_stages = stages;
  options.progress = "none";
  options.workers = 1;
  manual_seed(options.seed);
  SpeechTask task(options, Vocabulary());
  const Device cpu = Device::cpu();
  NamedTensors whole_model;  // names and shapes, before the stages are released
  for (const auto& [name, tensor] : task.model().state_dict())
    whole_model.emplace_back(name, empty(tensor.shape(), tensor.options()));

  PipelineParallel pipeline(options, task, shared_comm_group(), cpu);
  AdamW optimizer(pipeline.ownership().optimizer_groups(weight_decay_groups(task.model(), 0.01)),
                  AdamOptions{.lr = 1e-3});
  pipeline.start_training();
  optimizer.zero_grad();
  pipeline.step({task.prepare({0, 1}, 0), task.prepare({2, 3}, 0)}, cpu);
  optimizer.step();

  // This stage's entries are the model's that kept their storage.
  NamedTensors own_model;
  for (const auto& [name, tensor] : task.model().state_dict())
    if (tensor_bytes(tensor) > 0) own_model.emplace_back(name, tensor);
  TrainingState local;
  local.optimizer = optimizer.state_dict();
  local.scalars = {{"step", 1}};
  local.texts = {{"model", "ds2"}};
  const std::string checkpoints = folder + "/checkpoints";

  if (world.rank() == 0) {
    CheckpointManager manager(checkpoints, 0, "min");
    TrainingStateSource source = pipeline.ownership().checkpoint_source(local);
    int64_t largest = 0, total = 0;
    for (const TensorSource* file : {&source.model, &source.optimizer_tensors})
      for (const TensorSpec& spec : file->specs) {
        largest = std::max(largest, spec_bytes(spec));
        total += spec_bytes(spec);
      }
    // What the writer fetches, and the tensor bytes alive beyond rank 0's own when it does.
    const int64_t before = cpu_memory_stats().allocated_bytes;
    cpu_reset_peak_memory_stats();
    int64_t most_at_fetch = 0;
    std::vector<std::string> fetched;
    for (TensorSource* file : {&source.model, &source.optimizer_tensors}) {
      file->fetch = [&, inner = file->fetch, specs = file->specs](size_t index) {
        Tensor tensor = inner(index);
        fetched.push_back(specs[index].name);
        most_at_fetch = std::max(most_at_fetch, cpu_memory_stats().allocated_bytes - before);
        return tensor;
      };
    }
    manager.save(source, 1);
    const int64_t peak = cpu_memory_stats().peak_allocated_bytes - before;
    INFO("largest tensor " << largest << " bytes of " << total << "; at a fetch " << most_at_fetch
                           << ", at the peak " << peak << " beyond this stage's");
    CHECK(fetched.size() == source.model.specs.size() + source.optimizer_tensors.specs.size());
    CHECK(most_at_fetch <= charged(largest));
    CHECK(peak <= charged(largest));
    // The other stages' state is more than one tensor, so the bound says something.
    CHECK(total - named_tensor_bytes(own_model) - named_tensor_bytes(local.optimizer.tensors) >
          2 * charged(largest));

    // One process's checkpoint: its state_dict's names, order and shapes.
    const TrainingState saved = load_checkpoint(checkpoints);
    REQUIRE(saved.model.size() == whole_model.size());
    for (size_t k = 0; k < whole_model.size(); ++k) {
      INFO(whole_model[k].first);
      CHECK(saved.model[k].first == whole_model[k].first);
      CHECK(saved.model[k].second.shape() == whole_model[k].second.shape());
      CHECK(saved.model[k].second.dtype() == whole_model[k].second.dtype());
    }
    CHECK(saved.optimizer.tensors.size() == 2 * task.model().named_parameters().size());
    CHECK(saved.optimizer.scalars.at("state.0.step") == 1);
    CHECK(saved.scalars == local.scalars);
    CHECK(saved.texts == local.texts);
  } else {
    pipeline.ownership().serve_checkpoint(local);
  }
  world.barrier()->wait();

  // Every rank reads its stage's tensors alone: only their bytes are allocated.
  int64_t own_charge = 0;
  for (const auto& [name, tensor] : own_model) own_charge += charged(tensor_bytes(tensor));
  for (const auto& [name, tensor] : local.optimizer.tensors)
    own_charge += charged(tensor_bytes(tensor));
  const int64_t before = cpu_memory_stats().allocated_bytes;
  cpu_reset_peak_memory_stats();
  const PartialTrainingState part =
      load_checkpoint_part(checkpoints, pipeline.ownership().selection());
  CHECK(cpu_memory_stats().peak_allocated_bytes - before <= own_charge);
  CHECK(part.model_in_file.size() == whole_model.size());
  const bool saved_here = world.rank() < stages;  // replica 0 wrote; the others hold the same
  std::map<std::string, Tensor> read(part.state.model.begin(), part.state.model.end());
  REQUIRE(read.size() == own_model.size());
  for (const auto& [name, tensor] : own_model) {
    INFO(name);
    REQUIRE(read.count(name));
    if (saved_here) CHECK(bytes_of(read.at(name)) == bytes_of(tensor));
  }
  const OptimizerState mine = pipeline.ownership().local_optimizer_state(part.state.optimizer);
  REQUIRE(mine.tensors.size() == local.optimizer.tensors.size());
  for (size_t i = 0; i < mine.tensors.size(); ++i) {
    INFO(local.optimizer.tensors[i].first);
    CHECK(mine.tensors[i].first == local.optimizer.tensors[i].first);
    if (saved_here)
      CHECK(bytes_of(mine.tensors[i].second) == bytes_of(local.optimizer.tensors[i].second));
  }
  CHECK(mine.scalars == local.optimizer.scalars);
  world.barrier()->wait();
  if (world.rank() == 0) std::filesystem::remove_all(folder);
}
