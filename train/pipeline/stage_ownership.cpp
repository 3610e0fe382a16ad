#include "train/pipeline/stage_ownership.h"

#include <algorithm>
#include <map>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/deferred_init.h"
#include "engine/ops.h"
#include "train/state/optimizer_state_names.h"

namespace sonata {

StageOwnership::StageOwnership(std::shared_ptr<PipelineStage> stage, Module& model,
                               std::shared_ptr<ProcessGroup> world,
                               std::shared_ptr<ProcessGroup> stage_group, int replica)
    : stage_(std::move(stage)),
      model_(model),
      world_(std::move(world)),
      stage_group_(std::move(stage_group)),
      replica_(replica) {
  // Which stages (world ranks of replica 0) hold each entry of the model's state, and which
  // rows of it where a layer is cut.
  std::map<std::string, std::vector<StatePart>> parts;
  for (int s = 0; s < stage_->count(); ++s)
    for (size_t i = stage_->ranges()[size_t(s)].begin; i < stage_->ranges()[size_t(s)].end; ++i) {
      const ModelLayer& layer = stage_->layers()[i];
      for (const auto& [prefix, module] : layer.modules)
        for (const auto& [name, tensor] : module->state_dict()) {
          std::vector<StatePart>& holders = parts[prefix + "." + name];
          // A tensor two stages share is written from the later one, as before.
          if (layer.shard.rows == 0) holders.clear();
          holders.push_back({s, layer.shard});
        }
    }
  for (const auto& [name, tensor] : model_.state_dict()) {
    const auto found = parts.find(name);
    SONATA_CHECK(found != parts.end(), "--pipeline-stages: the model's '", name,
                 "' belongs to none of its pipeline layers");
    parts_.push_back(found->second);
    names_.push_back(name);
  }
}

std::vector<int64_t> StageOwnership::parameters_by_stage() const {
  std::map<std::string, size_t> entry;
  for (size_t k = 0; k < names_.size(); ++k) entry[names_[k]] = k;
  // Shapes only: a released (deferred again) parameter keeps its shape.
  std::vector<int64_t> counts(size_t(stage_->count()), 0);
  for (const auto& [name, param] : model_.named_parameters())
    for (const StatePart& part : parts_[entry.at(name)])
      counts[size_t(part.stage)] +=
          part.shard.rows > 0 ? param.numel() / param.shape()[0] * part.shard.rows : param.numel();
  return counts;
}

const StageOwnership::StatePart* StageOwnership::part_of_mine(size_t k) const {
  for (const StatePart& part : parts_[k])
    if (part.stage == stage_->index()) return &part;
  return nullptr;
}

RowShard StageOwnership::rows_of(const std::string& name) const {
  const auto found = std::find(names_.begin(), names_.end(), name);
  SONATA_CHECK(found != names_.end(), "pipeline: the model has no entry '", name, "'");
  const StatePart* part = part_of_mine(size_t(found - names_.begin()));
  SONATA_CHECK(part, "pipeline: stage ", stage_->index(), " holds none of '", name, "'");
  return part->shard;
}

std::vector<ParamGroup> StageOwnership::optimizer_groups(std::vector<ParamGroup> whole) {
  // A whole parameter is this stage's when the stage holds it, or holds rows of it (a row
  // piece under the same name, which takes its place in the groups).
  std::map<std::string, size_t> entry;
  for (size_t k = 0; k < names_.size(); ++k) entry[names_[k]] = k;
  std::map<std::string, Tensor> mine;
  for (const auto& [name, param] : stage_->named_parameters()) mine[name] = param;
  const NamedTensors whole_params = model_.named_parameters();
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

OptimizerState StageOwnership::local_optimizer_state(const OptimizerState& whole) const {
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

PartialTrainingState StageOwnership::read_checkpoint(const std::string& path,
                                                     CheckpointSource* source) const {
  PartialTrainingState loaded = load_checkpoint_part(path, selection(), source);
  // The rows of a cut layer go to this stage's pieces, not the whole model's (released).
  take_model_pieces(loaded.state.model);
  loaded.state.optimizer = local_optimizer_state(loaded.state.optimizer);
  return loaded;
}

bool StageOwnership::on_any_holder(bool here) const {
  Tensor count = full({1}, here ? 1.0 : 0.0, TensorOptions{}.with(DType::f64)).to(world_->device());
  world_->all_reduce(count, ReduceOp::sum)->synchronize();
  return count.to(Device::cpu()).item() > 0;
}

std::string StageOwnership::write_checkpoint(CheckpointManager* writer,
                                             const std::function<TrainingState()>& capture,
                                             int64_t step, std::optional<double> metric) const {
  if (replica_ != 0) return "";  // replica 0's stages hold the checkpoint
  if (!writer) {
    serve_checkpoint(capture());
    return "";
  }
  return writer->save(checkpoint_source(capture()), step, metric);
}

void StageOwnership::gather_model() {
  // Entry by entry in state_dict order, every rank alike: from the world rank of replica 0
  // that trains it, or for a cut layer its rows from each stage holding them.
  const NamedTensors state = model_.state_dict();
  SONATA_CHECK(state.size() == parts_.size(), "--pipeline-stages: the model's state has ",
               state.size(), " entries, its pipeline stages ", parts_.size());
  std::map<std::string, Tensor> pieces;
  for (const auto& [name, tensor] : stage_->state_dict()) pieces[name] = tensor;
  NoGradGuard no_grad;
  for (size_t k = 0; k < state.size(); ++k) {
    Tensor tensor = state[k].second;
    // A released entry, deferred again with its shape, gets memory (the broadcasts fill it).
    if (is_deferred(tensor)) tensor.set_data(empty(tensor.shape(), tensor.options()));
    for (const StatePart& part : parts_[k]) {
      Tensor rows =
          part.shard.rows == 0 ? tensor : tensor.slice(0, part.shard.begin, part.shard.end);
      if (part.shard.rows != 0 && part.stage == stage_->index() && replica_ == 0)
        rows.copy_(pieces.at(names_[k]));
      if (rows.device() == world_->device() && rows.is_contiguous()) {
        world_->broadcast(rows, part.stage)->synchronize();
      } else {
        Tensor staged = rows.contiguous().to(world_->device());
        world_->broadcast(staged, part.stage)->synchronize();
        rows.copy_(staged.to(rows.device()));
      }
    }
  }
}

}  // namespace sonata
