// A pipeline stage's checkpoints (train/pipeline/stage_ownership.h): one process's files,
// written on world rank 0 with each other stage's tensor received only when the writer asks
// for it, and read back by each stage for its own tensors alone.
#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "base/error.h"
#include "comm/pipeline/message_tags.h"
#include "comm/pipeline/stage_state.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "train/pipeline/stage_ownership.h"
#include "train/state/optimizer_state_names.h"

namespace sonata {
namespace {

constexpr int kCheckpointTensorTag = tag_of(StateTag::checkpoint_tensor);

// One file's tensors as the writer fetches them: rank 0's own in hand, the others' from
// their holder when due (each holder sends its tensors in the file's order). A tensor of a
// layer cut by rows comes in parts, one per stage holding rows of it, in row order.
struct StreamedFile {
  struct Part {
    int holder;    // the stage group rank
    Tensor own;    // rank 0's part; undefined where another rank holds it
    int64_t rows;  // along dim 0
  };
  std::shared_ptr<ProcessGroup> group;
  std::vector<std::vector<Part>> parts;  // of each tensor

  Tensor fetch(const TensorSpec& spec, size_t index) const {
    const std::vector<Part>& pieces = parts[index];
    if (pieces.size() == 1 && pieces[0].holder == 0) return pieces[0].own;
    Tensor value = empty(spec.shape, TensorOptions{}.with(spec.dtype).with(group->device()));
    int64_t row = 0;
    for (const Part& part : pieces) {
      // Rows of a C-order tensor: contiguous, received in place.
      Tensor rows = pieces.size() == 1 ? value : value.slice(0, row, row + part.rows);
      if (part.holder == 0) {
        rows.copy_(part.own.detach().to(rows.device()));
      } else {
        group->recv(rows, part.holder, kCheckpointTensorTag)->synchronize();
      }
      row += part.rows;
    }
    return value;
  }
};

// Each name's parts from every rank (specs[r][j] with rank 0's tensors `own[j]`), merged into
// one tensor per name in the order the names first appear; the parts of a name are rows of it,
// in rank order (the stages hold a cut layer's rows in order).
struct MergedFile {
  std::vector<TensorSpec> specs;
  std::shared_ptr<StreamedFile> file;
};
MergedFile merge_parts(const std::vector<std::pair<TensorSpec, int>>& listed,
                       const std::vector<Tensor>& own, std::shared_ptr<ProcessGroup> group) {
  MergedFile merged;
  merged.file = std::make_shared<StreamedFile>();
  merged.file->group = std::move(group);
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < listed.size(); ++i) {
    const auto& [spec, holder] = listed[i];
    const auto [found, fresh] = at.emplace(spec.name, merged.specs.size());
    const int64_t rows = spec.shape.empty() ? 1 : spec.shape[0];
    if (fresh) {
      merged.specs.push_back(spec);
      merged.file->parts.emplace_back();
    } else {
      TensorSpec& whole = merged.specs[found->second];
      SONATA_CHECK(
          whole.dtype == spec.dtype && whole.shape.size() == spec.shape.size() &&
              !spec.shape.empty() &&
              std::equal(spec.shape.begin() + 1, spec.shape.end(), whole.shape.begin() + 1),
          "--pipeline-stages: the stages' parts of '", spec.name, "' are not rows of one tensor");
      whole.shape[0] += rows;
    }
    merged.file->parts[found->second].push_back({holder, own[i], rows});
  }
  return merged;
}

TensorSource streamed_source(MergedFile merged) {
  TensorSource source;
  source.specs = std::move(merged.specs);
  source.fetch = [file = merged.file, specs = source.specs](size_t index) {
    return file->fetch(specs[index], index);
  };
  return source;
}

}  // namespace

StageOwnership::StageCheckpoint StageOwnership::stage_checkpoint(
    const OptimizerState& local) const {
  SONATA_CHECK(optimizer_index_.size() == stage_->parameters().size(),
               "--pipeline-stages: the optimizer was not built over optimizer_groups()");
  StageCheckpoint part;
  // The model's entries in one process's order (the stages' layers may list them in another).
  std::map<std::string, Tensor> mine;
  for (const auto& [name, tensor] : stage_->state_dict()) mine[name] = tensor;
  for (size_t k = 0; k < names_.size(); ++k) {
    if (!part_of_mine(k)) continue;
    const auto found = mine.find(names_[k]);
    SONATA_CHECK(found != mine.end(), "--pipeline-stages: stage ", stage_->index(),
                 " does not hold the model's '", names_[k], "'");
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

TrainingStateSource StageOwnership::checkpoint_source(const TrainingState& local) const {
  SONATA_CHECK(world_->rank() == 0, "--pipeline-stages: world rank 0 writes the checkpoint, not ",
               world_->rank(), " (the others serve_checkpoint())");
  const StageCheckpoint part = stage_checkpoint(local.optimizer);
  const auto model_specs = gather_state_specs(*stage_group_, part.model);
  const auto optimizer_specs = gather_state_specs(*stage_group_, part.optimizer);
  const NamedTensors steps = gather_state_dict(*stage_group_, part.step_scalars);

  TrainingStateSource source;
  // model.safetensors: one process's state_dict order.
  std::map<std::string, std::vector<std::pair<TensorSpec, int>>> model_by_name;
  for (size_t r = 0; r < model_specs.size(); ++r)
    for (const TensorSpec& spec : model_specs[r])
      model_by_name[spec.name].emplace_back(spec, int(r));
  std::map<std::string, Tensor> model_own;
  for (const auto& [name, tensor] : part.model) model_own[name] = tensor;
  std::vector<std::pair<TensorSpec, int>> listed;
  std::vector<Tensor> own;
  for (const std::string& name : names_) {
    const auto found = model_by_name.find(name);
    SONATA_CHECK(found != model_by_name.end(), "--pipeline-stages: no stage holds the model's '",
                 name, "'");
    for (const auto& [spec, holder] : found->second) {
      listed.emplace_back(spec, holder);
      own.push_back(holder == 0 ? model_own.at(name) : Tensor());
    }
  }
  source.model = streamed_source(merge_parts(listed, own, stage_group_));

  // state.safetensors: the optimizer's tensors by parameter index, as one process lists them.
  struct Entry {
    TensorSpec spec;
    int holder;
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
  listed.clear();
  own.clear();
  for (Entry& entry : entries) {
    listed.emplace_back(entry.spec, entry.holder);
    own.push_back(std::move(entry.own));
  }
  source.optimizer_tensors = streamed_source(merge_parts(listed, own, stage_group_));

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

void StageOwnership::serve_checkpoint(const TrainingState& local) const {
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

CheckpointSelection StageOwnership::selection() const {
  SONATA_CHECK(optimizer_index_.size() == stage_->parameters().size(),
               "--pipeline-stages: the optimizer was not built over optimizer_groups()");
  CheckpointSelection selection;
  std::set<std::string> model;
  SafetensorsRows rows;  // of this stage's pieces
  for (size_t k = 0; k < names_.size(); ++k)
    if (const StatePart* part = part_of_mine(k)) {
      model.insert(names_[k]);
      if (part->shard.rows > 0) rows[names_[k]] = {part->shard.begin, part->shard.end};
    }
  selection.model_rows =
      [rows](const std::string& name) -> std::optional<std::pair<int64_t, int64_t>> {
    const auto found = rows.find(name);
    if (found == rows.end()) return std::nullopt;
    return found->second;
  };
  std::map<int64_t, RowShard> shards;  // the whole model's optimizer index -> this stage's rows
  for (size_t k = 0; k < optimizer_index_.size(); ++k)
    shards[optimizer_index_[k]] = optimizer_shard_[k];
  selection.model = [model](const std::string& name) { return model.count(name) > 0; };
  selection.optimizer = [shards](const std::string& name) {
    return shards.count(optimizer_state_index(name)) > 0;
  };
  // The optimizer's names are known once the file is open: every tensor of a cut parameter's
  // state (Adam's moments, SGD's momentum) has that parameter's shape, so its rows are those
  // of the parameter.
  selection.optimizer_rows =
      [shards](const std::string& name) -> std::optional<std::pair<int64_t, int64_t>> {
    const auto found = shards.find(optimizer_state_index(name));
    if (found == shards.end() || found->second.rows == 0) return std::nullopt;
    return std::pair{found->second.begin, found->second.end};
  };
  return selection;
}

void StageOwnership::take_model_pieces(NamedTensors& model) const {
  std::map<std::string, Tensor> pieces;
  for (size_t k = 0; k < names_.size(); ++k)
    if (const StatePart* part = part_of_mine(k); part && part->shard.rows > 0)
      pieces[names_[k]] = Tensor();
  for (const auto& [name, tensor] : stage_->state_dict())
    if (pieces.count(name)) pieces[name] = tensor;
  NoGradGuard no_grad;
  NamedTensors rest;
  for (auto& [name, tensor] : model) {
    const auto found = pieces.find(name);
    if (found == pieces.end()) {
      rest.emplace_back(name, std::move(tensor));
      continue;
    }
    Tensor piece = found->second;
    SONATA_CHECK(piece.shape() == tensor.shape(), "--pipeline-stages: the checkpoint's rows of '",
                 name, "' have shape ", shape_str(tensor.shape()), ", stage ", stage_->index(),
                 " holds ", shape_str(piece.shape()));
    piece.copy_(tensor.to(piece.device()).to(piece.dtype()));
  }
  model = std::move(rest);
}

}  // namespace sonata
