// PipelineParallel's checkpoints (tools/trainer/pipeline_parallel.h): one process's files,
// written on world rank 0 with each other stage's tensor received only when the writer asks
// for it, and read back by each stage for its own tensors alone.
#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "base/error.h"
#include "comm/pipeline/stage_state.h"
#include "engine/ops.h"
#include "tools/trainer/optimizer_state_names.h"
#include "tools/trainer/pipeline_parallel.h"

namespace sonata {
namespace {

// Apart from the pipeline's per-micro-batch tags and stage_state.cpp's.
constexpr int kCheckpointTensorTag = 30010;

// One file's tensors as the writer fetches them: rank 0's own in hand, the others' from
// their owner when due (each owner sends its tensors in the file's order).
struct StreamedFile {
  std::shared_ptr<ProcessGroup> group;
  std::vector<int> owner;   // the stage group rank holding each tensor
  std::vector<Tensor> own;  // rank 0's tensors; undefined where another rank holds one

  Tensor fetch(const TensorSpec& spec, size_t index) const {
    if (owner[index] == 0) return own[index];
    Tensor value = empty(spec.shape, TensorOptions{}.with(spec.dtype).with(group->device()));
    group->recv(value, owner[index], kCheckpointTensorTag)->synchronize();
    return value;
  }
};

TensorSource streamed_source(std::vector<TensorSpec> specs, std::shared_ptr<StreamedFile> file) {
  TensorSource source;
  source.specs = std::move(specs);
  source.fetch = [file, specs = source.specs](size_t index) {
    return file->fetch(specs[index], index);
  };
  return source;
}

}  // namespace

PipelineParallel::StageCheckpoint PipelineParallel::stage_checkpoint(
    const OptimizerState& local) const {
  SONATA_CHECK(optimizer_index_.size() == parameters().size(),
               "--pipeline-stages: the optimizer was not built over stage_param_groups()");
  StageCheckpoint part;
  // The model's entries in one process's order (the stages' layers may list them in another).
  std::map<std::string, Tensor> mine;
  for (const auto& [name, tensor] : stage_->state_dict()) mine[name] = tensor;
  for (size_t k = 0; k < state_names_.size(); ++k) {
    if (state_owner_[k] != stage_index_) continue;
    const auto found = mine.find(state_names_[k]);
    SONATA_CHECK(found != mine.end(), "--pipeline-stages: stage ", stage_index_,
                 " does not hold the model's '", state_names_[k], "'");
    part.model.emplace_back(found->first, found->second);
  }
  // This stage's optimizer numbers its own parameters: entries go under the whole model's
  // indices, in one process's order (by index).
  auto whole_name = [&](const std::string& name) {
    return renumbered_optimizer_state(name,
                                      optimizer_index_.at(size_t(optimizer_state_index(name))));
  };
  for (const auto& [name, tensor] : local.tensors)
    part.optimizer.emplace_back(whole_name(name), tensor);
  std::stable_sort(part.optimizer.begin(), part.optimizer.end(), [](const auto& a, const auto& b) {
    return optimizer_state_index(a.first) < optimizer_state_index(b.first);
  });
  // Per-parameter scalars (Adam's step) travel as one-element tensors.
  const TensorOptions f64 = TensorOptions{}.with(DType::f64).with(stage_group_->device());
  for (const auto& [name, value] : local.scalars)
    if (optimizer_state_index(name) >= 0)
      part.step_scalars.emplace_back(whole_name(name), full({1}, value, f64));
  return part;
}

TrainingStateSource PipelineParallel::checkpoint_source(const TrainingState& local) const {
  SONATA_CHECK(world_->rank() == 0, "--pipeline-stages: world rank 0 writes the checkpoint, not ",
               world_->rank(), " (the others serve_checkpoint())");
  const StageCheckpoint part = stage_checkpoint(local.optimizer);
  const auto model_specs = gather_state_specs(*stage_group_, part.model);
  const auto optimizer_specs = gather_state_specs(*stage_group_, part.optimizer);
  const NamedTensors steps = gather_state_dict(*stage_group_, part.step_scalars);

  TrainingStateSource source;
  // model.safetensors: one process's state_dict order.
  std::map<std::string, std::pair<int, TensorSpec>> model_by_name;
  for (size_t r = 0; r < model_specs.size(); ++r)
    for (const TensorSpec& spec : model_specs[r])
      model_by_name.emplace(spec.name, std::pair{int(r), spec});
  auto model = std::make_shared<StreamedFile>();
  model->group = stage_group_;
  std::vector<TensorSpec> specs;
  size_t next_own = 0;
  for (const std::string& name : state_names_) {
    const auto found = model_by_name.find(name);
    SONATA_CHECK(found != model_by_name.end(), "--pipeline-stages: no stage holds the model's '",
                 name, "'");
    specs.push_back(found->second.second);
    model->owner.push_back(found->second.first);
    model->own.push_back(found->second.first == 0 ? part.model.at(next_own++).second : Tensor());
  }
  source.model = streamed_source(std::move(specs), model);

  // state.safetensors: the optimizer's tensors by parameter index, as one process lists them.
  struct Entry {
    TensorSpec spec;
    int owner;
    Tensor own;
  };
  std::vector<Entry> entries;
  for (size_t r = 0; r < optimizer_specs.size(); ++r)
    for (size_t j = 0; j < optimizer_specs[r].size(); ++j)
      entries.push_back(
          {optimizer_specs[r][j], int(r), r == 0 ? part.optimizer[j].second : Tensor()});
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return optimizer_state_index(a.spec.name) < optimizer_state_index(b.spec.name);
  });
  auto optimizer = std::make_shared<StreamedFile>();
  optimizer->group = stage_group_;
  specs.clear();
  for (Entry& entry : entries) {
    specs.push_back(entry.spec);
    optimizer->owner.push_back(entry.owner);
    optimizer->own.push_back(std::move(entry.own));
  }
  source.optimizer_tensors = streamed_source(std::move(specs), optimizer);

  for (const auto& [name, value] : local.optimizer.scalars)
    if (optimizer_state_index(name) < 0) source.optimizer_scalars[name] = value;  // the groups'
  for (size_t g = 0; g < whole_group_sizes_.size(); ++g)
    source.optimizer_scalars[str("param_groups.", g, ".params")] = double(whole_group_sizes_[g]);
  for (const auto& [name, tensor] : steps)
    source.optimizer_scalars[name] = tensor.to(DType::f64).item();
  source.scalars = local.scalars;
  source.texts = local.texts;
  return source;
}

void PipelineParallel::serve_checkpoint(const TrainingState& local) const {
  if (replica_ != 0) return;
  SONATA_CHECK(world_->rank() != 0,
               "--pipeline-stages: world rank 0 writes the checkpoint (checkpoint_source)");
  const StageCheckpoint part = stage_checkpoint(local.optimizer);
  gather_state_specs(*stage_group_, part.model);
  gather_state_specs(*stage_group_, part.optimizer);
  gather_state_dict(*stage_group_, part.step_scalars);
  // In each file's order, as the writer fetches them; a send completes when it is received.
  for (const NamedTensors* file : {&part.model, &part.optimizer})
    for (const auto& [name, tensor] : *file) {
      Tensor staged = tensor.detach().contiguous().to(stage_group_->device());
      stage_group_->send(staged, 0, kCheckpointTensorTag)->synchronize();
    }
}

CheckpointSelection PipelineParallel::checkpoint_selection() const {
  std::set<std::string> model;
  for (size_t k = 0; k < state_names_.size(); ++k)
    if (state_owner_[k] == stage_index_) model.insert(state_names_[k]);
  const std::set<int64_t> indices(optimizer_index_.begin(), optimizer_index_.end());
  return {[model](const std::string& name) { return model.count(name) > 0; },
          [indices](const std::string& name) {
            return indices.count(optimizer_state_index(name)) > 0;
          }};
}

}  // namespace sonata
