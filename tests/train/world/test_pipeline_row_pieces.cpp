// A layer larger than a stage's share of the model (VGG19_BN's classifier.0, most of its
// parameters) cut into row pieces across pipeline stages (comm/pipeline/partition.h): the
// stages' state then divides the model's, no rank keeps the whole layer, and training,
// checkpoints and resume stay one process's.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/pipeline/partition.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/nn/release.h"
#include "engine/optim/adamw.h"
#include "engine/optim/param_groups.h"
#include "engine/random.h"
#include "tests/comm/comm_group.h"
#include "tests/support/audio_files.h"
#include "tests/support/state_compare.h"
#include "tests/support/tiny_ds2.h"
#include "train/pipeline/pipeline_parallel.h"
#include "train/tasks/class_task.h"
#include "train/train_loop.h"

using namespace sonata;
using sonata::testing::check_close;
using sonata::testing::check_same_state;
using sonata::testing::comm_group;
using sonata::testing::differs;
using sonata::testing::job_folder;
using sonata::testing::shared_comm_group;

namespace {

// tiny_vgg_options on 8 tone tracks, 2 epochs of AdamW.
TrainerOptions tiny_vgg(const std::string& corpus) {
  TrainerOptions options =
      sonata::testing::tiny_vgg_options(sonata::testing::write_tone_tracks(corpus, 8));
  options.epochs = 2;
  options.optimizer = "adamw";
  options.lr = 1e-3;
  options.metrics = corpus + "/metrics.jsonl";
  return options;
}

std::unique_ptr<ClassTask> train(const TrainerOptions& options,
                                 std::shared_ptr<ProcessGroup> group) {
  manual_seed(options.seed);
  auto task = std::make_unique<ClassTask>(options);
  const TrainResult result = run_training(options, *task, Device::cpu(), std::move(group));
  CHECK(!result.stopped_bad);
  return task;
}

// The most any stage may hold of one process's parameters, gradients and AdamW state: the
// [parallel] targets for 2 and 4 stages, and in between a third plus the same slack.
double state_share_bound(int stages) {
  return stages == 2 ? 0.6 : stages == 4 ? 0.35 : 1.0 / 3 + 0.1;
}

}  // namespace

TEST_CASE("a pipeline cuts vgg19_bn's classifier.0 into row pieces, each stage holding its share",
          "[comm][trainer][pipeline]") {
  ProcessGroup& world = comm_group();
  const int stages = world.world_size();
  if (stages < 2 || stages > 4) return;
  const std::string folder = job_folder("row_pieces_memory");
  const std::string corpus = folder + "/corpus_" + std::to_string(world.rank());
  std::filesystem::create_directories(corpus);
  TrainerOptions options = tiny_vgg(corpus);
  options.pipeline_stages = stages;
  manual_seed(options.seed);
  ClassTask task(options);
  const Device cpu = Device::cpu();
  std::map<std::string, Shape> whole_shapes;
  for (const auto& [name, tensor] : task.model().state_dict()) whole_shapes[name] = tensor.shape();
  // What the parameters take whole (built deferred, none of them is held yet).
  double whole_parameter_bytes = 0, classifier_bytes = 0;
  for (const auto& [name, tensor] : task.model().named_parameters()) {
    const double bytes = double(tensor.numel()) * double(dtype_size(tensor.dtype()));
    whole_parameter_bytes += bytes;
    if (name.starts_with("classifier.0.")) classifier_bytes += bytes;
  }
  // Whole layers cannot be balanced: classifier.0 alone is more than a stage's share.
  REQUIRE(classifier_bytes > whole_parameter_bytes / stages);

  PipelineParallel pipeline(options, task, shared_comm_group(), cpu);
  INFO(pipeline.describe());
  CHECK_THAT(pipeline.describe(), Catch::Contains("classifier.0 rows"));
  AdamW optimizer(pipeline.ownership().optimizer_groups(weight_decay_groups(task.model(), 0.01)),
                  AdamOptions{.lr = 1e-3});
  pipeline.start_training();

  // No rank keeps the whole classifier.0, nor any parameter it does not train; the stages'
  // pieces of classifier.0 add up to it.
  const std::vector<Tensor> trained = pipeline.parameters();
  for (const auto& [name, tensor] : task.model().named_parameters()) {
    INFO(name);
    const bool trained_here = std::any_of(trained.begin(), trained.end(),
                                          [&](const Tensor& param) { return param.same(tensor); });
    if (name.starts_with("classifier.0.") || !trained_here) CHECK(tensor_bytes(tensor) == 0);
  }
  int64_t piece_rows = 0;
  for (const Tensor& param : pipeline.parameters())
    if (param.dim() == 2 && param.size(1) == whole_shapes.at("classifier.0.weight")[1])
      piece_rows += param.size(0);
  Tensor rows = full({1}, double(piece_rows), TensorOptions{}.with(DType::f64));
  world.all_reduce(rows, ReduceOp::sum)->synchronize();
  CHECK(rows.item() == double(whole_shapes.at("classifier.0.weight")[0]));

  // One step: this stage's parameters, gradients and AdamW's two moments, against one
  // process's (four times its parameters).
  optimizer.zero_grad();
  pipeline.step({task.prepare({0, 1}, 0), task.prepare({2, 3}, 0)}, cpu);
  optimizer.step();
  double held = 0;
  for (const Tensor& param : pipeline.parameters())
    held += double(tensor_bytes(param) + tensor_bytes(param.grad()));
  held += double(named_tensor_bytes(optimizer.state_dict().tensors));
  const double single = 4 * whole_parameter_bytes;
  INFO("stage " << pipeline.stage() << " holds " << held / single << " of one process's state");
  CHECK(held / single <= state_share_bound(stages));
  Tensor total = full({1}, held, TensorOptions{}.with(DType::f64));
  world.all_reduce(total, ReduceOp::sum)->synchronize();
  CHECK(total.item() >= single);  // every parameter is somewhere (the cut costs no copies)
  CHECK(total.item() <= single * 1.0001 + 1024 * stages);

  // gather_model assembles the whole model again from the stages, pieces included.
  pipeline.ownership().gather_model();
  for (const auto& [name, tensor] : task.model().state_dict()) {
    INFO(name);
    CHECK(tensor.shape() == whole_shapes.at(name));
  }
  world.barrier()->wait();
  if (world.rank() == 0) std::filesystem::remove_all(folder);
}

TEST_CASE(
    "vgg19_bn with classifier.0 cut across stages trains as one process does, and its "
    "checkpoints cross to one process and back",
    "[comm][trainer][pipeline]") {
  ProcessGroup& world = comm_group();
  const int stages = world.world_size();
  if (stages < 2 || stages > 4) return;
  const std::string folder = job_folder("row_pieces_run");
  const std::string corpus = folder + "/corpus_" + std::to_string(world.rank());
  std::filesystem::create_directories(corpus);
  TrainerOptions options = tiny_vgg(corpus);
  // SGD with momentum (a state tensor per parameter, cut with it): Adam's step would turn
  // the rounding noise of the conv biases' gradients (zero in exact arithmetic, under
  // BatchNorm) into steps of the learning rate, whichever way the model is split.
  options.optimizer = "sgd";
  options.lr = 1e-2;
  {  // The trainer's partition (by parameter bytes) cuts the layer.
    manual_seed(options.seed);
    ClassTask task(options);
    const LayerSequence layers = task.layers();
    const StagePlan plan = partition_with_row_pieces(layers, layer_parameter_bytes(layers), stages);
    REQUIRE(plan.cut_layers == std::vector<std::string>{"classifier.0"});
  }

  TrainerOptions single = options;
  single.metrics = corpus + "/single.jsonl";
  const auto reference = train(single, nullptr);
  manual_seed(single.seed);
  const auto initial = std::make_unique<ClassTask>(single);
  REQUIRE(differs(reference->model(), initial->model()));

  TrainerOptions piped = options;
  piped.pipeline_stages = stages;
  piped.metrics = corpus + "/piped.jsonl";
  check_close(train(piped, shared_comm_group())->model(), reference->model(), true);

  // Stopped after 1 step, resumed in the other kind of run: both end at the reference.
  TrainerOptions piped_stop = piped;
  piped_stop.checkpoint_dir = folder + "/piped";
  piped_stop.stop_after = 1;
  piped_stop.metrics = corpus + "/piped_stop.jsonl";
  train(piped_stop, shared_comm_group());
  TrainerOptions single_stop = single;
  single_stop.checkpoint_dir = corpus + "/single";
  single_stop.stop_after = 1;
  single_stop.metrics = corpus + "/single_stop.jsonl";
  train(single_stop, nullptr);

  TrainerOptions resumed_single = single;
  resumed_single.resume = latest_checkpoint(piped_stop.checkpoint_dir);
  REQUIRE(!resumed_single.resume.empty());
  resumed_single.metrics = corpus + "/resumed_single.jsonl";
  check_close(train(resumed_single, nullptr)->model(), reference->model(), true);

  TrainerOptions resumed_piped = piped;
  resumed_piped.resume = latest_checkpoint(single_stop.checkpoint_dir);
  resumed_piped.metrics = corpus + "/resumed_piped.jsonl";
  check_close(train(resumed_piped, shared_comm_group())->model(), reference->model(), true);

  // The pipeline's checkpoint, the cut layer's rows gathered from its stages, is the one
  // one process wrote after the same step.
  if (world.rank() == 0) {
    const TrainingState from_pipeline =
        load_checkpoint(latest_checkpoint(piped_stop.checkpoint_dir));
    const TrainingState from_single =
        load_checkpoint(latest_checkpoint(single_stop.checkpoint_dir));
    check_same_state(from_pipeline.model, from_single.model);
    check_same_state(from_pipeline.optimizer.tensors, from_single.optimizer.tensors);
    CHECK(from_pipeline.optimizer.scalars == from_single.optimizer.scalars);
  }
  world.barrier()->wait();
  if (world.rank() == 0) std::filesystem::remove_all(folder);
}
