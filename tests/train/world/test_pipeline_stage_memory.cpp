// Under --pipeline-stages each rank holds only its stage: after setup no rank keeps another
// stage's parameters or buffers, and after a step its parameter, gradient and optimizer
// bytes are its stage's share of one process's (AdamW: two state tensors per parameter).
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/deferred_init.h"
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
using sonata::testing::rank_corpus_folder;
using sonata::testing::shared_comm_group;
using sonata::testing::tiny_ds2_options;

TEST_CASE("pipeline stages hold only their own parameters, gradients and optimizer state",
          "[comm][trainer][pipeline]") {
  ProcessGroup& world = comm_group();
  const int R = world.world_size();
  if (R < 2 || R > 4) return;
  const int64_t stages = R == 4 ? 2 : R;
  const std::string folder = job_folder("stage_memory");
  const std::string corpus = rank_corpus_folder(folder, world.rank());
  TrainerOptions options =
      tiny_ds2_options(sonata::testing::write_letters_corpus(corpus, "train", 4, 7));
  options.accum_steps = 2;
  options.pipeline_stages = stages;
  manual_seed(options.seed);
  SpeechTask task(options, Vocabulary());
  const Device cpu = Device::cpu();
  // What each entry takes whole (built deferred, none of it is held yet).
  const auto whole_size = [](const Tensor& tensor) {
    return tensor.numel() * int64_t(dtype_size(tensor.dtype()));
  };
  std::map<std::string, int64_t> whole_bytes;
  for (const auto& [name, tensor] : task.model().state_dict())
    whole_bytes[name] = whole_size(tensor);
  int64_t whole_parameter_bytes = 0;
  for (const auto& [name, tensor] : task.model().named_parameters())
    whole_parameter_bytes += whole_size(tensor);

  PipelineParallel pipeline(options, task, shared_comm_group(), cpu);
  AdamW optimizer(pipeline.ownership().optimizer_groups(weight_decay_groups(task.model(), 0.01)),
                  AdamOptions{.lr = 1e-3});
  pipeline.start_training();

  // This stage's entries are whole; every other entry holds nothing.
  std::set<std::string> mine;
  NamedTensors stage_parameters;
  for (const Tensor& param : pipeline.parameters())
    for (const auto& [name, tensor] : task.model().named_parameters())
      if (tensor.same(param)) stage_parameters.emplace_back(name, tensor);
  REQUIRE(!stage_parameters.empty());
  for (const auto& [name, tensor] : stage_parameters) mine.insert(name);
  for (const auto& [name, tensor] : task.model().state_dict()) {
    INFO(name);
    const bool is_parameter = tensor.requires_grad();
    if (is_parameter && !mine.count(name)) CHECK(tensor_bytes(tensor) == 0);
    if (mine.count(name)) CHECK(tensor_bytes(tensor) == whole_bytes.at(name));
  }

  // One step: gradients and AdamW's two buffers for this stage's parameters only.
  const std::vector<HostBatch> batches{task.prepare({0, 1}, 0), task.prepare({2, 3}, 0)};
  optimizer.zero_grad();
  pipeline.step(batches, cpu);
  optimizer.step();
  const int64_t parameter_bytes = named_tensor_bytes(task.model().named_parameters());
  int64_t grad_bytes = 0;
  for (const auto& [name, tensor] : task.model().named_parameters())
    grad_bytes += tensor_bytes(tensor.grad());
  const int64_t optimizer_bytes = named_tensor_bytes(optimizer.state_dict().tensors);
  const int64_t share = named_tensor_bytes(stage_parameters);
  CHECK(parameter_bytes == share);
  CHECK(grad_bytes == share);
  CHECK(optimizer_bytes == 2 * share);
  // The stages' shares add up to the whole model (each replica's pipeline).
  Tensor total = full({1}, double(share), TensorOptions{}.with(DType::f64));
  world.all_reduce(total, ReduceOp::sum)->synchronize();
  CHECK(total.item() == double(whole_parameter_bytes) * double(R / stages));

  // gather_model fills the whole model again (the end of a run).
  pipeline.ownership().gather_model();
  for (const auto& [name, tensor] : task.model().state_dict()) {
    INFO(name);
    CHECK(tensor_bytes(tensor) == whole_bytes.at(name));
  }
  // The next step gives the other stages' parameters back again: deferred, shapes kept.
  optimizer.zero_grad();
  pipeline.step(batches, cpu);
  optimizer.step();
  for (const auto& [name, tensor] : task.model().state_dict()) {
    if (!tensor.requires_grad() || mine.count(name)) continue;
    INFO(name);
    CHECK(tensor_bytes(tensor) == 0);
    CHECK(is_deferred(tensor));
    CHECK(whole_size(tensor) == whole_bytes.at(name));
  }
  world.barrier()->wait();
  if (world.rank() == 0) std::filesystem::remove_all(folder);
}
