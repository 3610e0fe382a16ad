#include "train/pipeline/pipeline_parallel.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "base/error.h"
#include "comm/pipeline/partition.h"
#include "comm/pipeline/stage_state.h"
#include "engine/autograd/grad_mode.h"
#include "engine/deferred_init.h"
#include "engine/nn/release.h"
#include "engine/optim/clip_grad.h"
#include "train/optimizer_state_names.h"

namespace sonata {
namespace {

// --pipeline-cuts "7,12": the first layers of stages 1..S-1.
std::vector<size_t> parse_cuts(const std::string& text) {
  std::vector<size_t> cuts;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    size_t used = 0;
    long long value = -1;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    SONATA_CHECK(used > 0 && used == item.size() && value > 0,
                 "--pipeline-cuts must list positive layer indices separated by commas, got '",
                 text, "'");
    cuts.push_back(size_t(value));
  }
  return cuts;
}

}  // namespace

PipelineParallel::PipelineParallel(const TrainerOptions& options, Task& task,
                                   std::shared_ptr<ProcessGroup> world, Device device,
                                   PipelineLoss loss)
    : world_(std::move(world)),
      stage_count_(int(options.pipeline_stages)),
      task_(task),
      schedule_(parse_schedule(options.pipeline_schedule)) {
  const int world_size = world_ ? world_->world_size() : 1;
  SONATA_CHECK(world_size % stage_count_ == 0 && world_size >= stage_count_, "--pipeline-stages ",
               stage_count_, " needs a multiple of ", stage_count_,
               " processes (one per stage, times the data-parallel replicas); this run has ",
               world_size);
  replica_count_ = world_size / stage_count_;
  replica_ = world_->rank() / stage_count_;
  stage_index_ = world_->rank() % stage_count_;
  stage_group_ = world_->split(replica_, stage_index_);
  if (replica_count_ > 1) replica_group_ = world_->split(stage_index_, replica_);

  LayerSequence layers = task.layers();
  SONATA_CHECK(layers.size() >= size_t(stage_count_), "--pipeline-stages ", stage_count_,
               ": the model has only ", layers.size(), " layers to cut into stages");
  StagePlan plan;
  std::string basis;
  if (!options.pipeline_cuts.empty()) {
    const std::vector<size_t> cuts = parse_cuts(options.pipeline_cuts);
    SONATA_CHECK(cuts.size() + 1 == size_t(stage_count_), "--pipeline-cuts '",
                 options.pipeline_cuts, "' makes ", cuts.size() + 1, " stages, not the ",
                 stage_count_, " of --pipeline-stages");
    plan.ranges = partition_at(layers.size(), cuts);
    plan.layers = std::move(layers);
    basis = "at --pipeline-cuts";
  } else if (options.pipeline_balance == "time") {
    // One rank measures (timings differ between ranks) and every rank cuts by its figures.
    std::vector<double> costs(layers.size(), 0.0);
    if (world_->rank() == 0) {
      // A model built deferred is made one layer at a time for its timing (partition.h).
      std::vector<int64_t> items;
      for (int64_t i = 0; i < std::min(options.batch_size, task.train_items()); ++i)
        items.push_back(i);
      costs = measure_layer_times(layers, task.input(task.prepare(items, 0), device));
    }
    plan = partition_with_row_pieces(layers, broadcast_costs(*world_, costs), stage_count_);
    basis = "by measured time";
  } else {
    plan = partition_with_row_pieces(layers, layer_parameter_bytes(layers), stage_count_);
    basis = "by parameter bytes";
  }
  partition_text_ = str(stage_plan_str(plan), ", ", basis);

  // Which stages (world ranks of replica 0) hold each entry of the model's state, and which
  // rows of it where a layer is cut.
  std::map<std::string, std::vector<StatePart>> parts;
  for (int s = 0; s < stage_count_; ++s)
    for (size_t i = plan.ranges[size_t(s)].begin; i < plan.ranges[size_t(s)].end; ++i) {
      const ModelLayer& layer = plan.layers[i];
      for (const auto& [prefix, module] : layer.modules)
        for (const auto& [name, tensor] : module->state_dict()) {
          std::vector<StatePart>& holders = parts[prefix + "." + name];
          // A tensor two stages share is written from the later one, as before.
          if (layer.shard.rows == 0) holders.clear();
          holders.push_back({s, layer.shard});
        }
    }
  // Each stage's share of the parameters (rows of a cut layer counted where they live).
  stage_parameters_.assign(size_t(stage_count_), 0);
  for (const auto& [name, param] : task.model().named_parameters()) {
    const auto found = parts.find(name);
    if (found == parts.end()) continue;  // refused below
    for (const StatePart& part : found->second)
      stage_parameters_[size_t(part.stage)] +=
          part.shard.rows > 0 ? param.numel() / param.shape()[0] * part.shard.rows : param.numel();
  }
  for (const auto& [name, tensor] : task.model().state_dict()) {
    const auto found = parts.find(name);
    SONATA_CHECK(found != parts.end(), "--pipeline-stages: the model's '", name,
                 "' belongs to none of its pipeline layers");
    state_parts_.push_back(found->second);
    state_names_.push_back(name);
    state_shapes_.push_back(tensor.shape());
  }

  stage_ = std::make_shared<PipelineStage>(std::move(plan.layers), plan.ranges, stage_index_);
  // The other stages' row pieces are copies no one here reads: their storage goes now (the
  // whole model's entries wait for start_training(), the optimizer's groups being built from
  // their shapes).
  for (int s = 0; s < stage_count_; ++s) {
    if (s == stage_index_) continue;
    for (size_t i = stage_->ranges()[size_t(s)].begin; i < stage_->ranges()[size_t(s)].end; ++i)
      if (stage_->layers()[i].shard.rows > 0)
        release_storage(layer_state_dict(stage_->layers(), {i, i + 1}));
  }
  // A model built deferred (builds_model_deferred) gets memory for this stage's tensors
  // alone; every other stage's stay deferred, never allocated here.
  std::vector<Tensor> own;
  for (const auto& [name, tensor] : stage_->state_dict()) own.push_back(tensor);
  materialise(own);
  PipelineOptions pipeline_options;
  pipeline_options.schedule = schedule_;
  pipeline_options.micro_batches = int(options.accum_steps);
  pipeline_ = std::make_unique<Pipeline>(stage_group_, stage_, std::move(loss), pipeline_options);
  if (replica_group_)
    reducer_ = std::make_unique<Reducer>(stage_->named_parameters(), replica_group_,
                                         reducer_options(options));
}

std::string PipelineParallel::describe() const {
  int64_t total = 0;
  std::string shares;
  for (const int64_t count : stage_parameters_) {
    total += count;
    shares += (shares.empty() ? "" : " + ") + std::to_string(count);
  }
  return str(stage_count_, " pipeline stages (layers ", partition_text_, "; parameters ", shares,
             " of ", total, "), ", schedule_name(schedule_), " schedule",
             replica_count_ > 1 ? str(", x ", replica_count_, " data-parallel replicas") : "");
}

const PipelineParallel::StatePart* PipelineParallel::part_of_mine(size_t k) const {
  for (const StatePart& part : state_parts_[k])
    if (part.stage == stage_index_) return &part;
  return nullptr;
}

RowShard PipelineParallel::rows_of(const std::string& name) const {
  const auto found = std::find(state_names_.begin(), state_names_.end(), name);
  SONATA_CHECK(found != state_names_.end(), "pipeline: the model has no entry '", name, "'");
  const StatePart* part = part_of_mine(size_t(found - state_names_.begin()));
  SONATA_CHECK(part, "pipeline: stage ", stage_index_, " holds none of '", name, "'");
  return part->shard;
}

std::vector<ParamGroup> PipelineParallel::stage_param_groups(const std::vector<ParamGroup>& whole) {
  // A whole parameter is this stage's when the stage holds it, or holds rows of it (a row
  // piece under the same name, which takes its place in the groups).
  std::map<std::string, size_t> entry;
  for (size_t k = 0; k < state_names_.size(); ++k) entry[state_names_[k]] = k;
  std::map<std::string, Tensor> mine;
  for (const auto& [name, param] : stage_->named_parameters()) mine[name] = param;
  const NamedTensors whole_params = task_.model().named_parameters();
  auto name_of = [&](const Tensor& param) -> const std::string* {
    for (const auto& [name, p] : whole_params)
      if (p.same(param)) return &name;
    return nullptr;
  };
  optimizer_index_.clear();
  optimizer_shard_.clear();
  whole_group_sizes_.clear();
  stage_group_sizes_.clear();
  std::vector<ParamGroup> groups;
  int64_t index = 0;
  for (const ParamGroup& group : whole) {
    ParamGroup stage_group{{}, group.options};
    for (const Tensor& param : group.params) {
      const std::string* name = name_of(param);
      SONATA_CHECK(name, "--pipeline-stages: optimizer parameter ", index,
                   " is none of the model's parameters");
      const StatePart* part = part_of_mine(entry.at(*name));
      if (part) {
        stage_group.params.push_back(mine.at(*name));
        optimizer_index_.push_back(index);
        optimizer_shard_.push_back(part->shard);
      }
      ++index;
    }
    whole_group_sizes_.push_back(group.params.size());
    stage_group_sizes_.push_back(stage_group.params.size());
    groups.push_back(std::move(stage_group));
  }
  return groups;
}

OptimizerState PipelineParallel::stage_optimizer_state(const OptimizerState& whole) const {
  std::map<int64_t, int64_t> local;  // the whole model's index -> this stage's
  for (size_t k = 0; k < optimizer_index_.size(); ++k) local[optimizer_index_[k]] = int64_t(k);
  OptimizerState out;
  for (const auto& [name, value] : whole.scalars) {
    const int64_t index = optimizer_state_index(name);
    if (index < 0) {
      out.scalars[name] = value;
    } else if (const auto found = local.find(index); found != local.end()) {
      out.scalars[renumbered_optimizer_state(name, found->second)] = value;
    }
  }
  for (size_t g = 0; g < stage_group_sizes_.size(); ++g)
    if (whole.scalars.count(str("param_groups.", g, ".params")))
      out.scalars[str("param_groups.", g, ".params")] = double(stage_group_sizes_[g]);
  for (const auto& [name, tensor] : whole.tensors)
    if (const auto found = local.find(optimizer_state_index(name)); found != local.end())
      out.tensors.emplace_back(renumbered_optimizer_state(name, found->second), tensor);
  return out;
}

void PipelineParallel::broadcast_stage_from_replica0() {
  if (!replica_group_) return;
  for (const auto& [name, tensor] : stage_->state_dict()) {
    Tensor staged = tensor.detach().contiguous().to(replica_group_->device());
    replica_group_->broadcast(staged, 0)->synchronize();
    NoGradGuard no_grad;
    Tensor(tensor).copy_(staged.to(tensor.device()));
  }
}

void PipelineParallel::start_training() {
  // Every replica builds and resumes alike; this makes sure.
  broadcast_stage_from_replica0();
  release_other_stages();
}

EvalCounts PipelineParallel::evaluate(const std::string& split, Device device) {
  // As one process evaluates: replica 0's weights and BatchNorm statistics.
  broadcast_stage_from_replica0();
  const std::unique_ptr<EvalPass> pass = task_.eval_pass(split, replica_, replica_count_);
  task_.model().eval();
  pipeline_->forward_only(
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

void PipelineParallel::release_other_stages() {
  if (released_) return;
  stage_->release_other_stages();
  released_ = true;
}

PipelineStepResult PipelineParallel::step(const std::vector<HostBatch>& batches, Device device) {
  release_other_stages();  // after an evaluation or the like filled them
  std::vector<LayerValue> inputs;
  std::vector<std::vector<Tensor>> targets;
  for (const HostBatch& batch : batches) {
    if (stage_->is_first()) inputs.push_back(task_.input(batch, device));
    if (stage_->is_last()) targets.push_back(task_.targets(batch));
  }
  return pipeline_->step_micro_batches(int(batches.size()), inputs, targets, reducer_.get());
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
  Tensor squares = grad_squared_norm(params).reshape({1}).to(stage_group_->device());
  stage_group_->all_reduce(squares, ReduceOp::sum)->synchronize();
  const double norm = std::sqrt(squares.item());
  if (max_norm > 0) clip_grads_to_norm_(params, norm, max_norm);
  return full({}, norm, TensorOptions{}.with(DType::f32));
}

void PipelineParallel::sync_model() {
  // Entry by entry in state_dict order, every rank alike: from the world rank of replica 0
  // that trains it, or for a cut layer its rows from each stage holding them.
  const NamedTensors state = task_.model().state_dict();
  SONATA_CHECK(state.size() == state_parts_.size(), "--pipeline-stages: the model's state has ",
               state.size(), " entries, its pipeline stages ", state_parts_.size());
  std::map<std::string, Tensor> pieces;
  for (const auto& [name, tensor] : stage_->state_dict()) pieces[name] = tensor;
  NoGradGuard no_grad;
  for (size_t k = 0; k < state.size(); ++k) {
    Tensor tensor = state[k].second;
    // A released entry gets storage again (then the broadcasts fill it).
    if (tensor.shape() != state_shapes_[k] || is_deferred(tensor))
      tensor.set_data(empty(state_shapes_[k], tensor.options()));
    for (const StatePart& part : state_parts_[k]) {
      Tensor rows =
          part.shard.rows == 0 ? tensor : tensor.slice(0, part.shard.begin, part.shard.end);
      if (part.shard.rows != 0 && part.stage == stage_index_ && replica_ == 0)
        rows.copy_(pieces.at(state_names_[k]));
      if (rows.device() == world_->device() && rows.is_contiguous()) {
        world_->broadcast(rows, part.stage)->synchronize();
      } else {
        Tensor staged = rows.contiguous().to(world_->device());
        world_->broadcast(staged, part.stage)->synchronize();
        rows.copy_(staged.to(rows.device()));
      }
    }
  }
  released_ = false;
}

}  // namespace sonata
