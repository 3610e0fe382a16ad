#include "train/pipeline/pipeline_parallel.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/nn/release.h"
#include "engine/optim/clip_grad.h"

namespace sonata {

PipelineParallel::PipelineParallel(const TrainerOptions& options, Task& task,
                                   std::shared_ptr<ProcessGroup> world, Device device)
    : TrainingStrategy(std::move(world)), task_(task) {
  SONATA_CHECK(world_, "a pipeline needs a world of processes");
  PipelineBuildOptions build;
  build.stages = int(options.pipeline_stages);
  build.cuts = options.pipeline_cuts;
  build.balance = options.pipeline_balance.value();
  build.timing_input = [&] {
    std::vector<int64_t> items;
    for (int64_t i = 0; i < std::min(options.batch_size, task.train_items()); ++i)
      items.push_back(i);
    return task.input(task.prepare(items, 0), device);
  };
  build.pipeline.schedule = options.pipeline_schedule.value();
  build.pipeline.micro_batches = int(options.accum_steps);
  build.reducer = reducer_options(options);
  // The task's loss as a value: it reads the output and the targets, nothing of the loop.
  PipelineLoss loss = [&task, device](const LayerValue& output,
                                      const std::vector<Tensor>& targets) {
    return task.loss(output, targets, device);
  };
  built_ = build_pipeline(world_, task.layers(), build, std::move(loss));
  ownership_ = std::make_shared<StageOwnership>(built_.stage, task.model(), world_,
                                                built_.stage_group, built_.replica);
  set_ownership(ownership_);
  others_ = built_.stage->other_stages_state();
}

StrategyKind PipelineParallel::kind() const {
  return built_.replicas > 1 ? StrategyKind::hybrid : StrategyKind::pipeline;
}

std::string PipelineParallel::describe() const {
  int64_t total = 0;
  std::string shares;
  for (const int64_t count : ownership_->parameters_by_stage()) {
    total += count;
    shares += (shares.empty() ? "" : " + ") + std::to_string(count);
  }
  return str(built_.stages, " pipeline stages (layers ", built_.plan_text, ", ", built_.basis,
             "; parameters ", shares, " of ", total, "), ",
             schedule_name(built_.pipeline->options().schedule), " schedule",
             built_.replicas > 1 ? str(", x ", built_.replicas, " data-parallel replicas") : "");
}

std::string PipelineParallel::describe(int64_t) const {
  return str("pipeline parallel: ", describe(), "; this process runs stage ", stage(),
             " of replica ", replica());
}

void PipelineParallel::broadcast_stage_from_replica0() {
  if (!built_.replica_group) return;
  ProcessGroup& replicas = *built_.replica_group;
  for (const auto& [name, tensor] : built_.stage->state_dict()) {
    Tensor staged = tensor.detach().contiguous().to(replicas.device());
    replicas.broadcast(staged, 0)->synchronize();
    NoGradGuard no_grad;
    Tensor(tensor).copy_(staged.to(tensor.device()));
  }
}

void PipelineParallel::start_training() {
  // Every replica builds and resumes alike; this makes sure.
  broadcast_stage_from_replica0();
}

EvalCounts PipelineParallel::evaluate(const std::string& split, Device device) {
  // As one process evaluates: replica 0's weights and BatchNorm statistics.
  broadcast_stage_from_replica0();
  const std::unique_ptr<EvalPass> pass = task_.eval_pass(split, built_.replica, built_.replicas);
  task_.model().eval();
  built_.pipeline->forward_only(
      pass->batch_count(), [&](int64_t b) { return task_.input(pass->batch(b), device); },
      [&](int64_t b, const LayerValue& output) { pass->add(output, pass->batch(b)); });
  task_.model().train();
  EvalCounts counts = pass->finish();
  if (!is_last_stage()) {
    for (auto& [name, value] : counts.sums) value = 0;
    counts.examples.clear();
  }
  return counts;
}

// Through the stages: the last stage of each replica counts its shard, the others give zeros.
EvalCounts PipelineParallel::evaluate(Task&, const std::string& split, Device device, int64_t,
                                      int64_t) {
  return evaluate(split, device);
}

PipelineStepResult PipelineParallel::step(const std::vector<HostBatch>& batches, Device device,
                                          LossScaler* scaler) {
  release_storage(others_);  // after gather_model() filled them; nothing to do otherwise
  const PipelineStage& stage = *built_.stage;
  std::vector<LayerValue> inputs;
  std::vector<std::vector<Tensor>> targets;
  for (const HostBatch& batch : batches) {
    if (stage.is_first()) inputs.push_back(task_.input(batch, device));
    if (stage.is_last()) targets.push_back(task_.targets(batch));
  }
  return built_.pipeline->step_micro_batches(int(batches.size()), inputs, targets,
                                             built_.reducer.get(), scaler);
}

Tensor PipelineParallel::agree_and_clip(LossScaler& scaler, const std::vector<Tensor>& params,
                                        double max_norm) {
  // Each stage holds part of the gradients: the skip decision and the norm are global.
  agree_found_inf(scaler);
  return clip_global_norm(params, max_norm);
}

void PipelineParallel::agree_found_inf(LossScaler& scaler) {
  Tensor flag = scaler.found_inf_flag();
  if (!flag.defined()) return;
  Tensor sum = flag.to(world_->device());
  world_->all_reduce(sum, ReduceOp::sum)->synchronize();
  flag.copy_(sum.to(flag.device()));
}

Tensor PipelineParallel::clip_global_norm(const std::vector<Tensor>& params, double max_norm) {
  // Replicas hold equal gradients after the reducer: the stage group's sum is the total.
  ProcessGroup& stages = *built_.stage_group;
  Tensor squares = grad_squared_norm(params).reshape({1}).to(stages.device());
  stages.all_reduce(squares, ReduceOp::sum)->synchronize();
  const double norm = std::sqrt(squares.item());
  if (max_norm > 0) clip_grads_to_norm_(params, norm, max_norm);
  return full({}, norm, TensorOptions{}.with(DType::f32));
}

}  // namespace sonata
